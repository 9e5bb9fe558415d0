//! Network namespaces and interface set-up.
//!
//! The namespaces are anonymous: nothing is bind-mounted under /run/netns, so they are held only
//! by this run's file descriptors, threads and child processes. When the run's process ends in
//! any way (normal exit, error, Ctrl-C, even SIGKILL) the kernel drops the last reference and
//! removes each namespace together with the TUN devices and sockets inside it; there is no
//! persistent name that could be left behind. (Child processes, which would also hold a
//! namespace, are killed with the run: see `process.rs`.) For debugging a live run,
//! `nsenter --net=/proc/<pid>/fd/<fd>` enters one (`ls -l /proc/<pid>/fd` shows `net:[...]`).

use crate::sys::cvt;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// A network namespace, alive as long as this value (or anything inside the namespace) is.
#[derive(Debug)]
pub struct NetNs {
    fd: OwnedFd,
    pub label: String,
}

impl NetNs {
    /// Creates an empty namespace (only a `lo` device, down).
    pub fn create(label: &str) -> io::Result<NetNs> {
        // unshare() moves the calling thread, so a throwaway thread does it and hands back a
        // descriptor of its namespace; the caller's own namespace never changes.
        let fd = std::thread::scope(|s| {
            s.spawn(|| -> io::Result<OwnedFd> {
                // SAFETY: unshare takes flags only and affects this thread alone.
                cvt(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
                Ok(File::open("/proc/thread-self/ns/net")?.into())
            })
            .join()
            .expect("the unshare thread does not panic")
        })?;
        Ok(NetNs { fd, label: label.to_string() })
    }

    /// Moves the calling thread into the namespace. Threads spawned afterwards from this one
    /// start there too.
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY: a valid namespace descriptor; setns(CLONE_NEWNET) affects this thread only.
        cvt(unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) }).map(drop)
    }

    /// Runs `f` on a short-lived thread inside the namespace and returns its result.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                self.enter()?;
                f()
            })
            .join()
            .expect("namespace set-up threads do not panic")
        })
    }
}

impl AsFd for NetNs {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// An `ifreq` naming `ifname` (truncated to IFNAMSIZ−1 bytes by construction of our names).
pub(crate) fn ifreq(ifname: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(ifname.bytes().take(libc::IFNAMSIZ - 1)) {
        *dst = src as libc::c_char;
    }
    req
}

fn sockaddr_v4(addr: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr { s_addr: u32::from(addr).to_be() },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size; the kernel reads it as sockaddr_in.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// Interface configuration by ioctl on a socket of the calling thread's namespace (no `ip`
/// binary, no netlink parsing).
pub(crate) struct IfConfig {
    sock: OwnedFd,
}

impl IfConfig {
    pub fn new() -> io::Result<IfConfig> {
        // SAFETY: plain socket(2) call; the descriptor is owned immediately.
        let fd = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
        Ok(IfConfig { sock: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    fn ioctl(&self, what: &str, ifname: &str, request: libc::c_ulong, req: &mut libc::ifreq) -> io::Result<()> {
        // SAFETY: every request used here reads or writes one ifreq.
        cvt(unsafe { libc::ioctl(self.sock.as_raw_fd(), request as _, req as *mut libc::ifreq) })
            .map(drop)
            .map_err(|e| io::Error::new(e.kind(), format!("{what} of {ifname}: {e}")))
    }

    /// Point-to-point addressing: `local` on the device, `peer` reachable through it (the
    /// kernel adds the host route).
    pub fn set_p2p(&self, ifname: &str, local: Ipv4Addr, peer: Ipv4Addr) -> io::Result<()> {
        let mut r = ifreq(ifname);
        r.ifr_ifru.ifru_addr = sockaddr_v4(local);
        self.ioctl("setting the address", ifname, libc::SIOCSIFADDR, &mut r)?;
        let mut r = ifreq(ifname);
        r.ifr_ifru.ifru_netmask = sockaddr_v4(Ipv4Addr::new(255, 255, 255, 255));
        self.ioctl("setting the netmask", ifname, libc::SIOCSIFNETMASK, &mut r)?;
        let mut r = ifreq(ifname);
        r.ifr_ifru.ifru_dstaddr = sockaddr_v4(peer);
        self.ioctl("setting the peer address", ifname, libc::SIOCSIFDSTADDR, &mut r)
    }

    pub fn set_mtu(&self, ifname: &str, mtu: i32) -> io::Result<()> {
        let mut r = ifreq(ifname);
        r.ifr_ifru.ifru_mtu = mtu;
        self.ioctl("setting the MTU", ifname, libc::SIOCSIFMTU, &mut r)
    }

    /// The device's transmit queue length (packets the kernel holds for us to read).
    pub fn set_txqueuelen(&self, ifname: &str, len: i32) -> io::Result<()> {
        let mut r = ifreq(ifname);
        // ifr_qlen shares its slot with ifr_ifindex in the kernel's union.
        r.ifr_ifru.ifru_ifindex = len;
        self.ioctl("setting the queue length", ifname, libc::SIOCSIFTXQLEN, &mut r)
    }

    pub fn up(&self, ifname: &str) -> io::Result<()> {
        let mut r = ifreq(ifname);
        self.ioctl("reading the flags", ifname, libc::SIOCGIFFLAGS, &mut r)?;
        // SAFETY: SIOCGIFFLAGS filled the flags member.
        let flags = unsafe { r.ifr_ifru.ifru_flags };
        r.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        self.ioctl("bringing up", ifname, libc::SIOCSIFFLAGS, &mut r)
    }
}

/// Writes a sysctl of the calling thread's network namespace (`/proc/sys` resolves `net.*`
/// against the writer's namespace). A key that does not exist (e.g. IPv6 compiled out) is
/// skipped.
pub(crate) fn set_sysctl(key: &str, value: &str) -> io::Result<()> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    match std::fs::write(&path, value) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r.map_err(|e| io::Error::new(e.kind(), format!("writing {value:?} to {path}: {e}"))),
    }
}

/// Per-interface counters of the calling thread's namespace, from /proc/thread-self/net/dev
/// (sysfs would show the namespace that mounted it, not ours).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevCounters {
    pub rx_packets: u64,
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_dropped: u64,
}

pub(crate) fn dev_counters(ifname: &str) -> io::Result<DevCounters> {
    let text = std::fs::read_to_string("/proc/thread-self/net/dev")?;
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else { continue };
        if name.trim() != ifname {
            continue;
        }
        let v: Vec<u64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if v.len() < 16 {
            break;
        }
        // Receive: bytes packets errs drop fifo frame compressed multicast; then transmit.
        return Ok(DevCounters { rx_packets: v[1], rx_dropped: v[3], tx_packets: v[9], tx_dropped: v[11] });
    }
    Err(io::Error::new(io::ErrorKind::NotFound, format!("no device {ifname} in this namespace")))
}

/// A NUL-terminated copy, for system calls taking paths or names.
pub(crate) fn cstring(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("{s:?} contains a NUL byte")))
}
