//! IPv4 header reading and software segmentation of TCP super-packets.
//!
//! Only what the emulator needs: the addresses, protocol and ports that match a packet to its
//! flow, TCP's sequence number (to tell retransmissions from new data), and cutting a TSO
//! super-packet into the segments a real NIC would have put on the wire.

use crate::tun::{VnetHdr, VNET_F_NEEDS_CSUM, VNET_GSO_ECN, VNET_GSO_NONE, VNET_GSO_TCPV4, VNET_HDR_LEN};

pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;
const TCP_CWR: u8 = 0x80;
/// Offset of the checksum within the TCP header.
const TCP_CSUM_OFFSET: u16 = 16;

/// What the emulator reads from an IPv4 packet's headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipv4Info {
    /// IP header length in bytes.
    pub ihl: usize,
    /// IP total length (the whole super-packet for TSO).
    pub total_len: usize,
    pub proto: u8,
    pub src: u32,
    pub dst: u32,
    /// Ports, or 0 for protocols without them and for non-first fragments.
    pub sport: u16,
    pub dport: u16,
    /// TCP header length in bytes (0 for other protocols).
    pub tcp_hdr_len: usize,
    pub tcp_seq: u32,
    pub tcp_ack: u32,
    pub tcp_flags: u8,
}

impl Ipv4Info {
    /// Payload bytes of a TCP packet (0 for other protocols).
    pub fn tcp_payload(&self) -> usize {
        if self.proto == PROTO_TCP {
            self.total_len.saturating_sub(self.ihl + self.tcp_hdr_len)
        } else {
            0
        }
    }
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}
fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// TCPOPT_TIMESTAMP and its length (RFC 7323 §3).
const TCPOPT_TIMESTAMP: u8 = 8;
const TCPOLEN_TIMESTAMP: usize = 10;

/// The TCP timestamp option's TSval of a packet `info` describes, if it carries one: the
/// sending host's clock when the segment left its TCP (Linux: milliseconds of its monotonic
/// clock, plus a per-connection offset).
pub fn tcp_tsval(ip: &[u8], info: &Ipv4Info) -> Option<u32> {
    let opts = ip.get(info.ihl + 20..info.ihl + info.tcp_hdr_len)?;
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return None,
            1 => i += 1,
            kind => {
                let len = *opts.get(i + 1)? as usize;
                if len < 2 {
                    return None;
                }
                if kind == TCPOPT_TIMESTAMP && len == TCPOLEN_TIMESTAMP {
                    return opts.get(i + 2..i + 6).map(|b| be32(b, 0));
                }
                i += len;
            }
        }
    }
    None
}

/// Reads an IPv4 packet's headers; `None` for anything that is not well-formed IPv4.
pub fn parse_ipv4(p: &[u8]) -> Option<Ipv4Info> {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return None;
    }
    let ihl = (p[0] & 0x0f) as usize * 4;
    let total_len = be16(p, 2) as usize;
    if ihl < 20 || total_len < ihl || total_len > p.len() {
        return None;
    }
    let mut info = Ipv4Info { ihl, total_len, proto: p[9], src: be32(p, 12), dst: be32(p, 16), ..Default::default() };
    let first_fragment = be16(p, 6) & 0x1fff == 0;
    let l4 = &p[ihl..total_len];
    match info.proto {
        PROTO_TCP if first_fragment && l4.len() >= 20 => {
            info.sport = be16(l4, 0);
            info.dport = be16(l4, 2);
            info.tcp_seq = be32(l4, 4);
            info.tcp_ack = be32(l4, 8);
            info.tcp_hdr_len = (l4[12] >> 4) as usize * 4;
            info.tcp_flags = l4[13];
            if info.tcp_hdr_len < 20 || info.tcp_hdr_len > l4.len() {
                return None;
            }
        }
        PROTO_UDP if first_fragment && l4.len() >= 8 => {
            info.sport = be16(l4, 0);
            info.dport = be16(l4, 2);
        }
        _ => {}
    }
    Some(info)
}

/// Ones'-complement sum of 16-bit words, not yet folded.
fn sum16(b: &[u8], mut acc: u32) -> u32 {
    let mut chunks = b.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u32) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Recomputes the IPv4 header checksum in place.
fn fix_ip_checksum(ip: &mut [u8], ihl: usize) {
    ip[10] = 0;
    ip[11] = 0;
    let c = !fold(sum16(&ip[..ihl], 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

/// The TCP pseudo-header sum, folded but not complemented: what the checksum field holds while
/// the rest of the checksum is left to "hardware" (CHECKSUM_PARTIAL).
fn pseudo_header_sum(src: u32, dst: u32, proto: u8, l4_len: usize) -> u16 {
    let acc = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + proto as u32 + l4_len as u32;
    fold(acc)
}

/// Whether the packet is a TCP super-packet the emulator must cut into segments. (Only TSO is
/// enabled on the devices, so no other GSO type reaches us.)
fn is_tcp_gso(vnet: &VnetHdr, info: &Ipv4Info) -> bool {
    vnet.gso_type & !VNET_GSO_ECN == VNET_GSO_TCPV4 && info.proto == PROTO_TCP && vnet.gso_size > 0
}

/// How many wire packets a packet read from the TUN stands for.
pub fn segment_count(vnet: &VnetHdr, info: &Ipv4Info) -> usize {
    if is_tcp_gso(vnet, info) {
        info.tcp_payload().div_ceil(vnet.gso_size as usize).max(1)
    } else {
        1
    }
}

/// Whether segment `k` of the `n` that TCP packet `info` is cut into carries PSH: the
/// packet's, on its last segment only (`write_segment`).
pub fn tcp_segment_push(info: &Ipv4Info, k: usize, n: usize) -> bool {
    info.tcp_flags & TCP_PSH != 0 && k + 1 == n
}

/// Sequence number and payload length of wire segment `k` of `n` of a TCP packet.
pub fn tcp_segment_range(vnet: &VnetHdr, info: &Ipv4Info, k: usize, n: usize) -> (u32, u32) {
    let total = info.tcp_payload();
    if n == 1 || !is_tcp_gso(vnet, info) {
        return (info.tcp_seq, total as u32);
    }
    let mss = vnet.gso_size as usize;
    let lo = (k * mss).min(total);
    let hi = ((k + 1) * mss).min(total);
    (info.tcp_seq.wrapping_add(lo as u32), (hi - lo) as u32)
}

/// Writes wire segment `k` (of `n`) of the packet `pkt` read with header `vnet`, as a virtio
/// header plus IPv4 packet, into `out`; returns the bytes written (header included).
///
/// A packet that is not a TCP super-packet is copied unchanged with its own header.
/// Otherwise segment k gets the headers of the super-packet with the IP total length, IP id
/// (+k), TCP sequence number (+k·gso_size) and flags adjusted as a NIC does (FIN and PSH only
/// on the last segment, CWR only on the first), and asks for checksum completion.
pub fn write_segment(vnet: &VnetHdr, info: &Ipv4Info, pkt: &[u8], k: usize, n: usize, out: &mut [u8]) -> usize {
    if !is_tcp_gso(vnet, info) {
        out[..VNET_HDR_LEN].copy_from_slice(&pkt_vnet_bytes(vnet));
        out[VNET_HDR_LEN..VNET_HDR_LEN + info.total_len].copy_from_slice(&pkt[..info.total_len]);
        return VNET_HDR_LEN + info.total_len;
    }
    let hdrs = info.ihl + info.tcp_hdr_len;
    let mss = vnet.gso_size as usize;
    let payload = &pkt[hdrs..info.total_len];
    let lo = (k * mss).min(payload.len());
    let hi = ((k + 1) * mss).min(payload.len());
    let seg_len = hdrs + (hi - lo);
    let hdr = VnetHdr {
        flags: VNET_F_NEEDS_CSUM,
        gso_type: VNET_GSO_NONE,
        hdr_len: 0,
        gso_size: 0,
        csum_start: info.ihl as u16,
        csum_offset: TCP_CSUM_OFFSET,
    };
    hdr.write(&mut out[..VNET_HDR_LEN]);
    // The headers are made on the stack and stored once: the slot's lines may be cold (a
    // store does not wait for them; a load of a field just stored there would).
    let mut head = [0u8; MAX_HDRS];
    let ip = &mut head[..hdrs];
    ip.copy_from_slice(&pkt[..hdrs]);
    ip[2..4].copy_from_slice(&(seg_len as u16).to_be_bytes());
    let id = be16(pkt, 4).wrapping_add(k as u16);
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    fix_ip_checksum(ip, info.ihl);
    let tcp = &mut ip[info.ihl..];
    let seq = info.tcp_seq.wrapping_add((k * mss) as u32);
    tcp[4..8].copy_from_slice(&seq.to_be_bytes());
    let mut flags = info.tcp_flags;
    if k + 1 < n {
        flags &= !(TCP_FIN | TCP_PSH);
    }
    if k > 0 {
        flags &= !TCP_CWR;
    }
    tcp[13] = flags;
    let pseudo = pseudo_header_sum(info.src, info.dst, PROTO_TCP, seg_len - info.ihl);
    tcp[16..18].copy_from_slice(&pseudo.to_be_bytes());
    let wire = &mut out[VNET_HDR_LEN..VNET_HDR_LEN + seg_len];
    wire[..hdrs].copy_from_slice(ip);
    wire[hdrs..].copy_from_slice(&payload[lo..hi]);
    VNET_HDR_LEN + seg_len
}

/// The most IP + TCP header bytes a packet has (each header's length field: 15 words).
const MAX_HDRS: usize = 2 * 60;

/// Largest IP packet a merged write may make (the IPv4 total-length field).
const MAX_MERGED: usize = 65_535;

/// A TCP segment that may be merged with the segments after it into one GSO packet on its way
/// to the receiver: the receiving kernel then takes the run in once, as it does the packets
/// that its NIC's GRO merged (net/ipv4/tcp_offload.c, tcp_gro_receive, merges only segments of
/// one connection with contiguous sequence numbers and identical headers, flags at most
/// ACK and PSH, and ends a merge at a PSH; the same rules apply here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mergeable {
    /// IP + TCP header bytes, and payload bytes.
    pub hdrs: usize,
    pub payload: usize,
    pub seq: u32,
    pub ihl: usize,
    /// Whether the segment has PSH (a merge ends with it).
    pub push: bool,
}

/// The merge view of IP packet `ip`, or None if it is not a mergeable TCP segment (no payload,
/// SYN/FIN/RST/URG/CWR/ECE, IP options or fragments, a CE mark in the making: anything GRO
/// would also pass up alone).
pub fn mergeable(ip: &[u8]) -> Option<Mergeable> {
    let info = parse_ipv4(ip)?;
    let payload = info.tcp_payload();
    let frag = be16(ip, 6) & 0x3fff; // MF or an offset
    if info.proto != PROTO_TCP || info.ihl != 20 || payload == 0 || frag != 0 || info.total_len != ip.len() {
        return None;
    }
    if info.tcp_flags & !(TCP_ACK | TCP_PSH) != 0 || info.tcp_flags & TCP_ACK == 0 {
        return None;
    }
    Some(Mergeable {
        hdrs: info.ihl + info.tcp_hdr_len,
        payload,
        seq: info.tcp_seq,
        ihl: info.ihl,
        push: info.tcp_flags & TCP_PSH != 0,
    })
}

/// Whether segment `b` can follow the run that `a` heads and `last` ends: the run has no PSH,
/// all its segments so far carry the head's full payload (the GSO size), `b` carries at most
/// that, continues the sequence space, fits in one IP packet, and has the same headers as `a`
/// except the fields a segmentation changes (IP length, id, checksum; TCP sequence number,
/// PSH, checksum).
pub fn can_follow(
    a_ip: &[u8],
    a: &Mergeable,
    last: &Mergeable,
    total_payload: usize,
    b_ip: &[u8],
    b: &Mergeable,
) -> bool {
    if last.push || last.payload != a.payload || b.payload > a.payload || b.hdrs != a.hdrs {
        return false;
    }
    if b.seq != last.seq.wrapping_add(last.payload as u32) || a.hdrs + total_payload + b.payload > MAX_MERGED {
        return false;
    }
    let (ta, tb) = (&a_ip[a.ihl..a.hdrs], &b_ip[b.ihl..b.hdrs]);
    // IP: version/IHL/TOS, flags+offset/TTL/protocol, addresses.
    a_ip[..2] == b_ip[..2]
        && a_ip[6..10] == b_ip[6..10]
        && a_ip[12..20] == b_ip[12..20]
        // TCP: ports, ACK number/data offset, window, urgent pointer and options.
        && ta[..4] == tb[..4]
        && ta[8..13] == tb[8..13]
        && ta[14..16] == tb[14..16]
        && ta[18..] == tb[18..]
}

/// Writes the run of segments `segs` (IP packets, each `mergeable`, each able to follow the
/// ones before) as one virtio header plus one IP packet into `out`, which it resizes: the
/// head's headers, the payloads in order, a TCPv4 GSO header with the head's payload as the
/// segment size, and checksum completion asked of the receiving kernel. PSH is set if the
/// last segment had it. Returns the bytes to write. The path writes the same bytes as a
/// vectored write (`merged_headers`, then the payloads where they lie); this whole-buffer form
/// is the tests' reference for it.
#[cfg(test)]
pub fn write_merged<'a>(segs: impl Iterator<Item = &'a [u8]> + Clone, head: &Mergeable, out: &mut Vec<u8>) -> usize {
    let (mut payload, mut push, mut head_ip) = (0, false, None);
    for ip in segs.clone() {
        let m = mergeable(ip).expect("only mergeable segments are merged");
        head_ip.get_or_insert(ip);
        payload += m.payload;
        push = m.push;
    }
    merged_headers(head_ip.expect("at least one segment"), head, payload, push, out);
    for ip in segs {
        out.extend_from_slice(&ip[head.hdrs..]);
    }
    out.len()
}

/// The virtio header and IP + TCP headers of the merged packet whose head segment is `head_ip`
/// (viewed as `head`), carrying `payload` bytes in all and PSH if `push`, into `out` (cleared
/// first): what a vectored write sends before the segments' payloads, taken where they lie.
pub fn merged_headers(head_ip: &[u8], head: &Mergeable, payload: usize, push: bool, out: &mut Vec<u8>) {
    out.clear();
    out.resize(VNET_HDR_LEN, 0);
    out.extend_from_slice(&head_ip[..head.hdrs]);
    let total = head.hdrs + payload;
    let hdr = VnetHdr {
        flags: VNET_F_NEEDS_CSUM,
        gso_type: VNET_GSO_TCPV4,
        hdr_len: head.hdrs as u16,
        gso_size: head.payload as u16,
        csum_start: head.ihl as u16,
        csum_offset: TCP_CSUM_OFFSET,
    };
    hdr.write(&mut out[..VNET_HDR_LEN]);
    let ip = &mut out[VNET_HDR_LEN..];
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    fix_ip_checksum(ip, head.ihl);
    let (src, dst) = (be32(ip, 12), be32(ip, 16));
    let tcp = &mut ip[head.ihl..];
    if push {
        tcp[13] |= TCP_PSH;
    }
    let pseudo = pseudo_header_sum(src, dst, PROTO_TCP, total - head.ihl);
    tcp[16..18].copy_from_slice(&pseudo.to_be_bytes());
}

fn pkt_vnet_bytes(vnet: &VnetHdr) -> [u8; VNET_HDR_LEN] {
    let mut b = [0u8; VNET_HDR_LEN];
    vnet.write(&mut b);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP/IPv4 packet with `payload` bytes, 12 bytes of TCP options (as Linux with
    /// timestamps), sequence number `seq` and the given flags.
    fn tcp_packet(payload: usize, seq: u32, flags: u8) -> Vec<u8> {
        let tcp_hdr = 32;
        let total = 20 + tcp_hdr + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[4..6].copy_from_slice(&100u16.to_be_bytes());
        p[6] = 0x40; // DF
        p[8] = 64;
        p[9] = PROTO_TCP;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        fix_ip_checksum(&mut p, 20);
        let t = &mut p[20..];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[2..4].copy_from_slice(&5001u16.to_be_bytes());
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[12] = ((tcp_hdr / 4) as u8) << 4;
        t[13] = flags;
        for (i, b) in p[20 + tcp_hdr..].iter_mut().enumerate() {
            *b = i as u8;
        }
        p
    }

    #[test]
    fn reads_the_timestamp_option() {
        // Linux's data segments: NOP, NOP, TS (TSval, TSecr).
        let mut p = tcp_packet(100, 7, 0x10);
        p[40..44].copy_from_slice(&[1, 1, TCPOPT_TIMESTAMP, TCPOLEN_TIMESTAMP as u8]);
        p[44..48].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        let i = parse_ipv4(&p).unwrap();
        assert_eq!(tcp_tsval(&p, &i), Some(0xdead_beef));
        // Another option first (MSS, 4 bytes), then the timestamp: still found.
        p[40..44].copy_from_slice(&[2, 4, 5, 0xb4]);
        p[44..46].copy_from_slice(&[TCPOPT_TIMESTAMP, TCPOLEN_TIMESTAMP as u8]);
        p[46..50].copy_from_slice(&42u32.to_be_bytes());
        assert_eq!(tcp_tsval(&p, &i), Some(42));
        // No option (end of list), or a malformed length: none.
        p[40] = 0;
        assert_eq!(tcp_tsval(&p, &i), None);
        p[40..42].copy_from_slice(&[3, 0]);
        assert_eq!(tcp_tsval(&p, &i), None);
    }

    #[test]
    fn parses_tcp_and_rejects_garbage() {
        let p = tcp_packet(100, 7, 0x18);
        let i = parse_ipv4(&p).unwrap();
        assert_eq!((i.ihl, i.total_len, i.proto, i.sport, i.dport, i.tcp_seq), (20, 152, 6, 40000, 5001, 7));
        assert_eq!(i.tcp_payload(), 100);
        assert!(parse_ipv4(&[0x60; 40]).is_none(), "IPv6 is not IPv4");
        assert!(parse_ipv4(&p[..30]).is_none(), "truncated");
    }

    #[test]
    fn splits_a_super_packet_like_a_nic() {
        let mss = 1448;
        let p = tcp_packet(3 * mss + 100, u32::MAX - 10, TCP_PSH | TCP_FIN | TCP_CWR | 0x10);
        let info = parse_ipv4(&p).unwrap();
        let vnet = VnetHdr { gso_type: VNET_GSO_TCPV4, gso_size: mss as u16, flags: 1, ..Default::default() };
        let n = segment_count(&vnet, &info);
        assert_eq!(n, 4);
        let mut seen_payload = Vec::new();
        for k in 0..n {
            let mut out = [0u8; 2048];
            let len = write_segment(&vnet, &info, &p, k, n, &mut out);
            let h = VnetHdr::parse(&out);
            assert_eq!((h.flags, h.gso_type, h.csum_start, h.csum_offset), (VNET_F_NEEDS_CSUM, 0, 20, 16));
            let ip = &out[VNET_HDR_LEN..len];
            let s = parse_ipv4(ip).unwrap();
            assert_eq!(s.total_len, ip.len());
            assert_eq!(fold(sum16(&ip[..20], 0)), 0xffff, "IP checksum verifies");
            assert_eq!(s.tcp_seq, (u32::MAX - 10).wrapping_add((k * mss) as u32));
            assert_eq!(be16(ip, 4), 100 + k as u16);
            let last = k + 1 == n;
            assert_eq!(s.tcp_flags & (TCP_FIN | TCP_PSH) != 0, last);
            assert_eq!(s.tcp_flags & TCP_CWR != 0, k == 0);
            assert_eq!(s.tcp_payload(), if last { 100 } else { mss });
            // The partial checksum plus the segment's TCP bytes verify once completed.
            let tcp = &ip[20..];
            let mut full = tcp.to_vec();
            full[16] = 0;
            full[17] = 0;
            let csum = !fold(sum16(&full, pseudo_header_sum(s.src, s.dst, 6, tcp.len()) as u32));
            full[16..18].copy_from_slice(&csum.to_be_bytes());
            assert_eq!(fold(sum16(&full, pseudo_header_sum(s.src, s.dst, 6, tcp.len()) as u32)), 0xffff);
            seen_payload.extend_from_slice(&tcp[32..]);
        }
        assert_eq!(seen_payload, p[52..].to_vec(), "payload reassembles in order");
    }

    #[test]
    fn plain_packets_pass_through() {
        let p = tcp_packet(10, 1, 0x10);
        let info = parse_ipv4(&p).unwrap();
        let vnet = VnetHdr::default();
        assert_eq!(segment_count(&vnet, &info), 1);
        let mut out = [0u8; 256];
        let len = write_segment(&vnet, &info, &p, 0, 1, &mut out);
        assert_eq!(&out[VNET_HDR_LEN..len], &p[..]);
    }

    #[test]
    fn a_run_of_segments_merges_back_into_one_gso_packet() {
        let mss = 1448;
        // Cut a super-packet of 3 full segments and a short one, then merge them again.
        let p = tcp_packet(3 * mss + 100, 1000, TCP_PSH | TCP_ACK);
        let info = parse_ipv4(&p).unwrap();
        let vnet = VnetHdr { gso_type: VNET_GSO_TCPV4, gso_size: mss as u16, flags: 1, ..Default::default() };
        let segs: Vec<Vec<u8>> = (0..4)
            .map(|k| {
                let mut out = [0u8; 2048];
                let len = write_segment(&vnet, &info, &p, k, 4, &mut out);
                out[VNET_HDR_LEN..len].to_vec()
            })
            .collect();
        let m: Vec<Mergeable> = segs.iter().map(|s| mergeable(s).unwrap()).collect();
        assert!(!m[0].push && m[3].push, "PSH only on the last segment");
        let mut total = m[0].payload;
        for k in 1..4 {
            assert!(can_follow(&segs[0], &m[0], &m[k - 1], total, &segs[k], &m[k]), "segment {k}");
            total += m[k].payload;
        }
        // Out of order, after a short segment, or after a PSH: no.
        assert!(!can_follow(&segs[0], &m[0], &m[0], m[0].payload, &segs[2], &m[2]));
        assert!(!can_follow(&segs[0], &m[0], &m[3], total, &segs[1], &m[1]));
        // Another window value (a window update in between): no.
        let mut other = segs[1].clone();
        other[20 + 15] ^= 1;
        assert!(!can_follow(&segs[0], &m[0], &m[0], m[0].payload, &other, &mergeable(&other).unwrap()));
        // Not mergeable at all: no payload, or FIN.
        assert!(mergeable(&tcp_packet(0, 5, TCP_ACK)).is_none());
        assert!(mergeable(&tcp_packet(10, 5, TCP_ACK | TCP_FIN)).is_none());

        let mut out = Vec::new();
        let n = write_merged(segs.iter().map(|s| s.as_slice()), &m[0], &mut out);
        let h = VnetHdr::parse(&out);
        assert_eq!(
            (h.gso_type, h.gso_size as usize, h.hdr_len, h.csum_start, h.flags),
            (VNET_GSO_TCPV4, mss, 52, 20, 1)
        );
        let ip = &out[VNET_HDR_LEN..n];
        assert_eq!(fold(sum16(&ip[..20], 0)), 0xffff, "IP checksum verifies");
        // The merged packet is the original super-packet again, but for the IP id (the head's)
        // and the checksum field (the partial sum for the receiving kernel to complete).
        let back = parse_ipv4(ip).unwrap();
        assert_eq!((back.total_len, back.tcp_seq, back.tcp_flags), (p.len(), 1000, TCP_PSH | TCP_ACK));
        assert_eq!(&ip[52..], &p[52..], "payload in order");
        let s = parse_ipv4(&segs[0]).unwrap();
        assert_eq!(be16(&ip[20..], 16), pseudo_header_sum(s.src, s.dst, PROTO_TCP, ip.len() - 20));
    }
}
