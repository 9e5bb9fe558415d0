//! The engine-neutral results of a run, the same whichever engine produced them.

use crate::middlebox::MiddleboxRow;
use cclab_core::metrics::fct::FctRow;
use cclab_core::metrics::Metrics;
use cclab_core::PacketLog;

/// What to record besides the always-on metrics.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep every packet's record (memory grows with packets; off by default).
    pub log_packets: bool,
}

/// Controller state over time, one row per ACK a sender processed (after it sent what the ACK
/// allowed), as columns. Produced by the simulator's `run_traced`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CcTrace {
    pub flow: Vec<u32>,
    /// ns since the start of the run.
    pub t: Vec<u64>,
    /// The controller's mode (`CcSnapshot::mode`), e.g. "probe_rtt".
    pub mode: Vec<&'static str>,
    /// Bytes in flight and the controller's window, bytes.
    pub in_flight: Vec<u64>,
    pub cwnd: Vec<u64>,
    /// The controller's pacing rate, bytes/s; NaN when it sets none.
    pub pacing_rate: Vec<f64>,
    /// The snapshot variables by name, in order of first appearance; NaN in rows whose
    /// controller does not report that name.
    pub vars: Vec<(&'static str, Vec<f64>)>,
}

impl CcTrace {
    pub fn len(&self) -> usize {
        self.t.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    /// A snapshot variable's column.
    pub fn var(&self, name: &str) -> Option<&[f64]> {
        self.vars.iter().find(|(n, _)| *n == name).map(|(_, c)| c.as_slice())
    }

    /// Row indices of one flow, in time order.
    pub fn rows_of(&self, flow: u32) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(move |&i| self.flow[i] == flow)
    }

    /// Appends one sample of `cc`, taken after the sender processed an ACK at `t`.
    pub fn push(&mut self, flow: u32, t: u64, cc: &dyn cclab_cc::CongestionControl, in_flight: u64) {
        let n = self.len();
        let snap = cc.snapshot();
        self.flow.push(flow);
        self.t.push(t);
        self.mode.push(snap.mode);
        self.in_flight.push(in_flight);
        self.cwnd.push(cc.cwnd());
        self.pacing_rate.push(cc.pacing_rate().unwrap_or(f64::NAN));
        for (name, value) in snap.vars {
            let col = match self.vars.iter().position(|(c, _)| *c == name) {
                Some(i) => &mut self.vars[i].1,
                None => {
                    self.vars.push((name, vec![f64::NAN; n]));
                    &mut self.vars.last_mut().expect("just pushed").1
                }
            };
            if col.len() == n {
                col.push(value);
            }
        }
        for (_, col) in &mut self.vars {
            if col.len() == n {
                col.push(f64::NAN);
            }
        }
    }
}

/// One concrete flow of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowInfo {
    pub id: u32,
    pub scheme: String,
    /// Start and stop of sending, ns.
    pub start: u64,
    pub stop: u64,
    /// Base round-trip propagation delay of this flow, ns.
    pub base_rtt: u64,
}

/// Engine counters, for conservation checks and benchmarks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineStats {
    pub events: u64,
    pub wall_secs: f64,
    /// Data packets by fate.
    pub data_sent: u64,
    pub data_delivered: u64,
    pub data_dropped: u64,
    pub data_in_flight_end: u64,
}

/// Everything a run produces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    pub metrics: Metrics,
    pub packets: Option<PacketLog>,
    pub flows: Vec<FlowInfo>,
    pub stats: EngineStats,
    /// Every request of the run's request workloads, with its FCT and slowdown (empty without).
    pub requests: Vec<FctRow>,
    /// The middlebox's inbox, sampled every control interval (empty without one).
    pub middlebox: Vec<MiddleboxRow>,
}
