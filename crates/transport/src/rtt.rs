use cclab_cc::{RttStats, Time};

use cclab_core::scenario::RtoModel;
use cclab_core::time::SEC;

/// Linux's TCP_TIMEOUT_INIT (include/net/tcp.h): the RTO before any RTT sample.
const RTO_INIT: Time = SEC;
/// RFC 6298 §2.4's clock granularity G.
const RFC6298_G: Time = 1_000_000;

/// What one ACK measures, as Linux's tcp_clean_rtx_queue takes it: the time since the oldest
/// segment it newly acknowledges was sent (`first`, seq_rtt_us, which Linux smooths into srtt and
/// the RTO) and since the newest (`last`, ca_rtt_us: the minimum RTT and the sample congestion
/// control sees). A delayed ACK of two segments paced 12 ms apart makes them differ by 12 ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckRtt {
    pub first: Time,
    pub last: Time,
}

impl AckRtt {
    /// One segment, or a handshake: both the same.
    pub fn single(rtt: Time) -> AckRtt {
        AckRtt { first: rtt, last: rtt }
    }
}

/// RTT estimation and the retransmission timeout, as Linux computes them or as RFC 6298 does.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    pub stats: RttStats,
    model: RtoModel,
    min_rto: Time,
    max_rto: Time,
    /// Exponent of the current backoff; reset by a fresh RTT sample.
    backoff: u32,
    // Linux's state (tcp_sock in include/linux/tcp.h), in ns: mdev_us is 4·(mean deviation),
    // mdev_max_us its largest value in the current window of data, rttvar_us what the RTO adds
    // to srtt, and rtt_seq the packet id that ends the window.
    mdev: i64,
    mdev_max: i64,
    rttvar: i64,
    rtt_seq: u64,
}

impl RttEstimator {
    pub fn new(model: RtoModel, min_rto: Time, max_rto: Time) -> Self {
        RttEstimator {
            stats: RttStats::default(),
            model,
            min_rto,
            max_rto,
            backoff: 0,
            mdev: 0,
            mdev_max: 0,
            rttvar: 0,
            rtt_seq: 0,
        }
    }

    /// One ACK's RTT samples, from the ACK of packet `acked_id` while `next_id` is the next id
    /// to send (Linux's snd_una and snd_nxt, which bound its per-window mdev_max).
    pub fn sample(&mut self, rtt: AckRtt, acked_id: u64, next_id: u64) {
        let (first, last) = (rtt.first.max(1), rtt.last.max(1));
        match self.model {
            RtoModel::Linux => self.sample_linux(first, acked_id, next_id),
            // One timed segment per ACK, the newest (RFC 9002's latest_rtt).
            RtoModel::Rfc6298 => self.sample_rfc6298(last),
        }
        // tcp_update_rtt_min and rs->rtt_us take ca_rtt_us.
        let s = &mut self.stats;
        s.min = if s.has_sample { s.min.min(last) } else { last };
        s.has_sample = true;
        s.latest = last;
        self.backoff = 0;
    }

    fn sample_rfc6298(&mut self, rtt: Time) {
        let s = &mut self.stats;
        if !s.has_sample {
            s.smoothed = rtt;
            s.rttvar = rtt / 2;
        } else {
            // RTTVAR first, with the old SRTT (RFC 6298 §2.3); α = 1/8, β = 1/4.
            let err = s.smoothed.abs_diff(rtt);
            s.rttvar = (3 * s.rttvar + err) / 4;
            s.smoothed = (7 * s.smoothed + rtt) / 8;
        }
    }

    /// net/ipv4/tcp_input.c, tcp_rtt_estimator (Van Jacobson's algorithm with Linux's two
    /// changes): a sample below srtt − mdev moves mdev with gain 1/32 instead of 1/4, and the
    /// RTO's variance term (rttvar_us) follows the largest mdev of each window of data, never
    /// below tcp_rto_min, decaying by a quarter of its excess once per window.
    fn sample_linux(&mut self, rtt: Time, acked_id: u64, next_id: u64) {
        let min_rto = self.min_rto as i64;
        let m = rtt as i64;
        let s = &mut self.stats;
        if !s.has_sample {
            s.smoothed = rtt;
            self.mdev = 2 * m; // "make sure rto = 3*rtt"
            self.mdev_max = self.mdev.max(min_rto);
            self.rttvar = self.mdev_max;
            self.rtt_seq = next_id;
        } else {
            let srtt = s.smoothed as i64;
            let mut err = m - srtt;
            // srtt += err/8, in Linux's ×8 fixed point.
            s.smoothed = (8 * srtt + err).max(8) as u64 / 8;
            if err < 0 {
                err = -err - self.mdev / 4;
                if err > 0 {
                    err /= 8;
                }
            } else {
                err -= self.mdev / 4;
            }
            self.mdev += err;
            if self.mdev > self.mdev_max {
                self.mdev_max = self.mdev;
                self.rttvar = self.rttvar.max(self.mdev_max);
            }
            if acked_id >= self.rtt_seq {
                if self.mdev_max < self.rttvar {
                    self.rttvar -= (self.rttvar - self.mdev_max) / 4;
                }
                self.rtt_seq = next_id;
                self.mdev_max = min_rto;
            }
        }
        s.rttvar = (self.mdev / 4).max(0) as Time;
    }

    /// The RTO before backoff.
    pub fn base_rto(&self) -> Time {
        if !self.stats.has_sample {
            return RTO_INIT;
        }
        match self.model {
            // tcp_set_rto: (srtt_us >> 3) + rttvar_us.
            RtoModel::Linux => self.stats.smoothed + self.rttvar as Time,
            RtoModel::Rfc6298 => (self.stats.smoothed + (4 * self.stats.rttvar).max(RFC6298_G)).max(self.min_rto),
        }
    }

    /// The current timeout, including backoff (inet_csk_rto_backoff: rto << backoff, capped
    /// at TCP_RTO_MAX).
    pub fn rto(&self) -> Time {
        self.base_rto().saturating_mul(1 << self.backoff.min(32)).min(self.max_rto)
    }

    pub fn back_off(&mut self) {
        self.backoff += 1;
    }

    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_core::time::MS;

    #[test]
    fn rfc6298_updates_and_backoff() {
        let mut e = RttEstimator::new(RtoModel::Rfc6298, 200 * MS, 60 * SEC);
        assert_eq!(e.rto(), SEC, "initial RTO is 1 s");
        e.sample(AckRtt::single(100 * MS), 0, 1);
        assert_eq!((e.stats.smoothed, e.stats.rttvar), (100 * MS, 50 * MS));
        assert_eq!(e.rto(), 300 * MS);
        e.sample(AckRtt::single(200 * MS), 1, 2);
        // rttvar = 3/4·50 + 1/4·|100−200| = 62.5; srtt = 7/8·100 + 1/8·200 = 112.5
        assert_eq!(e.stats.rttvar, 62_500_000);
        assert_eq!(e.stats.smoothed, 112_500_000);
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), 4 * (112_500_000 + 250 * MS));
        e.sample(AckRtt::single(20 * MS), 2, 3);
        assert!(e.rto() >= 200 * MS, "min RTO holds");
    }

    /// tcp_rtt_estimator's first sample: srtt = m, mdev = 2m, rttvar = max(mdev, rto_min), so
    /// rto = max(3·rtt, rtt + rto_min) — with a 20 ms RTT, 220 ms where RFC 6298 gives 200 ms.
    #[test]
    fn linux_first_sample_is_srtt_plus_max_of_2rtt_and_rto_min() {
        let mut e = RttEstimator::new(RtoModel::Linux, 200 * MS, 120 * SEC);
        assert_eq!(e.rto(), SEC, "TCP_TIMEOUT_INIT before any sample");
        e.sample(AckRtt::single(20 * MS), 0, 10);
        assert_eq!(e.rto(), 220 * MS);
        let mut e = RttEstimator::new(RtoModel::Linux, 200 * MS, 120 * SEC);
        e.sample(AckRtt::single(300 * MS), 0, 10);
        assert_eq!(e.rto(), 900 * MS, "3·rtt when 2·rtt exceeds rto_min");
    }

    /// tcp_rtt_estimator: "if (m < 0) { m = -m; m -= (tp->mdev_us >> 2); if (m > 0) m >>= 3; }"
    /// — a sample far below srtt raises mdev by only 1/32 of its excess, where RFC 6298 would
    /// add a quarter of the whole error.
    #[test]
    fn linux_damps_falling_rtt_samples() {
        let mut e = RttEstimator::new(RtoModel::Linux, 200 * MS, 120 * SEC);
        e.sample(AckRtt::single(100 * MS), 0, 10);
        // mdev = 200 ms. err = 20 − 100 = −80 ms: −err − mdev/4 = 80 − 50 = 30 > 0 → 30/8.
        e.sample(AckRtt::single(20 * MS), 1, 10);
        assert_eq!(e.mdev, (200 * MS + 30 * MS / 8) as i64);
        assert_eq!(e.stats.smoothed, 90 * MS);
        // Rising samples move mdev by a quarter of (|err| − mdev/4), as RFC 6298's rttvar.
        let before = e.mdev;
        e.sample(AckRtt::single(190 * MS), 2, 10); // err = +100 ms
        assert_eq!(e.mdev, before + (100 * MS) as i64 - before / 4);
    }

    /// The RTO's variance term never falls below tcp_rto_min (mdev_max_us restarts at
    /// tcp_rto_min_us each window), and the backed-off RTO stops at TCP_RTO_MAX = 120 s.
    #[test]
    fn linux_rto_floor_and_backoff_cap() {
        let mut e = RttEstimator::new(RtoModel::Linux, 200 * MS, 120 * SEC);
        for i in 0..200 {
            e.sample(AckRtt::single(10 * MS), i, i + 1);
        }
        assert_eq!(e.rto(), 210 * MS, "srtt + rto_min once the deviation is gone");
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), 120 * SEC);
    }
}
