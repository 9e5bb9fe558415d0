//! Nimbus (Goyal et al., "Elasticity Detection: A Building Block for Internet Congestion
//! Control", arXiv 1802.08730; code ccp-project/nimbus): a rate-based sender that asks whether
//! the cross traffic is elastic (buffer-filling TCP that reacts to our rate) or not. It adds a
//! known asymmetric sinusoidal pulse to its rate, estimates the cross traffic's rate
//! ẑ = μ·S/R − S every 10 ms, and looks for the pulse's frequency in ẑ's spectrum: elastic
//! cross traffic answers the pulse, inelastic traffic does not. Elastic: compete with a TCP-like
//! window (MulTCP, N = 2 Reno flows); otherwise: a delay mode that fills the spare capacity
//! μ − ẑ and holds the RTT at 1.25 × the minimum. Reference §10 gives every constant used here.
//!
//! Deviations, each for a reason: S in the delay-mode law is the base rate this controller sets
//! (the code reads a measured send rate; ours is exact and undelayed), and the send rate that
//! enters ẑ is the bytes sent one smoothed RTT before the ACKs that measured R, so that S and R
//! describe the same packets. Multi-Nimbus master/watcher coordination is left out (off by
//! default in the code).

use crate::controller::CongestionControl;
pub use crate::elasticity::Mode;
use crate::elasticity::{Elasticity, TICK};
use crate::registry::{BuildResult, OptValue, OptionInfo, OptionKind, Options, Scheme, SchemeInfo};
use crate::types::*;
use cclab_core::time::SEC;
use std::collections::VecDeque;
use std::ops::Bound;

/// Delay-mode gains (§10.4).
const ALPHA: f64 = 0.8;
const BETA: f64 = 0.5;
pub const D_TH: f64 = 1.25;
/// MulTCP: the number of Reno flows the competitive mode emulates.
const MULTCP_N: f64 = 2.0;
/// Rate floor, as a fraction of μ, and the fixed start period and its rate (the code: 2 MB/s).
pub const FLOOR: f64 = 0.05;
pub const START_PERIOD: Time = SEC;
pub const START_RATE: f64 = 2e6;

/// Nimbus's delay-mode law (§10.4), one step from the base rate `base` (bytes/s): fill the
/// spare capacity μ − ẑ − S, and pull the RTT (s) towards `d_th` × the minimum.
pub fn delay_mode_step(base: f64, mu: f64, z: f64, rtt: f64, d_th: f64, min_rtt: f64) -> f64 {
    let spare = mu - z - base;
    let delay_term = mu * BETA / rtt * (rtt - d_th * min_rtt);
    base + ALPHA * spare - delay_term
}

/// `d_th` decays back to [`D_TH`] by 0.05 per 100 ms after a switch raised it.
pub fn decay_d_th(d_th: f64, dt: f64) -> f64 {
    (d_th - 0.05 * dt / 0.1).max(D_TH)
}

#[derive(Clone, Copy, Debug)]
pub struct NimbusConfig {
    /// Pulse amplitude as a fraction of μ (0.25).
    pub pulse_size: f64,
    /// The bottleneck rate in bytes/s if known ("oracle μ"); otherwise the maximum smoothed
    /// receive rate estimates it.
    pub oracle_mu: Option<f64>,
    /// Rate during the first second, bytes/s (the code: 2 MB/s).
    pub start_rate: f64,
    /// Whether elasticity detection may switch modes (false: delay mode always).
    pub switching: bool,
}

impl Default for NimbusConfig {
    fn default() -> Self {
        NimbusConfig { pulse_size: 0.25, oracle_mu: None, start_rate: START_RATE, switching: true }
    }
}

pub struct Nimbus {
    cfg: NimbusConfig,
    mss: u64,
    start: Option<Time>,
    next_tick: Time,
    /// Bytes sent and acknowledged since the last tick.
    sent_now: u64,
    acked_now: u64,
    /// Bytes sent in each past tick, newest last (enough for RTTs up to 2.5 s).
    sent_bins: VecDeque<u64>,
    /// Smoothed send (aligned), receive and cross-traffic rates, bytes/s.
    s_ewma: f64,
    r_ewma: f64,
    z_ewma: f64,
    mu: f64,
    /// The rate the control law sets (before the pulse), and what is paced (with it).
    base_rate: f64,
    rate: f64,
    srtt: f64,
    min_rtt: f64,
    d_th: f64,
    detector: Elasticity,
    /// Competitive mode: the MulTCP window (bytes) and the last cut.
    window: f64,
    last_cut: Time,
}

impl Nimbus {
    pub fn new(mss: u64, cfg: NimbusConfig) -> Nimbus {
        Nimbus {
            cfg,
            mss,
            start: None,
            next_tick: 0,
            sent_now: 0,
            acked_now: 0,
            sent_bins: VecDeque::new(),
            s_ewma: 0.0,
            r_ewma: 0.0,
            z_ewma: 0.0,
            mu: cfg.oracle_mu.unwrap_or(0.0),
            base_rate: cfg.start_rate,
            rate: cfg.start_rate,
            srtt: 0.0,
            min_rtt: f64::INFINITY,
            d_th: D_TH,
            detector: Elasticity::default(),
            window: 0.0,
            last_cut: 0,
        }
    }

    pub fn mode(&self) -> Mode {
        self.detector.mode()
    }

    pub fn elasticity(&self) -> f64 {
        self.detector.elasticity()
    }

    fn tick(&mut self, now: Time) {
        let start = self.start.unwrap_or(now);
        let dt = TICK as f64 / SEC as f64;
        self.sent_bins.push_back(self.sent_now);
        if self.sent_bins.len() > 256 {
            self.sent_bins.pop_front();
        }
        let r = self.acked_now as f64 / dt;
        // The packets acknowledged in this tick left about one smoothed RTT ago.
        let back = if self.srtt > 0.0 { (self.srtt / dt).round() as usize } else { 0 };
        let s = self.sent_bins.len().checked_sub(1 + back).map_or(self.base_rate, |i| self.sent_bins[i] as f64 / dt);
        self.sent_now = 0;
        self.acked_now = 0;
        self.s_ewma = 0.8 * self.s_ewma + 0.2 * s;
        self.r_ewma = 0.8 * self.r_ewma + 0.2 * r;
        if self.cfg.oracle_mu.is_none() {
            self.mu = self.mu.max(self.r_ewma);
        }
        if self.mu <= 0.0 || self.srtt <= 0.0 {
            return; // nothing acknowledged yet
        }
        // From the smoothed rates (the code's optional EWMA of 0.2): a 10 ms tick holds only a
        // few packets, and the S/R ratio of raw counts is mostly quantisation noise. The
        // smoothing halves a 5–6 Hz pulse but attenuates the comparison band above it more.
        let (s, r) = (self.s_ewma, self.r_ewma);
        let z = if r > 0.0 { (self.mu * s / r - s).max(0.0) } else { self.z_ewma };
        self.z_ewma = z;
        self.detector.record(z, self.mu - r);

        let since = now - start;
        match self.detector.update(now, since, self.mu, self.cfg.switching) {
            Some(Mode::Competitive) => {
                // Start from what we were getting through, as a window.
                self.window = (self.r_ewma * self.srtt).max(2.0 * self.mss as f64);
            }
            Some(Mode::Delay) => {
                self.base_rate = self.r_ewma;
                // Tolerate the queue the competitive mode left, then decay to 1.25.
                self.d_th = (self.srtt / self.min_rtt).max(D_TH);
            }
            None => {}
        }
        self.d_th = decay_d_th(self.d_th, dt);

        if since < START_PERIOD {
            self.base_rate = self.cfg.start_rate;
        } else {
            match self.mode() {
                Mode::Delay => {
                    self.base_rate =
                        delay_mode_step(self.base_rate, self.mu, self.z_ewma, self.srtt, self.d_th, self.min_rtt)
                }
                Mode::Competitive => self.base_rate = self.window / self.srtt,
            }
        }
        let floor = FLOOR * self.mu;
        self.base_rate = self.base_rate.max(floor);
        let pulse = if since < START_PERIOD { 0.0 } else { self.detector.pulse(now, self.cfg.pulse_size * self.mu) };
        self.rate = (self.base_rate + pulse).max(floor);
    }
}

impl CongestionControl for Nimbus {
    fn name(&self) -> &'static str {
        "nimbus"
    }

    fn on_init(&mut self, now: Time, _rtt: &RttStats, _ctx: &mut CcContext) {
        self.start = Some(now);
        self.next_tick = now + TICK;
    }

    fn on_packet_sent(&mut self, pkt: &SentPacket, _ctx: &mut CcContext) -> CcTag {
        self.sent_now += pkt.bytes;
        0
    }

    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        self.acked_now += ev.newly_acked_bytes;
        if ev.rtt.has_sample {
            self.srtt = ev.rtt.smoothed as f64 / SEC as f64;
            self.min_rtt = self.min_rtt.min(ev.rtt.min as f64 / SEC as f64);
        }
        if self.mode() == Mode::Competitive && ev.newly_acked_bytes > 0 && self.window > 0.0 {
            // N Reno flows in one: N·MSS per window of ACKs.
            self.window += MULTCP_N * self.mss as f64 * ev.newly_acked_bytes as f64 / self.window;
        }
    }

    fn on_congestion_event(&mut self, ev: &CongestionEvent, _ctx: &mut CcContext) {
        // One of the N emulated flows halves, at most once per base RTT.
        let rtt = (self.min_rtt * SEC as f64) as Time;
        if self.mode() == Mode::Competitive && ev.now.saturating_sub(self.last_cut) >= rtt {
            self.window = (self.window * (1.0 - 0.5 / MULTCP_N)).max(2.0 * self.mss as f64);
            self.last_cut = ev.now;
        }
    }

    fn on_rto(&mut self, now: Time, ctx: &mut CcContext) {
        // A timeout is handled like a drop (§10.4).
        let ev = CongestionEvent { now, largest_lost_send_time: now, lost_bytes: 0, in_flight: 0, prior_in_flight: 0 };
        self.on_congestion_event(&ev, ctx);
    }

    fn next_timer(&self) -> Option<Time> {
        self.start.map(|_| self.next_tick)
    }

    fn on_timer(&mut self, now: Time, _ctx: &mut CcContext) {
        while self.next_tick <= now {
            let t = self.next_tick;
            self.tick(t);
            self.next_tick += TICK;
        }
    }

    fn cwnd(&self) -> u64 {
        // A safety cap for a rate-based sender: two RTTs' worth at the current rate.
        let rtt = if self.srtt > 0.0 { self.srtt } else { 0.1 };
        ((2.0 * self.rate * rtt) as u64).max(2 * self.mss)
    }

    fn pacing_rate(&self) -> Option<f64> {
        Some(self.rate)
    }

    fn snapshot(&self) -> CcSnapshot {
        CcSnapshot {
            mode: self.mode().name(),
            vars: vec![
                ("cwnd", self.cwnd() as f64),
                ("rate", self.rate),
                ("mu", self.mu),
                ("z", self.z_ewma),
                ("eta", self.detector.last_eta()),
                ("elasticity", self.detector.elasticity()),
            ],
        }
    }
}

pub const SCHEME: Scheme = Scheme {
    info: SchemeInfo {
        name: "nimbus",
        summary: "Nimbus (arXiv 1802.08730): pulses its rate, detects elastic cross traffic by FFT, delay or \
                  competitive (MulTCP) mode",
        options: &[
            OptionInfo {
                name: "pulse_size",
                kind: OptionKind::Float { lo: Bound::Excluded(0.0), hi: Bound::Included(1.0) },
                default: Some(OptValue::Float(0.25)),
                help: "pulse amplitude as a fraction of the bottleneck rate μ",
            },
            OptionInfo {
                name: "mu",
                kind: OptionKind::Rate,
                default: None,
                help: "the bottleneck rate, if known (\"oracle μ\"); absent: the maximum smoothed receive rate",
            },
            OptionInfo {
                name: "start_rate",
                kind: OptionKind::Rate,
                default: None,
                help: "sending rate during the first second (default 16Mbps, the code's 2 MB/s)",
            },
            OptionInfo {
                name: "switching",
                kind: OptionKind::Bool,
                default: Some(OptValue::Bool(true)),
                help: "whether elasticity detection may switch to competitive mode (false: delay mode only)",
            },
        ],
    },
    build: build_from_options,
};

fn build_from_options(opts: &Options, mss: u64) -> BuildResult {
    let d = NimbusConfig::default();
    let cfg = NimbusConfig {
        pulse_size: opts.float("pulse_size").unwrap_or(d.pulse_size),
        oracle_mu: opts.rate("mu").map(|r| r.bytes_per_sec()),
        start_rate: opts.rate("start_rate").map_or(d.start_rate, |r| r.bytes_per_sec()),
        switching: opts.bool("switching").unwrap_or(true),
    };
    Ok(Box::new(Nimbus::new(mss, cfg)))
}
