//! cclab's own controllers on a real path: the simulator's transport (`cclab_transport`, a pure
//! state machine) driven by real time and real UDP sockets, one thread per endpoint.
//!
//! Wire format, after the UDP header (all integers big endian):
//! - data (24 bytes, then `len` payload bytes): `'D'`, flags (bit 0: retransmission, bit 1: PSH), len u16,
//!   packet id u48, stream offset u48, send time u64 (run ns). 20 (IP) + 8 (UDP) + 24 = 52
//!   bytes of headers, exactly the transport's `DATA_HEADER`, so a full packet is 1500 bytes on
//!   the wire in both engines.
//! - ACK: `'A'`, range count, flags (bit 0: receiver feedback follows), 5 bytes padding,
//!   in-order stream bytes u64, largest id u64, one-way delay u64, then three (start, end) id
//!   ranges as u64 pairs; with feedback, its six bytes follow.
//! - SYN (`[transport] handshake`): `'S'`, 7 bytes padding, send time u64, 16 bytes padding;
//!   SYN-ACK: `'Y'`, 7 bytes padding, the SYN's send time echoed u64, 16 bytes padding. 32
//!   bytes after the UDP header, so each is 60 bytes on the wire, as a Linux SYN with its options
//!   (the transport's `SYN_BYTES`).
//!
//! Both ends read the same monotonic clock, so the receiver's one-way-delay echo is exact.

use crate::endpoint::{AppBytes, Stop};
use crate::sys::{wait_readable, Clock, RtDuty};
use crate::topology::RECEIVER_IP;
use cclab_cc::Rng;
use cclab_core::scenario::{FlowSpec, Transport, MSS};
use cclab_engine::{trace_sender, CcTrace, Sampler, SenderView};
use cclab_transport::{
    AckFrame, DataPacket, FeedbackSlot, Receiver, ReceiverConfig, Sender, SenderConfig, ACK_RANGES, DATA_HEADER,
    SYN_BYTES,
};
use nix::sys::socket::{self, setsockopt, sockopt, MsgFlags};
use std::io;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;

const TAG_DATA: u8 = b'D';
const TAG_ACK: u8 = b'A';
const TAG_SYN: u8 = b'S';
const TAG_SYN_ACK: u8 = b'Y';
const UDP_HEADER: usize = 8;
const IP_UDP: usize = 20 + UDP_HEADER;
pub const DATA_HDR: usize = DATA_HEADER as usize - IP_UDP;
const ACK_LEN: usize = 32 + 16 * ACK_RANGES;
/// An ACK carrying a receiver agent's feedback (Sprout's forecast) is this much longer.
const FEEDBACK_LEN: usize = cclab_cc::FEEDBACK_BYTES;
/// Longest wait, so a stop is noticed promptly.
const POLL_NS: u64 = 20_000_000;
/// Socket buffers: a cwnd's worth of packets may leave in one burst.
const SOCKET_BUFFER: usize = 8 << 20;

const _: () = assert!(DATA_HDR == 24, "the data header must fill the transport's 52 header bytes");
/// A SYN or SYN-ACK datagram's length after the UDP header.
const SYN_LEN: usize = SYN_BYTES as usize - IP_UDP;
const _: () = assert!(SYN_LEN == 32);

/// Whether a UDP datagram (from its UDP header on) is a cclab retransmission.
pub fn is_retransmission(udp: &[u8]) -> bool {
    udp.len() > UDP_HEADER + 1 && udp[UDP_HEADER] == TAG_DATA && udp[UDP_HEADER + 1] & 1 != 0
}

/// Whether a cclab data datagram (from its UDP header on) carries PSH (`encode_data`'s bit 1).
pub fn is_push(udp: &[u8]) -> bool {
    udp.len() > UDP_HEADER + 1 && udp[UDP_HEADER] == TAG_DATA && udp[UDP_HEADER + 1] & 2 != 0
}

/// TCP's sequence field for a cclab datagram (from its UDP header on), mod 2^32: a data
/// packet's stream offset, an ACK's cumulative acknowledgment; 0 for anything else.
pub fn sequence_field(udp: &[u8]) -> u32 {
    let Some(body) = udp.get(UDP_HEADER..) else { return 0 };
    match body.first() {
        Some(&TAG_DATA) if body.len() >= 16 => get48(&body[10..16]) as u32,
        Some(&TAG_ACK) if body.len() >= 16 => get64(&body[8..16]) as u32,
        _ => 0,
    }
}

fn put48(b: &mut [u8], v: u64) {
    b.copy_from_slice(&v.to_be_bytes()[2..]);
}
fn get48(b: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x[2..].copy_from_slice(b);
    u64::from_be_bytes(x)
}
fn get64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b.try_into().expect("8 bytes"))
}

/// Writes a data packet's header into `buf` and returns the datagram length.
pub fn encode_data(d: &DataPacket, buf: &mut [u8]) -> usize {
    buf[0] = TAG_DATA;
    // Flags: bit 0 a retransmission, bit 1 PSH (`[transport] push_ack`).
    buf[1] = u8::from(d.retransmission) | u8::from(d.push) << 1;
    buf[2..4].copy_from_slice(&(d.len as u16).to_be_bytes());
    put48(&mut buf[4..10], d.id);
    put48(&mut buf[10..16], d.offset);
    buf[16..24].copy_from_slice(&d.sent.to_be_bytes());
    DATA_HDR + d.len as usize
}

pub fn decode_data(b: &[u8]) -> Option<DataPacket> {
    if b.len() < DATA_HDR || b[0] != TAG_DATA {
        return None;
    }
    let len = u16::from_be_bytes([b[2], b[3]]) as u32;
    Some(DataPacket {
        id: get48(&b[4..10]),
        offset: get48(&b[10..16]),
        len,
        sent: get64(&b[16..24]),
        retransmission: b[1] & 1 != 0,
        push: b[1] & 2 != 0,
    })
}

pub fn encode_ack(a: &AckFrame, buf: &mut [u8]) -> usize {
    buf[..ACK_LEN].fill(0);
    buf[0] = TAG_ACK;
    buf[1] = a.n_ranges;
    buf[2] = u8::from(a.feedback.get().is_some());
    buf[8..16].copy_from_slice(&a.stream_cum.to_be_bytes());
    buf[16..24].copy_from_slice(&a.largest.to_be_bytes());
    buf[24..32].copy_from_slice(&a.one_way_delay.to_be_bytes());
    for (i, (s, e)) in a.ranges.iter().enumerate() {
        buf[32 + 16 * i..40 + 16 * i].copy_from_slice(&s.to_be_bytes());
        buf[40 + 16 * i..48 + 16 * i].copy_from_slice(&e.to_be_bytes());
    }
    match a.feedback.get() {
        Some(fb) => {
            buf[ACK_LEN..ACK_LEN + FEEDBACK_LEN].copy_from_slice(&fb);
            ACK_LEN + FEEDBACK_LEN
        }
        None => ACK_LEN,
    }
}

pub fn decode_ack(b: &[u8]) -> Option<AckFrame> {
    if b.len() < ACK_LEN || b[0] != TAG_ACK || b[1] as usize > ACK_RANGES {
        return None;
    }
    let mut a = AckFrame {
        n_ranges: b[1],
        stream_cum: get64(&b[8..16]),
        largest: get64(&b[16..24]),
        one_way_delay: get64(&b[24..32]),
        ..Default::default()
    };
    for i in 0..ACK_RANGES {
        a.ranges[i] = (get64(&b[32 + 16 * i..40 + 16 * i]), get64(&b[40 + 16 * i..48 + 16 * i]));
    }
    if b[2] & 1 != 0 {
        if b.len() < ACK_LEN + FEEDBACK_LEN {
            return None;
        }
        a.feedback = FeedbackSlot::new(Some(b[ACK_LEN..ACK_LEN + FEEDBACK_LEN].try_into().expect("length checked")));
    }
    Some(a)
}

/// Writes a SYN (`tag` TAG_SYN, `time` its send time) or SYN-ACK (TAG_SYN_ACK, `time` the echo).
fn encode_syn(tag: u8, time: u64, buf: &mut [u8]) -> usize {
    buf[..SYN_LEN].fill(0);
    buf[0] = tag;
    buf[8..16].copy_from_slice(&time.to_be_bytes());
    SYN_LEN
}

fn decode_syn(tag: u8, b: &[u8]) -> Option<u64> {
    (b.len() >= SYN_LEN && b[0] == tag).then(|| get64(&b[8..16]))
}

fn big_buffers(sock: &UdpSocket) -> io::Result<()> {
    setsockopt(sock, sockopt::SndBufForce, &SOCKET_BUFFER)?;
    setsockopt(sock, sockopt::RcvBufForce, &SOCKET_BUFFER)?;
    Ok(())
}

/// The receiver's socket, bound before the run's clock starts (call inside its namespace).
pub fn bind_receiver(port: u16) -> io::Result<UdpSocket> {
    let s = UdpSocket::bind(SocketAddrV4::new(RECEIVER_IP, port))
        .map_err(|e| io::Error::new(e.kind(), format!("binding UDP port {port}: {e}")))?;
    big_buffers(&s)?;
    s.set_nonblocking(true)?;
    Ok(s)
}

/// Receives data, acknowledges it (immediately or delayed, as the flow says) until stopped.
pub fn receive(
    sock: UdpSocket,
    spec: &FlowSpec,
    transport: &Transport,
    clock: Clock,
    rt: Option<i32>,
    stop: &Stop,
) -> io::Result<AppBytes> {
    let mut duty = RtDuty::start(rt, &clock);
    // Two-sided schemes (Sprout) run their receiver agent here, as in the simulator.
    let agent = cclab_cc::agent::build(spec, MSS).map_err(io::Error::other)?;
    let mut rx = Receiver::new(ReceiverConfig::for_flow(spec, transport)).with_agent(agent);
    let mut got = AppBytes::default();
    let mut buf = vec![0u8; 65536];
    let mut out = [0u8; ACK_LEN + FEEDBACK_LEN];
    let mut peer = None;
    while !stop.now() {
        let now = clock.now();
        let mut progressed = false;
        loop {
            match sock.recv_from(&mut buf) {
                Ok((n, from)) => {
                    progressed = true;
                    let now = clock.now();
                    if let Some(ts) = decode_syn(TAG_SYN, &buf[..n]) {
                        // The listener answers every SYN at once, echoing its timestamp.
                        let mut syn_ack = [0u8; SYN_LEN];
                        let len = encode_syn(TAG_SYN_ACK, ts, &mut syn_ack);
                        let _ = sock.send_to(&syn_ack[..len], from);
                        continue;
                    }
                    let Some(d) = decode_data(&buf[..n]) else { continue };
                    peer = Some(from);
                    let before = rx.stream_cum();
                    if let Some(ack) = rx.on_data(now, &d) {
                        let len = encode_ack(&ack, &mut out);
                        let _ = sock.send_to(&out[..len], from);
                    }
                    if rx.stream_cum() > before {
                        got.add(now, rx.stream_cum() - before);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if rx.next_timeout().is_some_and(|t| t <= now) {
            if let (Some(ack), Some(to)) = (rx.on_timeout(now), peer) {
                let len = encode_ack(&ack, &mut out);
                let _ = sock.send_to(&out[..len], to);
            }
        }
        if progressed {
            duty.turn(&clock);
        } else {
            let wait = rx.next_timeout().map_or(POLL_NS, |t| t.saturating_sub(clock.now()).min(POLL_NS));
            wait_readable(&sock, Some(wait.max(1)))?;
            duty.blocked(&clock);
        }
    }
    Ok(got)
}

/// The transport's sender configuration for a flow, exactly as the simulator builds it (the
/// flow's keys and the scenario's `[transport]` section; kernel flows ignore that section).
pub fn sender_config(spec: &FlowSpec, transport: &Transport) -> SenderConfig {
    SenderConfig::for_flow(spec, transport, MSS)
}

/// Counters of a UDP sender, and its trace.
#[derive(Clone, Debug, Default)]
pub struct SendStats {
    pub packets: u64,
    /// Datagrams the local kernel refused (socket or device queue full): lost before the
    /// emulator saw them, and recovered by the transport like any loss.
    pub local_drops: u64,
    /// The sender sampled as the simulator samples it (with `Schedule::trace`).
    pub trace: Option<CcTrace>,
}

/// When a flow's endpoints start and stop, and at what real-time priority they run (None:
/// ordinary threads). Endpoint timing is the controller's timing: pacing gaps and ACK
/// processing a busy neighbour delays by milliseconds would change what the controller does.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    pub clock: Clock,
    pub start: u64,
    pub stop_at: u64,
    pub rt: Option<i32>,
    /// Trace the sender at most once per this many ns (0: every ACK), as the simulator does.
    pub trace: Option<u64>,
    /// The flow's id, for the trace's rows.
    pub flow: u32,
}

/// Runs the transport's sender from `start` to `stop_at` (on a thread inside the sender's
/// namespace).
pub fn send(
    spec: &FlowSpec,
    transport: &Transport,
    port: u16,
    rng: Rng,
    when: Schedule,
    stop: &Stop,
) -> io::Result<SendStats> {
    let Schedule { clock, start, stop_at, rt, trace, flow } = when;
    let cc = cclab_cc::registry::build(spec, MSS).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let sock = UdpSocket::bind("0.0.0.0:0")?;
    big_buffers(&sock)?;
    sock.connect(SocketAddrV4::new(RECEIVER_IP, port))?;
    sock.set_nonblocking(true)?;
    let fd = sock.as_raw_fd();
    let mut tx = Sender::new(sender_config(spec, transport), cc, rng);
    let mut stats = SendStats { trace: trace.map(|_| CcTrace::default()), ..Default::default() };
    let mut sampler = Sampler::new(trace.unwrap_or(0));
    let mut sample_at = None;
    let mut out = vec![0u8; DATA_HDR + MSS as usize];
    let mut buf = vec![0u8; 2048];
    if !stop.sleep_until(clock, start) {
        return Ok(stats);
    }
    let mut duty = RtDuty::start(rt, &clock);
    if transport.handshake {
        tx.connect(clock.now());
    } else {
        tx.start(clock.now());
    }
    while !stop.now() {
        let now = clock.now();
        if now >= stop_at {
            break;
        }
        loop {
            match sock.recv(&mut buf) {
                Ok(n) => {
                    if let Some(echo) = decode_syn(TAG_SYN_ACK, &buf[..n]) {
                        tx.on_syn_ack(clock.now(), echo);
                    } else if let Some(ack) = decode_ack(&buf[..n]) {
                        let now = clock.now();
                        tx.on_ack(now, &ack);
                        if stats.trace.is_some() && sampler.due(flow, now) {
                            sample_at = Some(now);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ICMP errors from an earlier send (e.g. the receiver gone at the very end).
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(e),
            }
        }
        let now = clock.now();
        if tx.next_timeout().is_some_and(|t| t <= now) {
            tx.on_timeout(now);
        }
        while let Some(syn) = tx.poll_syn(clock.now()) {
            let len = encode_syn(TAG_SYN, syn, &mut out);
            if socket::send(fd, &out[..len], MsgFlags::empty()).is_err() {
                stats.local_drops += 1;
            }
        }
        // One instant for what this wake-up sends, as the simulator's engine polls: a TSO
        // burst (`[transport] tso`) is the packets the sender releases at the same instant.
        let now = clock.now();
        while let Some(d) = tx.poll_transmit(now) {
            let len = encode_data(&d, &mut out);
            stats.packets += 1;
            if socket::send(fd, &out[..len], MsgFlags::empty()).is_err() {
                stats.local_drops += 1;
            }
        }
        // As the simulator samples: after the ACKs, once the sender sent what they allowed.
        if let (Some(t), Some(tr)) = (sample_at.take(), stats.trace.as_mut()) {
            let view = SenderView {
                in_flight: tx.in_flight(),
                pacing_rate: tx.pacing_rate(),
                rtt: tx.rtt(),
                delivery_rate: tx.delivery_rate(),
                rwnd: tx.rwnd(),
                rwnd_limited: tx.rwnd_limited(t),
                ca_state: tx.ca_state(),
            };
            trace_sender(tr, flow, t, tx.cc(), view);
        }
        let now = clock.now();
        let wait = tx.next_timeout().map_or(POLL_NS, |t| t.saturating_sub(now).min(POLL_NS)).min(stop_at - now);
        if wait > 0 {
            wait_readable(&sock, Some(wait))?;
            duty.blocked(&clock);
        } else {
            duty.turn(&clock);
        }
    }
    tx.stop();
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The handshake's datagrams are 60 bytes on the wire, as the simulator's SYN and a Linux SYN
    /// with options; neither reads as data or an ACK, nor as the other.
    #[test]
    fn syn_and_syn_ack_round_trip() {
        let mut b = [0u8; 64];
        let n = encode_syn(TAG_SYN, 987_654_321, &mut b);
        assert_eq!(n + IP_UDP, 60);
        assert_eq!(decode_syn(TAG_SYN, &b[..n]), Some(987_654_321));
        assert_eq!(decode_syn(TAG_SYN_ACK, &b[..n]), None);
        assert!(decode_data(&b[..n]).is_none() && decode_ack(&b[..n]).is_none());
        let n = encode_syn(TAG_SYN_ACK, 5, &mut b);
        assert_eq!(decode_syn(TAG_SYN_ACK, &b[..n]), Some(5));
        assert_eq!(decode_syn(TAG_SYN_ACK, &b[..n - 1]), None, "a truncated SYN-ACK is not one");
    }

    #[test]
    fn headers_round_trip() {
        let d = DataPacket {
            id: 0xab_cdef_0123,
            offset: 1 << 40,
            len: 1448,
            sent: 123_456_789,
            retransmission: true,
            push: true,
        };
        let mut b = vec![0u8; 1600];
        let n = encode_data(&d, &mut b);
        assert_eq!(n + IP_UDP, 1500, "a full packet is 1500 bytes on the wire");
        assert_eq!(decode_data(&b[..n]), Some(d));
        let mut udp = vec![0u8; 8];
        udp.extend_from_slice(&b[..n]);
        assert!(is_retransmission(&udp));
        // The record's sequence field: the stream offset mod 2^32 (1 << 40 wraps to 0).
        assert_eq!(sequence_field(&udp), 0);
        let d2 = DataPacket { offset: (1 << 40) + 2896, ..d };
        encode_data(&d2, &mut udp[UDP_HEADER..]);
        assert_eq!(sequence_field(&udp), 2896);
        assert_eq!(sequence_field(&udp[..UDP_HEADER + 4]), 0, "a truncated header has none");
        let a = AckFrame {
            ranges: [(5, 9), (1, 3), (0, 0)],
            n_ranges: 2,
            largest: 8,
            stream_cum: 4344,
            one_way_delay: 10_000_000,
            feedback: FeedbackSlot::NONE,
        };
        let n = encode_ack(&a, &mut b);
        assert_eq!(n, ACK_LEN);
        assert_eq!(decode_ack(&b[..n]), Some(a));
        let mut udp_ack = vec![0u8; UDP_HEADER];
        udp_ack.extend_from_slice(&b[..n]);
        assert_eq!(sequence_field(&udp_ack), 4344, "an ACK's cumulative acknowledgment");
        assert_eq!(decode_ack(&b[..n - 1]), None);
        let a = AckFrame { feedback: FeedbackSlot::new(Some([1, 2, 3, 4, 5, 255])), ..a };
        let n = encode_ack(&a, &mut b);
        assert_eq!(n, ACK_LEN + FEEDBACK_LEN);
        assert_eq!(decode_ack(&b[..n]), Some(a));
        assert_eq!(decode_ack(&b[..n - 1]), None);
    }
}
