//! TCP Vegas as Linux's `net/ipv4/tcp_vegas.c` runs it (Brakmo & Peterson, JSAC 1995).
//!
//! Once per RTT (when a packet sent after the previous decision is acknowledged) Vegas compares
//! the window with what the path delivers at the minimum RTT of that round: `diff` =
//! `cwnd·(rtt − baseRTT)/baseRTT` is its estimate of its own packets queued at the bottleneck.
//! In congestion avoidance it adds a packet when `diff < alpha`, removes one when
//! `diff > beta`, and otherwise holds, so a lone flow keeps between α and β packets queued. In
//! slow start, `diff > gamma` ends slow start with the window set to the rate actually achieved.
//!
//! Linux details kept (all from `tcp_vegas.c` and the Reno helpers in `tcp_cong.c`):
//! - α = 2, β = 4, γ = 1 packets (module parameters); the 1995 paper used α = 1, β = 3;
//! - RTTs in whole microseconds plus 1 µs ("never allow zero rtt or baseRTT"), integer `diff`;
//! - baseRTT is the minimum over the connection's life, reset only by an idle restart;
//! - with ≤ 2 RTT samples in the round (probably delayed ACKs) it behaves like Reno;
//! - in loss recovery and after an RTO Vegas is off (Reno), and it restarts its round when the
//!   connection returns to Open;
//! - on loss, Reno's `ssthresh = max(cwnd/2, 2)`; after a Vegas decision
//!   `ssthresh = max(ssthresh, 3/4·cwnd)` (`tcp_current_ssthresh`), so it never re-enters slow
//!   start by itself.
//!
//! As for the other windowed schemes here, a congestion event cuts the window straight to
//! ssthresh and it does not grow until recovery ends; the transport meters the flight down to it
//! by PRR meanwhile (`uses_prr`, `[transport] prr`), as Linux's tcp_cwnd_reduction does.

use crate::controller::CongestionControl;
use crate::newreno::{rfc6928_initial_window, INIT_CWND_OPTION};
use crate::registry::{BuildResult, OptValue, OptionError, OptionInfo, OptionKind, Options, Scheme, SchemeInfo};
use crate::types::*;

/// `tcp_vegas.c` module parameters, in packets.
const ALPHA: i64 = 2;
const BETA: i64 = 4;
const GAMMA: i64 = 1;
/// Linux's minimum window after a Vegas decision.
const MIN_CWND: u64 = 2;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VegasConfig {
    /// Fewer estimated queued packets than this: grow by one per RTT.
    pub alpha: u64,
    /// More than this: shrink by one per RTT.
    pub beta: u64,
    /// More than this in slow start: leave slow start.
    pub gamma: u64,
    /// Initial window in packets.
    pub init_cwnd: u64,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig { alpha: ALPHA as u64, beta: BETA as u64, gamma: GAMMA as u64, init_cwnd: 10 }
    }
}

pub const SCHEME: Scheme = Scheme {
    info: SchemeInfo {
        name: "vegas",
        summary: "TCP Vegas as Linux tcp_vegas runs it: keeps alpha..beta packets queued, Reno on loss",
        options: &[
            OptionInfo {
                name: "alpha",
                kind: OptionKind::Int { min: 0, max: 1_000_000 },
                default: Some(OptValue::Int(ALPHA)),
                help: "grow by a packet per RTT while fewer than this many of the flow's packets are queued",
            },
            OptionInfo {
                name: "beta",
                kind: OptionKind::Int { min: 0, max: 1_000_000 },
                default: Some(OptValue::Int(BETA)),
                help: "shrink by a packet per RTT while more than this many are queued (≥ alpha)",
            },
            OptionInfo {
                name: "gamma",
                kind: OptionKind::Int { min: 0, max: 1_000_000 },
                default: Some(OptValue::Int(GAMMA)),
                help: "leave slow start once more than this many packets are queued",
            },
            INIT_CWND_OPTION,
        ],
    },
    build: build_from_options,
};

fn build_from_options(opts: &Options, mss: u64) -> BuildResult {
    let d = VegasConfig::default();
    let cfg = VegasConfig {
        alpha: opts.int("alpha").map_or(d.alpha, |x| x as u64),
        beta: opts.int("beta").map_or(d.beta, |x| x as u64),
        gamma: opts.int("gamma").map_or(d.gamma, |x| x as u64),
        init_cwnd: match opts.int("init_cwnd") {
            Some(n) if opts.is_set("init_cwnd") => n as u64,
            _ => rfc6928_initial_window(mss) / mss,
        },
    };
    if cfg.beta < cfg.alpha {
        return Err(vec![OptionError::new(
            "beta",
            format!("must be at least alpha ({}); got {}", cfg.alpha, cfg.beta),
        )]);
    }
    Ok(Box::new(Vegas::new(mss, cfg)))
}

/// Microseconds, as Linux keeps Vegas's RTTs.
type Micros = u64;
const NO_RTT: Micros = 0x7fff_ffff;

#[derive(Clone, Debug)]
pub struct Vegas {
    cfg: VegasConfig,
    mss: u64,
    /// Window and slow-start threshold in packets (`u64::MAX` = not yet set).
    cwnd: u64,
    ssthresh: u64,
    /// Linux `snd_cwnd_cnt`: acked packets towards the next +1 of Reno's additive increase.
    cwnd_cnt: u64,
    /// Minimum RTT ever seen (µs + 1), and the minimum and count of samples this round.
    base_rtt: Micros,
    min_rtt: Micros,
    cnt_rtt: u32,
    /// `beg_snd_nxt`: the id of the first packet sent after the round began; the round ends
    /// when a packet with this id or a later one is acknowledged.
    round_end_id: u64,
    /// The id the next packet will carry.
    next_id: u64,
    /// Off in loss recovery and after an RTO (Linux `doing_vegas_now`).
    doing_vegas_now: bool,
    in_recovery: bool,
    /// Set by an RTO until new data is acked, so that backed-off expiries cut ssthresh once.
    rto_pending: bool,
    last_diff: i64,
}

impl Vegas {
    pub fn new(mss: u64, cfg: VegasConfig) -> Vegas {
        Vegas {
            cfg,
            mss,
            cwnd: cfg.init_cwnd.max(1),
            ssthresh: u64::MAX,
            cwnd_cnt: 0,
            base_rtt: NO_RTT,
            min_rtt: NO_RTT,
            cnt_rtt: 0,
            round_end_id: 0,
            next_id: 0,
            doing_vegas_now: true,
            in_recovery: false,
            rto_pending: false,
            last_diff: 0,
        }
    }

    /// `vegas_enable`: start a fresh round at the next packet sent.
    fn enable(&mut self) {
        self.doing_vegas_now = true;
        self.round_end_id = self.next_id;
        self.cnt_rtt = 0;
        self.min_rtt = NO_RTT;
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `tcp_slow_start`: grow by the acked packets up to ssthresh; returns what is left over.
    fn slow_start(&mut self, acked: u64) -> u64 {
        let grown = self.cwnd.saturating_add(acked).min(self.ssthresh);
        let used = grown - self.cwnd;
        self.cwnd = grown;
        acked - used
    }

    /// `tcp_cong_avoid_ai` with `w = cwnd`: one packet per window of acked packets.
    fn cong_avoid_ai(&mut self, acked: u64) {
        let w = self.cwnd;
        crate::linux::cong_avoid_ai(&mut self.cwnd, &mut self.cwnd_cnt, w, acked);
    }

    /// `tcp_reno_cong_avoid`.
    fn reno(&mut self, acked: u64, cwnd_limited: bool) {
        if !cwnd_limited {
            return;
        }
        let mut acked = acked;
        if self.in_slow_start() {
            acked = self.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.cong_avoid_ai(acked);
    }

    /// The once-per-RTT decision (`tcp_vegas_cong_avoid` when the ACK passes `beg_snd_nxt`).
    fn decide(&mut self, acked: u64) {
        let rtt = self.min_rtt;
        let base = self.base_rtt;
        let cwnd = self.cwnd;
        // What the window would be if the round had run at the base RTT (truncated, as Linux).
        let target_cwnd = cwnd * base / rtt;
        // The flow's packets estimated to sit in queues ("Diff" of the Vegas paper).
        let diff = (cwnd * (rtt - base) / base) as i64;
        self.last_diff = diff;
        if diff > self.cfg.gamma as i64 && self.in_slow_start() {
            // Going too fast: match the rate actually achieved (+1 because truncation would
            // otherwise leave the link a little underused) and switch to congestion avoidance.
            self.cwnd = self.cwnd.min(target_cwnd + 1);
            self.ssthresh = self.ssthresh.min(self.cwnd.saturating_sub(1));
        } else if self.in_slow_start() {
            // Linux grows every RTT in slow start (the 1995 paper: every other RTT).
            self.slow_start(acked);
        } else if diff > self.cfg.beta as i64 {
            self.cwnd -= 1;
            self.ssthresh = self.ssthresh.min(self.cwnd.saturating_sub(1));
        } else if diff < self.cfg.alpha as i64 {
            self.cwnd += 1;
        }
        self.cwnd = self.cwnd.max(MIN_CWND);
        // tcp_current_ssthresh outside CWR/recovery: max(ssthresh, 3/4·cwnd).
        self.ssthresh = self.ssthresh.max((self.cwnd >> 1) + (self.cwnd >> 2));
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn on_packet_sent(&mut self, pkt: &SentPacket, _ctx: &mut CcContext) -> CcTag {
        self.next_id = self.next_id.max(pkt.id + 1);
        0
    }

    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        if ev.newly_acked_bytes > 0 {
            self.rto_pending = false;
        }
        let Some(newest) = ev.acked.iter().max_by_key(|p| (p.send_time, p.id)) else { return };
        // tcp_vegas_pkts_acked: one RTT sample per ACK, that of the newest packet it acks.
        let rtt = newest.rtt / 1_000 + 1;
        self.base_rtt = self.base_rtt.min(rtt);
        self.min_rtt = self.min_rtt.min(rtt);
        self.cnt_rtt += 1;

        // tcp_vegas_state: Vegas runs only in the Open state.
        let open = ev.ca_state == CaState::Open;
        if !open {
            self.doing_vegas_now = false;
        } else if !self.doing_vegas_now {
            self.enable();
        }
        self.in_recovery = ev.ca_state == CaState::Recovery;
        if self.in_recovery {
            // No growth in recovery: the window was cut at the congestion event (no PRR).
            return;
        }
        let acked = ev.acked.len() as u64;
        let cwnd_limited = !ev.app_limited;
        if !self.doing_vegas_now {
            self.reno(acked, cwnd_limited);
            return;
        }
        let largest = ev.acked.iter().map(|p| p.id).max().unwrap_or(0);
        if largest >= self.round_end_id {
            self.round_end_id = self.next_id;
            if self.cnt_rtt <= 2 {
                // Too few samples to trust one of them is not from a delayed ACK.
                self.reno(acked, cwnd_limited);
            } else {
                self.decide(acked);
            }
            self.cnt_rtt = 0;
            self.min_rtt = NO_RTT;
        } else if self.in_slow_start() {
            self.slow_start(acked);
        }
    }

    fn on_congestion_event(&mut self, _ev: &CongestionEvent, _ctx: &mut CcContext) {
        // tcp_reno_ssthresh from the window (not the flight, unlike RFC 5681).
        self.ssthresh = (self.cwnd >> 1).max(2);
        self.cwnd = self.ssthresh;
        self.cwnd_cnt = 0;
        self.in_recovery = true;
        self.doing_vegas_now = false;
    }

    fn on_recovery_exit(&mut self, _now: Time, _ctx: &mut CcContext) {
        self.in_recovery = false;
        self.enable();
    }

    fn on_rto(&mut self, _now: Time, _ctx: &mut CcContext) {
        if !self.rto_pending {
            self.ssthresh = (self.cwnd >> 1).max(2);
        }
        self.rto_pending = true;
        // tcp_enter_loss: cwnd = packets in flight (none) + 1.
        self.cwnd = 1;
        self.cwnd_cnt = 0;
        self.in_recovery = false;
        self.doing_vegas_now = false;
    }

    fn on_idle_restart(&mut self, _now: Time, idle_for: Time, rto: Time, _ctx: &mut CcContext) {
        // CA_EVENT_TX_START calls tcp_vegas_init: baseRTT is forgotten and re-learnt.
        self.base_rtt = NO_RTT;
        self.enable();
        // Vegas has no cong_control of its own, so Linux's tcp_cwnd_restart applies to it.
        if let Some((cwnd, ssthresh)) =
            crate::linux::cwnd_restart(self.cwnd, self.ssthresh, self.cfg.init_cwnd.max(1), idle_for, rto)
        {
            self.cwnd = cwnd;
            self.ssthresh = ssthresh;
        }
    }

    fn cwnd(&self) -> u64 {
        self.cwnd * self.mss
    }

    fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh != u64::MAX).then(|| self.ssthresh.saturating_mul(self.mss))
    }

    fn in_slow_start(&self) -> bool {
        Vegas::in_slow_start(self)
    }

    fn min_tso_segs(&self) -> Option<u64> {
        Some(crate::linux::MIN_TSO_SEGS)
    }

    fn uses_prr(&self) -> bool {
        true
    }

    fn snapshot(&self) -> CcSnapshot {
        let mode = if self.in_recovery {
            "recovery"
        } else if !self.doing_vegas_now {
            "reno"
        } else if self.in_slow_start() {
            "slow_start"
        } else {
            "cong_avoid"
        };
        let us = |x: Micros| if x == NO_RTT { f64::NAN } else { x as f64 * 1e-6 };
        let ssthresh = if self.ssthresh == u64::MAX { f64::INFINITY } else { (self.ssthresh * self.mss) as f64 };
        CcSnapshot {
            mode,
            vars: vec![
                ("cwnd", (self.cwnd * self.mss) as f64),
                ("ssthresh", ssthresh),
                ("base_rtt", us(self.base_rtt)),
                ("diff", self.last_diff as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{var, Driver, MS};

    use cclab_core::scenario::MSS;

    fn vegas() -> Vegas {
        Vegas::new(MSS, VegasConfig::default())
    }

    #[test]
    fn slow_start_doubles_without_a_queue() {
        // No bottleneck: the RTT never rises above baseRTT, so diff = 0 and Vegas slow-starts
        // like Reno (Linux grows every RTT).
        let mut d = Driver::new(vegas(), MSS, 50 * MS);
        for round in 1..=5 {
            d.run_until(round * 50 * MS);
            assert!(d.cc.in_slow_start());
        }
        assert_eq!(d.cc.cwnd(), (10 << 5) * MSS);
    }

    #[test]
    fn leaves_slow_start_on_gamma_and_settles_between_alpha_and_beta() {
        // 1000 packets/s (12 Mbit/s) and 40 ms: BDP = 40 packets.
        let mut d = Driver::with_bottleneck(vegas(), MSS, 40 * MS, 1000);
        d.run_until(2_000 * MS);
        assert!(!d.cc.in_slow_start(), "slow start should end on gamma, long before any loss");
        // This driver sends each ACK's packets in a burst, so the first packet of a slow-start
        // round finds the queue of the previous round drained and the round's minimum RTT
        // misses the queue until the window is ~4 BDP; from there Vegas comes down by one
        // packet per (long) RTT, which takes ~12 s. Judge the equilibrium after that.
        d.run_until(20_000 * MS);
        let mut diffs = Vec::new();
        let mut cwnds = Vec::new();
        d.run_until_with(40_000 * MS, |_, cc| {
            diffs.push(var(&cc.snapshot(), "diff"));
            cwnds.push(cc.cwnd() / MSS);
        });
        let tail = &cwnds[..];
        let (lo, hi) = (*tail.iter().min().unwrap(), *tail.iter().max().unwrap());
        // The window holds at BDP + α..β (+1 for integer truncation of diff).
        assert!(lo >= 40 + 2 && hi <= 40 + 4 + 1, "window {lo}..{hi}");
        let d_tail = &diffs[..];
        assert!(d_tail.iter().all(|&x| (1.0..=5.0).contains(&x)), "diffs {:?}", &d_tail[..20]);
    }

    /// One round of `n` ACKs, each with RTT `rtt_ms`, the last of them ending the round;
    /// returns the window change.
    fn round(v: &mut Vegas, n: u64, rtt_ms: u64) -> i64 {
        let mut rng = Rng::new(1);
        let mut ctx = CcContext { mss: MSS, rng: &mut rng };
        let before = v.cwnd as i64;
        // A packet sent now marks where the next round will end.
        v.on_packet_sent(&SentPacket { id: v.next_id, ..Default::default() }, &mut ctx);
        let stats = RttStats::default();
        for i in 0..n {
            let id = if i + 1 == n { v.round_end_id } else { 0 };
            let acked = [AckedPacket { id, bytes: MSS, send_time: 0, tag: 0, rtt: rtt_ms * MS }];
            let ev = crate::testkit::ack_event(&acked, &[], &stats, CaState::Open, 10 * MSS);
            v.on_ack(&ev, &mut ctx);
        }
        v.cwnd as i64 - before
    }

    #[test]
    fn reno_fallback_with_too_few_samples() {
        let mut v = vegas();
        v.cwnd = 20;
        v.ssthresh = 10; // congestion avoidance
        v.base_rtt = 10_001;
        v.cwnd_cnt = 19;
        (v.round_end_id, v.next_id) = (1, 1);
        // One sample: Reno's additive increase (the 20th acked packet adds one).
        assert_eq!(round(&mut v, 1, 100), 1);
        // Two ACKs at 10× the base RTT: diff ≫ β, but with only two samples Linux does not
        // trust them and behaves like Reno (one more acked packet, no change).
        assert_eq!(round(&mut v, 2, 100), 0);
        // With a third sample the Vegas decision runs: one packet less.
        assert_eq!(round(&mut v, 3, 100), -1);
        assert_eq!(v.last_diff, 21 * (100_001 - 10_001) / 10_001);
    }

    #[test]
    fn loss_halves_and_vegas_resumes_after_recovery() {
        let mut d = Driver::with_bottleneck(vegas(), MSS, 40 * MS, 1000);
        d.run_until(5_000 * MS);
        let before = d.cc.cwnd() / MSS;
        d.congestion_event();
        assert_eq!(d.cc.cwnd() / MSS, before / 2);
        assert_eq!(d.cc.snapshot().mode, "recovery");
        d.run_until(6_000 * MS);
        assert_eq!(d.cc.snapshot().mode, "cong_avoid");
        d.run_until(60_000 * MS);
        let after = d.cc.cwnd() / MSS;
        assert!((42..=45).contains(&after), "back to BDP + α..β: {after}");
    }

    #[test]
    fn rto_collapses_to_one_packet_and_cuts_ssthresh_once() {
        let mut d = Driver::new(vegas(), MSS, 50 * MS);
        d.run_until(100 * MS);
        let w = d.cc.cwnd() / MSS;
        d.rto();
        assert_eq!(d.cc.cwnd(), MSS);
        assert_eq!(d.cc.ssthresh(), Some(w / 2 * MSS));
        d.rto();
        assert_eq!(d.cc.ssthresh(), Some(w / 2 * MSS));
    }

    #[test]
    fn idle_restart_forgets_base_rtt_and_restarts_the_window() {
        let mut d = Driver::new(vegas(), MSS, 50 * MS);
        d.run_until(200 * MS);
        assert!(var(&d.cc.snapshot(), "base_rtt").is_finite());
        let before = d.cc.cwnd();
        let mut rng = Rng::new(1);
        // Idle for less than the RTO: baseRTT is forgotten (tcp_vegas_init on TX_START), the
        // window kept.
        d.cc.on_idle_restart(d.now, 100 * MS, 250 * MS, &mut CcContext { mss: MSS, rng: &mut rng });
        assert!(var(&d.cc.snapshot(), "base_rtt").is_nan());
        assert_eq!(d.cc.cwnd(), before);
        // Idle for four RTOs: tcp_cwnd_restart halves it three times, not below the IW.
        d.cc.on_idle_restart(d.now, 1_000 * MS, 250 * MS, &mut CcContext { mss: MSS, rng: &mut rng });
        assert_eq!(d.cc.cwnd(), (before >> 3).max(10 * MSS));
    }
}
