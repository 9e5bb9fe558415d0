//! Bundler's middlebox (reproduction-targets §1.1) as engine stages: the [`Inbox`] before the
//! bottleneck, which queues every flow of the site in a queue discipline and releases packets
//! through a token bucket, and the [`Outbox`] after it, which answers sampled epoch-boundary
//! packets with out-of-band feedback (the bundle's cumulative bytes received). The inbox matches
//! each feedback to the boundary it sent, measures the RTT and the receive rate, and every
//! `interval` its aggregate controller (`middlebox.controller`: [`CopaRate`], [`NimbusRate`] or
//! [`BbrRate`], one file each) sets the token bucket's rate, so the standing queue moves from
//! the bottleneck to the inbox, where the scheduler decides who waits.
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
use cclab_core::scenario::{BundleController, Middlebox, PACKET_BYTES};
use cclab_core::time::Time;
use std::collections::VecDeque;

mod bbr;
mod copa;
mod nimbus;
pub use bbr::{BbrMode, BbrRate};
pub use copa::CopaRate;
pub use nimbus::NimbusRate;

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
    /// The controller's mode: "copa"; Nimbus's "delay" or "competitive"; BBR's "startup",
    /// "drain", "probe_bw" or "probe_rtt".
    pub mode: &'static str,
}

/// What the inbox measured, handed to its controller every control interval.
#[derive(Clone, Copy, Debug)]
pub struct Signals {
    pub now: Time,
    /// Since the last control step.
    pub dt: Time,
    /// Copa's standing RTT (the minimum over the last srtt/2), ns.
    pub standing: Option<Time>,
    /// Smoothed (7/8) and minimum RTT, ns (0 and `Time::MAX` before the first sample).
    pub srtt: Time,
    pub min_rtt: Time,
    /// The smallest RTT sampled since the last step, ns.
    pub rtt_sample: Option<Time>,
    /// The receive rate over about one RTT of feedback, bytes/s.
    pub receive_rate: Option<f64>,
    /// The send and receive rates over the same matched epochs (about one RTT of them), bytes/s.
    pub epoch_rates: Option<(f64, f64)>,
    pub queue_bytes: u64,
}

/// The inbox's aggregate controller.
enum Controller {
    Copa(CopaRate),
    Nimbus(Box<NimbusRate>),
    Bbr(BbrRate),
}

impl Controller {
    fn new(cfg: &Middlebox) -> Controller {
        match cfg.controller {
            BundleController::Copa => Controller::Copa(CopaRate::new(cfg.delta)),
            BundleController::Nimbus => Controller::Nimbus(Box::new(NimbusRate::new(cfg.switching))),
            BundleController::Bbr => Controller::Bbr(BbrRate::default()),
        }
    }

    fn rate(&self) -> f64 {
        match self {
            Controller::Copa(c) => c.rate(),
            Controller::Nimbus(c) => c.rate(),
            Controller::Bbr(c) => c.rate(),
        }
    }

    fn mode(&self) -> &'static str {
        match self {
            Controller::Copa(_) => "copa",
            Controller::Nimbus(c) => c.mode().name(),
            Controller::Bbr(c) => c.mode().name(),
        }
    }

    fn tick(&mut self, sig: &Signals) {
        match self {
            Controller::Copa(c) => {
                if let Some(standing) = sig.standing {
                    c.tick(sig.now, sig.dt, standing, sig.min_rtt, sig.receive_rate);
                }
            }
            Controller::Nimbus(c) => c.tick(sig),
            Controller::Bbr(c) => c.tick(sig),
        }
    }
}

/// What the inbox remembers of a boundary it sent.
#[derive(Clone, Copy, Debug)]
struct Boundary {
    hash: u32,
    sent: Time,
    /// Bytes the inbox had released, this packet included.
    bytes_sent: u64,
}

/// A boundary answered: when it left the inbox and reached the outbox, and the bundle's
/// cumulative bytes at each.
#[derive(Clone, Copy, Debug)]
struct Epoch {
    sent: Time,
    bytes_sent: u64,
    received: Time,
    bytes_received: u64,
}

/// The sending site's box.
pub struct Inbox<P, Q = Qdisc<P>> {
    qdisc: Q,
    /// Token bucket: bytes available, their cap and when they were last topped up.
    tokens: f64,
    burst: f64,
    refilled: Time,
    ctl: Controller,
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
    /// Answered boundaries over about one RTT, for send and receive rates over the same epochs.
    epochs: VecDeque<Epoch>,
    bytes_sent: u64,
    /// The smallest RTT sampled since the last control step.
    rtt_sample: Option<Time>,
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
            ctl: Controller::new(cfg),
            interval: cfg.interval.ns(),
            next_tick: cfg.interval.ns(),
            last_tick: 0,
            epoch: cfg.initial_epoch,
            boundaries: VecDeque::new(),
            rtts: VecDeque::new(),
            min_rtt: Time::MAX,
            srtt: 0,
            received: VecDeque::new(),
            epochs: VecDeque::new(),
            bytes_sent: 0,
            rtt_sample: None,
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
            self.bytes_sent += p.wire_size();
            let hash = hash_of(&p);
            if is_boundary(hash, self.epoch) {
                self.boundaries.push_back(Boundary { hash, sent: now, bytes_sent: self.bytes_sent });
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
            self.rtt_sample = Some(self.rtt_sample.map_or(rtt, |r| r.min(rtt)));
            self.epochs.push_back(Epoch {
                sent: b.sent,
                bytes_sent: b.bytes_sent,
                received: fb.at,
                bytes_received: fb.bytes_received,
            });
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
        while self.epochs.len() > 2 && self.epochs.front().is_some_and(|e| e.received + keep / 2 < fb.at) {
            self.epochs.pop_front();
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

    /// Send and receive rates between the oldest and newest answered boundary of the window.
    fn epoch_rates(&self) -> Option<(f64, f64)> {
        let (a, b) = (self.epochs.front()?, self.epochs.back()?);
        (b.sent > a.sent && b.received > a.received).then(|| {
            let send = (b.bytes_sent - a.bytes_sent) as f64 / ((b.sent - a.sent) as f64 / 1e9);
            let receive = (b.bytes_received - a.bytes_received) as f64 / ((b.received - a.received) as f64 / 1e9);
            (send, receive)
        })
    }

    fn tick(&mut self, now: Time) {
        let dt = now - self.last_tick;
        self.last_tick = now;
        let standing = self.standing_rtt(now);
        let received = self.receive_rate();
        let sig = Signals {
            now,
            dt,
            standing,
            srtt: self.srtt,
            min_rtt: self.min_rtt,
            rtt_sample: self.rtt_sample.take(),
            receive_rate: received,
            epoch_rates: self.epoch_rates(),
            queue_bytes: self.qdisc.bytes(),
        };
        self.ctl.tick(&sig);
        if standing.is_some() {
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
            mode: self.ctl.mode(),
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
}
