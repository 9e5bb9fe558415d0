//! Per-flow congestion statistics (issue 12, IMC'21 §4): how often a sender reduced its window
//! for loss, how many packets the path dropped per reduction, and how bursty its losses were.
//!
//! The sender knows its congestion events (the transport counts them); the path knows its drops
//! (the metrics kernel counts them); the engine brings both into the flow's summary with
//! [`super::FlowSummary::set_congestion`]. Engines whose senders are not cclab's (kernel TCP)
//! leave the columns NaN.

/// Inter-loss gaps of one sender, as integer sums so that the result is exact and
/// deterministic: Goh and Barabási's burstiness B = (σ − μ)/(σ + μ) of the gaps between
/// consecutive packet losses (EPL 81, 48002, 2008): −1 for perfectly periodic losses, 0 for a
/// Poisson process, towards 1 for losses in bursts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LossGaps {
    last: Option<u64>,
    n: u64,
    sum: u128,
    sum_sq: u128,
}

impl LossGaps {
    /// One packet declared lost at `t` ns (times must not decrease; a smaller one counts as a
    /// zero gap).
    pub fn record(&mut self, t: u64) {
        if let Some(last) = self.last {
            let gap = t.saturating_sub(last) as u128;
            self.n += 1;
            self.sum += gap;
            self.sum_sq += gap * gap;
        }
        self.last = Some(self.last.map_or(t, |l| l.max(t)));
    }

    /// B over the gaps (population σ); NaN with fewer than two gaps or when all are zero.
    pub fn burstiness(&self) -> f64 {
        if self.n < 2 {
            return f64::NAN;
        }
        let n = self.n as f64;
        let mean = self.sum as f64 / n;
        let sd = (self.sum_sq as f64 / n - mean * mean).max(0.0).sqrt();
        if sd + mean == 0.0 {
            f64::NAN
        } else {
            (sd - mean) / (sd + mean)
        }
    }
}
