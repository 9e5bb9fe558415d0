use cclab_cc::{RttStats, Time};

use cclab_core::time::SEC;

/// RFC 6298 RTT estimation and retransmission timeout.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    pub stats: RttStats,
    min_rto: Time,
    max_rto: Time,
    /// Exponent of the current backoff; reset by a fresh RTT sample.
    backoff: u32,
}

impl RttEstimator {
    pub fn new(min_rto: Time) -> Self {
        RttEstimator { stats: RttStats::default(), min_rto, max_rto: 60 * SEC, backoff: 0 }
    }

    pub fn sample(&mut self, rtt: Time) {
        let rtt = rtt.max(1);
        let s = &mut self.stats;
        if !s.has_sample {
            s.smoothed = rtt;
            s.rttvar = rtt / 2;
            s.min = rtt;
            s.has_sample = true;
        } else {
            // RTTVAR first, with the old SRTT (RFC 6298 §2.3); α = 1/8, β = 1/4.
            let err = s.smoothed.abs_diff(rtt);
            s.rttvar = (3 * s.rttvar + err) / 4;
            s.smoothed = (7 * s.smoothed + rtt) / 8;
            s.min = s.min.min(rtt);
        }
        s.latest = rtt;
        self.backoff = 0;
    }

    /// The current timeout, including backoff: 1 s before the first sample.
    pub fn rto(&self) -> Time {
        let base = if self.stats.has_sample {
            (self.stats.smoothed + (4 * self.stats.rttvar).max(1_000_000)).max(self.min_rto)
        } else {
            SEC
        };
        base.saturating_mul(1 << self.backoff.min(16)).min(self.max_rto)
    }

    pub fn back_off(&mut self) {
        self.backoff += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_core::time::MS;

    #[test]
    fn rfc6298_updates_and_backoff() {
        let mut e = RttEstimator::new(200 * MS);
        assert_eq!(e.rto(), SEC, "initial RTO is 1 s");
        e.sample(100 * MS);
        assert_eq!((e.stats.smoothed, e.stats.rttvar), (100 * MS, 50 * MS));
        assert_eq!(e.rto(), 300 * MS);
        e.sample(200 * MS);
        // rttvar = 3/4·50 + 1/4·|100−200| = 62.5; srtt = 7/8·100 + 1/8·200 = 112.5
        assert_eq!(e.stats.rttvar, 62_500_000);
        assert_eq!(e.stats.smoothed, 112_500_000);
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), 4 * (112_500_000 + 250 * MS));
        e.sample(20 * MS);
        assert!(e.rto() >= 200 * MS, "min RTO holds");
    }
}
