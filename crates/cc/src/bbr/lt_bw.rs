//! Long-term bandwidth sampling: Linux's token-bucket policer detector (`bbr_lt_bw_sampling`).

use super::*;

/// Long-term bandwidth (policer) detection: `bbr_lt_intvl_min_rtts`, `bbr_lt_loss_thresh`
/// (50/256 ≈ 20 % loss), `bbr_lt_bw_ratio` (1/8), `bbr_lt_bw_diff` (4 kbit/s),
/// `bbr_lt_bw_max_rtts`.
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: f64 = 50.0 / UNIT;
const LT_BW_RATIO: f64 = 1.0 / 8.0;
const LT_BW_DIFF: f64 = 4000.0 / 8.0;
const LT_BW_MAX_RTTS: u32 = 48;

impl Bbr {
    pub(super) fn reset_lt_bw_sampling_interval(&mut self) {
        self.lt_last_stamp = self.delivered_mstamp;
        self.lt_last_delivered = self.delivered;
        self.lt_last_lost = self.lost;
        self.lt_rtt_cnt = 0;
    }

    pub(super) fn reset_lt_bw_sampling(&mut self) {
        self.lt_bw = 0.0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval();
    }

    pub(super) fn lt_bw_interval_done(&mut self, bw: f64) {
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
    pub(super) fn lt_bw_sampling(&mut self, losses: u64, is_app_limited: bool, ctx: &mut CcContext) {
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
}
