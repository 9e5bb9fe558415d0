//! Bundler's middlebox (reproduction-targets §1.1) as engine stages: the [`Inbox`] before the
//! bottleneck, which queues every flow of the site in a queue discipline and releases packets
//! through a token bucket, and the [`Outbox`] after it, which answers sampled epoch-boundary
//! packets with out-of-band feedback (the bundle's cumulative bytes received). The inbox matches
//! each feedback to the boundary it sent, measures the RTT and the receive rate, and every
//! `interval` its aggregate controller ([`CopaRate`]) sets the token bucket's rate, so the
//! standing queue moves from the bottleneck to the inbox, where the scheduler decides who waits.
//!
//! Both boxes decide "boundary or not" from the same packet fields, as Bundler does: FNV-1 over
//! the destination port and the IP ID (the engine hands over those fields as a key), modulo the
//! epoch length. The epoch length adapts as Bundler's (a quarter of the BDP in packets, a power
//! of two in [4, 1024]); powers of two nest, so a boundary at the inbox's length is one at any
//! shorter length. Bundler's inbox tells the outbox its epoch length in a control message; here
//! the engine passes the inbox's current length to the outbox directly.
//!
//! Generic over the packet type and over the queue discipline (any [`QueueDiscipline`]; a
//! scenario names one of the bottleneck's by `middlebox.scheduler`).

use crate::qdisc::{InService, Qdisc, QueueDiscipline};
use crate::stage::WirePacket;
use cclab_core::scenario::{Middlebox, PACKET_BYTES};
use cclab_core::time::Time;
use std::collections::VecDeque;

/// FNV-1, 64-bit, over the destination port then the IP ID (2 bytes each, big-endian as on
/// the wire), truncated to 32 bits: Bundler's `src/hash.rs`.
pub fn boundary_hash(dst_port: u16, ip_id: u16) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in dst_port.to_be_bytes().into_iter().chain(ip_id.to_be_bytes()) {
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        h ^= b as u64;
    }
    h as u32
}

/// Whether a packet with this hash is an epoch boundary at `epoch` packets.
#[inline]
pub fn is_boundary(hash: u32, epoch: u32) -> bool {
    hash % epoch == 0
}

/// Bundler's epoch length: a quarter of the BDP in 1500-byte packets, as a power of two in
/// [4, 1024] (`min(max(pow2floor(rate·rtt/1500) >> 2, 4), 1024)`).
pub fn epoch_length(rate_bytes_per_sec: f64, rtt: Time) -> u32 {
    let bdp_pkts = (rate_bytes_per_sec * rtt as f64 / 1e9 / PACKET_BYTES as f64).max(1.0) as u64;
    let pow2 = 1u64 << (63 - bdp_pkts.leading_zeros());
    ((pow2 >> 2).clamp(4, 1024)) as u32
}

/// The outbox's answer to a boundary packet, sent back out of band.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feedback {
    pub hash: u32,
    /// Bytes of the bundle the outbox has received, this packet included.
    pub bytes_received: u64,
    /// When the outbox saw the packet, ns.
    pub at: Time,
}

/// The receiver site's box: counts the bundle's bytes and answers boundaries.
#[derive(Clone, Debug, Default)]
pub struct Outbox {
    bytes_received: u64,
}

impl Outbox {
    /// A packet of the bundle arrives at `now`; the feedback to send, if it is a boundary.
    pub fn on_packet(&mut self, now: Time, hash: u32, size: u64, epoch: u32) -> Option<Feedback> {
        self.bytes_received += size;
        is_boundary(hash, epoch).then_some(Feedback { hash, bytes_received: self.bytes_received, at: now })
    }
}

/// One sample of the inbox, taken every control interval (the `middlebox` table).
#[derive(Clone, Debug, PartialEq)]
pub struct MiddleboxRow {
    pub t: Time,
    /// The token bucket's rate, bytes/s.
    pub rate: f64,
    pub queue_bytes: u64,
    pub queue_packets: u64,
    /// The standing RTT the controller used and the minimum, ns (0 before the first sample).
    pub rtt: Time,
    pub min_rtt: Time,
    /// The bundle's receive rate at the outbox, bytes/s (NaN before two feedbacks).
    pub receive_rate: f64,
    pub epoch: u32,
}

/// Copa (Arun & Balakrishnan, NSDI'18) for an aggregate, as Bundler runs it through CCP: a
/// window updated every tick and converted to the token bucket's rate as cwnd / standing RTT.
/// The target rate is 1/(δ·d_q) packets per second, d_q the standing RTT (minimum over the last
/// srtt/2) minus the minimum RTT; below it the window grows by v/δ packets per RTT, above it
/// shrinks as much; the velocity v doubles once the window has moved the same way for three
/// RTTs and resets to 1 when the direction changes; slow start doubles the window every RTT
/// until the rate first exceeds the target.
#[derive(Clone, Debug)]
pub struct CopaRate {
    delta: f64,
    /// bytes
    cwnd: f64,
    /// bytes/s, as last set
    rate: f64,
    slow_start: bool,
    velocity: f64,
    /// +1 / −1: the direction of the last RTT's change, and when that RTT began.
    direction: i8,
    same_direction_rtts: u32,
    rtt_start: Time,
    cwnd_at_rtt_start: f64,
}

/// The window before any measurement: ten packets, as an end host's initial window.
const INITIAL_CWND: f64 = 10.0 * PACKET_BYTES as f64;
/// The rate before the first RTT sample: 10 Mbit/s; slow start finds the real one.
const INITIAL_RATE: f64 = 10e6 / 8.0;
/// The window never falls below two packets.
const MIN_CWND: f64 = 2.0 * PACKET_BYTES as f64;
/// An app-limited bundle leaves the delay signal flat (no queue anywhere), which would let
/// the window grow without bound; it is capped at this multiple of the measured receive rate
/// times the standing RTT.
const RATE_CAP_OVER_RECEIVED: f64 = 2.0;

impl CopaRate {
    pub fn new(delta: f64) -> CopaRate {
        CopaRate {
            delta,
            cwnd: INITIAL_CWND,
            rate: INITIAL_RATE,
            slow_start: true,
            velocity: 1.0,
            direction: 0,
            same_direction_rtts: 0,
            rtt_start: 0,
            cwnd_at_rtt_start: INITIAL_CWND,
        }
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// One control step at `now`, `dt` after the last, with the standing and minimum RTT (ns)
    /// and the receive rate (bytes/s, if measured).
    pub fn tick(&mut self, now: Time, dt: Time, standing: Time, min_rtt: Time, receive_rate: Option<f64>) {
        let standing_s = standing.max(1) as f64 / 1e9;
        let dq = standing.saturating_sub(min_rtt) as f64 / 1e9;
        let pkt = PACKET_BYTES as f64;
        // Copa's target λ = 1/(δ·d_q) packets/s; with no queue at all the target is unbounded.
        let target = if dq > 0.0 { pkt / (self.delta * dq) } else { f64::INFINITY };
        let current = self.cwnd / standing_s;
        let frac = dt as f64 / 1e9 / standing_s;
        if self.slow_start && current >= target {
            self.slow_start = false;
        }
        if self.slow_start {
            self.cwnd *= 2f64.powf(frac);
        } else {
            let step = self.velocity * pkt / self.delta * frac;
            if current < target {
                self.cwnd += step;
            } else {
                self.cwnd -= step;
            }
        }
        if let Some(r) = receive_rate.filter(|r| r.is_finite() && *r > 0.0) {
            self.cwnd = self.cwnd.min(RATE_CAP_OVER_RECEIVED * r * standing_s);
        }
        self.cwnd = self.cwnd.max(MIN_CWND);
        // Velocity: once per RTT, compare the window with the one an RTT ago.
        if !self.slow_start && now >= self.rtt_start + standing {
            let dir = if self.cwnd >= self.cwnd_at_rtt_start { 1 } else { -1 };
            if dir == self.direction {
                self.same_direction_rtts += 1;
                if self.same_direction_rtts >= 3 {
                    self.velocity = (self.velocity * 2.0).min(1e6);
                }
            } else {
                self.direction = dir;
                self.same_direction_rtts = 0;
                self.velocity = 1.0;
            }
            self.rtt_start = now;
            self.cwnd_at_rtt_start = self.cwnd;
        }
        self.rate = self.cwnd / standing_s;
    }
}

/// What the inbox remembers of a boundary it sent.
#[derive(Clone, Copy, Debug)]
struct Boundary {
    hash: u32,
    sent: Time,
}

/// The sending site's box.
pub struct Inbox<P, Q = Qdisc<P>> {
    qdisc: Q,
    /// Token bucket: bytes available, their cap and when they were last topped up.
    tokens: f64,
    burst: f64,
    refilled: Time,
    ctl: CopaRate,
    interval: Time,
    next_tick: Time,
    last_tick: Time,
    epoch: u32,
    boundaries: VecDeque<Boundary>,
    /// (time, RTT) samples over the last few RTTs, for the standing (minimum over srtt/2) RTT.
    rtts: VecDeque<(Time, Time)>,
    min_rtt: Time,
    srtt: Time,
    /// (outbox time, bytes received) of recent feedback, for the receive rate over ~one RTT.
    received: VecDeque<(Time, u64)>,
    rows: Vec<MiddleboxRow>,
    _packet: std::marker::PhantomData<P>,
}

/// The token bucket holds two full packets: a packet leaves as soon as its tokens exist, and
/// no more than a small burst passes after idle.
const BURST_BYTES: f64 = 2.0 * PACKET_BYTES as f64;

impl<P: WirePacket, Q: QueueDiscipline<P>> Inbox<P, Q> {
    /// An inbox scheduling its queue with `qdisc` (which holds the buffer limit); the engines
    /// get theirs from `PathPlan::inbox`.
    pub fn with_qdisc(qdisc: Q, cfg: &Middlebox) -> Self {
        Inbox {
            qdisc,
            tokens: BURST_BYTES,
            burst: BURST_BYTES,
            refilled: 0,
            ctl: CopaRate::new(cfg.delta),
            interval: cfg.interval.ns(),
            next_tick: cfg.interval.ns(),
            last_tick: 0,
            epoch: cfg.initial_epoch,
            boundaries: VecDeque::new(),
            rtts: VecDeque::new(),
            min_rtt: Time::MAX,
            srtt: 0,
            received: VecDeque::new(),
            rows: Vec::new(),
            _packet: std::marker::PhantomData,
        }
    }

    /// The current epoch length (the outbox samples with it).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    pub fn rate(&self) -> f64 {
        self.ctl.rate()
    }

    pub fn len(&self) -> usize {
        self.qdisc.len()
    }

    pub fn is_empty(&self) -> bool {
        self.qdisc.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.qdisc.bytes()
    }

    /// A packet of the site arrives; what the discipline drops goes to `drop`.
    pub fn enqueue(&mut self, now: Time, p: P, drop: &mut impl FnMut(P)) {
        self.qdisc.enqueue(now, p, InService::default(), drop);
    }

    fn refill(&mut self, now: Time) {
        if now > self.refilled {
            self.tokens = (self.tokens + self.ctl.rate() * (now - self.refilled) as f64 / 1e9).min(self.burst);
            self.refilled = now;
        }
    }

    /// When the inbox next needs [`Inbox::poll`]: its control tick, or the moment the bucket
    /// holds enough tokens for the next packet.
    pub fn next_event(&self) -> Option<Time> {
        let release = (!self.qdisc.is_empty()).then(|| {
            let need = (1.0 - self.tokens).max(0.0);
            self.refilled + (need / self.ctl.rate() * 1e9).ceil() as Time
        });
        Some(release.map_or(self.next_tick, |r| r.min(self.next_tick)))
    }

    /// Runs the control loop if it is due and releases every packet the tokens allow at `now`
    /// to `out`, with its boundary hash; `hash_of` gives a packet's hash.
    pub fn poll(&mut self, now: Time, hash_of: &dyn Fn(&P) -> u32, out: &mut impl FnMut(P), drop: &mut impl FnMut(P)) {
        while now >= self.next_tick {
            let t = self.next_tick;
            self.refill(t);
            self.tick(t);
            self.next_tick += self.interval;
        }
        self.refill(now);
        // A packet leaves whenever the bucket is positive and may take it into debt (the next
        // waits until the debt is repaid): the discipline's next packet is unknown until it is
        // dequeued, and the long-run rate is exactly the bucket's.
        while self.tokens > 0.0 {
            let Some(p) = self.qdisc.dequeue(now, drop) else { break };
            self.tokens -= p.wire_size() as f64;
            let hash = hash_of(&p);
            if is_boundary(hash, self.epoch) {
                self.boundaries.push_back(Boundary { hash, sent: now });
            }
            out(p);
        }
    }

    /// Feedback from the outbox arrives at `now`.
    pub fn on_feedback(&mut self, now: Time, fb: Feedback) {
        // Boundaries are answered in order (one path): the oldest boundary with this hash is
        // the one answered, and older unanswered ones were lost (or sampled under a longer
        // epoch than the outbox's). A feedback matching none (the outbox sampled under a
        // shorter epoch) still reports the bytes received.
        if let Some(i) = self.boundaries.iter().position(|b| b.hash == fb.hash) {
            let b = self.boundaries[i];
            self.boundaries.drain(..=i);
            let rtt = now - b.sent;
            self.min_rtt = self.min_rtt.min(rtt);
            self.srtt = if self.srtt == 0 { rtt } else { (7 * self.srtt + rtt) / 8 };
            self.rtts.push_back((now, rtt));
        }
        self.received.push_back((fb.at, fb.bytes_received));
        // Keep about two RTTs of samples, and always the latest.
        let keep = 2 * self.srtt.max(self.interval);
        while self.rtts.len() > 1 && self.rtts.front().is_some_and(|&(t, _)| t + keep < now) {
            self.rtts.pop_front();
        }
        while self.received.len() > 2 && self.received.front().is_some_and(|&(t, _)| t + keep / 2 < fb.at) {
            self.received.pop_front();
        }
    }

    /// Copa's standing RTT: the minimum over the last srtt/2.
    fn standing_rtt(&self, now: Time) -> Option<Time> {
        let window = (self.srtt / 2).max(1);
        let recent = self.rtts.iter().filter(|&&(t, _)| t + window >= now).map(|&(_, r)| r).min();
        recent.or_else(|| self.rtts.back().map(|&(_, r)| r))
    }

    fn receive_rate(&self) -> Option<f64> {
        let (&(t0, b0), &(t1, b1)) = (self.received.front()?, self.received.back()?);
        (t1 > t0).then(|| (b1 - b0) as f64 / ((t1 - t0) as f64 / 1e9))
    }

    fn tick(&mut self, now: Time) {
        let dt = now - self.last_tick;
        self.last_tick = now;
        let standing = self.standing_rtt(now);
        let received = self.receive_rate();
        if let Some(standing) = standing {
            self.ctl.tick(now, dt, standing, self.min_rtt, received);
            self.epoch = epoch_length(self.ctl.rate(), self.min_rtt);
        }
        self.rows.push(MiddleboxRow {
            t: now,
            rate: self.ctl.rate(),
            queue_bytes: self.qdisc.bytes(),
            queue_packets: self.qdisc.len() as u64,
            rtt: standing.unwrap_or(0),
            min_rtt: if self.min_rtt == Time::MAX { 0 } else { self.min_rtt },
            receive_rate: received.unwrap_or(f64::NAN),
            epoch: self.epoch,
        });
    }

    /// The samples taken so far.
    pub fn take_rows(&mut self) -> Vec<MiddleboxRow> {
        std::mem::take(&mut self.rows)
    }

    /// Empties the inbox (end of run), in the order the packets would have left.
    pub fn drain(&mut self, out: &mut impl FnMut(P)) {
        self.qdisc.drain(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_core::time::MS;

    #[test]
    fn fnv1_matches_the_reference_vectors() {
        // FNV-1 64 of the empty input is the offset basis; of "a" (0x61) it is
        // 0xaf63bd4c8601b7be (the FNV reference's test vector), truncated to 32 bits.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        h = h.wrapping_mul(0x0000_0100_0000_01b3) ^ 0x61;
        assert_eq!(h, 0xaf63_bd4c_8601_b7be);
        // Sampling rate: about one packet in `epoch` is a boundary.
        let n = (0..65536u32).filter(|&id| is_boundary(boundary_hash(5001, id as u16), 64)).count();
        assert!((n as f64 / 65536.0 * 64.0 - 1.0).abs() < 0.1, "{n}");
    }

    #[test]
    fn epoch_is_a_quarter_bdp_power_of_two() {
        // 96 Mbit/s × 50 ms = 400 packets → 256 → 64.
        assert_eq!(epoch_length(12e6, 50 * MS), 64);
        assert_eq!(epoch_length(1e3, 50 * MS), 4);
        assert_eq!(epoch_length(1e12, 50 * MS), 1024);
    }

    /// With no queue the window grows (slow start, then bounded by twice the receive rate);
    /// with a standing queue above Copa's target it falls, the velocity making it fast.
    #[test]
    fn copa_rate_moves_towards_its_delay_target() {
        let mut c = CopaRate::new(0.5);
        let mut now = 0;
        let received = Some(12e6);
        for _ in 0..200 {
            now += 10 * MS;
            c.tick(now, 10 * MS, 50 * MS, 50 * MS, received);
        }
        let high = c.rate();
        assert!(high > 12e6 && high <= 24e6 * (1.0 + 1e-9), "no queue: the rate grows to the cap ({high})");
        for _ in 0..200 {
            now += 10 * MS;
            // 20 ms of standing queue: target 1/(0.5·0.02) = 100 packets/s = 150 kB/s.
            c.tick(now, 10 * MS, 70 * MS, 50 * MS, received);
        }
        assert!(c.rate() < high / 8.0, "a standing queue drives the rate down ({})", c.rate());
    }
}
