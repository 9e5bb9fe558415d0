//! The min-RTT filter and PROBE_RTT, the dip that refreshes it every 10 s. Linux keeps both
//! clocks in jiffies (`min_rtt_stamp`, `probe_rtt_done_stamp` from tcp_jiffies32, compared
//! with `after()`): a window expires on the first tick past it, up to a jiffy (4 ms at
//! CONFIG_HZ = 250) after the nanosecond.

use super::*;
use cclab_core::time::jiffies;

/// `bbr_min_rtt_win_sec`.
pub const MIN_RTT_WIN: Time = 10 * SEC;
/// `bbr_probe_rtt_mode_ms`.
pub const PROBE_RTT_TIME: Time = 200 * MS;

impl Bbr {
    pub(super) fn update_min_rtt(&mut self, s: &Sample, now: Time, delivered_any: bool, ctx: &mut CcContext) {
        // "filter_expired = after(tcp_jiffies32, bbr->min_rtt_stamp + bbr_min_rtt_win_sec * HZ)"
        let expired = jiffies(now) > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(rtt) = s.rtt {
            if self.min_rtt.is_none_or(|m| rtt < m) || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = jiffies(now);
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
                self.probe_rtt_done_stamp = Some(jiffies(now) + PROBE_RTT_TIME);
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

    pub(super) fn check_probe_rtt_done(&mut self, now: Time, ctx: &mut CcContext) {
        if self.probe_rtt_done_stamp.is_none_or(|d| jiffies(now) <= d) {
            return;
        }
        // Wait a full window before the next PROBE_RTT.
        self.min_rtt_stamp = jiffies(now);
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode(ctx);
    }
}
