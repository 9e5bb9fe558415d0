//! Utility functions and the statistics they need (PCC-Uspace `pcc_utility_manager.cpp`,
//! reference §8.1 and §9.1).
//!
//! Units follow the reference exactly, because the controllers' step sizes are tuned to them:
//! times in microseconds, the sending rate `x` in Mbit/s (10⁶ bit/s), the RTT gradient
//! dimensionless (RTT change per packet divided by the packet's transmit time). The reference
//! computes in `float`; this port uses `f64`.

use super::monitor::MonitorInterval;

/// PCC-Uspace `kMaxPacketSize`: the MI's duration includes one 1500-byte transmit time, and the
/// RTT gradient is per 1500-byte transmit time.
const MAX_PACKET_SIZE: f64 = 1500.0;
/// PCC-Uspace `kRttHistoryLen`: MIs in the RTT-trend regression.
const RTT_HISTORY_LEN: usize = 6;

/// Allegro: loss tolerance 5%, loss-sigmoid slope −1000, latency-sigmoid slope −200
/// (`kLossTolerance`, `kLossCoefficient`, `kRTTCoefficient`).
const ALLEGRO_LOSS_TOLERANCE: f64 = 0.05;
const ALLEGRO_LOSS_COEFFICIENT: f64 = -1000.0;
const ALLEGRO_RTT_COEFFICIENT: f64 = -200.0;

/// Vivace: u = x^0.9 − 900·x·dRTT/dT − 11.35·x·L (`kSendingRateExponent`,
/// `kLatencyCoefficient`, `kVivaceLossCoefficient`; the NSDI'18 paper's t, b, c).
const VIVACE_EXPONENT: f64 = 0.9;
const VIVACE_LATENCY_COEFFICIENT: f64 = 900.0;
const VIVACE_LOSS_COEFFICIENT: f64 = 11.35;

/// RTT-trend tolerance (`kAlpha`, `kBeta`, `kInflationToleranceGain{High,Low}`): EWMA gain, the
/// order of magnitude that resets the minimum trend, and the band width in deviations.
const TREND_ALPHA: f64 = 0.1;
const TREND_BETA: f64 = 100.0;
const INFLATION_TOLERANCE_GAIN: f64 = 2.0;
/// `kTrendingResetIntervalRatio`: the RTT-deviation statistics restart when this share of
/// recent MIs fluctuated.
const TRENDING_RESET_RATIO: f64 = 0.95;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UtilityKind {
    Allegro,
    Vivace,
}

/// Per-MI statistics (`interval_stats_`). They persist across MIs like the reference's member:
/// a value not recomputed for an MI (too few samples) keeps the previous MI's.
#[derive(Clone, Debug, Default)]
struct IntervalStats {
    interval_duration: f64,
    rtt_ratio: f64,
    loss_rate: f64,
    actual_sending_rate_mbps: f64,
    rtt_gradient: f64,
    rtt_gradient_cut: f64,
    rtt_gradient_error: f64,
    avg_rtt: f64,
    rtt_dev: f64,
    trending_gradient: f64,
    trending_gradient_cut: f64,
    trending_deviation: f64,
}

#[derive(Clone, Debug)]
pub(super) struct UtilityManager {
    kind: UtilityKind,
    stats: IntervalStats,
    avg_mi_rtt_dev: f64,
    dev_mi_rtt_dev: f64,
    min_trending_gradient: f64,
    avg_trending_gradient: f64,
    dev_trending_gradient: f64,
    last_trending_gradient: f64,
    ratio_inflated_mi: f64,
    ratio_fluctuated_mi: f64,
    is_rtt_inflation_tolerable: bool,
    is_rtt_dev_tolerable: bool,
    mi_avg_rtt_history: Vec<f64>,
    mi_rtt_dev_history: Vec<f64>,
}

/// Transmit time of `bytes` at `rate_bps`, in microseconds (QUIC `TransferTime`, which truncates
/// to whole microseconds).
fn transfer_time_us(rate_bps: f64, bytes: f64) -> f64 {
    if rate_bps <= 0.0 {
        0.0
    } else {
        (bytes * 8.0 * 1e6 / rate_bps).floor()
    }
}

impl UtilityManager {
    pub fn new(kind: UtilityKind) -> UtilityManager {
        UtilityManager {
            kind,
            stats: IntervalStats::default(),
            avg_mi_rtt_dev: -1.0,
            dev_mi_rtt_dev: -1.0,
            min_trending_gradient: -1.0,
            avg_trending_gradient: -1.0,
            dev_trending_gradient: -1.0,
            last_trending_gradient: -1.0,
            ratio_inflated_mi: 0.0,
            ratio_fluctuated_mi: 0.0,
            is_rtt_inflation_tolerable: true,
            is_rtt_dev_tolerable: true,
            mi_avg_rtt_history: Vec::with_capacity(RTT_HISTORY_LEN + 1),
            mi_rtt_dev_history: Vec::with_capacity(RTT_HISTORY_LEN + 1),
        }
    }

    /// The MI's utility (`CalculateUtility`); the MI's first and last send times differ.
    pub fn utility(&mut self, mi: &MonitorInterval) -> f64 {
        self.compute_simple_metrics(mi);
        self.compute_rtt_gradient(mi);
        self.compute_rtt_deviation(mi);
        self.compute_rtt_gradient_error(mi);
        self.determine_tolerance_general();
        self.process_rtt_trend(mi);
        match self.kind {
            UtilityKind::Allegro => self.allegro(mi),
            UtilityKind::Vivace => self.vivace(mi),
        }
    }

    /// `(acked/dur·σ_loss·σ_lat − lost/dur)·1000`: bytes per millisecond, discounted by a sigmoid
    /// that kills utility above 5% loss and one on RTT inflation across the MI.
    fn allegro(&mut self, mi: &MonitorInterval) -> f64 {
        let tol = mi.rtt_fluctuation_tolerance_ratio;
        if self.stats.rtt_ratio > 1.0 - tol && self.stats.rtt_ratio < 1.0 + tol {
            self.stats.rtt_ratio = 1.0;
        }
        let latency_penalty = 1.0 - 1.0 / (1.0 + (ALLEGRO_RTT_COEFFICIENT * (1.0 - self.stats.rtt_ratio)).exp());
        let loss_penalty =
            1.0 - 1.0 / (1.0 + (ALLEGRO_LOSS_COEFFICIENT * (self.stats.loss_rate - ALLEGRO_LOSS_TOLERANCE)).exp());
        let dur = self.stats.interval_duration;
        (mi.bytes_acked as f64 / dur * loss_penalty * latency_penalty - mi.bytes_lost as f64 / dur) * 1000.0
    }

    /// `x^0.9 − 900·x·max(0, dRTT/dT) − 11.35·x·L` (`CalculateUtilityProportional`). The RTT
    /// gradient counts only when the regression says it is significant or the RTT trend is out
    /// of its tolerance band.
    fn vivace(&mut self, mi: &MonitorInterval) -> f64 {
        let x = self.stats.actual_sending_rate_mbps;
        let mut gradient = if self.is_rtt_inflation_tolerable { 0.0 } else { self.stats.rtt_gradient };
        if mi.rtt_fluctuation_tolerance_ratio > 50.0 && gradient.abs() < 1000.0 / self.stats.interval_duration {
            gradient = 0.0;
        }
        let gradient = gradient.max(0.0);
        x.powf(VIVACE_EXPONENT)
            - VIVACE_LATENCY_COEFFICIENT * gradient * x
            - VIVACE_LOSS_COEFFICIENT * self.stats.loss_rate * x
    }

    fn compute_simple_metrics(&mut self, mi: &MonitorInterval) {
        let s = &mut self.stats;
        // At least 1 µs: the reference's whole-microsecond arithmetic would give 0 (and infinite
        // rates) for an MI paced faster than ~12 Gbit/s.
        s.interval_duration = (((mi.last_packet_sent_time - mi.first_packet_sent_time) / 1000) as f64
            + transfer_time_us(mi.sending_rate, MAX_PACKET_SIZE))
        .max(1.0);
        s.rtt_ratio = mi.rtt_on_monitor_start as f64 / mi.rtt_on_monitor_end as f64;
        s.loss_rate = mi.bytes_lost as f64 / mi.bytes_sent as f64;
        s.actual_sending_rate_mbps = mi.bytes_sent as f64 * 8.0 / s.interval_duration;
    }

    /// Least-squares slope of RTT against packet number over the reliable samples, per 1500-byte
    /// transmit time at the MI's rate.
    fn compute_rtt_gradient(&mut self, mi: &MonitorInterval) {
        let s = &mut self.stats;
        if mi.num_reliable_rtt_for_gradient < 2 {
            s.rtt_gradient = 0.0;
            s.rtt_gradient_cut = 0.0;
            return;
        }
        let samples = || mi.rtt_samples.iter().filter(|r| r.reliable_for_gradient);
        let n = mi.num_reliable_rtt_for_gradient as f64;
        let x_avg = samples().map(|r| r.packet_number as f64).sum::<f64>() / n;
        let y_avg = samples().map(|r| r.rtt_us).sum::<f64>() / n;
        let (mut sxx, mut sxy) = (0.0, 0.0);
        for r in samples() {
            let dx = r.packet_number as f64 - x_avg;
            sxx += dx * dx;
            sxy += dx * (r.rtt_us - y_avg);
        }
        // Distinct packet numbers make sxx > 0; guard anyway so a degenerate MI reads as flat.
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        let per_packet_us = transfer_time_us(mi.sending_rate, MAX_PACKET_SIZE);
        s.rtt_gradient = if per_packet_us > 0.0 { slope / per_packet_us } else { 0.0 };
        s.avg_rtt = y_avg;
        s.rtt_gradient_cut = y_avg - s.rtt_gradient * x_avg;
    }

    /// RMS residual of the regression, relative to the mean RTT (`ComputeRttGradientError`). The
    /// reference evaluates the fitted line with the slope already divided by the transmit time,
    /// so this is not the residual of the least-squares fit; it is kept as written, since it
    /// decides when the RTT gradient counts.
    fn compute_rtt_gradient_error(&mut self, mi: &MonitorInterval) {
        let s = &mut self.stats;
        s.rtt_gradient_error = 0.0;
        if mi.num_reliable_rtt_for_gradient < 2 {
            return;
        }
        let mut sum = 0.0;
        for r in mi.rtt_samples.iter().filter(|r| r.reliable_for_gradient) {
            let fitted = r.packet_number as f64 * s.rtt_gradient + s.rtt_gradient_cut;
            sum += (r.rtt_us - fitted).powi(2);
        }
        s.rtt_gradient_error = (sum / mi.num_reliable_rtt_for_gradient as f64).sqrt() / s.avg_rtt;
    }

    fn compute_rtt_deviation(&mut self, mi: &MonitorInterval) {
        let s = &mut self.stats;
        if mi.num_reliable_rtt < 2 {
            s.rtt_dev = 0.0;
            return;
        }
        let sum: f64 = mi.rtt_samples.iter().filter(|r| r.reliable).map(|r| (r.rtt_us - s.avg_rtt).powi(2)).sum();
        s.rtt_dev = (sum / mi.num_reliable_rtt as f64).sqrt();
    }

    /// The gradient counts (is "intolerable") when the regression fits better than the slope
    /// itself: RMS error below |gradient|.
    fn determine_tolerance_general(&mut self) {
        let significant = self.stats.rtt_gradient_error < self.stats.rtt_gradient.abs();
        self.is_rtt_inflation_tolerable = !significant;
        self.is_rtt_dev_tolerable = !significant;
    }

    fn process_rtt_trend(&mut self, mi: &MonitorInterval) {
        if mi.num_reliable_rtt < 2 {
            return;
        }
        push_bounded(&mut self.mi_avg_rtt_history, self.stats.avg_rtt);
        push_bounded(&mut self.mi_rtt_dev_history, self.stats.rtt_dev);
        if self.mi_avg_rtt_history.len() >= RTT_HISTORY_LEN {
            self.compute_trending_gradient();
            self.determine_tolerance_inflation();
        }
        if self.mi_rtt_dev_history.len() >= RTT_HISTORY_LEN {
            self.compute_trending_deviation();
            self.determine_tolerance_deviation();
        }
    }

    /// Slope of the last six MIs' mean RTTs against their index.
    fn compute_trending_gradient(&mut self) {
        let h = &self.mi_avg_rtt_history;
        let n = h.len() as f64;
        let x_avg = (0..h.len()).map(|i| i as f64).sum::<f64>() / n;
        let y_avg = h.iter().sum::<f64>() / n;
        let (mut sxx, mut sxy) = (0.0, 0.0);
        for (i, y) in h.iter().enumerate() {
            let dx = i as f64 - x_avg;
            sxx += dx * dx;
            sxy += dx * (y - y_avg);
        }
        self.stats.trending_gradient = sxy / sxx;
        self.stats.trending_gradient_cut = y_avg - self.stats.trending_gradient * x_avg;
    }

    fn compute_trending_deviation(&mut self) {
        let h = &self.mi_rtt_dev_history;
        let n = h.len() as f64;
        let avg = h.iter().sum::<f64>() / n;
        self.stats.trending_deviation = (h.iter().map(|d| (avg - d).powi(2)).sum::<f64>() / n).sqrt();
    }

    /// `DetermineToleranceInflation`: a trend outside the band `avg ± 2·dev` of recent trends marks
    /// RTT inflation as intolerable (if rising); a trend inside it updates the band.
    fn determine_tolerance_inflation(&mut self) {
        self.ratio_inflated_mi *= 1.0 - TREND_ALPHA;
        let g = self.stats.trending_gradient;
        if self.min_trending_gradient < 0.000001 || g.abs() < self.min_trending_gradient / TREND_BETA {
            self.avg_trending_gradient = 0.0;
            self.min_trending_gradient = g.abs();
            self.dev_trending_gradient = g.abs();
            self.last_trending_gradient = g;
        } else {
            let hi = self.avg_trending_gradient + INFLATION_TOLERANCE_GAIN * self.dev_trending_gradient;
            let lo = self.avg_trending_gradient - INFLATION_TOLERANCE_GAIN * self.dev_trending_gradient;
            if g < lo || g > hi {
                if g > 0.0 {
                    self.is_rtt_inflation_tolerable = false;
                }
                self.is_rtt_dev_tolerable = false;
                self.ratio_inflated_mi += TREND_ALPHA;
            } else {
                self.dev_trending_gradient = self.dev_trending_gradient * (1.0 - TREND_ALPHA)
                    + (g - self.last_trending_gradient).abs() * TREND_ALPHA;
                self.avg_trending_gradient = self.avg_trending_gradient * (1.0 - TREND_ALPHA) + g * TREND_ALPHA;
                self.last_trending_gradient = g;
            }
            self.min_trending_gradient = self.min_trending_gradient.min(g.abs());
        }
    }

    fn determine_tolerance_deviation(&mut self) {
        self.ratio_fluctuated_mi *= 1.0 - TREND_ALPHA;
        let dev = self.stats.rtt_dev;
        if self.avg_mi_rtt_dev < 0.000001 {
            self.avg_mi_rtt_dev = dev;
            self.dev_mi_rtt_dev = 0.5 * dev;
        } else if dev > self.avg_mi_rtt_dev + self.dev_mi_rtt_dev * 4.0 && dev > 1000.0 {
            self.is_rtt_dev_tolerable = false;
            self.ratio_fluctuated_mi += TREND_ALPHA;
        } else {
            self.dev_mi_rtt_dev =
                self.dev_mi_rtt_dev * (1.0 - TREND_ALPHA) + (dev - self.avg_mi_rtt_dev).abs() * TREND_ALPHA;
            self.avg_mi_rtt_dev = self.avg_mi_rtt_dev * (1.0 - TREND_ALPHA) + dev * TREND_ALPHA;
        }
        if self.ratio_fluctuated_mi > TRENDING_RESET_RATIO {
            self.avg_mi_rtt_dev = -1.0;
            self.dev_mi_rtt_dev = -1.0;
            self.ratio_fluctuated_mi = 0.0;
        }
    }
}

fn push_bounded(h: &mut Vec<f64>, v: f64) {
    h.push(v);
    if h.len() > RTT_HISTORY_LEN {
        h.remove(0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::monitor::{MonitorInterval, RttSample};
    use super::*;

    use cclab_core::time::MS;

    /// An MI of `n` 1500-byte packets sent over `dur_ms` at `rate_mbps`, with RTTs rising by
    /// `rtt_step_us` per packet from `base_us`, and `lost` of them lost.
    fn mi(n: u64, dur_ms: u64, rate_mbps: f64, base_us: f64, rtt_step_us: f64, lost: u64) -> MonitorInterval {
        let samples: Vec<RttSample> = (0..n - lost)
            .map(|i| RttSample {
                packet_number: 1000 + i,
                rtt_us: base_us + rtt_step_us * i as f64,
                reliable: true,
                reliable_for_gradient: true,
            })
            .collect();
        MonitorInterval {
            id: 1,
            sending_rate: rate_mbps * 1e6,
            is_useful: true,
            rtt_fluctuation_tolerance_ratio: 1.0,
            first_packet_sent_time: MS,
            last_packet_sent_time: MS + dur_ms * MS,
            bytes_sent: n * 1500,
            bytes_acked: (n - lost) * 1500,
            bytes_lost: lost * 1500,
            rtt_on_monitor_start: 20 * MS,
            rtt_on_monitor_end: 20 * MS,
            num_reliable_rtt: samples.len(),
            num_reliable_rtt_for_gradient: samples.len(),
            rtt_samples: samples,
            has_enough_reliable_rtt: true,
            is_monitor_duration_extended: false,
        }
    }

    #[test]
    fn vivace_utility_matches_the_formula_on_a_flat_rtt() {
        // 100 packets of 1500 B over 99 ms + one transmit time at 12 Mbit/s (1000 µs):
        // x = 1.2 Mbit/s · 100 / 100 ms… = 12 Mbit/s exactly; L = 2%; flat RTT → no gradient.
        let mut u = UtilityManager::new(UtilityKind::Vivace);
        let m = mi(100, 99, 12.0, 20_000.0, 0.0, 2);
        let got = u.utility(&m);
        let x: f64 = 12.0;
        let want = x.powf(0.9) - 11.35 * 0.02 * x;
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    }

    #[test]
    fn vivace_penalises_a_significant_rtt_gradient() {
        // RTT rising 100 µs per packet while a packet takes 1000 µs to send: dRTT/dT = 0.1, so
        // the latency term is 900 · 0.1 · x. The reference's significance test compares |0.1|
        // with the regression's RMS error relative to the mean RTT, and evaluates that
        // regression with the per-transmit-time slope, so the "error" is about
        // 100 µs · std(packet numbers) / mean RTT: 0.015 here with a 200 ms base RTT
        // (significant); with a 20 ms base RTT it would be 0.12 and the gradient ignored.
        let mut u = UtilityManager::new(UtilityKind::Vivace);
        let m = mi(100, 99, 12.0, 200_000.0, 100.0, 0);
        let got = u.utility(&m);
        let x: f64 = 12.0;
        let want = x.powf(0.9) - 900.0 * 0.1 * x;
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        let mut u = UtilityManager::new(UtilityKind::Vivace);
        let got = u.utility(&mi(100, 99, 12.0, 20_000.0, 100.0, 0));
        assert!((got - x.powf(0.9)).abs() < 1e-9, "{got}");
    }

    #[test]
    fn allegro_utility_collapses_above_five_percent_loss() {
        let mut u = UtilityManager::new(UtilityKind::Allegro);
        // 1% loss: σ_loss ≈ 1 and the RTT ratio snaps to 1 (σ_lat = 0.5).
        let low = u.utility(&mi(100, 99, 12.0, 20_000.0, 0.0, 1));
        let dur = 100_000.0;
        let want = (99.0 * 1500.0 / dur * 0.5 - 1500.0 / dur) * 1000.0;
        assert!((low - want).abs() < 1e-6, "{low} vs {want}");
        // 10% loss: σ_loss ≈ 0, only the loss term remains.
        let high = u.utility(&mi(100, 99, 12.0, 20_000.0, 0.0, 10));
        assert!(high < 0.0, "{high}");
    }
}
