//! Nimbus as Bundler's aggregate controller (reference §1.1 and §10; ccp-project/nimbus run
//! through CCP on the inbox's measurements). The inbox pulses the bundle's rate and estimates
//! the cross traffic from the epochs' send rate S and receive rate R, ẑ = μ·S/R − S, exactly as
//! an end-host Nimbus does from its ACKs; the elasticity detector is the one the end-host
//! scheme uses ([`cclab_cc::elasticity`]). Delay mode is Nimbus's delay law (the paper's
//! "BasicDelay"). Competitive mode is Bundler's "let traffic pass": the inbox stops imposing a
//! delay target and instead holds its own queue near q_T = 10 ms with the PI law
//! ṙ = α(q − q_T) + β·q̇ (α = β = 10), so the end hosts' own loss-based congestion control
//! competes with the elastic cross traffic while the inbox keeps a queue to schedule and to
//! pulse from (the pulse needs about A·T/(2π) ≈ 8 ms·μ of it).

use super::Signals;
use cclab_cc::elasticity::{Elasticity, Mode};
use cclab_cc::nimbus::{decay_d_th, delay_mode_step, D_TH, FLOOR, START_PERIOD, START_RATE};
use cclab_core::time::Time;

/// Pulse amplitude as a fraction of μ (reference §1.1: A = μ/4).
const PULSE_SIZE: f64 = 0.25;
/// Pass-through mode: the inbox queue's target delay, s, and the PI gains in units of μ per
/// second of queueing error (per second) and per unit of queue growth. With q in seconds and
/// r in units of μ the loop is r'' ∝ −β·r' − α·r: roots −1.1/s and −8.9/s, overdamped, with
/// its slow mode settling in about a second (the paper's α = β = 10; its units are not given).
const Q_TARGET: f64 = 0.010;
const PI_ALPHA: f64 = 10.0;
const PI_BETA: f64 = 10.0;
/// In pass-through mode the rate may exceed μ (it must, to drain the inbox after a burst), but
/// not without bound while the end hosts keep the inbox full.
const PASS_CAP: f64 = 2.0;

pub struct NimbusRate {
    detector: Elasticity,
    switching: bool,
    start: Option<Time>,
    /// μ: the largest smoothed receive rate seen (Nimbus's `bw_est_mode`), bytes/s.
    mu: f64,
    s_ewma: f64,
    r_ewma: f64,
    /// The rate the mode's law sets, and the token bucket's rate (with the pulse), bytes/s.
    base: f64,
    rate: f64,
    d_th: f64,
    /// Pass-through mode: the inbox queue's delay at the last tick, s.
    last_queue: f64,
}

impl NimbusRate {
    pub fn new(switching: bool) -> NimbusRate {
        NimbusRate {
            detector: Elasticity::default(),
            switching,
            start: None,
            mu: 0.0,
            s_ewma: 0.0,
            r_ewma: 0.0,
            base: START_RATE,
            rate: START_RATE,
            d_th: D_TH,
            last_queue: 0.0,
        }
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    pub fn mode(&self) -> Mode {
        self.detector.mode()
    }

    /// One 10 ms step (the detector's sampling period).
    pub fn tick(&mut self, sig: &Signals) {
        let now = sig.now;
        let start = *self.start.get_or_insert(now);
        let dt = sig.dt as f64 / 1e9;
        let (Some((s, r)), true) = (sig.epoch_rates, sig.srtt > 0) else {
            return; // no measurement yet: the start rate holds
        };
        // Nimbus's optional EWMA of 0.2 on S and R: one epoch window is only a few boundaries,
        // and the S/R ratio of single samples is mostly sampling noise.
        self.s_ewma = 0.8 * self.s_ewma + 0.2 * s;
        self.r_ewma = 0.8 * self.r_ewma + 0.2 * r;
        self.mu = self.mu.max(self.r_ewma);
        let (s, r, mu) = (self.s_ewma, self.r_ewma, self.mu);
        let z = if r > 0.0 { (mu * s / r - s).max(0.0) } else { 0.0 };
        self.detector.record(z, mu - r);
        let srtt = sig.srtt as f64 / 1e9;
        let min_rtt = sig.min_rtt as f64 / 1e9;
        let queue = sig.queue_bytes as f64 / self.rate.max(FLOOR * mu);
        match self.detector.update(now, now - start, mu, self.switching) {
            // Pass-through starts from what the bundle was getting.
            Some(Mode::Competitive) => self.base = self.r_ewma,
            Some(Mode::Delay) => {
                self.base = self.r_ewma;
                self.d_th = (srtt / min_rtt).max(D_TH);
            }
            None => {}
        }
        self.d_th = decay_d_th(self.d_th, dt);
        if now - start < START_PERIOD {
            self.base = START_RATE;
        } else {
            match self.mode() {
                Mode::Delay => self.base = delay_mode_step(self.base, mu, z, srtt, self.d_th, min_rtt),
                Mode::Competitive => {
                    let growth = (queue - self.last_queue) / dt;
                    self.base += mu * (PI_ALPHA * (queue - Q_TARGET) + PI_BETA * growth) * dt;
                    self.base = self.base.min(PASS_CAP * mu);
                }
            }
        }
        self.last_queue = queue;
        let floor = FLOOR * mu;
        self.base = self.base.max(floor);
        let pulse = if now - start < START_PERIOD { 0.0 } else { self.detector.pulse(now, PULSE_SIZE * mu) };
        self.rate = (self.base + pulse).max(floor);
    }
}
