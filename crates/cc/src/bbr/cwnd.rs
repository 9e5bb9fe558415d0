//! The congestion window: packet conservation in recovery, restore on exit, and growth toward
//! the model's target (`bbr_set_cwnd`).

use super::*;

impl Bbr {
    /// Save the "last known good" cwnd before recovery or PROBE_RTT cuts it.
    pub(super) fn save_cwnd(&mut self, cwnd: u64) {
        if self.prev_ca_state == CaState::Open && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_set_cwnd_to_recover_or_restore`; true while conserving packets.
    pub(super) fn recover_or_restore(&mut self, s: &Sample, state: CaState, cwnd: &mut u64) -> bool {
        let prev = self.prev_ca_state;
        // An ACK for P packets releases at most 2·P: first deduct what was lost.
        if s.losses > 0 {
            *cwnd = cwnd.saturating_sub(s.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // The first round of recovery: packet conservation.
            self.packet_conservation = true;
            self.next_rtt_delivered = self.delivered;
            *cwnd = s.in_flight + s.acked;
        } else if prev != CaState::Open && state == CaState::Open {
            // Leaving recovery: restore the cwnd saved when it began.
            *cwnd = (*cwnd).max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            *cwnd = (*cwnd).max(s.in_flight + s.acked);
            return true;
        }
        false
    }

    pub(super) fn set_cwnd(&mut self, s: &Sample, state: CaState, bw: f64, gain: f64) {
        let mut cwnd = self.cwnd;
        if s.acked > 0 && !self.recover_or_restore(s, state, &mut cwnd) {
            let target = self.quantization_budget(self.bdp(bw, gain) + self.ack_aggregation_cwnd());
            if self.full_bw_reached {
                // Only cut cwnd once the pipe was filled.
                cwnd = (cwnd + s.acked).min(target);
            } else if cwnd < target || self.delivered < TCP_INIT_CWND * self.mss {
                cwnd += s.acked;
            }
            cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        self.cwnd = cwnd;
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(CWND_MIN_TARGET);
        }
    }
}
