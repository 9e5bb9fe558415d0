//! Copa (Arun & Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the
//! Internet", NSDI 2018), checked against the authors' implementation (genericCC
//! `markoviancc.cc`, `rtt-window.cc`, `estimators.cc`).
//!
//! Copa aims at a target rate `λ_t = 1/(δ·d_q)` packets/s, where `d_q` is the queueing delay:
//! the "standing" RTT (the minimum RTT over the last half srtt, which filters ACK jitter)
//! minus the minimum RTT over 10 s. On every ACK the window moves by `v/(δ·cwnd)` packets
//! towards the target (up if `cwnd/RTT_standing ≤ λ_t`, down otherwise), so it changes by
//! about `v/δ` packets per RTT; the velocity `v` doubles while the window keeps moving the
//! same way, which makes convergence fast. At equilibrium each flow keeps about `1/δ` packets
//! queued, and the queue empties every ~5 RTTs. Packets are paced at `2·cwnd/RTT_standing`.
//!
//! Competitive mode (`mode = "auto"`): when the queue has not been nearly empty within the
//! last 5·srtt (the RTT never fell below RTT_min + 10 % of the span up to the largest RTT of
//! the last 4·srtt), a buffer-filling flow is assumed present and δ is adapted like TCP: `1/δ` grows by one per RTT and halves on a loss
//! (at most once per RTT), capped at the configured δ; the mode is re-evaluated on every ACK.
//! `mode = "default"` never leaves the default mode (the paper's "Copa D").
//!
//! From genericCC: srtt is Copa's own EWMA with gain 1/16; the min-RTT window is
//! max(10 s, 20·min_rtt); the RTT windows are exact (monotone deques) and never drop their
//! last sample; slow start adds one packet per ACK until the window reaches the target; the
//! window never falls below 2 packets; a loss rate above 30 % over a window of at least
//! 2 RTTs and 20 packets cuts the window to 0.7×. From the paper, where genericCC differs: the
//! velocity starts doubling only after the direction stayed the same for 3 windows (genericCC
//! doubles at once); it is compared once per window of packets against the window recorded
//! when the newest acked packet was sent (kept in its `CcTag`); genericCC's cap of `v` at
//! `δ·cwnd` is kept, and so is mvfst's reset of `v` to 1 as soon as an ACK moves the window
//! against a velocity built up in the other direction (without it, a velocity doubled for a
//! long climb overshoots the target by a factor ~2 on the way back, again and again). genericCC's loss response passes an RTT of 0 to its once-per-RTT test,
//! which makes it act on every lossy ACK; here it acts at most once per RTT, as the paper says.
//! genericCC's first 19 ACKs ("probe packets") do not move the window; that start-up
//! artefact of its UDP prober is not reproduced.

use crate::controller::CongestionControl;
use crate::newreno::INIT_CWND_OPTION;
use crate::registry::{BuildResult, OptValue, OptionInfo, OptionKind, Options, Scheme, SchemeInfo};
use crate::types::*;
use std::collections::VecDeque;
use std::ops::Bound;

use cclab_core::time::SEC;
/// The paper's default δ (NSDI'18 §2): 1/δ = 2 packets queued per flow at equilibrium.
const DEFAULT_DELTA: f64 = 0.5;
/// genericCC `RTTWindow`: srtt gain, min-RTT window max(10 s, 20·min_rtt), standing window
/// srtt/2 (`rtt-window.cc`, `new_rtt_sample`).
const SRTT_GAIN: f64 = 1.0 / 16.0;
const MIN_RTT_WINDOW: Time = 10 * SEC;
const MIN_RTT_WINDOW_RTTS: u64 = 20;
/// The mode detector's two windows. The paper (NSDI'18 §2.2) asks whether the queue was
/// nearly empty at least once in the last 5 RTTs, "nearly empty" measured against RTT_max
/// over the last 4 RTTs (reference/cc-algorithms.md §6.1). genericCC (`rtt-window.cc`,
/// `is_copa_min` / `is_copa_max`) looks back `4·srtt` for both; the paper's 5 is kept for
/// the emptiness look-back, and RTT_max uses the 4·srtt on which both agree.
const MODE_EMPTY_WINDOW_SRTTS: f64 = 5.0;
const MODE_MAX_WINDOW_SRTTS: f64 = 4.0;
/// `is_copa()`: the queue counts as nearly empty below 10 % of the recent RTT range.
const NEARLY_EMPTY: f64 = 0.1;
/// The paper: start doubling the velocity after the direction held for 3 windows.
const VELOCITY_WAIT: u32 = 3;
/// genericCC: `_the_window = max(2.0, _the_window)`.
const MIN_CWND: f64 = 2.0;
/// genericCC `ReduceOnLoss`: over ≥ 2 RTTs and > 20 packets, a loss rate above 30 %
/// multiplies the window by 0.7 (the source comment says 10 %; the code says 0.3).
const LOSS_VALVE_RATE: f64 = 0.3;
const LOSS_VALVE_PKTS: u64 = 20;
const LOSS_VALVE_CUT: f64 = 0.7;
/// `2·cwnd/RTT_standing` (genericCC: intersend time `0.5·RTT_standing/cwnd`).
const PACING_GAIN: f64 = 2.0;

const MODES: &[&str] = &["auto", "default"];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopaConfig {
    /// δ in default mode (and the cap on δ in competitive mode).
    pub delta: f64,
    /// Switch to competitive mode when a buffer-filling flow is detected.
    pub auto_mode: bool,
    /// Initial window in packets.
    pub init_cwnd: u64,
}

impl Default for CopaConfig {
    fn default() -> Self {
        // genericCC starts with `num_probe_pkts` = 10 packets.
        CopaConfig { delta: DEFAULT_DELTA, auto_mode: true, init_cwnd: 10 }
    }
}

pub const SCHEME: Scheme = Scheme {
    info: SchemeInfo {
        name: "copa",
        summary: "Copa (NSDI'18; genericCC): delay-based target rate 1/(δ·queueing delay), competitive mode",
        options: &[
            OptionInfo {
                name: "delta",
                kind: OptionKind::Float { lo: Bound::Excluded(0.0), hi: Bound::Included(1.0) },
                default: Some(OptValue::Float(DEFAULT_DELTA)),
                help: "δ: about 1/δ packets of this flow stay queued; smaller is more aggressive",
            },
            OptionInfo {
                name: "mode",
                kind: OptionKind::Choice(MODES),
                default: Some(OptValue::Choice("auto")),
                help: "\"auto\" switches to competitive mode when the queue never empties (a \
                       buffer-filling flow shares the link); \"default\" never does (Copa D)",
            },
            INIT_CWND_OPTION,
        ],
    },
    build: build_from_options,
};

fn build_from_options(opts: &Options, mss: u64) -> BuildResult {
    let d = CopaConfig::default();
    let cfg = CopaConfig {
        delta: opts.float("delta").unwrap_or(d.delta),
        auto_mode: opts.choice("mode").unwrap_or("auto") == "auto",
        init_cwnd: match opts.int("init_cwnd") {
            Some(n) if opts.is_set("init_cwnd") => n as u64,
            _ => d.init_cwnd,
        },
    };
    Ok(Box::new(Copa::new(mss, cfg)))
}

/// An exact running minimum or maximum over a time window (genericCC `ExtremeWindow`): a
/// monotone deque of (time, value); the last sample is never dropped.
#[derive(Clone, Debug)]
struct ExtremeWindow {
    find_min: bool,
    vals: VecDeque<(Time, Time)>,
}

impl ExtremeWindow {
    fn new(find_min: bool) -> Self {
        ExtremeWindow { find_min, vals: VecDeque::new() }
    }

    fn update(&mut self, now: Time, val: Time, window: Time) {
        let worse = |old: Time| if self.find_min { old > val } else { old < val };
        while self.vals.back().is_some_and(|&(_, v)| worse(v)) {
            self.vals.pop_back();
        }
        self.vals.push_back((now, val));
        while self.vals.len() > 1 && self.vals.front().is_some_and(|&(t, _)| t + window < now) {
            self.vals.pop_front();
        }
    }

    fn get(&self) -> Option<Time> {
        self.vals.front().map(|&(_, v)| v)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

#[derive(Clone, Debug)]
pub struct Copa {
    cfg: CopaConfig,
    mss: u64,
    /// Window in packets (fractional, as in the paper).
    cwnd: f64,
    /// The δ in use (the configured one in default mode, adapted in competitive mode).
    delta: f64,
    competitive: bool,
    slow_start: bool,
    /// Copa's own smoothed RTT (ns), gain 1/16.
    srtt: f64,
    min_rtt: ExtremeWindow,
    standing: ExtremeWindow,
    recent_min: ExtremeWindow,
    recent_max: ExtremeWindow,
    // Velocity.
    velocity: f64,
    direction: Direction,
    same_direction: u32,
    /// The window ends when a packet with this id or later is acked.
    velocity_end_id: u64,
    next_id: u64,
    // Competitive-mode δ updates.
    last_delta_update: Option<Time>,
    last_delta_loss: Option<Time>,
    // The loss safety valve.
    valve_lost: u64,
    valve_pkts: u64,
    valve_since: Time,
    pacing_rate: Option<f64>,
}

impl Copa {
    pub fn new(mss: u64, cfg: CopaConfig) -> Copa {
        Copa {
            cfg,
            mss,
            cwnd: cfg.init_cwnd.max(1) as f64,
            delta: cfg.delta,
            competitive: false,
            slow_start: true,
            srtt: 0.0,
            min_rtt: ExtremeWindow::new(true),
            standing: ExtremeWindow::new(true),
            recent_min: ExtremeWindow::new(true),
            recent_max: ExtremeWindow::new(false),
            velocity: 1.0,
            direction: Direction::Up,
            same_direction: 0,
            velocity_end_id: 0,
            next_id: 0,
            last_delta_update: None,
            last_delta_loss: None,
            valve_lost: 0,
            valve_pkts: 0,
            valve_since: 0,
            pacing_rate: None,
        }
    }

    /// genericCC `RTTWindow::new_rtt_sample`.
    fn new_rtt_sample(&mut self, rtt: Time, now: Time) {
        let r = rtt as f64;
        if self.srtt == 0.0 {
            self.srtt = r;
        }
        self.srtt = SRTT_GAIN * r + (1.0 - SRTT_GAIN) * self.srtt;
        let long = self.min_rtt.get().map_or(MIN_RTT_WINDOW, |m| MIN_RTT_WINDOW.max(MIN_RTT_WINDOW_RTTS * m));
        let standing = long.min((self.srtt * 0.5) as Time);
        let empty_window = long.min((self.srtt * MODE_EMPTY_WINDOW_SRTTS) as Time);
        let max_window = long.min((self.srtt * MODE_MAX_WINDOW_SRTTS) as Time);
        self.min_rtt.update(now, rtt, long);
        self.standing.update(now, rtt, standing);
        self.recent_min.update(now, rtt, empty_window);
        self.recent_max.update(now, rtt, max_window);
    }

    fn rtt_min(&self) -> Time {
        self.min_rtt.get().unwrap_or(0)
    }

    fn rtt_standing(&self) -> Time {
        self.standing.get().unwrap_or(0)
    }

    /// Queueing delay estimate d_q, ns.
    fn queueing_delay(&self) -> Time {
        self.rtt_standing().saturating_sub(self.rtt_min())
    }

    /// genericCC `is_copa()`: was the queue nearly empty at least once recently?
    fn queue_nearly_emptied(&self) -> bool {
        let (Some(lo), Some(hi)) = (self.recent_min.get(), self.recent_max.get()) else { return true };
        let min = self.rtt_min() as f64;
        (lo as f64) < min + NEARLY_EMPTY * (hi as f64 - min)
    }

    /// genericCC `update_delta`: choose the mode, and adapt δ in competitive mode.
    fn update_delta(&mut self, lost: bool, rtt: Time, now: Time) {
        if self.cfg.auto_mode {
            self.competitive = !self.queue_nearly_emptied();
        }
        let rtt_ago = |t: Option<Time>| t.is_none_or(|t| t + rtt < now);
        if !self.competitive {
            if self.last_delta_update.is_none() || rtt_ago(self.last_delta_loss) {
                self.delta = self.cfg.delta;
                self.last_delta_update = Some(now);
            }
            return;
        }
        if self.last_delta_update.is_none() {
            self.delta = self.cfg.delta;
        }
        if lost && rtt_ago(self.last_delta_loss) {
            // Multiplicative decrease of 1/δ: halve it.
            self.delta *= 2.0;
            self.last_delta_loss = Some(now);
        } else if rtt_ago(self.last_delta_update) {
            // Additive increase of 1/δ: one more packet per RTT.
            self.delta = 1.0 / (1.0 / self.delta + 1.0);
            self.last_delta_update = Some(now);
        }
        self.delta = self.delta.min(self.cfg.delta);
    }

    /// Once per window of packets: is the window still moving the same way?
    fn update_velocity(&mut self, cwnd_then: f64) {
        let dir = if self.cwnd > cwnd_then { Direction::Up } else { Direction::Down };
        if dir == self.direction {
            self.same_direction += 1;
            if self.same_direction >= VELOCITY_WAIT {
                self.velocity *= 2.0;
            }
        } else {
            self.direction = dir;
            self.same_direction = 0;
            self.velocity = 1.0;
        }
    }

    /// The per-ACK window update (genericCC `update_intersend_time`), once per acked packet.
    fn update_window(&mut self) {
        let rtt = self.rtt_standing() as f64;
        let dq = self.queueing_delay() as f64;
        // Window that sends at λ_t = 1/(δ·d_q) over one standing RTT.
        let target = if dq == 0.0 { f64::INFINITY } else { rtt / (dq * self.delta) };
        if self.slow_start {
            self.cwnd += 1.0;
            if self.cwnd >= target {
                self.slow_start = false;
            }
        } else {
            if self.velocity > self.cwnd * self.delta {
                self.velocity /= 2.0;
            }
            self.velocity = self.velocity.max(1.0);
            let dir = if self.cwnd < target { Direction::Up } else { Direction::Down };
            if dir != self.direction && self.velocity > 1.0 {
                // A velocity built up for the other direction would overshoot: start over.
                self.direction = dir;
                self.velocity = 1.0;
                self.same_direction = 0;
                self.velocity_end_id = self.next_id;
            }
            let step = self.velocity / (self.delta * self.cwnd);
            match dir {
                Direction::Up => self.cwnd += step,
                Direction::Down => self.cwnd -= step,
            }
        }
        self.cwnd = self.cwnd.max(MIN_CWND);
    }

    /// genericCC `ReduceOnLoss::update`; true when the window should be cut.
    fn loss_valve(&mut self, lost: bool, now: Time, rtt: Time) -> bool {
        self.valve_lost += u64::from(lost);
        self.valve_pkts += 1;
        if now > self.valve_since + 2 * rtt && self.valve_pkts > LOSS_VALVE_PKTS {
            let rate = self.valve_lost as f64 / self.valve_pkts as f64;
            self.valve_since = now;
            self.valve_lost = 0;
            self.valve_pkts = 0;
            return rate > LOSS_VALVE_RATE;
        }
        false
    }

    fn update_pacing(&mut self) {
        let rtt = self.rtt_standing();
        self.pacing_rate = (rtt > 0).then(|| PACING_GAIN * self.cwnd * self.mss as f64 / (rtt as f64 / SEC as f64));
    }
}

impl CongestionControl for Copa {
    fn name(&self) -> &'static str {
        "copa"
    }

    fn on_packet_sent(&mut self, pkt: &SentPacket, _ctx: &mut CcContext) -> CcTag {
        self.next_id = self.next_id.max(pkt.id + 1);
        // The window at send time, for the velocity's direction test one RTT later.
        self.cwnd.to_bits()
    }

    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        let now = ev.now;
        let Some(newest) = ev.acked.iter().max_by_key(|p| (p.send_time, p.id)) else {
            if !ev.lost.is_empty() {
                let rtt = self.srtt as Time;
                self.update_delta(true, rtt, now);
            }
            return;
        };
        let rtt = newest.rtt.max(1);
        self.new_rtt_sample(rtt, now);
        self.update_delta(false, rtt, now);
        if !self.slow_start && newest.id >= self.velocity_end_id {
            self.update_velocity(f64::from_bits(newest.tag));
            self.velocity_end_id = self.next_id;
        }
        for _ in 0..ev.acked.len() {
            self.update_window();
        }
        let mut cut = false;
        if !ev.lost.is_empty() {
            self.update_delta(true, rtt, now);
            for _ in ev.lost {
                cut |= self.loss_valve(true, now, rtt);
            }
        }
        for _ in ev.acked {
            cut |= self.loss_valve(false, now, rtt);
        }
        if cut {
            self.cwnd = (self.cwnd * LOSS_VALVE_CUT).max(MIN_CWND);
        }
        self.update_pacing();
    }

    fn cwnd(&self) -> u64 {
        (self.cwnd * self.mss as f64) as u64
    }

    fn pacing_rate(&self) -> Option<f64> {
        self.pacing_rate
    }

    fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    fn snapshot(&self) -> CcSnapshot {
        let s = |t: Time| t as f64 / SEC as f64;
        CcSnapshot {
            mode: if self.competitive { "competitive" } else { "default" },
            vars: vec![
                ("cwnd", self.cwnd * self.mss as f64),
                ("delta", self.delta),
                ("velocity", self.velocity),
                ("rtt_standing", s(self.rtt_standing())),
                ("rtt_min", s(self.rtt_min())),
                ("queueing_delay", s(self.queueing_delay())),
                ("slow_start", f64::from(u8::from(self.slow_start))),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{var, Driver, MS};

    use cclab_core::scenario::MSS;

    fn copa(delta: f64) -> Copa {
        Copa::new(MSS, CopaConfig { delta, ..CopaConfig::default() })
    }

    #[test]
    fn extreme_window_is_exact_and_keeps_its_last_sample() {
        let mut w = ExtremeWindow::new(true);
        w.update(0, 50, 100);
        w.update(10, 70, 100);
        w.update(20, 60, 100);
        assert_eq!(w.get(), Some(50));
        w.update(105, 80, 100);
        assert_eq!(w.get(), Some(60), "50 left the window; 60 is the min of what remains");
        w.update(500, 90, 100);
        assert_eq!(w.get(), Some(90), "everything older expired, the newest stays");
        let mut m = ExtremeWindow::new(false);
        m.update(0, 5, 10);
        m.update(5, 3, 10);
        assert_eq!(m.get(), Some(5));
        m.update(11, 1, 10);
        assert_eq!(m.get(), Some(3));
    }

    #[test]
    fn slow_start_doubles_until_the_target_then_holds_about_one_over_delta_queued() {
        // 1000 packets/s and 40 ms: BDP = 40 packets; at δ = 0.5 the equilibrium queue is
        // 1/δ = 2 packets (2 ms), oscillating around it.
        let mut d = Driver::with_bottleneck(copa(0.5), MSS, 40 * MS, 1000);
        d.run_until(40 * MS + 1);
        assert!(d.cc.in_slow_start());
        d.run_until(3_000 * MS);
        assert!(!d.cc.in_slow_start());
        let mut dq = Vec::new();
        let mut w = Vec::new();
        d.run_until_with(20_000 * MS, |_, cc| {
            dq.push(var(&cc.snapshot(), "queueing_delay"));
            w.push(cc.cwnd() as f64 / MSS as f64);
        });
        let mean_w = w.iter().sum::<f64>() / w.len() as f64;
        let mean_dq = dq.iter().sum::<f64>() / dq.len() as f64;
        assert!((40.0..48.0).contains(&mean_w), "mean window {mean_w:.1}");
        assert!(mean_dq < 0.006, "mean standing queueing delay {mean_dq}");
        assert_eq!(d.cc.snapshot().mode, "default");
    }

    #[test]
    fn velocity_doubles_only_after_three_windows_in_one_direction() {
        let mut c = copa(0.5);
        c.slow_start = false;
        c.cwnd = 100.0;
        for (k, want) in [(1, 1.0), (2, 1.0), (3, 2.0), (4, 4.0)] {
            c.update_velocity(c.cwnd - 1.0);
            assert_eq!(c.velocity, want, "window {k}");
        }
        c.update_velocity(c.cwnd + 1.0);
        assert_eq!((c.velocity, c.direction), (1.0, Direction::Down));
    }

    #[test]
    fn competitive_delta_grows_one_over_delta_per_rtt_and_halves_it_on_loss() {
        let mut c = copa(0.5);
        c.competitive = true;
        c.cfg.auto_mode = false; // keep the mode fixed for this test
        let rtt = 10 * MS;
        c.update_delta(false, rtt, MS);
        assert_eq!(c.delta, 1.0 / 3.0);
        c.update_delta(false, rtt, 5 * MS);
        assert_eq!(c.delta, 1.0 / 3.0, "at most once per RTT");
        c.update_delta(false, rtt, 12 * MS);
        assert!((c.delta - 0.25).abs() < 1e-12);
        c.update_delta(true, rtt, 13 * MS);
        assert!((c.delta - 0.5).abs() < 1e-12, "1/δ halved: 4 → 2");
        c.update_delta(true, rtt, 14 * MS);
        assert!(c.delta <= 0.5, "never above the configured δ");
    }

    #[test]
    fn mode_follows_whether_the_queue_empties() {
        let mut c = copa(0.5);
        // RTTs oscillating down to the minimum: default mode.
        for i in 0..200u64 {
            let rtt = 20 * MS + (i % 10) * MS;
            c.new_rtt_sample(rtt, i * MS);
            c.update_delta(false, rtt, i * MS);
        }
        assert!(!c.competitive);
        // A standing queue that never drains below 30 ms, for longer than 5·srtt: competitive.
        for i in 200..800u64 {
            let rtt = 50 * MS + (i % 10) * MS;
            c.new_rtt_sample(rtt, i * MS);
            c.update_delta(false, rtt, i * MS);
        }
        assert!(c.competitive);
        assert!(c.delta < 0.5);
        // mode = "default" never switches.
        let mut d = Copa::new(MSS, CopaConfig { auto_mode: false, ..CopaConfig::default() });
        for i in 0..400u64 {
            let rtt = if i < 200 { 20 * MS } else { 60 * MS };
            d.new_rtt_sample(rtt, i * MS);
            d.update_delta(false, rtt, i * MS);
        }
        assert!(!d.competitive);
        assert_eq!(d.delta, 0.5);
    }

    #[test]
    fn nearly_empty_is_judged_against_the_largest_rtt_of_the_last_four_srtts() {
        // RTT_min 10 ms, then a steady 11 ms (srtt → 11 ms) with one 30 ms spike at 1 s. While
        // the spike is within 4·srtt the threshold is 10 + 0.1·20 = 12 ms and the 11 ms
        // samples count as a nearly empty queue; once it is older than 4·srtt (but still
        // within 5·srtt) RTT_max is 11 ms, the threshold 10.1 ms, and they do not.
        let mut c = copa(0.5);
        c.new_rtt_sample(10 * MS, 0);
        for t in 1..1000u64 {
            c.new_rtt_sample(11 * MS, t * MS);
        }
        c.new_rtt_sample(30 * MS, 1000 * MS);
        for t in 1001..=1040u64 {
            c.new_rtt_sample(11 * MS, t * MS);
        }
        assert!(c.srtt < 11.2e6 && c.queue_nearly_emptied(), "spike 40 ms old, within 4·srtt");
        for t in 1041..=1050u64 {
            c.new_rtt_sample(11 * MS, t * MS);
        }
        assert!(c.srtt * 4.0 < 50e6 && 50e6 < c.srtt * 5.0);
        assert!(!c.queue_nearly_emptied(), "spike 50 ms old: outside 4·srtt, so RTT_max is 11 ms");
    }

    #[test]
    fn heavy_loss_cuts_the_window_by_0_7() {
        let mut c = copa(0.5);
        c.cwnd = 100.0;
        let mut cut = false;
        for i in 0..40u64 {
            cut |= c.loss_valve(i % 2 == 0, i * MS, MS);
        }
        assert!(cut, "50 % loss over > 20 packets and > 2 RTTs");
        let mut c = copa(0.5);
        assert!(!(0..100u64).any(|i| c.loss_valve(i % 10 == 0, i * MS, MS)), "10 % is tolerated");
    }

    #[test]
    fn pacing_at_twice_the_window_per_standing_rtt() {
        let mut d = Driver::with_bottleneck(copa(0.5), MSS, 40 * MS, 1000);
        d.run_until(5_000 * MS);
        let c = &d.cc;
        let want = 2.0 * c.cwnd * MSS as f64 / (c.rtt_standing() as f64 / 1e9);
        assert!((c.pacing_rate().unwrap() - want).abs() < 1e-6 * want);
    }
}
