//! The engine-neutral results of a run, the same whichever engine produced them.

use crate::middlebox::MiddleboxRow;
pub use cclab_core::cctrace::{CcTrace, Sample, Sampler};
use cclab_core::metrics::fct::FctRow;
use cclab_core::metrics::Metrics;
use cclab_core::PacketLog;

/// What to record besides the always-on metrics.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep every packet's record (memory grows with packets; off by default).
    pub log_packets: bool,
    /// Sample every flow's sender (`--trace`) at most once per this many ns per flow (0: after
    /// every ACK); None: no trace, and no cost.
    pub trace: Option<u64>,
}

impl RunOptions {
    /// What the resource model counts of these options.
    pub fn recording(&self) -> cclab_core::scenario::resources::Recording {
        cclab_core::scenario::resources::Recording { log_packets: self.log_packets, trace: self.trace }
    }
}

/// What a cclab sender shows a trace besides its controller: bytes in flight, the rate it
/// paces at (bytes/s), its RTT estimator, its last delivery-rate sample (bytes/s), its receive
/// window (bytes), how long that alone kept data back (ns), and its congestion state.
#[derive(Clone, Copy, Debug)]
pub struct SenderView<'a> {
    pub in_flight: u64,
    pub pacing_rate: Option<f64>,
    pub rtt: &'a cclab_cc::RttStats,
    pub delivery_rate: Option<f64>,
    pub rwnd: u64,
    pub rwnd_limited: u64,
    pub ca_state: cclab_cc::CaState,
}

/// Appends one sample of a cclab sender, taken after it processed an ACK at `t` and sent what
/// the ACK allowed. Both engines' cclab senders call it, so their traces read alike.
pub fn trace_sender(trace: &mut CcTrace, flow: u32, t: u64, cc: &dyn cclab_cc::CongestionControl, s: SenderView) {
    let SenderView { in_flight, pacing_rate, rtt, delivery_rate, rwnd, rwnd_limited, ca_state } = s;
    let snap = cc.snapshot();
    trace.push(&Sample {
        flow,
        t,
        mode: snap.mode,
        ca_state: ca_state.linux_name(),
        cwnd: cc.cwnd(),
        in_flight,
        pacing_rate,
        srtt: rtt.has_sample.then_some(rtt.smoothed),
        min_rtt: rtt.has_sample.then_some(rtt.min),
        delivery_rate,
        // Linux starts every connection at an infinite threshold; a controller that keeps
        // none reads the same.
        ssthresh: Some(cc.ssthresh().map_or(f64::INFINITY, |s| s as f64)),
        rwnd: Some(rwnd),
        rwnd_limited: Some(rwnd_limited),
        vars: &snap.vars,
    });
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
    /// Every flow's sender over time, when the run asked for it (`RunOptions::trace`).
    pub trace: Option<CcTrace>,
}
