//! `--pcap` in the emulator: the real packets at the senders' TUN device, as a pcapng file
//! (`cclab_core::pcapng`). What a capture on the senders' host would show, with the same
//! choice of packets as the simulator's synthetic capture: every data-direction packet of a
//! flow when the emulator read it from the senders' device (dropped ones too: they left the
//! sender), every ACK-direction packet when it was written to that device (a dropped ACK never
//! got there). Those are the records' `sent` and `arrived` times, read from the same clock, so
//! the capture and the packet table agree packet for packet.
//!
//! Each packet is one wire segment (a TSO super-packet appears as the segments the emulator cut
//! it into), its first `SNAPLEN` bytes, with its checksums filled in as the NIC that checksum
//! offload leaves them to would. Packets that belong to no flow are forwarded but, as in the
//! records, not captured.
//!
//! Memory stays bounded: the path threads append blocks to a shared buffer and the run's main
//! thread swaps it out and writes it every time it wakes (every ≤ 20 ms). The file is written
//! under a temporary name beside the destination and renamed only when the run completed, so
//! an interrupted or failed run leaves no file that looks complete.

use crate::tun::{VnetHdr, VNET_F_NEEDS_CSUM, VNET_HDR_LEN};
use cclab_core::pcapng;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Bytes kept of each packet: every header (IPv4 with options, TCP with SACK blocks, UDP and
/// cclab's 24-byte header) and the start of the payload.
pub const SNAPLEN: usize = 128;

/// Enhanced packet blocks waiting for the main thread, and how many packets were captured.
#[derive(Default)]
pub(crate) struct Tap {
    blocks: Vec<u8>,
    packets: u64,
    scratch: Vec<u8>,
}

/// The tap the path threads share (one lock per captured packet, uncontended with the default
/// single path thread).
pub(crate) type SharedTap = Mutex<Tap>;

impl Tap {
    /// Captures one packet as it is in a path's buffer (virtio header, then the IP packet) at
    /// `time_ns` of the run.
    pub fn packet(&mut self, time_ns: u64, slot: &[u8]) {
        let vnet = VnetHdr::parse(slot);
        let ip = &slot[VNET_HDR_LEN..];
        let keep = ip.len().min(SNAPLEN);
        self.scratch.clear();
        self.scratch.extend_from_slice(&ip[..keep]);
        if vnet.flags & VNET_F_NEEDS_CSUM != 0 {
            complete_checksum(&mut self.scratch, ip, &vnet);
        }
        pcapng::push_packet(&mut self.blocks, time_ns, &self.scratch, ip.len() as u32);
        self.packets += 1;
    }

    pub fn packets(&self) -> u64 {
        self.packets
    }
}

/// Fills in the transport checksum that `NEEDS_CSUM` leaves to the device (virtio-net's
/// CHECKSUM_PARTIAL: the field holds the pseudo-header's sum; the device sums from
/// `csum_start` to the end and stores the complement at `csum_start + csum_offset`), in the
/// captured copy `out` of the packet `ip`.
fn complete_checksum(out: &mut [u8], ip: &[u8], vnet: &VnetHdr) {
    let start = vnet.csum_start as usize;
    let field = start + vnet.csum_offset as usize;
    if field + 2 > ip.len() || field + 2 > out.len() {
        return;
    }
    let mut sum: u32 = 0;
    let mut words = ip[start..].chunks_exact(2);
    for w in &mut words {
        sum += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [last] = words.remainder() {
        sum += (*last as u32) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    out[field..field + 2].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// The capture file while the run goes on: a temporary name until `finish` renames it.
pub(crate) struct CaptureFile {
    out: BufWriter<File>,
    tmp: PathBuf,
    dest: PathBuf,
    spare: Vec<u8>,
    done: bool,
}

impl CaptureFile {
    /// Creates `.NAME.partial` beside `dest` and writes the section and interface headers.
    pub fn create(dest: &Path) -> io::Result<CaptureFile> {
        let name = dest.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a file name", dest.display()))
        })?;
        let tmp = dest.with_file_name(format!(".{}.partial", name.to_string_lossy()));
        // The main thread hands over what accumulated since it last woke (≤ 20 ms): 64 KB
        // writes keep the system calls few and the file close behind the run.
        let out = BufWriter::with_capacity(64 << 10, File::create(&tmp)?);
        // From here on, dropping the file (an error below included) removes the temporary.
        let mut file = CaptureFile { out, tmp, dest: dest.into(), spare: Vec::new(), done: false };
        pcapng::write_header(&mut file.out, SNAPLEN as u32, "cclab emulator, senders' TUN device")?;
        Ok(file)
    }

    /// Takes what the path threads captured so far and writes it.
    pub fn drain(&mut self, tap: &SharedTap) -> io::Result<()> {
        {
            let mut t = tap.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut t.blocks, &mut self.spare);
        }
        self.out.write_all(&self.spare)?;
        self.spare.clear();
        Ok(())
    }

    /// Writes the rest, and gives the file its name.
    pub fn finish(mut self, tap: &SharedTap) -> io::Result<()> {
        self.drain(tap)?;
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        std::fs::rename(&self.tmp, &self.dest)?;
        self.done = true;
        Ok(())
    }
}

impl Drop for CaptureFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_left_to_the_device_are_filled_in() {
        // A UDP packet (IP 20 + UDP 8 + 3 bytes) whose checksum field holds the pseudo-header
        // sum, as a kernel with checksum offload hands it over.
        let mut ip = vec![0u8; 31];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&31u16.to_be_bytes());
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[10, 64, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 64, 0, 2]);
        ip[20..22].copy_from_slice(&5000u16.to_be_bytes());
        ip[22..24].copy_from_slice(&40000u16.to_be_bytes());
        ip[24..26].copy_from_slice(&11u16.to_be_bytes());
        ip[28..31].copy_from_slice(b"abc");
        // Pseudo-header: addresses, protocol, UDP length.
        let pseudo: u32 = 0x0a40 + 0x0001 + 0x0a40 + 0x0002 + 17 + 11;
        ip[26..28].copy_from_slice(&(pseudo as u16).to_be_bytes());
        let vnet = VnetHdr { flags: VNET_F_NEEDS_CSUM, csum_start: 20, csum_offset: 6, ..Default::default() };
        let mut slot = vec![0u8; VNET_HDR_LEN];
        vnet.write(&mut slot);
        slot.extend_from_slice(&ip);
        let mut tap = Tap::default();
        tap.packet(42, &slot);
        let mut file = Vec::new();
        pcapng::write_header(&mut file, SNAPLEN as u32, "t").unwrap();
        file.extend_from_slice(&tap.blocks);
        let cap = pcapng::read(&file).unwrap();
        let (t, orig, bytes) = &cap.packets[0];
        assert_eq!((*t, *orig, bytes.len()), (42, 31, 31));
        // The receiver's check: pseudo-header + UDP header and data (with the checksum) sum
        // to 0xffff.
        let mut sum = pseudo;
        for w in bytes[20..].chunks(2) {
            sum += u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
        assert_eq!(&bytes[28..], b"abc", "the payload is captured unchanged");
    }

    #[test]
    fn an_unfinished_capture_leaves_no_file() {
        let dir = std::env::temp_dir().join(format!("cclab-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dest = dir.join("run.pcapng");
        let tap = SharedTap::default();
        let file = CaptureFile::create(&dest).unwrap();
        assert!(dir.join(".run.pcapng.partial").exists() && !dest.exists());
        drop(file); // a failed or interrupted run
        assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "nothing left behind");
        let file = CaptureFile::create(&dest).unwrap();
        tap.lock().unwrap().packet(7, &[0u8; VNET_HDR_LEN + 20]);
        file.finish(&tap).unwrap();
        let cap = pcapng::read(&std::fs::read(&dest).unwrap()).unwrap();
        assert_eq!((cap.snaplen, cap.packets.len(), cap.packets[0].0), (SNAPLEN as u32, 1, 7));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
