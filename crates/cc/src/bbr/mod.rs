//! BBR v1 as Linux's `net/ipv4/tcp_bbr.c` runs it (Cardwell et al., ACM Queue 2016;
//! draft-cardwell-iccrg-bbr-congestion-control-00).
//!
//! BBR models the path by two numbers: the bottleneck bandwidth (a windowed maximum of the
//! transport's delivery-rate samples over 10 packet-timed rounds) and the round-trip
//! propagation delay (the minimum RTT over 10 s). It paces at `pacing_gain · bw` and caps the
//! flight at `cwnd_gain · bw · min_rtt`, with the gains set by a four-state machine:
//! STARTUP (2/ln 2, doubling the rate each round until the bandwidth stops growing 25 % over
//! three rounds), DRAIN (the inverse gain until the startup queue is gone), PROBE_BW (an
//! eight-phase cycle 1.25, 0.75, 1 × 6, each phase one min_rtt long) and PROBE_RTT (every 10 s
//! without a new minimum: at most 4 packets in flight for 200 ms and one round).
//!
//! Linux details kept, all from `tcp_bbr.c`: the fixed-point gains (high gain 739/256, drain
//! 88/256); pacing 1 % below the estimate; the startup pacing rate that only rises; the
//! random first PROBE_BW phase (never the 0.75 one); packet conservation in the first round of
//! recovery and the cwnd restored on leaving it; the ACK-aggregation allowance (`extra_acked`,
//! a max over 5–10 rounds, capped at 100 ms of bandwidth); the long-term ("LT") policer
//! detector; the "in network at EDT" estimate for phase and drain decisions; and the TSO
//! quantisation budget (option `offload_budget`, on by default to behave as Linux; off gives
//! the textbook cwnd of the 2017 draft). Packets and whole-packet windows inside, as Linux;
//! bytes at the interface. Time in the transport's nanoseconds rather than Linux's µs, but
//! the min-RTT window and PROBE_RTT's 200 ms on jiffy ticks as Linux's; the bandwidth in f64
//! packets per second rather than a 2^-24 fixed point.
//!
//! Where the substrate differs from Linux:
//! - the transport reports `CaState::Recovery` on the ACK after the one that found the first
//!   loss, and calls `on_congestion_event` right after that ACK's `on_ack`, so recovery entry
//!   (save cwnd, packet conservation, start a round) happens there, with the cwnd saved as it
//!   was before that ACK, as Linux's `ssthresh` hook does;
//! - BBR marks the connection application-limited during PROBE_RTT (`tp->app_limited`); the
//!   transport owns that flag, so BBR tags the packets it sends in that state and treats a
//!   sample as app-limited if the transport says so or its newest packet carries the tag;
//! - no ACK is flagged as delayed (`is_ack_delayed`), so an expired min_rtt is refreshed by any
//!   sample.

use crate::controller::CongestionControl;
use crate::filters::WindowedFilter;
use crate::newreno::{rfc6928_initial_window, INIT_CWND_OPTION};
use crate::registry::{BuildResult, OptValue, OptionInfo, OptionKind, Options, Scheme, SchemeInfo};
use crate::types::*;

use cclab_core::time::MS;
use cclab_core::time::SEC;

// One file per part of tcp_bbr.c; this one keeps the state, the gains per mode and the
// per-ACK sequence (`bbr_main`) that calls the parts in Linux's order.
mod cwnd;
mod lt_bw;
mod model;
mod probe_bw;
mod probe_rtt;
mod startup;
// The constants Bundler's aggregate BBR (cclab-engine's middlebox) shares.
pub use probe_rtt::{MIN_RTT_WIN, PROBE_RTT_TIME};
pub use startup::{FULL_BW_CNT, FULL_BW_THRESH};
#[cfg(test)]
mod tests;

/// `BBR_UNIT`: gains are fractions of 256 in Linux; the same values are used here exactly.
const UNIT: f64 = 256.0;
/// `bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1`: 2/ln 2, the smallest gain that doubles the
/// delivery rate each round.
pub const HIGH_GAIN: f64 = 739.0 / UNIT;
/// `bbr_drain_gain = BBR_UNIT * 1000 / 2885`: drains the startup queue in about one round.
pub const DRAIN_GAIN: f64 = 88.0 / UNIT;
/// `bbr_cwnd_gain`: tolerates delayed and stretched ACKs.
const CWND_GAIN: f64 = 2.0;
/// `bbr_pacing_gain[]`: probe for more, drain what probing queued, then cruise.
pub const PACING_GAIN: [f64; CYCLE_LEN] = [320.0 / UNIT, 192.0 / UNIT, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
pub const CYCLE_LEN: usize = 8;
/// `bbr_bw_rtts = CYCLE_LEN + 2`: the bandwidth filter's window, in rounds.
pub const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// `bbr_cwnd_min_target`: two outstanding 2-packet sequences for ACK-every-other receivers.
pub const CWND_MIN_TARGET: u64 = 4;
/// `bbr_pacing_margin_percent`: pace 1 % below the estimate so queues drain.
const PACING_MARGIN: f64 = 0.99;
/// `TCP_INIT_CWND`: the cwnd when no RTT was ever measured, and the delivered count below
/// which startup grows regardless.
const TCP_INIT_CWND: u64 = 10;
/// Nominal RTT before the first sample (`bbr_init_pacing_rate_from_rtt`).
const NOMINAL_RTT: Time = MS;
/// `bbr_min_tso_rate`: below 1.2 Mbit/s one segment per TSO burst is enough.
const MIN_TSO_RATE: f64 = 1_200_000.0 / 8.0;
/// `sk_pacing_shift` = 10: TSO bursts of about 1 ms of data; capped by the legacy GSO size
/// (64 KiB − 1 − `MAX_TCP_HEADER`, 320 bytes on x86-64) and 127 segments.
const PACING_SHIFT: u32 = 10;
const GSO_MAX_BYTES: f64 = (65_536 - 1 - 320) as f64;
const TSO_MAX_SEGS: u64 = 0x7f;

/// CcTag bit on packets sent while BBR holds the connection application-limited (PROBE_RTT).
const TAG_APP_LIMITED: CcTag = 1;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BbrConfig {
    /// Add Linux's TSO/GSO quantisation budget to cwnd (3 bursts, even rounding).
    pub offload_budget: bool,
    /// Add the ACK-aggregation allowance (`extra_acked`) to cwnd.
    pub ack_aggregation: bool,
    /// Initial window in packets.
    pub init_cwnd: u64,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig { offload_budget: true, ack_aggregation: true, init_cwnd: TCP_INIT_CWND }
    }
}

pub const SCHEME: Scheme = Scheme {
    info: SchemeInfo {
        name: "bbr",
        summary: "BBR v1 as Linux tcp_bbr runs it: model-based pacing from max bandwidth and min RTT",
        options: &[
            OptionInfo {
                name: "ack_aggregation",
                kind: OptionKind::Bool,
                default: Some(OptValue::Bool(true)),
                help: "add the recent excess of ACKed data over bw·time to cwnd (Linux extra_acked)",
            },
            OptionInfo {
                name: "offload_budget",
                kind: OptionKind::Bool,
                default: Some(OptValue::Bool(true)),
                help: "add Linux's TSO quantisation budget (3 bursts of ~1 ms, even rounding) to \
                       cwnd; false gives the textbook cwnd of the 2017 draft",
            },
            INIT_CWND_OPTION,
        ],
    },
    build: build_from_options,
};

fn build_from_options(opts: &Options, mss: u64) -> BuildResult {
    let d = BbrConfig::default();
    let cfg = BbrConfig {
        offload_budget: opts.bool("offload_budget").unwrap_or(d.offload_budget),
        ack_aggregation: opts.bool("ack_aggregation").unwrap_or(d.ack_aggregation),
        init_cwnd: match opts.int("init_cwnd") {
            Some(n) if opts.is_set("init_cwnd") => n as u64,
            _ => rfc6928_initial_window(mss) / mss,
        },
    };
    Ok(Box::new(Bbr::new(mss, cfg)))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}

/// What one ACK tells BBR, in Linux's `rate_sample` terms (packets).
struct Sample {
    /// Valid delivery-rate sample: bandwidth in packets/s and `prior_delivered` (bytes).
    rate: Option<(f64, u64)>,
    is_app_limited: bool,
    /// RTT of the newest acked packet, if any packet was acked.
    rtt: Option<Time>,
    /// Packets newly acked and newly declared lost.
    acked: u64,
    losses: u64,
    prior_in_flight: u64,
    in_flight: u64,
}

#[derive(Clone, Debug)]
pub struct Bbr {
    cfg: BbrConfig,
    mss: u64,
    mode: Mode,
    /// Window in packets, and the one saved on entering recovery or PROBE_RTT.
    cwnd: u64,
    prior_cwnd: u64,
    /// Bytes per second.
    pacing_rate: f64,
    pacing_gain: f64,
    cwnd_gain: f64,
    has_seen_rtt: bool,
    /// Max filter of delivery rate (packets/s) over BW_RTTS rounds.
    bw: WindowedFilter<f64>,
    rtt_cnt: u64,
    /// Bytes delivered at which the current round ends.
    next_rtt_delivered: u64,
    round_start: bool,
    min_rtt: Option<Time>,
    min_rtt_stamp: Time,
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    packet_conservation: bool,
    prev_ca_state: CaState,
    idle_restart: bool,
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    cycle_idx: usize,
    cycle_mstamp: Time,
    // ACK aggregation.
    ack_epoch_mstamp: Time,
    ack_epoch_acked: u64,
    extra_acked: [u64; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    // Long-term bandwidth (policer) sampling.
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: f64,
    lt_last_delivered: u64,
    lt_last_stamp: Time,
    lt_last_lost: u64,
    // What the transport knows and BBR needs between events.
    /// Bytes delivered and lost so far, and when data was last delivered.
    delivered: u64,
    lost: u64,
    delivered_mstamp: Time,
    srtt: Option<Time>,
    /// Earliest departure time of the next packet, mirrored from the transport's pacer.
    edt: Time,
    /// BBR's own application-limited mark (bytes delivered), set in PROBE_RTT.
    app_limited_until: u64,
    // The last ACK, for a congestion event reported right after it.
    last_ack_time: Option<Time>,
    last_acked: u64,
    last_in_flight: u64,
    cwnd_before_ack: u64,
    ssthresh: Option<u64>,
}

impl Bbr {
    pub fn new(mss: u64, cfg: BbrConfig) -> Bbr {
        Bbr {
            cfg,
            mss,
            mode: Mode::Startup,
            cwnd: cfg.init_cwnd.max(1),
            prior_cwnd: 0,
            pacing_rate: 0.0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            has_seen_rtt: false,
            bw: WindowedFilter::max(BW_RTTS),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            packet_conservation: false,
            prev_ca_state: CaState::Open,
            idle_restart: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_mstamp: 0,
            ack_epoch_mstamp: 0,
            ack_epoch_acked: 0,
            extra_acked: [0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0.0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            delivered: 0,
            lost: 0,
            delivered_mstamp: 0,
            srtt: None,
            edt: 0,
            app_limited_until: 0,
            last_ack_time: None,
            last_acked: 0,
            last_in_flight: 0,
            cwnd_before_ack: 0,
            ssthresh: None,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    fn reset_mode(&mut self, ctx: &mut CcContext) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(ctx);
        } else {
            self.reset_startup_mode();
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (if self.lt_use_bw { 1.0 } else { PACING_GAIN[self.cycle_idx] }, CWND_GAIN),
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn on_init(&mut self, now: Time, rtt: &RttStats, _ctx: &mut CcContext) {
        // bbr_init: "bbr->min_rtt_us = tcp_min_rtt(tp)" and bbr_init_pacing_rate_from_rtt from
        // srtt: after a handshake both hold its SYN/SYN-ACK sample, so the first window is
        // paced at high_gain · init_cwnd / srtt rather than over a nominal 1 ms.
        if rtt.has_sample {
            self.min_rtt = Some(rtt.min);
            self.srtt = Some(rtt.smoothed);
        }
        self.min_rtt_stamp = cclab_core::time::jiffies(now);
        self.ack_epoch_mstamp = now;
        self.delivered_mstamp = now;
        self.cycle_mstamp = 0;
        self.init_pacing_rate_from_rtt();
        self.reset_lt_bw_sampling();
    }

    fn on_packet_sent(&mut self, pkt: &SentPacket, _ctx: &mut CcContext) -> CcTag {
        // Mirror the transport's EDT pacer: it spaced this packet by bytes / our rate.
        if self.pacing_rate > 0.0 {
            let gap = (pkt.bytes as f64 / self.pacing_rate * 1e9) as Time;
            self.edt = self.edt.max(pkt.send_time) + gap;
        }
        if self.app_limited_until > 0 {
            TAG_APP_LIMITED
        } else {
            0
        }
    }

    fn on_ack(&mut self, ev: &AckEvent, ctx: &mut CcContext) {
        let now = ev.now;
        self.cwnd_before_ack = self.cwnd;
        if ev.rtt.has_sample {
            self.srtt = Some(ev.rtt.smoothed);
        }
        self.lost += ev.newly_lost_bytes;
        if ev.delivered > self.delivered {
            self.delivered_mstamp = now;
        }
        self.delivered = ev.delivered;
        if self.app_limited_until > 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let newest = ev.acked.iter().max_by_key(|p| (p.send_time, p.id));
        let tagged = newest.is_some_and(|p| p.tag & TAG_APP_LIMITED != 0);
        let s = Sample {
            rate: ev
                .rate
                .map(|r| (r.delivered as f64 / self.mss as f64 / (r.interval as f64 / SEC as f64), r.prior_delivered)),
            is_app_limited: ev.rate.is_some_and(|r| r.is_app_limited) || tagged,
            rtt: newest.map(|p| p.rtt),
            acked: ev.acked.len() as u64,
            losses: ev.lost.len() as u64,
            prior_in_flight: self.pkts(ev.prior_in_flight),
            in_flight: self.pkts(ev.in_flight),
        };

        // bbr_update_model
        self.update_bw(&s, ctx);
        self.update_ack_aggregation(&s);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(&s, now) {
            self.advance_cycle_phase();
        }
        self.check_full_bw_reached(&s);
        self.check_drain(&s, now, ctx);
        self.update_min_rtt(&s, now, ev.newly_acked_bytes > 0, ctx);
        self.update_gains();

        let bw = self.bbr_bw();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(&s, ev.ca_state, bw, self.cwnd_gain);

        self.last_ack_time = Some(now);
        self.last_acked = s.acked;
        self.last_in_flight = s.in_flight;
    }

    fn on_congestion_event(&mut self, ev: &CongestionEvent, _ctx: &mut CcContext) {
        if self.prev_ca_state != CaState::Open {
            return;
        }
        // Linux enters recovery before BBR sees the ACK; here the event follows that ACK's
        // on_ack, so do now what bbr_ssthresh and the first Recovery ACK would have done.
        let same_ack = self.last_ack_time == Some(ev.now);
        let (cwnd_before, acked) = if same_ack { (self.cwnd_before_ack, self.last_acked) } else { (self.cwnd, 0) };
        self.save_cwnd(cwnd_before);
        self.prev_ca_state = CaState::Recovery;
        self.packet_conservation = true;
        self.next_rtt_delivered = self.delivered;
        let in_flight = self.pkts(ev.in_flight);
        // Linux sets this window on the first ACK in recovery, when the retransmission is
        // already in flight, so it is never 0 there; a loss found by the loss timer with
        // nothing else in flight reaches here with an empty flight. One packet is Linux's floor
        // for a loss-reduced window (bbr_set_cwnd_to_recover_or_restore).
        self.cwnd = (in_flight + acked).max(1);
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(CWND_MIN_TARGET);
        }
    }

    fn on_rto(&mut self, _now: Time, ctx: &mut CcContext) {
        // tcp_enter_loss: bbr_ssthresh saves cwnd (once per loss episode), the window
        // collapses to what is in flight (nothing) + 1, and bbr_set_state(Loss) follows.
        if self.prev_ca_state != CaState::Loss {
            self.save_cwnd(self.cwnd);
        }
        self.cwnd = 1;
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        // Treat the RTO like the end of a round, and feed the policer detector one loss.
        self.round_start = true;
        self.packet_conservation = false;
        self.lt_bw_sampling(1, false, ctx);
    }

    fn undo_cwnd(&mut self, _now: Time, _restored: &[LostPacket], _ctx: &mut CcContext) {
        // bbr_undo_cwnd: the loss was spurious, so forget what it said about the pipe (restart
        // the full-bandwidth check and the policer detector) and keep cwnd; the next ACK, in
        // Open after Loss, restores prior_cwnd (bbr_set_cwnd_to_recover_or_restore).
        self.full_bw = 0.0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling();
    }

    fn on_idle_restart(&mut self, now: Time, _idle_for: Time, _rto: Time, ctx: &mut CcContext) {
        self.idle_restart = true;
        self.ack_epoch_mstamp = now;
        self.ack_epoch_acked = 0;
        // Restarting from idle, application-limited: no need for more than the estimate.
        match self.mode {
            Mode::ProbeBw => self.set_pacing_rate(self.bbr_bw(), 1.0),
            Mode::ProbeRtt => self.check_probe_rtt_done(now, ctx),
            _ => {}
        }
    }

    fn cwnd(&self) -> u64 {
        self.cwnd * self.mss
    }

    fn pacing_rate(&self) -> Option<f64> {
        // Always positive once initialised; before that, let the transport decide.
        (self.pacing_rate > 0.0).then_some(self.pacing_rate)
    }

    fn min_tso_segs(&self) -> Option<u64> {
        Some(self.bbr_min_tso_segs())
    }

    fn ssthresh(&self) -> Option<u64> {
        self.ssthresh.map(|s| s * self.mss)
    }

    fn in_slow_start(&self) -> bool {
        self.mode == Mode::Startup
    }

    fn snapshot(&self) -> CcSnapshot {
        CcSnapshot {
            mode: self.mode.name(),
            vars: vec![
                ("cwnd", (self.cwnd * self.mss) as f64),
                ("bw", self.max_bw() * self.mss as f64),
                ("min_rtt", self.min_rtt.map_or(f64::NAN, |r| r as f64 / SEC as f64)),
                ("pacing_gain", self.pacing_gain),
                ("cwnd_gain", self.cwnd_gain),
                ("cycle_idx", self.cycle_idx as f64),
                ("full_bw_reached", f64::from(u8::from(self.full_bw_reached))),
                ("extra_acked", self.extra_acked_max() as f64),
                ("lt_use_bw", f64::from(u8::from(self.lt_use_bw))),
                ("round", self.rtt_cnt as f64),
            ],
        }
    }
}
