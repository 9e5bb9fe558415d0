//! STARTUP and DRAIN: fill the pipe until the bandwidth stops growing, then drain the queue
//! that filling built.

use super::*;

/// `bbr_full_bw_thresh` and `bbr_full_bw_cnt`: the pipe is full once three rounds pass
/// without 25 % more bandwidth.
pub const FULL_BW_THRESH: f64 = 320.0 / UNIT;
pub const FULL_BW_CNT: u32 = 3;

impl Bbr {
    pub(super) fn reset_startup_mode(&mut self) {
        self.mode = Mode::Startup;
    }

    pub(super) fn check_full_bw_reached(&mut self, s: &Sample) {
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

    pub(super) fn check_drain(&mut self, s: &Sample, now: Time, ctx: &mut CcContext) {
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
}
