//! TUN devices with virtio-net headers and TCP segmentation offload.
//!
//! With `IFF_VNET_HDR` and `TUNSETOFFLOAD(CSUM|TSO4)` the sending kernel hands the emulator TCP
//! super-packets of up to 64 KB (one read instead of ~44) and leaves checksums to "hardware".
//! The emulator splits them into their wire segments itself (`packet.rs`), so the link model and
//! the records still see 1500-byte packets, and writes segments to the receiving side with
//! `NEEDS_CSUM`, which the receiving kernel accepts as checksummed (CHECKSUM_PARTIAL).

use crate::netns::ifreq;
use crate::sys::os_error;
use nix::fcntl::OFlag;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

/// The TUN ioctls (linux/if_tun.h). TUNSETIFF is declared as writing an int but reads and
/// writes a whole `ifreq`, so it is a "bad" ioctl with libc's request number; the other two are
/// encoded as declared (`_IOW('T', nr, int)`), which a test checks against libc's numbers.
mod ioctls {
    nix::ioctl_readwrite_bad!(tunsetiff, libc::TUNSETIFF, libc::ifreq);
    nix::ioctl_write_ptr!(tunsetvnethdrsz, b'T', 216, libc::c_int);
    nix::ioctl_write_int!(tunsetoffload, b'T', 208);
}

/// Size of `struct virtio_net_hdr` (no `num_buffers`): what TUNSETVNETHDRSZ is set to.
pub const VNET_HDR_LEN: usize = 10;
pub const VNET_F_NEEDS_CSUM: u8 = 1;
pub const VNET_GSO_NONE: u8 = 0;
pub const VNET_GSO_TCPV4: u8 = 1;
pub const VNET_GSO_ECN: u8 = 0x80;

/// The virtio-net header that precedes every packet on a `IFF_VNET_HDR` TUN (little endian).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8]) -> VnetHdr {
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        }
    }

    pub fn write(&self, b: &mut [u8]) {
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }
}

/// One TUN device, created in the calling thread's network namespace. Closing it removes the
/// device (it is not persistent).
#[derive(Debug)]
pub struct Tun {
    file: File,
    pub name: String,
}

impl Tun {
    pub fn create(name: &str) -> io::Result<Tun> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            // Non-blocking from the start: the path threads poll, never block, on a read.
            .custom_flags(OFlag::O_NONBLOCK.bits())
            .open("/dev/net/tun")
            .map_err(|e| io::Error::new(e.kind(), format!("cannot open /dev/net/tun: {e}")))?;
        let mut req = ifreq(name);
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | libc::IFF_VNET_HDR) as libc::c_short;
        let fd = file.as_raw_fd();
        // SAFETY: TUNSETIFF reads and writes one ifreq, which `req` is.
        unsafe { ioctls::tunsetiff(fd, &mut req) }.map_err(os_error(format_args!("creating TUN device {name}")))?;
        let hdr_len: libc::c_int = VNET_HDR_LEN as libc::c_int;
        // SAFETY: TUNSETVNETHDRSZ reads one int through the pointer.
        unsafe { ioctls::tunsetvnethdrsz(fd, &hdr_len) }?;
        let offload = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO_ECN;
        // SAFETY: TUNSETOFFLOAD takes the flags by value and touches no memory.
        unsafe { ioctls::tunsetoffload(fd, offload as libc::c_ulong) }
            .map_err(os_error(format_args!("enabling offloads on {name}")))?;
        Ok(Tun { file, name: name.to_string() })
    }

    /// One packet (virtio header + IP packet) or `WouldBlock`. One read(2), nothing else.
    #[inline]
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.file).read(buf)
    }

    /// One packet out: one write(2), nothing else.
    #[inline]
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        (&self.file).write(buf)
    }

    /// One packet out from several pieces (virtio header + IP packet, in order): one
    /// writev(2), which the TUN driver takes as one packet.
    #[inline]
    pub fn write_vectored(&self, bufs: &[std::io::IoSlice<'_>]) -> io::Result<usize> {
        (&self.file).write_vectored(bufs)
    }

    pub fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    /// The ioctl numbers nix encodes for the TUN requests are the kernel's (as libc has them).
    #[test]
    fn tun_ioctl_numbers_are_the_kernels() {
        let int = std::mem::size_of::<libc::c_int>();
        assert_eq!(nix::request_code_write!(b'T', 216, int), libc::TUNSETVNETHDRSZ);
        assert_eq!(nix::request_code_write!(b'T', 208, int), libc::TUNSETOFFLOAD);
    }
}
