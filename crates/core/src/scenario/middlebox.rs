//! `[middlebox]`: Bundler's inbox and outbox (reproduction-targets §1.1). The inbox sits before
//! the bottleneck and sees every flow of the site; it rate-limits their aggregate with a
//! token bucket whose rate an aggregate congestion controller sets every `interval` from the
//! outbox's out-of-band feedback (receive rate and RTT of sampled epoch-boundary packets), and
//! schedules its own queue with one of the bottleneck's queue disciplines, so the standing queue
//! moves from the bottleneck to the inbox, where the scheduler can serve short requests first.

use super::{Aqm, Source};
use crate::units::{Dur, QueueSize};
use crate::ScenarioError;
use serde::{Deserialize, Serialize};

/// The aggregate controllers the inbox can run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BundleController {
    /// Copa's delay target (1/(δ·d_q)) in rate form: Bundler's default.
    #[default]
    Copa,
    /// Nimbus: delay mode ("BasicDelay"), and pass-through when elasticity detection finds
    /// elastic cross traffic (unless `switching = false`).
    Nimbus,
    /// BBR: a pacing-gain cycle around the bottleneck bandwidth (max filter over 10 RTTs).
    Bbr,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Middlebox {
    /// The aggregate controller: `copa` (default), `nimbus` or `bbr`.
    #[serde(default)]
    pub controller: BundleController,
    /// Nimbus only: whether elasticity detection may switch to pass-through mode.
    #[serde(default = "yes")]
    pub switching: bool,
    /// The inbox queue's discipline, by the same names as `link.aqm` (Bundler's default: SFQ,
    /// so that short requests bypass long ones).
    #[serde(default = "default_scheduler")]
    pub scheduler: Aqm,
    /// The inbox's buffer (Bundler's `qdisc_buf_size = 15mbit`).
    #[serde(default = "default_queue")]
    pub queue: QueueSize,
    /// The control loop's period (Bundler: CCP every 10 ms).
    #[serde(default = "default_interval")]
    pub interval: Dur,
    /// Copa's δ (packets⁻¹ · s⁻¹ scale of the delay target).
    #[serde(default = "default_delta")]
    pub delta: f64,
    /// Epoch length (packets between sampled boundaries) before the first measurement; then
    /// it adapts as Bundler's: a quarter of the BDP in packets, a power of two in [4, 1024].
    #[serde(default = "default_epoch")]
    pub initial_epoch: u32,
}

fn yes() -> bool {
    true
}
fn default_scheduler() -> Aqm {
    Aqm::Sfq
}
fn default_queue() -> QueueSize {
    QueueSize::Bytes(15_000_000 / 8)
}
fn default_interval() -> Dur {
    Dur::from_millis(10)
}
fn default_delta() -> f64 {
    0.5
}
fn default_epoch() -> u32 {
    128
}

impl Middlebox {
    pub(super) fn check(&self, src: &Source, errs: &mut Vec<ScenarioError>) {
        if self.interval.0 == 0 {
            errs.push(src.error("middlebox.interval", "must be positive, e.g. \"10ms\""));
        }
        if self.controller == BundleController::Nimbus && self.interval != default_interval() {
            // The elasticity detector's FFT assumes one sample every 10 ms.
            errs.push(src.error("middlebox.interval", "Nimbus samples every \"10ms\"; leave the interval out"));
        }
        if !(self.delta > 0.0 && self.delta.is_finite()) {
            errs.push(src.error("middlebox.delta", "must be a positive number, e.g. 0.5"));
        }
        if !self.initial_epoch.is_power_of_two() || !(4..=1024).contains(&self.initial_epoch) {
            errs.push(src.error("middlebox.initial_epoch", "must be a power of two in [4, 1024], e.g. 128"));
        }
        if matches!(self.queue, QueueSize::Infinite) {
            errs.push(src.error("middlebox.queue", "the inbox needs a finite buffer, e.g. \"1875KB\""));
        }
    }
}
