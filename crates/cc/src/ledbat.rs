//! LEDBAT, the "scavenger" that keeps the bottleneck queue near a small delay target and backs
//! off as soon as other traffic builds a queue beyond it (reference §7).
//!
//! Two variants, chosen with `variant`:
//! - `rfc6817` (default): RFC 6817's pseudocode. One-way delay echoed by the receiver; base delay
//!   = minimum over `BASE_HISTORY` one-minute buckets; current delay = minimum of the last
//!   `CURRENT_FILTER` samples; per ACK `cwnd += GAIN·off_target·bytes_acked·MSS/cwnd`, capped at
//!   `flightsize + ALLOWED_INCREASE·MSS`; at most one halving per loss episode; one MSS after a
//!   timeout; no slow start.
//! - `libutp`: BitTorrent's libutp (`utp_internal.cpp`, `apply_ccontrol`) as deployed: the window
//!   grows by at most 3000 bytes per RTT scaled by the delay factor, the delay estimate is also
//!   capped by the RTT of the ACK's packets, slow start ends at 90% of the target, losses halve the
//!   window at most once per 100 ms, and growth stops when the window has not limited sending for a
//!   second.
//!
//! The one-way delay comes from the transport's receiver echo (`AckEvent::one_way_delay`). Clock
//! offsets cancel out in `current − base`, as the RFC intends; the simulator's clocks have none.

use crate::controller::CongestionControl;
use crate::registry::{BuildResult, OptValue, OptionInfo, OptionKind, Options, Scheme, SchemeInfo};
use crate::types::*;
use std::ops::Bound;

use cclab_core::time::MS;
const MINUTE: Time = 60_000 * MS;

/// RFC 6817 §2.5 (parameter values): TARGET MUST NOT exceed 100 ms; 100 ms is also libutp's
/// default `target_delay`.
const DEFAULT_TARGET_MS: f64 = 100.0;
/// RFC 6817 §2.5: GAIN MUST be ≤ 1 so LEDBAT never ramps faster than TCP; 1 is the usual choice.
const GAIN: f64 = 1.0;
/// RFC 6817 §2.5: BASE_HISTORY SHOULD be 10 (one-minute buckets).
const BASE_HISTORY: usize = 10;
/// RFC 6817 leaves FILTER to the implementation and suggests the minimum over a few recent
/// samples; 4 is ns-3 `TcpLedbat`'s `NoiseFilterLen` default.
const CURRENT_FILTER: usize = 4;
/// RFC 6817 §2.5: INIT_CWND and MIN_CWND SHOULD both be 2 (packets); ALLOWED_INCREASE SHOULD
/// be 1.
const INIT_CWND: u64 = 2;
const MIN_CWND: u64 = 2;
const ALLOWED_INCREASE: u64 = 1;

/// libutp `MAX_CWND_INCREASE_BYTES_PER_RTT`: the most the window grows in one RTT, in bytes.
const UTP_MAX_INCREASE_PER_RTT: f64 = 3000.0;
/// libutp `CUR_DELAY_SIZE`: current delay = minimum of the last 3 samples.
const UTP_CUR_DELAY_SIZE: usize = 3;
/// libutp `DELAY_BASE_HISTORY`: 13 one-minute base-delay buckets.
const UTP_BASE_HISTORY: usize = 13;
/// libutp `MIN_WINDOW_SIZE`, bytes (the transport still sends one packet when nothing is in
/// flight, as libutp does with a sub-packet window).
const UTP_MIN_WINDOW: f64 = 10.0;
/// libutp `MAX_WINDOW_DECAY`: losses halve the window at most once per 100 ms.
const UTP_MAX_WINDOW_DECAY: Time = 100 * MS;
/// libutp: a positive gain is dropped when the window has not limited sending for 1 s (the
/// application is rate-limited, so the window must not grow without bound).
const UTP_MAXED_OUT_TIMEOUT: Time = 1000 * MS;
/// libutp leaves slow start once its delay exceeds 90% of the target.
const UTP_SLOW_START_EXIT: f64 = 0.9;

pub const SCHEME: Scheme = Scheme {
    info: SchemeInfo {
        name: "ledbat",
        summary: "LEDBAT scavenger (RFC 6817): keeps queueing delay near a target and yields to TCP",
        options: &[
            OptionInfo {
                name: "target_ms",
                kind: OptionKind::Float { lo: Bound::Excluded(0.0), hi: Bound::Included(100.0) },
                default: Some(OptValue::Float(DEFAULT_TARGET_MS)),
                help: "queueing-delay target in milliseconds (RFC 6817: at most 100)",
            },
            OptionInfo {
                name: "variant",
                kind: OptionKind::Choice(&["rfc6817", "libutp"]),
                default: Some(OptValue::Choice("rfc6817")),
                help: "\"rfc6817\" (the RFC's pseudocode) or \"libutp\" (BitTorrent's uTP as deployed)",
            },
        ],
    },
    build: build_from_options,
};

fn build_from_options(opts: &Options, mss: u64) -> BuildResult {
    let target = (opts.float("target_ms").unwrap_or(DEFAULT_TARGET_MS) * MS as f64) as Time;
    let variant = match opts.choice("variant") {
        Some("libutp") => Variant::Libutp,
        _ => Variant::Rfc6817,
    };
    Ok(Box::new(Ledbat::new(variant, target, mss)))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Rfc6817,
    Libutp,
}

/// RFC 6817's delay state: the last few one-way delays and the per-minute minima.
#[derive(Clone, Debug)]
struct RfcDelays {
    /// The last `CURRENT_FILTER` samples (ring), `Time::MAX` until filled.
    current: [Time; CURRENT_FILTER],
    next: usize,
    /// Per-minute minima, oldest first; `Time::MAX` until filled.
    base: [Time; BASE_HISTORY],
    /// The minute (now / 60 s) of the newest bucket; `None` before the first sample.
    minute: Option<u64>,
}

impl RfcDelays {
    fn new() -> RfcDelays {
        RfcDelays { current: [Time::MAX; CURRENT_FILTER], next: 0, base: [Time::MAX; BASE_HISTORY], minute: None }
    }

    /// RFC 6817 `update_base_delay` and `update_current_delay`.
    fn add(&mut self, now: Time, delay: Time) {
        let minute = now / MINUTE;
        if self.minute != Some(minute) {
            // A new minute: drop the oldest bucket and start a new one with this sample.
            self.minute = Some(minute);
            self.base.rotate_left(1);
            self.base[BASE_HISTORY - 1] = delay;
        } else {
            let tail = &mut self.base[BASE_HISTORY - 1];
            *tail = (*tail).min(delay);
        }
        self.current[self.next] = delay;
        self.next = (self.next + 1) % CURRENT_FILTER;
    }

    /// `FILTER(current_delays) − MIN(base_delays)`.
    fn queuing_delay(&self) -> Time {
        let current = self.current.iter().copied().min().unwrap_or(Time::MAX);
        let base = self.base.iter().copied().min().unwrap_or(Time::MAX);
        if current == Time::MAX {
            0
        } else {
            current.saturating_sub(base)
        }
    }

    fn base(&self) -> Time {
        self.base.iter().copied().min().unwrap_or(0)
    }
}

/// libutp's `DelayHist`: base delay from 13 one-minute buckets, and the last three samples
/// already made relative to the base at the time they were taken.
#[derive(Clone, Debug)]
struct UtpDelays {
    delay_base: Time,
    cur_delay_hist: [Time; UTP_CUR_DELAY_SIZE],
    cur_delay_idx: usize,
    delay_base_hist: [Time; UTP_BASE_HISTORY],
    delay_base_idx: usize,
    delay_base_time: Time,
    initialized: bool,
}

impl UtpDelays {
    fn new(now: Time) -> UtpDelays {
        UtpDelays {
            delay_base: 0,
            cur_delay_hist: [0; UTP_CUR_DELAY_SIZE],
            cur_delay_idx: 0,
            delay_base_hist: [0; UTP_BASE_HISTORY],
            delay_base_idx: 0,
            delay_base_time: now,
            initialized: false,
        }
    }

    /// libutp `DelayHist::add_sample` (without timestamp wrapping: simulated time is 64-bit).
    fn add_sample(&mut self, sample: Time, now: Time) {
        if !self.initialized {
            self.delay_base_hist = [sample; UTP_BASE_HISTORY];
            self.delay_base = sample;
            self.initialized = true;
        }
        let slot = &mut self.delay_base_hist[self.delay_base_idx];
        *slot = (*slot).min(sample);
        self.delay_base = self.delay_base.min(sample);
        self.cur_delay_hist[self.cur_delay_idx] = sample - self.delay_base;
        self.cur_delay_idx = (self.cur_delay_idx + 1) % UTP_CUR_DELAY_SIZE;
        if now - self.delay_base_time > MINUTE {
            self.delay_base_time = now;
            self.delay_base_idx = (self.delay_base_idx + 1) % UTP_BASE_HISTORY;
            self.delay_base_hist[self.delay_base_idx] = sample;
            self.delay_base = self.delay_base_hist.iter().copied().min().unwrap_or(sample);
        }
    }

    /// libutp `DelayHist::shift`: raise the base (used when the delay estimate exceeds the RTT).
    fn shift(&mut self, offset: Time) {
        for b in &mut self.delay_base_hist {
            *b += offset;
        }
        self.delay_base += offset;
    }

    fn value(&self) -> Time {
        self.cur_delay_hist.iter().copied().min().unwrap_or(0)
    }
}

#[derive(Clone, Debug)]
pub struct Ledbat {
    variant: Variant,
    mss: u64,
    target: Time,
    /// Bytes (libutp's `max_window` in that variant).
    cwnd: f64,
    rfc: RfcDelays,
    utp: UtpDelays,
    /// The queueing delay the last update used, for snapshots.
    queuing_delay: Time,
    // libutp state.
    slow_start: bool,
    ssthresh: f64,
    last_decay: Option<Time>,
    last_maxed_out: Time,
}

impl Ledbat {
    pub fn new(variant: Variant, target: Time, mss: u64) -> Ledbat {
        Ledbat {
            variant,
            mss,
            target: target.max(1),
            cwnd: (INIT_CWND * mss) as f64,
            rfc: RfcDelays::new(),
            utp: UtpDelays::new(0),
            queuing_delay: 0,
            // libutp starts in slow start with ssthresh = the send buffer; the simulator's
            // sender has no send buffer (use the flow's `rwnd` to model one).
            slow_start: variant == Variant::Libutp,
            ssthresh: f64::INFINITY,
            last_decay: None,
            last_maxed_out: 0,
        }
    }

    fn min_cwnd(&self) -> f64 {
        (MIN_CWND * self.mss) as f64
    }

    fn on_ack_rfc(&mut self, ev: &AckEvent) {
        if let Some(owd) = ev.one_way_delay {
            self.rfc.add(ev.now, owd);
        }
        self.queuing_delay = self.rfc.queuing_delay();
        let target = self.target as f64;
        let off_target = (target - self.queuing_delay as f64) / target;
        let mss = self.mss as f64;
        self.cwnd += GAIN * off_target * ev.newly_acked_bytes as f64 * mss / self.cwnd;
        // "flightsize" in the pseudocode is taken before the acked bytes are removed.
        let max_allowed = (ev.prior_in_flight + ALLOWED_INCREASE * self.mss) as f64;
        self.cwnd = self.cwnd.min(max_allowed).max(self.min_cwnd());
    }

    /// libutp `apply_ccontrol`, fed as `UTPSocket::process_incoming` feeds it.
    fn on_ack_utp(&mut self, ev: &AckEvent) {
        let acked = ev.newly_acked_bytes as f64;
        if !ev.app_limited {
            // libutp stamps `last_maxed_out_window` whenever the window stops a send; the
            // transport's cwnd-limited flag says the same.
            self.last_maxed_out = ev.now;
        }
        let Some(sample) = ev.one_way_delay else { return };
        // The smallest RTT among the packets this ACK covers: the delay cannot exceed it.
        let min_rtt = ev.acked.iter().map(|p| p.rtt).min().unwrap_or(Time::MAX);
        self.utp.add_sample(sample, ev.now);
        if self.utp.value() > min_rtt {
            let excess = self.utp.value() - min_rtt;
            self.utp.shift(excess);
        }
        let our_delay = self.utp.value().min(min_rtt);
        self.queuing_delay = our_delay;
        let target = self.target as f64;
        let max_window = self.cwnd;
        let window_factor = acked.min(max_window) / max_window.max(acked);
        let delay_factor = (target - our_delay as f64) / target;
        let mut scaled_gain = UTP_MAX_INCREASE_PER_RTT * window_factor * delay_factor;
        if scaled_gain > 0.0 && ev.now.saturating_sub(self.last_maxed_out) > UTP_MAXED_OUT_TIMEOUT {
            scaled_gain = 0.0;
        }
        let ledbat_cwnd = (max_window + scaled_gain).max(UTP_MIN_WINDOW);
        if self.slow_start {
            let ss_cwnd = max_window + window_factor * self.mss as f64;
            if ss_cwnd > self.ssthresh {
                self.slow_start = false;
            } else if our_delay as f64 > UTP_SLOW_START_EXIT * target {
                self.slow_start = false;
                self.ssthresh = max_window;
            } else {
                self.cwnd = ss_cwnd.max(ledbat_cwnd);
            }
        } else {
            self.cwnd = ledbat_cwnd;
        }
        self.cwnd = self.cwnd.max(UTP_MIN_WINDOW);
    }

    /// libutp `maybe_decay_win`: halve, at most once per `MAX_WINDOW_DECAY`.
    fn utp_decay(&mut self, now: Time) {
        if self.last_decay.is_some_and(|t| now - t < UTP_MAX_WINDOW_DECAY) {
            return;
        }
        self.last_decay = Some(now);
        self.cwnd = (self.cwnd * 0.5).max(UTP_MIN_WINDOW);
        self.slow_start = false;
        self.ssthresh = self.cwnd;
    }
}

impl CongestionControl for Ledbat {
    fn name(&self) -> &'static str {
        "ledbat"
    }

    fn on_init(&mut self, now: Time, _rtt: &RttStats, _ctx: &mut CcContext) {
        self.utp = UtpDelays::new(now);
        self.last_maxed_out = now;
    }

    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        if ev.newly_acked_bytes == 0 {
            // libutp applies its controller only to ACKs of new data; RFC 6817 scales by the
            // acked bytes, so nothing would change either.
            if self.variant == Variant::Libutp && !ev.lost.is_empty() {
                self.utp_decay(ev.now);
            }
            return;
        }
        match self.variant {
            Variant::Rfc6817 => self.on_ack_rfc(ev),
            Variant::Libutp => {
                self.on_ack_utp(ev);
                if !ev.lost.is_empty() {
                    self.utp_decay(ev.now);
                }
            }
        }
    }

    fn on_congestion_event(&mut self, _ev: &CongestionEvent, _ctx: &mut CcContext) {
        // RFC 6817: on loss, at most once per RTT (here: once per recovery epoch).
        if self.variant == Variant::Rfc6817 {
            self.cwnd = self.cwnd.min((self.cwnd / 2.0).max(self.min_cwnd()));
        }
    }

    fn on_packets_lost(&mut self, now: Time, lost: &[LostPacket], _ctx: &mut CcContext) {
        // Timer-detected losses count as loss indications for libutp (RTO losses are handled
        // by `on_rto`).
        if self.variant == Variant::Libutp && lost.iter().any(|l| l.cause != LossCause::Rto) {
            self.utp_decay(now);
        }
    }

    fn on_rto(&mut self, _now: Time, _ctx: &mut CcContext) {
        match self.variant {
            // RFC 6817: after a congestion timeout cwnd = 1·MSS.
            Variant::Rfc6817 => self.cwnd = self.mss as f64,
            // libutp, with packets in flight (the transport's timer runs only then): one packet
            // and slow start again.
            Variant::Libutp => {
                self.cwnd = self.mss as f64;
                self.slow_start = true;
            }
        }
    }

    fn cwnd(&self) -> u64 {
        self.cwnd as u64
    }

    fn ssthresh(&self) -> Option<u64> {
        (self.variant == Variant::Libutp && self.ssthresh.is_finite()).then_some(self.ssthresh as u64)
    }

    fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    fn snapshot(&self) -> CcSnapshot {
        let base = match self.variant {
            Variant::Rfc6817 => self.rfc.base(),
            Variant::Libutp => self.utp.delay_base,
        };
        CcSnapshot {
            mode: match (self.variant, self.slow_start) {
                (Variant::Rfc6817, _) => "rfc6817",
                (Variant::Libutp, true) => "libutp_slow_start",
                (Variant::Libutp, false) => "libutp",
            },
            vars: vec![
                ("cwnd", self.cwnd),
                ("queuing_delay_ms", self.queuing_delay as f64 / MS as f64),
                ("base_delay_ms", base as f64 / MS as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{MS as TMS, SEC};

    use cclab_core::scenario::MSS;

    /// Feeds ACKs by hand: one packet acked per call, with the given one-way delay.
    fn ack(cc: &mut Ledbat, now: Time, owd: Time, in_flight: u64) {
        let acked = [AckedPacket { id: 0, bytes: MSS, send_time: now.saturating_sub(2 * owd), tag: 0, rtt: 2 * owd }];
        let rtt = RttStats::default();
        let mut ev = crate::testkit::ack_event(&acked, &[], &rtt, CaState::Open, in_flight);
        ev.now = now;
        ev.one_way_delay = Some(owd);
        let mut rng = Rng::new(1);
        cc.on_ack(&ev, &mut CcContext { mss: MSS, rng: &mut rng });
    }

    #[test]
    fn rfc_grows_by_at_most_one_packet_per_window_below_target() {
        // RFC 6817: with zero queueing delay, off_target = 1 and a window's worth of ACKs adds
        // GAIN·MSS = one packet.
        let mut cc = Ledbat::new(Variant::Rfc6817, 100 * TMS, MSS);
        cc.cwnd = (20 * MSS) as f64;
        for i in 0..20 {
            ack(&mut cc, i * TMS, 10 * TMS, 20 * MSS);
        }
        let grown = cc.cwnd / MSS as f64 - 20.0;
        assert!((grown - 1.0).abs() < 0.05, "grew {grown} packets in one window");
    }

    #[test]
    fn rfc_shrinks_above_target_and_never_below_min_cwnd() {
        let mut cc = Ledbat::new(Variant::Rfc6817, 50 * TMS, MSS);
        cc.cwnd = (20 * MSS) as f64;
        // Base delay 10 ms, then 160 ms: 150 ms of queueing = 3× the target, off_target = −2.
        ack(&mut cc, 0, 10 * TMS, 20 * MSS);
        for i in 1..=4 {
            ack(&mut cc, i * TMS, 160 * TMS, 20 * MSS);
        }
        assert_eq!(cc.rfc.queuing_delay(), 150 * TMS, "the 10 ms sample left the 4-sample filter");
        // Each ACK now removes 2·MSS²/cwnd: a window of ACKs takes two packets off.
        let before = cc.cwnd;
        for i in 5..25 {
            ack(&mut cc, i * TMS, 160 * TMS, 20 * MSS);
        }
        let lost = (before - cc.cwnd) / MSS as f64;
        assert!((lost - 2.0).abs() < 0.2, "{lost} packets");
        for i in 25..2000 {
            ack(&mut cc, i * TMS, 160 * TMS, 20 * MSS);
        }
        assert_eq!(cc.cwnd, (MIN_CWND * MSS) as f64);
    }

    #[test]
    fn rfc_current_delay_is_a_minimum_over_four_samples_and_base_rolls_over_per_minute() {
        let mut d = RfcDelays::new();
        d.add(0, 50 * TMS);
        d.add(1, 80 * TMS);
        d.add(2, 90 * TMS);
        d.add(3, 70 * TMS);
        assert_eq!(d.queuing_delay(), 0, "current = min(50, 80, 90, 70) = base");
        d.add(4, 95 * TMS);
        assert_eq!(d.queuing_delay(), 20 * TMS, "the 50 ms sample left the filter");
        // Ten minutes later the 50 ms minimum has left the base history.
        for m in 1..=BASE_HISTORY as u64 {
            d.add(m * MINUTE, 60 * TMS);
        }
        assert_eq!(d.base(), 60 * TMS);
    }

    #[test]
    fn rfc_cwnd_is_capped_by_flight_size_and_halved_once_per_event() {
        let mut cc = Ledbat::new(Variant::Rfc6817, 100 * TMS, MSS);
        cc.cwnd = (40 * MSS) as f64;
        // Application-limited: only 10 packets in flight before the ACK.
        ack(&mut cc, 0, 10 * TMS, 9 * MSS);
        assert_eq!(cc.cwnd(), 11 * MSS, "flightsize (10) + ALLOWED_INCREASE (1)");
        let mut rng = Rng::new(1);
        let ev =
            CongestionEvent { now: 0, largest_lost_send_time: 0, lost_bytes: MSS, in_flight: 0, prior_in_flight: 0 };
        cc.on_congestion_event(&ev, &mut CcContext { mss: MSS, rng: &mut rng });
        assert_eq!(cc.cwnd(), 11 * MSS / 2);
        cc.on_rto(0, &mut CcContext { mss: MSS, rng: &mut rng });
        assert_eq!(cc.cwnd(), MSS, "RFC 6817: one MSS after a timeout");
    }

    #[test]
    fn utp_grows_at_most_3000_bytes_per_rtt_and_leaves_slow_start_near_target() {
        let mut cc = Ledbat::new(Variant::Libutp, 100 * TMS, MSS);
        cc.slow_start = false;
        cc.cwnd = (20 * MSS) as f64;
        let ev_ack = |cc: &mut Ledbat, now: Time, owd: Time| {
            let acked = [AckedPacket { id: 0, bytes: MSS, send_time: now - 100 * TMS, tag: 0, rtt: 100 * TMS }];
            let rtt = RttStats::default();
            let mut ev = crate::testkit::ack_event(&acked, &[], &rtt, CaState::Open, 20 * MSS);
            ev.now = now;
            ev.one_way_delay = Some(owd);
            let mut rng = Rng::new(1);
            cc.on_ack(&ev, &mut CcContext { mss: MSS, rng: &mut rng });
        };
        let start = cc.cwnd;
        for i in 0..20 {
            ev_ack(&mut cc, SEC + i * TMS, 10 * TMS);
        }
        let grown = cc.cwnd - start;
        assert!(grown > 2800.0 && grown <= 3000.0, "grew {grown} bytes in one window");

        // Slow start ends once the delay passes 90% of the target.
        let mut cc = Ledbat::new(Variant::Libutp, 100 * TMS, MSS);
        ev_ack(&mut cc, SEC, 10 * TMS);
        assert!(cc.in_slow_start());
        for i in 1..4 {
            ev_ack(&mut cc, SEC + i * TMS, 10 * TMS + 95 * TMS);
        }
        assert!(!cc.in_slow_start(), "{:?}", cc.snapshot());
    }

    #[test]
    fn utp_halves_at_most_once_per_100ms() {
        let mut cc = Ledbat::new(Variant::Libutp, 100 * TMS, MSS);
        cc.cwnd = 64_000.0;
        cc.utp_decay(SEC);
        cc.utp_decay(SEC + 50 * TMS);
        assert_eq!(cc.cwnd, 32_000.0);
        cc.utp_decay(SEC + 100 * TMS);
        assert_eq!(cc.cwnd, 16_000.0);
        assert!(!cc.in_slow_start());
    }
}
