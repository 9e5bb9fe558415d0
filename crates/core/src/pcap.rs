//! The packet log as a pcapng capture (`--pcap`, written through `pcapng`), for Wireshark,
//! tshark, tcptrace: what a capture on the senders' host would show. Every data packet appears when it was sent (dropped ones
//! included: they left the sender), every delivered ACK when it reached the sender; a dropped
//! ACK never did, so it is absent.
//!
//! Each packet is a synthetic IPv4 + TCP header of 52 bytes, as cclab counts headers (20 of IP,
//! 32 of TCP with the timestamp option, `scenario::PACKET_BYTES − MSS`); the payload is not
//! captured (the record's `orig_len` is the packet's size on the wire, as a capture with a
//! 52-byte snap length writes). A data segment carries the record's `seq` as its sequence
//! number, an ACK the record's `seq` as its acknowledgment number, so Wireshark's TCP sequence
//! analysis (retransmissions, duplicate ACKs, bytes in flight) works. Flow `i` is
//! 10.0.0.x:port → 10.255.0.1:5201, the sender's address and port counting up with `i`.
//! A data segment carries PSH where the table's `push` column says it did (the simulator's
//! marks, crates/transport's `push`; a log without the column, written before it existed,
//! marks every data segment). SACK blocks, other flags and the handshake are not modelled.

use crate::pcapng;
use crate::record::{Fate, PacketKind, NEVER};
use crate::scenario::{MSS, PACKET_BYTES};
use std::io::{self, Write};

/// Bytes of headers each captured packet holds.
pub const CAPTURED: usize = (PACKET_BYTES - MSS) as usize;
const IP_HEADER: usize = 20;
const TCP_HEADER: usize = CAPTURED - IP_HEADER;
/// The receivers' address (10.255.0.1) and port (iperf's).
const RECEIVER_ADDR: u32 = 0x0aff_0001;
const RECEIVER_PORT: u16 = 5201;
/// Senders' ports run from this, one per flow, this many before the address moves on.
const FIRST_PORT: u32 = 10_000;
const PORTS_PER_ADDR: u32 = 50_000;

const TCP_ACK: u8 = 0x10;
const TCP_PSH: u8 = 0x08;

/// The packet table's columns a capture needs, all of one length (`analyze`'s layout).
#[derive(Clone, Copy, Debug)]
pub struct CaptureColumns<'a> {
    /// Unique and counting up in the order packets were created (both engines): the order of
    /// packets sent, or arrived, at the same nanosecond.
    pub uid: &'a [u64],
    pub flow: &'a [u32],
    pub kind: &'a [u8],
    pub size: &'a [u32],
    pub sent: &'a [u64],
    pub arrived: &'a [u64],
    pub fate: &'a [u8],
    pub seq: &'a [u32],
    /// Which data segments carried PSH; None: every one (a log from before the column).
    pub push: Option<&'a [bool]>,
}

impl CaptureColumns<'_> {
    fn len(&self) -> Result<usize, String> {
        let n = self.flow.len();
        let lens = [
            ("uid", self.uid.len()),
            ("kind", self.kind.len()),
            ("size", self.size.len()),
            ("sent_ns", self.sent.len()),
            ("arrived_ns", self.arrived.len()),
            ("fate", self.fate.len()),
            ("seq", self.seq.len()),
            ("push", self.push.map_or(n, <[bool]>::len)),
        ];
        match lens.iter().find(|(_, l)| *l != n) {
            Some((name, l)) => Err(format!("column `{name}` has {l} rows, `flow` has {n}")),
            None => Ok(n),
        }
    }
}

/// The sender's address and port of flow `flow`.
fn sender_of(flow: u32) -> (u32, u16) {
    (0x0a00_0001 + flow / PORTS_PER_ADDR, (FIRST_PORT + flow % PORTS_PER_ADDR) as u16)
}

/// The Internet checksum (RFC 1071) of `bytes`.
fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The 52 captured bytes of one packet.
fn headers(flow: u32, data: bool, push: bool, size: u32, seq: u32, time: u64) -> [u8; CAPTURED] {
    let mut h = [0u8; CAPTURED];
    let (sender, sport) = sender_of(flow);
    let (src, dst, sp, dp) = if data {
        (sender, RECEIVER_ADDR, sport, RECEIVER_PORT)
    } else {
        (RECEIVER_ADDR, sender, RECEIVER_PORT, sport)
    };
    // IPv4 (RFC 791): version 4, 5 words, total length, DF, TTL 64, TCP.
    h[0] = 0x45;
    h[2..4].copy_from_slice(&(size.min(u16::MAX as u32) as u16).to_be_bytes());
    h[6] = 0x40;
    h[8] = 64;
    h[9] = 6;
    h[12..16].copy_from_slice(&src.to_be_bytes());
    h[16..20].copy_from_slice(&dst.to_be_bytes());
    let sum = checksum(&h[..IP_HEADER]);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    // TCP (RFC 9293 §3.1): the receiver sends no data, so its sequence number stays 0 and the
    // sender acknowledges nothing beyond it.
    let t = &mut h[IP_HEADER..];
    t[0..2].copy_from_slice(&sp.to_be_bytes());
    t[2..4].copy_from_slice(&dp.to_be_bytes());
    let (seq_field, ack_field) = if data { (seq, 0) } else { (0, seq) };
    t[4..8].copy_from_slice(&seq_field.to_be_bytes());
    t[8..12].copy_from_slice(&ack_field.to_be_bytes());
    t[12] = ((TCP_HEADER / 4) as u8) << 4;
    t[13] = if data && push && size as usize > CAPTURED { TCP_ACK | TCP_PSH } else { TCP_ACK };
    t[14..16].copy_from_slice(&u16::MAX.to_be_bytes());
    // Options: NOP, NOP, timestamps (RFC 7323 §3: kind 8, length 10) with TSval in µs.
    t[20] = 1;
    t[21] = 1;
    t[22] = 8;
    t[23] = 10;
    t[24..28].copy_from_slice(&((time / 1000) as u32).to_be_bytes());
    h
}

/// Writes the capture of `cols` to `out`; returns the number of packets written.
pub fn write(out: impl Write, cols: &CaptureColumns) -> io::Result<usize> {
    let n = cols.len().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // (time, uid, row): data when sent, delivered ACKs when they arrived; ties in the order
    // the packets were made (the table's order is the order their fates were known, so two
    // segments sent at once may be logged the other way round).
    let mut order: Vec<(u64, u64, usize)> = (0..n)
        .filter_map(|i| match cols.kind[i] {
            k if k == PacketKind::Data as u8 => Some((cols.sent[i], cols.uid[i], i)),
            k if k == PacketKind::Ack as u8 && cols.fate[i] == Fate::Delivered as u8 && cols.arrived[i] != NEVER => {
                Some((cols.arrived[i], cols.uid[i], i))
            }
            _ => None,
        })
        .collect();
    order.sort_unstable();
    let mut out = io::BufWriter::new(out);
    pcapng::write_header(&mut out, CAPTURED as u32, "cclab packet log (synthetic headers)")?;
    let mut block = Vec::with_capacity(pcapng::packet_block_len(CAPTURED));
    for &(time, _, i) in &order {
        let data = cols.kind[i] == PacketKind::Data as u8;
        let push = cols.push.is_none_or(|p| p[i]);
        let size = cols.size[i];
        let captured = (size as usize).min(CAPTURED);
        block.clear();
        pcapng::push_packet(
            &mut block,
            time,
            &headers(cols.flow[i], data, push, size, cols.seq[i], time)[..captured],
            size,
        );
        out.write_all(&block)?;
    }
    out.flush()?;
    Ok(order.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn a_capture_shows_data_when_sent_and_acks_when_they_arrive() {
        let d = PacketKind::Data as u8;
        let a = PacketKind::Ack as u8;
        let (ok, dropped) = (Fate::Delivered as u8, Fate::DropQueue as u8);
        // Data at offsets 0 and 1448 (the second dropped), the ACK of the first, a dropped ACK.
        let cols = CaptureColumns {
            uid: &[0, 1, 2, 3],
            flow: &[0, 0, 0, 1],
            kind: &[d, d, a, a],
            size: &[1500, 1500, 52, 52],
            sent: &[1_000, 2_000, 5_000, 6_000],
            arrived: &[4_000, NEVER, 1_500_000_007, NEVER],
            fate: &[ok, dropped, ok, dropped],
            seq: &[0, 1448, 1448, 0],
            push: Some(&[false, true, false, false]),
        };
        let mut bytes = Vec::new();
        assert_eq!(write(&mut bytes, &cols).unwrap(), 3, "the dropped ACK never reached the sender");
        let cap = pcapng::read(&bytes).unwrap();
        assert_eq!((cap.linktype, cap.snaplen, cap.tsresol), (pcapng::LINKTYPE_RAW, CAPTURED as u32, 9));
        let rec = |k: usize| &cap.packets[k];
        assert_eq!(cap.packets.len(), 3);
        // Both data packets (the dropped one too) at their send times, then the ACK at its
        // arrival, to the nanosecond (a second and a half in: the 64-bit timestamp's upper
        // word is not needed, the lower carries it).
        assert_eq!([rec(0).0, rec(1).0, rec(2).0], [1_000, 2_000, 1_500_000_007]);
        assert_eq!((rec(0).2.len(), rec(0).1), (52, 1500), "headers captured, size on the wire");
        let (ip, tcp) = (&rec(1).2[..20], &rec(1).2[20..]);
        assert_eq!(checksum(ip), 0, "a valid IPv4 header checksums to zero");
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 1500);
        assert_eq!(be32(tcp, 4), 1448, "the data's sequence number is its stream offset");
        assert_eq!((rec(0).2[20 + 13], tcp[13]), (TCP_ACK, TCP_ACK | TCP_PSH), "PSH as the table says");
        // Payload = total length − 20 − 32 = 1448 = MSS: the next segment's sequence number
        // follows on, so Wireshark sees no gap.
        assert_eq!((tcp[12] >> 4) as usize * 4, 32);
        let ack = &rec(2).2[20..];
        assert_eq!((be32(ack, 4), be32(ack, 8)), (0, 1448), "the ACK's acknowledgment number");
        assert_eq!(ack[13], TCP_ACK);
        // The ACK runs the other way, between the same ports.
        assert_eq!(&rec(2).2[16..20], &rec(0).2[12..16]);
        assert_eq!(&ack[0..2], &rec(0).2[20 + 2..20 + 4]);
    }

    #[test]
    fn times_beyond_four_seconds_use_the_upper_word() {
        // 2^32 ns is 4.3 s: a timestamp past it must survive the split into two words.
        let t = 3_600_000_000_123u64;
        let cols = CaptureColumns {
            uid: &[0],
            flow: &[0],
            kind: &[PacketKind::Data as u8],
            size: &[40],
            sent: &[t],
            arrived: &[NEVER],
            fate: &[Fate::DropLoss as u8],
            seq: &[7],
            push: None,
        };
        let mut bytes = Vec::new();
        write(&mut bytes, &cols).unwrap();
        let cap = pcapng::read(&bytes).unwrap();
        assert_eq!(cap.packets[0].0, t);
        // A packet smaller than the headers is captured whole (its original length).
        assert_eq!((cap.packets[0].1, cap.packets[0].2.len()), (40, 40));
    }

    #[test]
    fn packets_of_the_same_nanosecond_keep_their_sending_order() {
        // Two segments sent at once, logged the other way round (the second's fate was known
        // first: it was dropped on arrival at the queue).
        let d = PacketKind::Data as u8;
        let cols = CaptureColumns {
            uid: &[8, 7],
            flow: &[0, 0],
            kind: &[d, d],
            size: &[1500, 1500],
            sent: &[5, 5],
            arrived: &[NEVER, 9],
            fate: &[Fate::DropQueue as u8, Fate::Delivered as u8],
            seq: &[1448, 0],
            push: None,
        };
        let mut bytes = Vec::new();
        write(&mut bytes, &cols).unwrap();
        let seqs: Vec<u32> = pcapng::read(&bytes).unwrap().packets.iter().map(|p| be32(&p.2, 24)).collect();
        assert_eq!(seqs, [0, 1448]);
    }

    #[test]
    fn flows_get_their_own_ports_and_mismatched_columns_are_refused() {
        assert_eq!(sender_of(0), (0x0a00_0001, 10_000));
        assert_eq!(sender_of(1), (0x0a00_0001, 10_001));
        assert_eq!(sender_of(50_000), (0x0a00_0002, 10_000));
        let cols = CaptureColumns {
            uid: &[0],
            flow: &[0],
            kind: &[],
            size: &[],
            sent: &[],
            arrived: &[],
            fate: &[],
            seq: &[],
            push: None,
        };
        let e = write(Vec::new(), &cols).unwrap_err();
        assert!(e.to_string().contains("`kind` has 0 rows, `flow` has 1"), "{e}");
    }
}
