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
use crate::registry::{BuildResult, OptValue, OptionInfo, OptionKind, Options, Scheme, SchemeInfo};
use crate::types::*;
use cclab_core::time::{MS, SEC};
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

/// Measurement and control period.
const TICK: Time = 10 * MS;
const TICKS_PER_SEC: f64 = (SEC / TICK) as f64;
/// FFT length: 5 s of 10 ms samples (500), rounded up to a power of two.
const FFT_LEN: usize = 512;
/// Pulse frequencies: competitive and delay mode differ so that Nimbus flows can tell pulser
/// from watcher (§10.2).
const PULSE_HZ_COMPETITIVE: f64 = 5.0;
const PULSE_HZ_DELAY: f64 = 6.0;
/// Delay-mode gains (§10.4).
const ALPHA: f64 = 0.8;
const BETA: f64 = 0.5;
const D_TH: f64 = 1.25;
/// Elasticity: EWMA weight per report, thresholds with hysteresis, and the times before the
/// detector may decide (§10.3).
const ELASTICITY_GAIN: f64 = 0.01;
const TO_COMPETITIVE: f64 = 2.25;
const TO_DELAY: f64 = 2.0;
const NO_FFT_BEFORE: Time = 10 * SEC;
const NO_SWITCH_BEFORE: Time = 15 * SEC;
const MIN_DELAY_MODE_GAP: Time = 5 * SEC;
/// MulTCP: the number of Reno flows the competitive mode emulates.
const MULTCP_N: f64 = 2.0;
/// Rate floor, as a fraction of μ, and the fixed start period.
const FLOOR: f64 = 0.05;
const START_PERIOD: Time = SEC;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Delay,
    Competitive,
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
        NimbusConfig { pulse_size: 0.25, oracle_mu: None, start_rate: 2e6, switching: true }
    }
}

pub struct Nimbus {
    cfg: NimbusConfig,
    mss: u64,
    mode: Mode,
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
    /// ẑ and zout every tick, newest last, at most FFT_LEN.
    z_hist: VecDeque<f64>,
    zout_hist: VecDeque<f64>,
    elasticity: f64,
    last_eta: f64,
    last_switch: Time,
    /// Competitive mode: the MulTCP window (bytes) and the last cut.
    window: f64,
    last_cut: Time,
    fft: Arc<dyn Fft<f64>>,
}

impl Nimbus {
    pub fn new(mss: u64, cfg: NimbusConfig) -> Nimbus {
        Nimbus {
            cfg,
            mss,
            mode: Mode::Delay,
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
            z_hist: VecDeque::new(),
            zout_hist: VecDeque::new(),
            elasticity: 0.0,
            last_eta: 0.0,
            last_switch: 0,
            window: 0.0,
            last_cut: 0,
            fft: FftPlanner::new().plan_fft_forward(FFT_LEN),
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn elasticity(&self) -> f64 {
        self.elasticity
    }

    fn pulse_hz(&self) -> f64 {
        match self.mode {
            Mode::Competitive => PULSE_HZ_COMPETITIVE,
            Mode::Delay => PULSE_HZ_DELAY,
        }
    }

    /// The zero-mean asymmetric pulse at `t` (§10.2): a half-sine of amplitude A over the first
    /// quarter of each period, a negative half-sine of A/3 over the other three quarters.
    fn pulse(&self, t: Time) -> f64 {
        let a = self.cfg.pulse_size * self.mu;
        let period = 1.0 / self.pulse_hz();
        let phase = (t as f64 / SEC as f64 % period) / period;
        if phase < 0.25 {
            a * (std::f64::consts::PI * phase / 0.25).sin()
        } else {
            -a / 3.0 * (std::f64::consts::PI * (phase - 0.25) / 0.75).sin()
        }
    }

    /// Magnitude spectrum of a detrended series.
    fn spectrum(&self, x: &VecDeque<f64>) -> Vec<f64> {
        let mean = x.iter().sum::<f64>() / x.len() as f64;
        let mut buf: Vec<Complex<f64>> = x.iter().map(|v| Complex::new(v - mean, 0.0)).collect();
        buf.resize(FFT_LEN, Complex::new(0.0, 0.0));
        self.fft.process(&mut buf);
        buf.iter().map(|c| c.norm()).collect()
    }

    /// The peak magnitude near `f` (the bin and its neighbours: the pulse is not periodic in
    /// the window, so its energy leaks into the next bins).
    fn peak_at(spec: &[f64], f: f64) -> f64 {
        let k = (f * FFT_LEN as f64 / TICKS_PER_SEC).round() as usize;
        spec[k - 1..=k + 1].iter().copied().fold(0.0, f64::max)
    }

    /// The largest magnitude with frequency in (lo, hi) Hz.
    fn band_max(spec: &[f64], lo: f64, hi: f64) -> f64 {
        let bin = |f: f64| f * FFT_LEN as f64 / TICKS_PER_SEC;
        let (a, b) = (bin(lo).floor() as usize + 1, bin(hi).ceil() as usize - 1);
        spec[a..=b].iter().copied().fold(f64::MIN_POSITIVE, f64::max)
    }

    /// One elasticity sample η from the last FFT_LEN ticks (§10.3, the code's `elasticity2`).
    fn eta(&self) -> f64 {
        let fp = self.pulse_hz();
        let avg_z = self.z_hist.iter().sum::<f64>() / self.z_hist.len() as f64;
        if avg_z < 0.1 * self.mu {
            return 0.0; // hardly any cross traffic: nothing to compete with
        }
        if avg_z > 0.9 * self.mu {
            return 6.0; // the cross traffic has taken nearly everything
        }
        let z = self.spectrum(&self.z_hist);
        let zout = self.spectrum(&self.zout_hist);
        let (lo, hi) = (fp + 1.5, 2.0 * fp - 0.5);
        let zp = Self::peak_at(&z, fp);
        let mut eta = zp / Self::band_max(&z, lo, hi);
        let zoutp = Self::peak_at(&zout, fp);
        if zoutp / Self::band_max(&zout, lo, hi) < 2.0 {
            // Our own pulse does not show in what we get through: no evidence either way.
            return 3.0;
        }
        if zp < 0.25 * zoutp {
            eta = eta.min(3.0) * zp / (0.25 * zoutp);
        }
        eta
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
        let z = if r > 0.0 { (self.mu * s / r - s).max(0.0) } else { self.z_hist.back().copied().unwrap_or(0.0) };
        self.z_ewma = z;
        self.z_hist.push_back(z);
        self.zout_hist.push_back(self.mu - r);
        if self.z_hist.len() > FFT_LEN {
            self.z_hist.pop_front();
            self.zout_hist.pop_front();
        }

        let since = now - start;
        if self.z_hist.len() == FFT_LEN && since >= NO_FFT_BEFORE {
            self.last_eta = self.eta();
            self.elasticity += ELASTICITY_GAIN * (self.last_eta - self.elasticity);
            if self.cfg.switching && since >= NO_SWITCH_BEFORE {
                match self.mode {
                    Mode::Delay if self.elasticity > TO_COMPETITIVE => {
                        self.mode = Mode::Competitive;
                        self.last_switch = now;
                        // Start from what we were getting through, as a window.
                        self.window = (self.r_ewma * self.srtt).max(2.0 * self.mss as f64);
                    }
                    Mode::Competitive if self.elasticity < TO_DELAY && now - self.last_switch >= MIN_DELAY_MODE_GAP => {
                        self.mode = Mode::Delay;
                        self.last_switch = now;
                        self.base_rate = self.r_ewma;
                        // Tolerate the queue the competitive mode left, then decay to 1.25.
                        self.d_th = (self.srtt / self.min_rtt).max(D_TH);
                    }
                    _ => {}
                }
            }
        }
        self.d_th = (self.d_th - 0.05 * dt / 0.1).max(D_TH);

        if since < START_PERIOD {
            self.base_rate = self.cfg.start_rate;
        } else {
            match self.mode {
                Mode::Delay => {
                    let spare = self.mu - self.z_ewma - self.base_rate;
                    let delay_term = self.mu * BETA / self.srtt * (self.srtt - self.d_th * self.min_rtt);
                    self.base_rate += ALPHA * spare - delay_term;
                }
                Mode::Competitive => self.base_rate = self.window / self.srtt,
            }
        }
        let floor = FLOOR * self.mu;
        self.base_rate = self.base_rate.max(floor);
        self.rate = (self.base_rate + if since < START_PERIOD { 0.0 } else { self.pulse(now) }).max(floor);
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
        if self.mode == Mode::Competitive && ev.newly_acked_bytes > 0 && self.window > 0.0 {
            // N Reno flows in one: N·MSS per window of ACKs.
            self.window += MULTCP_N * self.mss as f64 * ev.newly_acked_bytes as f64 / self.window;
        }
    }

    fn on_congestion_event(&mut self, ev: &CongestionEvent, _ctx: &mut CcContext) {
        // One of the N emulated flows halves, at most once per base RTT.
        let rtt = (self.min_rtt * SEC as f64) as Time;
        if self.mode == Mode::Competitive && ev.now.saturating_sub(self.last_cut) >= rtt {
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
            mode: match self.mode {
                Mode::Delay => "delay",
                Mode::Competitive => "competitive",
            },
            vars: vec![
                ("cwnd", self.cwnd() as f64),
                ("rate", self.rate),
                ("mu", self.mu),
                ("z", self.z_ewma),
                ("eta", self.last_eta),
                ("elasticity", self.elasticity),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pulse_is_zero_mean_and_asymmetric() {
        let mut n = Nimbus::new(1448, NimbusConfig::default());
        n.mu = 1e6;
        n.mode = Mode::Competitive; // 5 Hz: a 200 ms period
        let samples: Vec<f64> = (0..200_000).map(|us| n.pulse(us * 1000)).collect();
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        assert!(mean.abs() < 1e-3 * 0.25e6, "mean {mean}");
        let max = samples.iter().copied().fold(f64::MIN, f64::max);
        let min = samples.iter().copied().fold(f64::MAX, f64::min);
        assert!((max - 0.25e6).abs() < 1.0 && (min + 0.25e6 / 3.0).abs() < 1.0, "{max} {min}");
        // The peak comes an eighth of a period in (25 ms).
        assert!((n.pulse(25 * MS) - 0.25e6).abs() < 1.0);
    }

    #[test]
    fn eta_sees_a_pulse_in_the_cross_traffic_and_not_in_noise() {
        let mut n = Nimbus::new(1448, NimbusConfig::default());
        n.mu = 1e6;
        n.mode = Mode::Competitive;
        // zout carries our pulse in every case.
        n.zout_hist = (0..FFT_LEN).map(|i| 5e5 - n.pulse(i as u64 * TICK)).collect();
        // Elastic: the cross traffic moves against our pulse.
        n.z_hist = (0..FFT_LEN).map(|i| 5e5 - 0.5 * n.pulse(i as u64 * TICK)).collect();
        let elastic = n.eta();
        // Inelastic: a constant rate plus deterministic broadband wiggle.
        n.z_hist = (0..FFT_LEN).map(|i| 5e5 + 2e4 * ((i * 7919 % 101) as f64 / 50.0 - 1.0)).collect();
        let inelastic = n.eta();
        assert!(elastic > TO_COMPETITIVE, "elastic η {elastic}");
        assert!(inelastic < TO_DELAY, "inelastic η {inelastic}");
        // Little cross traffic: no elasticity at all.
        n.z_hist = (0..FFT_LEN).map(|_| 5e4).collect();
        assert_eq!(n.eta(), 0.0);
    }
}
