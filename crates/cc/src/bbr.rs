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
//! bytes at the interface. Time in the transport's nanoseconds rather than Linux's µs and
//! jiffies; the bandwidth in f64 packets per second rather than a 2^-24 fixed point.
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

/// `BBR_UNIT`: gains are fractions of 256 in Linux; the same values are used here exactly.
const UNIT: f64 = 256.0;
/// `bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1`: 2/ln 2, the smallest gain that doubles the
/// delivery rate each round.
const HIGH_GAIN: f64 = 739.0 / UNIT;
/// `bbr_drain_gain = BBR_UNIT * 1000 / 2885`: drains the startup queue in about one round.
const DRAIN_GAIN: f64 = 88.0 / UNIT;
/// `bbr_cwnd_gain`: tolerates delayed and stretched ACKs.
const CWND_GAIN: f64 = 2.0;
/// `bbr_pacing_gain[]`: probe for more, drain what probing queued, then cruise.
const PACING_GAIN: [f64; CYCLE_LEN] = [320.0 / UNIT, 192.0 / UNIT, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
const CYCLE_LEN: usize = 8;
/// `bbr_cycle_rand`: the first phase is chosen among all but the 0.75 one.
const CYCLE_RAND: u64 = 7;
/// `bbr_bw_rtts = CYCLE_LEN + 2`: the bandwidth filter's window, in rounds.
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// `bbr_min_rtt_win_sec`.
const MIN_RTT_WIN: Time = 10 * SEC;
/// `bbr_probe_rtt_mode_ms`.
const PROBE_RTT_TIME: Time = 200 * MS;
/// `bbr_cwnd_min_target`: two outstanding 2-packet sequences for ACK-every-other receivers.
const CWND_MIN_TARGET: u64 = 4;
/// `bbr_full_bw_thresh` and `bbr_full_bw_cnt`: the pipe is full once three rounds pass
/// without 25 % more bandwidth.
const FULL_BW_THRESH: f64 = 320.0 / UNIT;
const FULL_BW_CNT: u32 = 3;
/// `bbr_pacing_margin_percent`: pace 1 % below the estimate so queues drain.
const PACING_MARGIN: f64 = 0.99;
/// `TCP_INIT_CWND`: the cwnd when no RTT was ever measured, and the delivered count below
/// which startup grows regardless.
const TCP_INIT_CWND: u64 = 10;
/// Nominal RTT before the first sample (`bbr_init_pacing_rate_from_rtt`).
const NOMINAL_RTT: Time = MS;
/// ACK aggregation: `bbr_extra_acked_gain` (1.0), window `bbr_extra_acked_win_rtts` rounds per
/// slot, cap `bbr_extra_acked_max_us`, epoch reset `bbr_ack_epoch_acked_reset_thresh`.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const EXTRA_ACKED_MAX: Time = 100 * MS;
const ACK_EPOCH_RESET: u64 = 1 << 20;
/// Long-term bandwidth (policer) detection: `bbr_lt_intvl_min_rtts`, `bbr_lt_loss_thresh`
/// (50/256 ≈ 20 % loss), `bbr_lt_bw_ratio` (1/8), `bbr_lt_bw_diff` (4 kbit/s),
/// `bbr_lt_bw_max_rtts`.
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: f64 = 50.0 / UNIT;
const LT_BW_RATIO: f64 = 1.0 / 8.0;
const LT_BW_DIFF: f64 = 4000.0 / 8.0;
const LT_BW_MAX_RTTS: u32 = 48;
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

    fn pkts(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mss)
    }

    fn max_bw(&self) -> f64 {
        self.bw.get().unwrap_or(0.0)
    }

    /// The bandwidth the model uses: the policed rate when one was detected.
    fn bbr_bw(&self) -> f64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    fn extra_acked_max(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec`: packets/s × gain → bytes/s, 1 % under.
    fn rate_bytes_per_sec(&self, bw: f64, gain: f64) -> f64 {
        bw * self.mss as f64 * gain * PACING_MARGIN
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain × cwnd / srtt (or a nominal 1 ms).
    fn init_pacing_rate_from_rtt(&mut self) {
        let rtt = match self.srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                s.max(1_000)
            }
            None => NOMINAL_RTT,
        };
        let bw = self.cwnd as f64 / (rtt as f64 / SEC as f64);
        self.pacing_rate = self.rate_bytes_per_sec(bw, HIGH_GAIN);
    }

    fn set_pacing_rate(&mut self, bw: f64, gain: f64) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && self.srtt.is_some() {
            self.init_pacing_rate_from_rtt();
        }
        // In startup the rate only rises, so a low early sample cannot slow the ramp.
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_goal`: about 1 ms of data per burst, at least 2 segments above 1.2 Mbit/s.
    fn tso_segs_goal(&self) -> u64 {
        let min_segs = if self.pacing_rate < MIN_TSO_RATE { 1 } else { 2 };
        let bytes = (self.pacing_rate / (1u64 << PACING_SHIFT) as f64).min(GSO_MAX_BYTES);
        ((bytes as u64) / self.mss).max(min_segs).min(TSO_MAX_SEGS)
    }

    /// `bbr_bdp`: ceil(bw × min_rtt × gain), or the initial window without an RTT.
    fn bdp(&self, bw: f64, gain: f64) -> u64 {
        match self.min_rtt {
            None => TCP_INIT_CWND,
            Some(rtt) => (bw * (rtt as f64 / SEC as f64) * gain).ceil() as u64,
        }
    }

    /// `bbr_quantization_budget`.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd;
        if self.cfg.offload_budget {
            // One burst in the sender's qdisc, one in its TSO engine, one in the receiver's
            // GRO/delayed-ACK engine; even, to reduce delayed ACKs.
            cwnd += 3 * self.tso_segs_goal();
            cwnd = (cwnd + 1) & !1;
        }
        // Ensure gain cycling gets inflight above BDP even for small BDPs.
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: what will still be in the network when the next packet
    /// leaves the pacer, given what the pacer already committed to.
    fn packets_in_net_at_edt(&self, inflight_now: u64, now: Time) -> u64 {
        let edt = self.edt.max(now);
        let interval_delivered = (self.bbr_bw() * ((edt - now) as f64 / SEC as f64)) as u64;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > 1.0 {
            // Increasing inflight: include the packet(s) departing at the EDT.
            inflight_at_edt += if self.cfg.offload_budget { self.tso_segs_goal() } else { 1 };
        }
        inflight_at_edt.saturating_sub(interval_delivered)
    }

    fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.cfg.ack_aggregation || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = (self.bbr_bw() * (EXTRA_ACKED_MAX as f64 / SEC as f64)) as u64;
        self.extra_acked_max().min(max_aggr)
    }

    /// Save the "last known good" cwnd before recovery or PROBE_RTT cuts it.
    fn save_cwnd(&mut self, cwnd: u64) {
        if self.prev_ca_state == CaState::Open && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    fn reset_startup_mode(&mut self) {
        self.mode = Mode::Startup;
    }

    fn reset_probe_bw_mode(&mut self, ctx: &mut CcContext) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - ctx.rng.below(CYCLE_RAND) as usize;
        self.advance_cycle_phase();
    }

    fn reset_mode(&mut self, ctx: &mut CcContext) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(ctx);
        } else {
            self.reset_startup_mode();
        }
    }

    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_mstamp = self.delivered_mstamp;
    }

    fn is_next_cycle_phase(&self, s: &Sample, now: Time) -> bool {
        let full_length = self.min_rtt.is_some_and(|m| self.delivered_mstamp.saturating_sub(self.cycle_mstamp) > m);
        if self.pacing_gain == 1.0 {
            return full_length;
        }
        let inflight = self.packets_in_net_at_edt(s.prior_in_flight, now);
        let bw = self.max_bw();
        if self.pacing_gain > 1.0 {
            // Probe until inflight reaches gain·BDP, but not past a loss (the buffer may be
            // too small to hold that much).
            return full_length && (s.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        // Drain until the queue probing added is gone, at most one min_rtt.
        full_length || inflight <= self.inflight(bw, 1.0)
    }

    fn reset_lt_bw_sampling_interval(&mut self) {
        self.lt_last_stamp = self.delivered_mstamp;
        self.lt_last_delivered = self.delivered;
        self.lt_last_lost = self.lost;
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self) {
        self.lt_bw = 0.0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval();
    }

    fn lt_bw_interval_done(&mut self, bw: f64) {
        if self.lt_bw > 0.0 {
            let diff = (bw - self.lt_bw).abs();
            if diff <= LT_BW_RATIO * self.lt_bw || self.rate_bytes_per_sec(diff, 1.0) <= LT_BW_DIFF {
                // Two intervals with consistent throughput and heavy loss: a policer.
                self.lt_bw = (bw + self.lt_bw) / 2.0;
                self.lt_use_bw = true;
                self.pacing_gain = 1.0;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval();
    }

    /// `bbr_lt_bw_sampling`: detect a token-bucket policer.
    fn lt_bw_sampling(&mut self, losses: u64, is_app_limited: bool, ctx: &mut CcContext) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling();
                    self.reset_probe_bw_mode(ctx);
                }
            }
            return;
        }
        // Wait for the first loss, so the policer's tokens are exhausted.
        if !self.lt_is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval();
            self.lt_is_sampling = true;
        }
        if is_app_limited {
            self.reset_lt_bw_sampling();
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling();
            return;
        }
        if losses == 0 {
            return;
        }
        let lost = self.lost - self.lt_last_lost;
        let delivered = self.delivered - self.lt_last_delivered;
        if delivered == 0 || (lost as f64) < LT_LOSS_THRESH * delivered as f64 {
            return;
        }
        // Linux measures the interval in whole milliseconds and waits for at least one.
        let t_ms = (self.delivered_mstamp / MS).saturating_sub(self.lt_last_stamp / MS);
        if t_ms < 1 {
            return;
        }
        let bw = delivered as f64 / self.mss as f64 / (t_ms as f64 / 1e3);
        self.lt_bw_interval_done(bw);
    }

    fn update_bw(&mut self, s: &Sample, ctx: &mut CcContext) {
        self.round_start = false;
        let Some((bw, prior_delivered)) = s.rate else { return };
        if prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = self.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(s.losses, s.is_app_limited, ctx);
        // An app-limited sample describes the application, not the path: use it only if it
        // is at least as high as what the filter holds.
        if !s.is_app_limited || bw >= self.max_bw() {
            self.bw.update(self.rtt_cnt, bw);
        }
    }

    fn update_ack_aggregation(&mut self, s: &Sample) {
        if s.acked == 0 || s.rate.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch = self.delivered_mstamp.saturating_sub(self.ack_epoch_mstamp);
        let mut expected = (self.bbr_bw() * (epoch as f64 / SEC as f64)) as u64;
        // A new epoch when the ACK rate fell to the expected rate, or after very many ACKs.
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + s.acked >= ACK_EPOCH_RESET {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = self.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + s.acked).min(ACK_EPOCH_RESET - 1);
        let extra = (self.ack_epoch_acked - expected.min(self.ack_epoch_acked)).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    fn check_full_bw_reached(&mut self, s: &Sample) {
        if self.full_bw_reached || !self.round_start || s.is_app_limited {
            return;
        }
        if self.max_bw() >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    fn check_drain(&mut self, s: &Sample, now: Time, ctx: &mut CcContext) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = Some(self.inflight(self.max_bw(), 1.0));
        }
        if self.mode == Mode::Drain && self.packets_in_net_at_edt(s.in_flight, now) <= self.inflight(self.max_bw(), 1.0)
        {
            // The startup queue is estimated drained.
            self.reset_probe_bw_mode(ctx);
        }
    }

    fn check_probe_rtt_done(&mut self, now: Time, ctx: &mut CcContext) {
        if self.probe_rtt_done_stamp.is_none_or(|d| now <= d) {
            return;
        }
        // Wait a full window before the next PROBE_RTT.
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode(ctx);
    }

    fn update_min_rtt(&mut self, s: &Sample, now: Time, delivered_any: bool, ctx: &mut CcContext) {
        let expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(rtt) = s.rtt {
            if self.min_rtt.is_none_or(|m| rtt < m) || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            // Dip: drain the queue to measure the propagation delay afresh.
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(self.cwnd);
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            // Samples taken now describe this dip, not the path: mark them app-limited.
            self.app_limited_until = (self.delivered + s.in_flight * self.mss).max(1);
            if self.probe_rtt_done_stamp.is_none() && s.in_flight <= CWND_MIN_TARGET {
                // Hold the minimum flight for max(200 ms, one round).
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_TIME);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = self.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now, ctx);
                }
            }
        }
        if delivered_any {
            self.idle_restart = false;
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

    /// `bbr_set_cwnd_to_recover_or_restore`; true while conserving packets.
    fn recover_or_restore(&mut self, s: &Sample, state: CaState, cwnd: &mut u64) -> bool {
        let prev = self.prev_ca_state;
        // An ACK for P packets releases at most 2·P: first deduct what was lost.
        if s.losses > 0 {
            *cwnd = cwnd.saturating_sub(s.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // The first round of recovery: packet conservation.
            self.packet_conservation = true;
            self.next_rtt_delivered = self.delivered;
            *cwnd = s.in_flight + s.acked;
        } else if prev != CaState::Open && state == CaState::Open {
            // Leaving recovery: restore the cwnd saved when it began.
            *cwnd = (*cwnd).max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            *cwnd = (*cwnd).max(s.in_flight + s.acked);
            return true;
        }
        false
    }

    fn set_cwnd(&mut self, s: &Sample, state: CaState, bw: f64, gain: f64) {
        let mut cwnd = self.cwnd;
        if s.acked > 0 && !self.recover_or_restore(s, state, &mut cwnd) {
            let target = self.quantization_budget(self.bdp(bw, gain) + self.ack_aggregation_cwnd());
            if self.full_bw_reached {
                // Only cut cwnd once the pipe was filled.
                cwnd = (cwnd + s.acked).min(target);
            } else if cwnd < target || self.delivered < TCP_INIT_CWND * self.mss {
                cwnd += s.acked;
            }
            cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        self.cwnd = cwnd;
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(CWND_MIN_TARGET);
        }
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn on_init(&mut self, now: Time, _ctx: &mut CcContext) {
        self.min_rtt_stamp = now;
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
        self.cwnd = in_flight + acked;
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

    fn on_idle_restart(&mut self, now: Time, _idle_for: Time, ctx: &mut CcContext) {
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

#[cfg(test)]
mod tests {
    use super::*;

    use cclab_core::scenario::MSS;

    /// Feeds BBR synthetic ACKs: one packet acked per call, with a rate sample.
    struct Feed {
        bbr: Bbr,
        rng: Rng,
        now: Time,
        delivered: u64,
        id: u64,
    }

    impl Feed {
        fn new() -> Feed {
            let mut f =
                Feed { bbr: Bbr::new(MSS, BbrConfig::default()), rng: Rng::new(5), now: 0, delivered: 0, id: 0 };
            f.bbr.on_init(0, &mut CcContext { mss: MSS, rng: &mut f.rng });
            f
        }

        /// One ACK at `now` of a packet with RTT `rtt`, whose rate sample says `pps` packets/s
        /// and whose send-time delivered count is `prior_delivered`.
        fn ack(&mut self, now: Time, rtt: Time, pps: f64, prior_delivered: u64, in_flight: u64, state: CaState) {
            self.now = now;
            self.delivered += MSS;
            self.id += 1;
            let acked = [AckedPacket { id: self.id, bytes: MSS, send_time: now - rtt, tag: 0, rtt }];
            let stats = RttStats { latest: rtt, smoothed: rtt, rttvar: 0, min: rtt, has_sample: true };
            let interval = SEC;
            let rate = RateSample {
                delivery_rate: pps * MSS as f64,
                interval,
                delivered: (pps * MSS as f64) as u64,
                prior_delivered,
                prior_time: now - rtt,
                tx_in_flight: in_flight * MSS,
                lost: 0,
                is_app_limited: false,
                rtt,
            };
            let ev = AckEvent {
                now,
                acked: &acked,
                lost: &[],
                newly_acked_bytes: MSS,
                newly_lost_bytes: 0,
                prior_in_flight: (in_flight + 1) * MSS,
                in_flight: in_flight * MSS,
                rtt: &stats,
                rate: Some(rate),
                delivered: self.delivered,
                round: 0,
                round_start: false,
                ca_state: state,
                app_limited: false,
                one_way_delay: None,
            };
            self.bbr.on_ack(&ev, &mut CcContext { mss: MSS, rng: &mut self.rng });
        }

        /// A whole round: one ACK that starts a new round (its packet was sent after the
        /// previous round's end), at the given bandwidth.
        fn round(&mut self, rtt: Time, pps: f64, in_flight: u64) {
            let prior = self.delivered;
            self.ack(self.now + rtt, rtt, pps, prior, in_flight, CaState::Open);
        }
    }

    #[test]
    fn gains_are_linux_fixed_point_values() {
        assert!((HIGH_GAIN - 2.0 / std::f64::consts::LN_2).abs() < 0.002, "{HIGH_GAIN}");
        assert!((DRAIN_GAIN * HIGH_GAIN - 1.0).abs() < 0.01);
        assert_eq!(PACING_GAIN, [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    }

    #[test]
    fn probe_bw_starts_in_a_random_phase_but_never_the_draining_one() {
        let mut seen = [0u32; CYCLE_LEN];
        let mut b = Bbr::new(MSS, BbrConfig::default());
        let mut rng = Rng::new(9);
        for _ in 0..7_000 {
            b.reset_probe_bw_mode(&mut CcContext { mss: MSS, rng: &mut rng });
            seen[b.cycle_idx] += 1;
        }
        assert_eq!(seen[1], 0, "the 0.75 phase must not start a cycle: {seen:?}");
        for (i, &n) in seen.iter().enumerate().filter(|&(i, _)| i != 1) {
            assert!((800..1200).contains(&n), "phase {i} started {n} times of 7000: {seen:?}");
        }
    }

    #[test]
    fn startup_ends_after_three_rounds_without_25_percent_growth_then_drains() {
        let mut f = Feed::new();
        let rtt = 50 * MS;
        // Doubling bandwidth: still in startup.
        for k in 0..6 {
            f.round(rtt, 1000.0 * (1 << k) as f64, 10 << k);
            assert_eq!(f.bbr.mode(), Mode::Startup, "round {k}");
        }
        // A plateau at 32 000 packets/s (+10 %, then flat): the third flat round ends startup.
        f.round(rtt, 35_200.0, 640);
        f.round(rtt, 35_200.0, 640);
        assert_eq!(f.bbr.mode(), Mode::Startup);
        // With 640 packets in flight against a BDP of 35 200 × 50 ms = 1760, the queue is
        // estimated drained at once, so DRAIN passes straight to PROBE_BW on the same ACK.
        f.round(rtt, 35_200.0, 640);
        assert!(f.bbr.full_bw_reached);
        assert_eq!(f.bbr.mode(), Mode::ProbeBw);
        // ssthresh (informational) = inflight(bw, 1): the BDP plus the TSO budget.
        let ssthresh = f.bbr.ssthresh.unwrap();
        assert!((1760..1760 + 3 * TSO_MAX_SEGS + 2).contains(&ssthresh), "{ssthresh}");
    }

    #[test]
    fn drain_waits_for_the_startup_queue_to_go() {
        let mut f = Feed::new();
        let rtt = 50 * MS;
        for k in 0..4 {
            f.round(rtt, 1000.0 * (1 << k) as f64, 10 << k);
        }
        for _ in 0..3 {
            // BDP = 8000 × 50 ms = 400 packets; 1000 in flight is a startup queue.
            f.round(rtt, 8000.0, 1000);
        }
        assert_eq!(f.bbr.mode(), Mode::Drain);
        assert!((f.bbr.pacing_gain - DRAIN_GAIN).abs() < 1e-12);
        assert!((f.bbr.cwnd_gain - HIGH_GAIN).abs() < 1e-12);
        f.ack(f.now + MS, rtt, 8000.0, 0, 300, CaState::Open);
        assert_eq!(f.bbr.mode(), Mode::ProbeBw);
        assert_eq!(f.bbr.cwnd_gain, 2.0);
    }

    #[test]
    fn probe_rtt_after_10_s_holds_4_packets_for_200_ms_and_a_round() {
        let mut f = Feed::new();
        let rtt = 50 * MS;
        for k in 0..4 {
            f.round(rtt, 1000.0 * (1 << k) as f64, 10 << k);
        }
        for _ in 0..4 {
            f.round(rtt, 8000.0, 300);
        }
        assert_eq!(f.bbr.mode(), Mode::ProbeBw);
        let cwnd_before = f.bbr.cwnd;
        // RTT samples a little above the minimum for 10 s: no new min_rtt.
        while f.now < 10 * SEC + 60 * MS {
            let prior = f.delivered;
            f.ack(f.now + 10 * MS, rtt + MS, 8000.0, prior, 300, CaState::Open);
        }
        assert_eq!(f.bbr.mode(), Mode::ProbeRtt);
        assert_eq!(f.bbr.cwnd, CWND_MIN_TARGET);
        assert!(f.bbr.prior_cwnd >= cwnd_before.min(f.bbr.prior_cwnd));
        // Flight still high: the 200 ms clock has not started.
        f.ack(f.now + MS, rtt, 8000.0, 0, 100, CaState::Open);
        assert_eq!(f.bbr.probe_rtt_done_stamp, None);
        // Down to 4 packets: the clock starts; 199 ms later and a round later, still probing.
        f.ack(f.now + MS, rtt, 8000.0, 0, 4, CaState::Open);
        let start = f.now;
        assert_eq!(f.bbr.probe_rtt_done_stamp, Some(start + 200 * MS));
        let prior = f.delivered;
        f.ack(start + 199 * MS, rtt, 8000.0, prior, 4, CaState::Open);
        assert_eq!(f.bbr.mode(), Mode::ProbeRtt);
        // After 200 ms (and the round done), back to PROBE_BW with the window restored.
        f.ack(start + 201 * MS, rtt, 8000.0, 0, 4, CaState::Open);
        assert_eq!(f.bbr.mode(), Mode::ProbeBw);
        assert!(f.bbr.cwnd >= f.bbr.prior_cwnd.min(cwnd_before));
        assert_eq!(f.bbr.min_rtt_stamp, f.now);
        // Samples taken while probing were tagged application-limited.
        let mut rng = Rng::new(1);
        let tag = f.bbr.on_packet_sent(&SentPacket::default(), &mut CcContext { mss: MSS, rng: &mut rng });
        assert_eq!(tag, TAG_APP_LIMITED);
    }

    #[test]
    fn recovery_conserves_packets_for_a_round_then_restores_cwnd() {
        let mut f = Feed::new();
        let rtt = 50 * MS;
        for k in 0..4 {
            f.round(rtt, 1000.0 * (1 << k) as f64, 10 << k);
        }
        for _ in 0..4 {
            f.round(rtt, 8000.0, 300);
        }
        // This feed acks one packet per round, so set the window a long flow would have.
        f.bbr.cwnd = 800;
        let good = f.bbr.cwnd;
        // The ACK that reveals the first loss, then the transport's congestion event.
        f.ack(f.now + MS, rtt, 8000.0, 0, 500, CaState::Open);
        let mut rng = Rng::new(1);
        let ev = CongestionEvent {
            now: f.now,
            largest_lost_send_time: 0,
            lost_bytes: MSS,
            in_flight: 500 * MSS,
            prior_in_flight: 0,
        };
        f.bbr.on_congestion_event(&ev, &mut CcContext { mss: MSS, rng: &mut rng });
        assert_eq!(f.bbr.cwnd, 501, "in flight + acked");
        assert_eq!(f.bbr.prior_cwnd, good);
        assert!(f.bbr.packet_conservation);
        // In recovery, each ACK keeps cwnd at least in flight + acked (no growth beyond).
        f.ack(f.now + MS, rtt, 8000.0, 0, 500, CaState::Recovery);
        assert_eq!(f.bbr.cwnd, 501);
        // Recovery ends: the saved window comes back.
        f.ack(f.now + MS, rtt, 8000.0, 0, 500, CaState::Open);
        assert!(f.bbr.cwnd >= good, "{} < {good}", f.bbr.cwnd);
        assert!(!f.bbr.packet_conservation);
    }

    #[test]
    fn rto_collapses_to_one_packet_and_restores_on_exit() {
        let mut f = Feed::new();
        let rtt = 50 * MS;
        for k in 0..4 {
            f.round(rtt, 1000.0 * (1 << k) as f64, 10 << k);
        }
        for _ in 0..4 {
            f.round(rtt, 8000.0, 300);
        }
        f.bbr.cwnd = 800;
        let good = f.bbr.cwnd;
        let mut rng = Rng::new(1);
        f.bbr.on_rto(f.now, &mut CcContext { mss: MSS, rng: &mut rng });
        assert_eq!(f.bbr.cwnd(), MSS);
        assert_eq!(f.bbr.full_bw, 0.0);
        // ACKs in the Loss state slow-start from one packet.
        f.ack(f.now + rtt, rtt, 8000.0, 0, 0, CaState::Loss);
        assert_eq!(f.bbr.cwnd, CWND_MIN_TARGET.max(2));
        f.ack(f.now + MS, rtt, 8000.0, 0, 0, CaState::Open);
        assert!(f.bbr.cwnd >= good);
    }

    #[test]
    fn pacing_is_gain_times_bw_less_one_percent() {
        let mut f = Feed::new();
        for k in 0..4 {
            f.round(50 * MS, 1000.0 * (1 << k) as f64, 10 << k);
        }
        let bw = f.bbr.max_bw();
        assert_eq!(bw, 8000.0);
        let want = 8000.0 * MSS as f64 * HIGH_GAIN * 0.99;
        assert!((f.bbr.pacing_rate().unwrap() - want).abs() < 1e-6 * want);
    }
}
