//! PROBE_BW: the eight-phase gain cycle.

use super::*;

/// `bbr_cycle_rand`: the first phase is chosen among all but the 0.75 one.
const CYCLE_RAND: u64 = 7;

impl Bbr {
    pub(super) fn reset_probe_bw_mode(&mut self, ctx: &mut CcContext) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - ctx.rng.below(CYCLE_RAND) as usize;
        self.advance_cycle_phase();
    }

    pub(super) fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_mstamp = self.delivered_mstamp;
    }

    pub(super) fn is_next_cycle_phase(&self, s: &Sample, now: Time) -> bool {
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
}
