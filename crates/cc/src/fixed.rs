//! The fixed-window / fixed-rate "oracle" baseline (reference §13): a constant window, or a
//! constant pacing rate under a generous window. It never reacts to loss or delay, so with the
//! right setting (k·BDP, or the link rate) it shows what an omniscient sender would get.

use crate::controller::CongestionControl;
use crate::registry::{BuildResult, OptionError, OptionInfo, OptionKind, Options, Scheme, SchemeInfo};
use crate::types::*;
use cclab_core::scenario::resources::FlowLimits;
use cclab_core::scenario::FlowSpec;
use cclab_core::units::Rate;

/// The window cap of the rate mode covers this many times rate × RTT, so that the window never
/// limits a sender that is paced at the rate, even with ACK jitter.
const RATE_WINDOW_GAIN: f64 = 2.0;
/// Floor of the RTT used for the window cap, so very short paths still get several packets.
const RATE_WINDOW_MIN_RTT: Time = 10_000_000;
/// RFC 9002 §6.2.2 kInitialRtt: the RTT assumed for the cap before the first sample.
const INITIAL_RTT: Time = 333_000_000;

pub const SCHEME: Scheme = Scheme {
    info: SchemeInfo {
        name: "fixed",
        summary: "oracle baseline: a constant window (`cwnd`) or a constant paced rate (`rate`)",
        options: &[
            OptionInfo {
                name: "cwnd",
                kind: OptionKind::Int { min: 1, max: 1_000_000_000 },
                default: None,
                help: "constant window in packets (e.g. the path's BDP); give this or `rate`",
            },
            OptionInfo {
                name: "rate",
                kind: OptionKind::Rate,
                default: None,
                help: "constant pacing rate, e.g. \"10Mbps\"; give this or `cwnd`",
            },
        ],
    },
    build: build_from_options,
};

/// What the options of a `fixed` entry bound, for the resource model: a `cwnd` window is what
/// the sender keeps in flight; a `rate` is paced whatever the path does.
pub fn limits(spec: &FlowSpec) -> FlowLimits {
    let cwnd = spec.options.get("cwnd").and_then(|v| v.as_integer()).filter(|&c| c > 0);
    let rate = spec.options.get("rate").and_then(|v| v.as_str()).and_then(|t| Rate::parse(t).ok());
    FlowLimits { window: cwnd.map(|c| (c as u64, "cwnd".to_string())), paced: rate.map(|r| (r, "rate".to_string())) }
}

fn build_from_options(opts: &Options, mss: u64) -> BuildResult {
    match (opts.int("cwnd"), opts.rate("rate")) {
        (Some(pkts), None) => Ok(Box::new(Fixed::window(pkts as u64 * mss))),
        (None, Some(rate)) => Ok(Box::new(Fixed::rate(rate.bytes_per_sec(), mss))),
        (Some(_), Some(_)) => Err(vec![OptionError::new(
            "rate",
            "give either `cwnd` (a window in packets) or `rate` (a paced rate), not both",
        )]),
        (None, None) => Err(vec![OptionError::new(
            "",
            "scheme `fixed` needs `cwnd` (a constant window in packets, e.g. cwnd = 40) or \
             `rate` (a constant paced rate, e.g. rate = \"10Mbps\")",
        )]),
    }
}

#[derive(Clone, Debug)]
pub struct Fixed {
    cwnd: u64,
    /// Bytes per second, in rate mode.
    rate: Option<f64>,
    mss: u64,
}

impl Fixed {
    /// A constant window of `cwnd` bytes.
    pub fn window(cwnd: u64) -> Fixed {
        Fixed { cwnd, rate: None, mss: 0 }
    }

    /// A constant pacing rate in bytes per second.
    pub fn rate(bytes_per_sec: f64, mss: u64) -> Fixed {
        let mut f = Fixed { cwnd: 0, rate: Some(bytes_per_sec), mss };
        f.cwnd = f.rate_window(INITIAL_RTT);
        f
    }

    fn rate_window(&self, srtt: Time) -> u64 {
        let rate = self.rate.unwrap_or(0.0);
        let secs = srtt.max(RATE_WINDOW_MIN_RTT) as f64 / 1e9;
        // Two packets at least: RFC 9002's minimum window, so the ACK clock never stops.
        ((RATE_WINDOW_GAIN * rate * secs) as u64).max(2 * self.mss)
    }
}

impl CongestionControl for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        if self.rate.is_some() && ev.rtt.has_sample {
            self.cwnd = self.rate_window(ev.rtt.smoothed);
        }
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate(&self) -> Option<f64> {
        self.rate
    }

    fn snapshot(&self) -> CcSnapshot {
        CcSnapshot {
            mode: if self.rate.is_some() { "fixed_rate" } else { "fixed_window" },
            vars: vec![("cwnd", self.cwnd as f64), ("pacing_rate", self.rate.unwrap_or(f64::NAN))],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{Driver, MS};

    use cclab_core::scenario::MSS;

    #[test]
    fn window_mode_ignores_losses_and_timeouts() {
        let mut d = Driver::new(Fixed::window(40 * MSS), MSS, 20 * MS);
        d.run_until(100 * MS);
        assert_eq!(d.cc.cwnd(), 40 * MSS);
        assert_eq!(d.in_flight(), 40 * MSS);
        d.congestion_event();
        d.run_until(200 * MS);
        d.rto();
        d.run_until(300 * MS);
        assert_eq!(d.cc.cwnd(), 40 * MSS);
        assert_eq!(d.cc.pacing_rate(), None);
    }

    #[test]
    fn rate_mode_paces_at_the_rate_under_a_window_of_twice_rate_times_rtt() {
        let rate = 1_250_000.0; // 10 Mbit/s
        let mut d = Driver::new(Fixed::rate(rate, MSS), MSS, 40 * MS);
        assert_eq!(d.cc.pacing_rate(), Some(rate));
        // Before any RTT sample the cap assumes RFC 9002's initial RTT.
        assert_eq!(Fixed::rate(rate, MSS).cwnd(), (2.0 * rate * 0.333) as u64);
        d.run_until(500 * MS);
        assert_eq!(d.cc.cwnd(), (2.0 * rate * 0.040) as u64);
        // Short paths are floored at 10 ms, tiny rates at two packets.
        let mut d = Driver::new(Fixed::rate(rate, MSS), MSS, MS);
        d.run_until(50 * MS);
        assert_eq!(d.cc.cwnd(), (2.0 * rate * 0.010) as u64);
        assert_eq!(Fixed::rate(10.0, MSS).cwnd(), 2 * MSS);
    }
}
