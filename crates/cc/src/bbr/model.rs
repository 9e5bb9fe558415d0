//! BBR's path model: the bandwidth and min-RTT estimates turned into a pacing rate, a BDP and
//! in-flight targets, plus the ACK-aggregation estimator (`bbr_update_bw`,
//! `bbr_update_ack_aggregation` and the helpers they feed).

use super::*;

/// ACK aggregation: `bbr_extra_acked_gain` (1.0), window `bbr_extra_acked_win_rtts` rounds per
/// slot, cap `bbr_extra_acked_max_us`, epoch reset `bbr_ack_epoch_acked_reset_thresh`.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const EXTRA_ACKED_MAX: Time = 100 * MS;
const ACK_EPOCH_RESET: u64 = 1 << 20;

impl Bbr {
    pub(super) fn pkts(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mss)
    }

    pub(super) fn max_bw(&self) -> f64 {
        self.bw.get().unwrap_or(0.0)
    }

    /// The bandwidth the model uses: the policed rate when one was detected.
    pub(super) fn bbr_bw(&self) -> f64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    pub(super) fn extra_acked_max(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec`: packets/s × gain → bytes/s, 1 % under.
    pub(super) fn rate_bytes_per_sec(&self, bw: f64, gain: f64) -> f64 {
        bw * self.mss as f64 * gain * PACING_MARGIN
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain × cwnd / srtt (or a nominal 1 ms).
    pub(super) fn init_pacing_rate_from_rtt(&mut self) {
        let rtt = match self.srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                s.max(1_000)
            }
            None => NOMINAL_RTT,
        };
        let bw = self.cwnd as f64 / (rtt as f64 / SEC as f64);
        self.pacing_rate = self.rate_bytes_per_sec(bw, HIGH_GAIN);
    }

    pub(super) fn set_pacing_rate(&mut self, bw: f64, gain: f64) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && self.srtt.is_some() {
            self.init_pacing_rate_from_rtt();
        }
        // In startup the rate only rises, so a low early sample cannot slow the ramp.
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_goal`: about 1 ms of data per burst, at least 2 segments above 1.2 Mbit/s.
    pub(super) fn tso_segs_goal(&self) -> u64 {
        let bytes = (self.pacing_rate / (1u64 << PACING_SHIFT) as f64).min(GSO_MAX_BYTES);
        ((bytes as u64) / self.mss).max(self.bbr_min_tso_segs()).min(TSO_MAX_SEGS)
    }

    /// `bbr_min_tso_segs`: one segment per burst below 1.2 Mbit/s, else two.
    pub(super) fn bbr_min_tso_segs(&self) -> u64 {
        if self.pacing_rate < MIN_TSO_RATE {
            1
        } else {
            2
        }
    }

    /// `bbr_bdp`: ceil(bw × min_rtt × gain), or the initial window without an RTT.
    pub(super) fn bdp(&self, bw: f64, gain: f64) -> u64 {
        match self.min_rtt {
            None => TCP_INIT_CWND,
            Some(rtt) => (bw * (rtt as f64 / SEC as f64) * gain).ceil() as u64,
        }
    }

    /// `bbr_quantization_budget`.
    pub(super) fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd;
        if self.cfg.offload_budget {
            // One burst in the sender's qdisc, one in its TSO engine, one in the receiver's
            // GRO/delayed-ACK engine; even, to reduce delayed ACKs.
            cwnd += 3 * self.tso_segs_goal();
            cwnd = (cwnd + 1) & !1;
        }
        // Ensure gain cycling gets inflight above BDP even for small BDPs.
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    pub(super) fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: what will still be in the network when the next packet
    /// leaves the pacer, given what the pacer already committed to.
    pub(super) fn packets_in_net_at_edt(&self, inflight_now: u64, now: Time) -> u64 {
        let edt = self.edt.max(now);
        let interval_delivered = (self.bbr_bw() * ((edt - now) as f64 / SEC as f64)) as u64;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > 1.0 {
            // Increasing inflight: include the packet(s) departing at the EDT.
            inflight_at_edt += if self.cfg.offload_budget { self.tso_segs_goal() } else { 1 };
        }
        inflight_at_edt.saturating_sub(interval_delivered)
    }

    pub(super) fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.cfg.ack_aggregation || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = (self.bbr_bw() * (EXTRA_ACKED_MAX as f64 / SEC as f64)) as u64;
        self.extra_acked_max().min(max_aggr)
    }

    pub(super) fn update_bw(&mut self, s: &Sample, ctx: &mut CcContext) {
        self.round_start = false;
        let Some((bw, prior_delivered)) = s.rate else { return };
        if prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = self.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(s.losses, s.is_app_limited, ctx);
        // An app-limited sample describes the application, not the path: use it only if it
        // is at least as high as what the filter holds.
        if !s.is_app_limited || bw >= self.max_bw() {
            self.bw.update(self.rtt_cnt, bw);
        }
    }

    pub(super) fn update_ack_aggregation(&mut self, s: &Sample) {
        if s.acked == 0 || s.rate.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch = self.delivered_mstamp.saturating_sub(self.ack_epoch_mstamp);
        let mut expected = (self.bbr_bw() * (epoch as f64 / SEC as f64)) as u64;
        // A new epoch when the ACK rate fell to the expected rate, or after very many ACKs.
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + s.acked >= ACK_EPOCH_RESET {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = self.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + s.acked).min(ACK_EPOCH_RESET - 1);
        let extra = (self.ack_epoch_acked - expected.min(self.ack_epoch_acked)).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }
}
