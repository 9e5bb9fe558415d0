//! BBR as Bundler's aggregate controller (ccp-project/bbr run through CCP on the inbox's
//! measurements; reference §1.1, B9). The model is BBR's: the bottleneck bandwidth is a
//! running maximum of the bundle's delivery rate (the smaller of the epochs' send and receive
//! rates, as the CCP program reports) over 10 rounds, the propagation RTT a running minimum
//! over 10 s; the token bucket's rate is a pacing gain times the bandwidth. Startup grows it by
//! 2/ln 2 per round until three rounds bring less than 25% more, drain empties what that
//! queued, and probe-bandwidth cycles the gains 5/4, 3/4, 1 ×6, one round each; when the
//! minimum is 10 s old, probe-RTT holds the rate at four packets per RTT for 200 ms. The gains
//! and windows are Linux's, shared with the end-host scheme ([`cclab_cc::bbr`]). A round here is
//! one minimum RTT of time (the inbox sees no packet-timed rounds; CCP's BBR times its cycle
//! the same way).

use super::Signals;
use cclab_cc::bbr::{
    BW_RTTS, CWND_MIN_TARGET, DRAIN_GAIN, FULL_BW_CNT, FULL_BW_THRESH, HIGH_GAIN, MIN_RTT_WIN, PACING_GAIN,
    PROBE_RTT_TIME,
};
use cclab_cc::WindowedFilter;
use cclab_core::scenario::PACKET_BYTES;
use cclab_core::time::Time;

/// The rate before the first bandwidth sample: 10 Mbit/s (as Copa's inbox starts).
const INITIAL_RATE: f64 = 10e6 / 8.0;
/// Drain ends when an RTT sample is back within this factor of the minimum: the queue that
/// startup built is gone (the inbox cannot count packets in flight as an end host can).
const DRAINED_RTT: f64 = 1.1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

impl BbrMode {
    pub fn name(self) -> &'static str {
        match self {
            BbrMode::Startup => "startup",
            BbrMode::Drain => "drain",
            BbrMode::ProbeBw => "probe_bw",
            BbrMode::ProbeRtt => "probe_rtt",
        }
    }
}

pub struct BbrRate {
    mode: BbrMode,
    /// Max filter over rounds of the delivery rate, bytes/s.
    bw: WindowedFilter<f64>,
    round: u64,
    round_start: Time,
    min_rtt: Time,
    min_rtt_stamp: Time,
    full_bw: f64,
    full_bw_rounds: u32,
    cycle: usize,
    probe_rtt_until: Time,
    /// The smallest RTT sampled since probe-RTT began.
    probe_min: Time,
    rate: f64,
}

impl Default for BbrRate {
    fn default() -> Self {
        BbrRate {
            mode: BbrMode::Startup,
            bw: WindowedFilter::max(BW_RTTS),
            round: 0,
            round_start: 0,
            min_rtt: Time::MAX,
            min_rtt_stamp: 0,
            full_bw: 0.0,
            full_bw_rounds: 0,
            cycle: 0,
            probe_rtt_until: 0,
            probe_min: Time::MAX,
            rate: INITIAL_RATE,
        }
    }
}

impl BbrRate {
    pub fn rate(&self) -> f64 {
        self.rate
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    pub fn tick(&mut self, sig: &Signals) {
        let now = sig.now;
        if let Some(rtt) = sig.rtt_sample {
            if rtt <= self.min_rtt {
                self.min_rtt = rtt;
                self.min_rtt_stamp = now;
            }
            self.probe_min = self.probe_min.min(rtt);
        }
        if self.min_rtt == Time::MAX {
            return; // no RTT yet: the initial rate holds
        }
        let round_ended = now >= self.round_start + self.min_rtt;
        if round_ended {
            self.round += 1;
            self.round_start = now;
        }
        if let Some((sent, received)) = sig.epoch_rates {
            self.bw.update(self.round, sent.min(received));
        }
        let Some(bw) = self.bw.get() else { return };
        match self.mode {
            BbrMode::Startup if round_ended => {
                if bw >= self.full_bw * FULL_BW_THRESH {
                    self.full_bw = bw;
                    self.full_bw_rounds = 0;
                } else {
                    self.full_bw_rounds += 1;
                    if self.full_bw_rounds >= FULL_BW_CNT {
                        self.mode = BbrMode::Drain;
                    }
                }
            }
            BbrMode::Drain => {
                if sig.rtt_sample.is_some_and(|r| r as f64 <= DRAINED_RTT * self.min_rtt as f64) {
                    self.enter_probe_bw(now);
                }
            }
            BbrMode::ProbeBw => {
                if now > self.min_rtt_stamp + MIN_RTT_WIN {
                    self.mode = BbrMode::ProbeRtt;
                    self.probe_rtt_until = now + PROBE_RTT_TIME + self.min_rtt;
                    self.probe_min = Time::MAX;
                } else if round_ended {
                    self.cycle = (self.cycle + 1) % PACING_GAIN.len();
                }
            }
            BbrMode::ProbeRtt => {
                if now >= self.probe_rtt_until {
                    // Whatever the probe found is the new minimum (CCP's BBR restarts it too).
                    if self.probe_min < Time::MAX {
                        self.min_rtt = self.probe_min;
                    }
                    self.min_rtt_stamp = now;
                    self.enter_probe_bw(now);
                }
            }
            BbrMode::Startup => {}
        }
        self.rate = match self.mode {
            BbrMode::Startup => HIGH_GAIN * bw,
            BbrMode::Drain => DRAIN_GAIN * bw,
            BbrMode::ProbeBw => PACING_GAIN[self.cycle] * bw,
            BbrMode::ProbeRtt => (CWND_MIN_TARGET * PACKET_BYTES) as f64 / (self.min_rtt as f64 / 1e9),
        };
    }

    fn enter_probe_bw(&mut self, now: Time) {
        self.mode = BbrMode::ProbeBw;
        self.cycle = 0;
        self.round_start = now;
    }
}
