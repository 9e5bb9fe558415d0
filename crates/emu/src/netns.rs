//! Network namespaces and interface set-up.
//!
//! The namespaces are anonymous: nothing is bind-mounted under /run/netns, so they are held only
//! by this run's file descriptors, threads and child processes. When the run's process ends in
//! any way (normal exit, error, Ctrl-C, even SIGKILL) the kernel drops the last reference and
//! removes each namespace together with the TUN devices and sockets inside it; there is no
//! persistent name that could be left behind. (Child processes, which would also hold a
//! namespace, are killed with the run: see `process.rs`.) For debugging a live run,
//! `nsenter --net=/proc/<pid>/fd/<fd>` enters one (`ls -l /proc/<pid>/fd` shows `net:[...]`).

use crate::sys::os_error;
use nix::sched::{setns, unshare, CloneFlags};
use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

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
                // Affects this thread alone.
                unshare(CloneFlags::CLONE_NEWNET)?;
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
        // setns(CLONE_NEWNET) affects this thread only.
        Ok(setns(&self.fd, CloneFlags::CLONE_NEWNET)?)
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

/// `addr` (port 0) as the generic `sockaddr` an `ifreq` holds: the kernel reads it as a
/// `sockaddr_in`, whose port then address (network order) are the first six data bytes.
fn sockaddr_v4(addr: Ipv4Addr) -> libc::sockaddr {
    let mut sa_data = [0 as libc::c_char; 14];
    for (dst, src) in sa_data[2..6].iter_mut().zip(addr.octets()) {
        *dst = src as libc::c_char;
    }
    libc::sockaddr { sa_family: libc::AF_INET as libc::sa_family_t, sa_data }
}

/// The interface ioctls (linux/sockios.h): each reads (or, for SIOCGIFFLAGS, fills) one
/// `ifreq`. Old-style request numbers that do not encode their argument, so "bad" ioctls.
mod ioctls {
    nix::ioctl_write_ptr_bad!(siocsifaddr, libc::SIOCSIFADDR, libc::ifreq);
    nix::ioctl_write_ptr_bad!(siocsifnetmask, libc::SIOCSIFNETMASK, libc::ifreq);
    nix::ioctl_write_ptr_bad!(siocsifdstaddr, libc::SIOCSIFDSTADDR, libc::ifreq);
    nix::ioctl_write_ptr_bad!(siocsifmtu, libc::SIOCSIFMTU, libc::ifreq);
    nix::ioctl_write_ptr_bad!(siocsiftxqlen, libc::SIOCSIFTXQLEN, libc::ifreq);
    nix::ioctl_write_ptr_bad!(siocsifflags, libc::SIOCSIFFLAGS, libc::ifreq);
    nix::ioctl_readwrite_bad!(siocgifflags, libc::SIOCGIFFLAGS, libc::ifreq);
}

/// The signature nix gives a "bad" write-pointer ioctl on an `ifreq`.
type SetIoctl = unsafe fn(libc::c_int, *const libc::ifreq) -> nix::Result<libc::c_int>;

/// Interface configuration by ioctl on a socket of the calling thread's namespace (no `ip`
/// binary, no netlink parsing).
pub(crate) struct IfConfig {
    sock: OwnedFd,
}

impl IfConfig {
    pub fn new() -> io::Result<IfConfig> {
        let sock = socket(AddressFamily::Inet, SockType::Datagram, SockFlag::SOCK_CLOEXEC, None)?;
        Ok(IfConfig { sock })
    }

    /// Hands `req` to one of the setting ioctls of [`ioctls`].
    fn ioctl(&self, what: &str, ifname: &str, set: SetIoctl, req: &libc::ifreq) -> io::Result<()> {
        // SAFETY: every setting ioctl here reads one ifreq, which `req` is.
        unsafe { set(self.sock.as_raw_fd(), req) }.map(drop).map_err(os_error(format_args!("{what} of {ifname}")))
    }

    /// Point-to-point addressing: `local` on the device, `peer` reachable through it (the
    /// kernel adds the host route).
    pub fn set_p2p(&self, ifname: &str, local: Ipv4Addr, peer: Ipv4Addr) -> io::Result<()> {
        let mut r = ifreq(ifname);
        r.ifr_ifru.ifru_addr = sockaddr_v4(local);
        self.ioctl("setting the address", ifname, ioctls::siocsifaddr, &r)?;
        let mut r = ifreq(ifname);
        r.ifr_ifru.ifru_netmask = sockaddr_v4(Ipv4Addr::new(255, 255, 255, 255));
        self.ioctl("setting the netmask", ifname, ioctls::siocsifnetmask, &r)?;
        let mut r = ifreq(ifname);
        r.ifr_ifru.ifru_dstaddr = sockaddr_v4(peer);
        self.ioctl("setting the peer address", ifname, ioctls::siocsifdstaddr, &r)
    }

    pub fn set_mtu(&self, ifname: &str, mtu: i32) -> io::Result<()> {
        let mut r = ifreq(ifname);
        r.ifr_ifru.ifru_mtu = mtu;
        self.ioctl("setting the MTU", ifname, ioctls::siocsifmtu, &r)
    }

    /// The device's transmit queue length (packets the kernel holds for us to read).
    pub fn set_txqueuelen(&self, ifname: &str, len: i32) -> io::Result<()> {
        let mut r = ifreq(ifname);
        // ifr_qlen shares its slot with ifr_ifindex in the kernel's union.
        r.ifr_ifru.ifru_ifindex = len;
        self.ioctl("setting the queue length", ifname, ioctls::siocsiftxqlen, &r)
    }

    pub fn up(&self, ifname: &str) -> io::Result<()> {
        let mut r = ifreq(ifname);
        // SAFETY: SIOCGIFFLAGS reads the name and fills the flags of one ifreq, which `r` is.
        unsafe { ioctls::siocgifflags(self.sock.as_raw_fd(), &mut r) }
            .map_err(os_error(format_args!("reading the flags of {ifname}")))?;
        // SAFETY: SIOCGIFFLAGS filled the flags member.
        let flags = unsafe { r.ifr_ifru.ifru_flags };
        r.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        self.ioctl("bringing up", ifname, ioctls::siocsifflags, &r)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-built `sockaddr` is byte for byte the `sockaddr_in` the kernel reads.
    #[test]
    fn sockaddr_v4_is_a_sockaddr_in() {
        let sa = sockaddr_v4(Ipv4Addr::new(10, 64, 0, 2));
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr { s_addr: u32::from(Ipv4Addr::new(10, 64, 0, 2)).to_be() },
            sin_zero: [0; 8],
        };
        assert_eq!(std::mem::size_of_val(&sa), std::mem::size_of_val(&sin));
        // SAFETY: both are plain data of the same size, read as bytes.
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts((&sa as *const libc::sockaddr).cast::<u8>(), 16),
                std::slice::from_raw_parts((&sin as *const libc::sockaddr_in).cast::<u8>(), 16),
            )
        };
        assert_eq!(a, b);
    }
}
