//! The metrics kernels: one streaming accumulator that turns packet records into every number
//! cclab reports. Both engines and the log importers feed it; nothing else computes metrics.
//!
//! Definitions (DESIGN.md "Metrics", the Pantheon's `tunnel_graph.py`) — data packets only:
//! - per-flow throughput = delivered bits / (last delivery − first delivery) of that flow;
//!   total likewise over all flows;
//! - utilisation = bits delivered after the first delivery / bits the link could deliver
//!   between the first and the last delivery. The first packet's bits were served before the
//!   span began, so leaving them out measures both over the same span: on a link whose capacity
//!   function is exact (constant rate, trace) utilisation is ≤ 1 by construction;
//! - one-way delay = arrival − send; p95 by nearest rank (numpy 'nearest' equivalent, see
//!   [`nearest_rank`]); queueing delay = one-way delay − the flow's minimum one-way delay;
//! - loss, in percent = 100 · (1 − delivered bytes / sent bytes) (byte-weighted; in-flight
//!   bytes count as lost, as in the Pantheon);
//! - time series in `bin`-wide bins from the first event of the run;
//! - Jain's index per `jain_bucket` over the flows *scheduled* in the bucket (see
//!   [`Schedule`]): a scheduled flow that delivered nothing counts as zero, so a starved flow
//!   lowers the index instead of vanishing from it. A bucket counts towards the median only if
//!   its scheduled set equals the previous bucket's (Copa's script skips buckets where the set
//!   of flows changes) and something was delivered; the counted fraction is reported beside
//!   the median.

use crate::record::{PacketRecord, RecordSink};

/// Configuration of an accumulator.
#[derive(Clone, Debug)]
pub struct MetricsConfig {
    pub n_flows: usize,
    /// Time-series bin width in ns (default 500 ms).
    pub bin: u64,
    /// Jain-index bucket width in ns (default 100 ms).
    pub jain_bucket: u64,
    /// Time origin of bins and buckets, ns (0 for engine runs; the first event for imports).
    pub origin: u64,
    /// When each flow's data should be arriving, indexed by flow id. Engines pass the
    /// scenario's schedule; a flow without an entry (an import has none) is scheduled from
    /// its first send to its last, both shifted by its minimum one-way delay.
    pub schedule: Vec<Schedule>,
    /// The engine promises that delivered records come in order of arrival time (the
    /// simulator's do): the Jain buckets then stream instead of being kept to the end.
    pub arrivals_ordered: bool,
}

/// The span, in the records' clock (ns), over which a flow should be delivering: its sender's
/// start and stop shifted by the path's one-way delay, so that a flow counts as starved only
/// once its first packets could have arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub start: u64,
    pub stop: u64,
}

/// Per-flow (or total) summary, the Pantheon's numbers plus what a researcher asks next. Each
/// field reaches users as a column declared in [`crate::schema::SUMMARY`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowSummary {
    /// Flow id, or `None` for the total over all flows.
    pub flow: Option<u32>,
    pub packets_sent: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    pub bytes_sent: u64,
    pub bytes_delivered: u64,
    pub retransmissions: u64,
    /// First and last delivery, ns (0 when nothing was delivered).
    pub first_delivery: u64,
    pub last_delivery: u64,
    /// Mbit/s over the first-to-last delivery span.
    pub throughput_mbps: f64,
    pub delay_p95_ms: f64,
    pub delay_mean_ms: f64,
    pub delay_min_ms: f64,
    pub queueing_p95_ms: f64,
    /// Byte-weighted loss in percent, [0, 100].
    pub loss_pct: f64,
    /// Loss-triggered window reductions of the sender (recovery epochs + RTOs); None when the
    /// engine does not know them (imports, kernel stacks). See `congestion.rs`.
    pub congestion_events: Option<u64>,
    /// Goh–Barabási burstiness of the sender's inter-loss gaps (NaN: unknown or < 3 losses).
    pub loss_burstiness: f64,
}

impl FlowSummary {
    /// Brings the sender's congestion statistics into the summary (`congestion.rs`).
    pub fn set_congestion(&mut self, events: u64, gaps: &LossGaps) {
        self.congestion_events = Some(events);
        self.loss_burstiness = gaps.burstiness();
    }

    /// Packets the path dropped per congestion event (IMC'21's losses per cwnd halving); NaN
    /// without events.
    pub fn losses_per_event(&self) -> f64 {
        match self.congestion_events {
            Some(e) if e > 0 => self.packets_dropped as f64 / e as f64,
            _ => f64::NAN,
        }
    }
}

/// One row of the time series: one flow in one bin (columns: [`crate::schema::TIMESERIES`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesRow {
    pub flow: u32,
    /// Bin start, ns from the first event of the run.
    pub t: u64,
    /// Delivered (egress) and sent (ingress) rate in the bin, Mbit/s.
    pub throughput_mbps: f64,
    pub sending_mbps: f64,
    /// Mean and maximum one-way delay of packets delivered in the bin (NaN if none).
    pub delay_mean_ms: f64,
    pub delay_max_ms: f64,
}

/// One Jain bucket (columns: [`crate::schema::JAIN`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JainRow {
    pub t: u64,
    /// Flows scheduled in the bucket (those the index is taken over).
    pub active_flows: u32,
    /// Scheduled flows that delivered something in the bucket.
    pub delivering_flows: u32,
    pub jain: f64,
    /// Whether the bucket counts towards the Jain statistics (not a transition bucket).
    pub counted: bool,
}

/// Everything the accumulator produces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics {
    pub flows: Vec<FlowSummary>,
    pub total: FlowSummary,
    /// Link capacity over the total delivery span, Mbit/s, and utilisation in [0, 1].
    pub capacity_mbps: f64,
    pub utilisation: f64,
    pub series: Vec<SeriesRow>,
    /// Width of the series' bins, ns: the configured bin, doubled as often as the run needed to
    /// keep within the series' memory bound (`accumulator::SERIES_BUDGET`).
    pub series_bin: u64,
    pub jain: Vec<JainRow>,
    /// Median of Jain over counted buckets (NaN if none).
    pub jain_median: f64,
    /// Fraction of the buckets that counted towards the median (NaN if no bucket).
    pub jain_counted: f64,
}

/// The nearest-rank percentile as numpy's `percentile(..., interpolation='nearest')` computes
/// it on sorted data: index = round_half_even(q/100 · (n − 1)).
pub fn nearest_rank(n: u64, q: f64) -> u64 {
    let pos = q / 100.0 * (n.saturating_sub(1)) as f64;
    let lo = pos.floor();
    let frac = pos - lo;
    let idx = if frac > 0.5 || (frac == 0.5 && (lo as u64) % 2 == 1) { lo + 1.0 } else { lo };
    idx as u64
}

pub use accumulator::MetricsAccumulator;
pub use analyze::{analyze, analyze_columns, PacketColumns};
pub use congestion::LossGaps;
mod accumulator;
mod analyze;
mod congestion;
pub mod fct;
mod histogram;
#[cfg(test)]
mod tests;

impl RecordSink for MetricsAccumulator {
    fn record(&mut self, r: &PacketRecord) {
        self.add(r);
    }
}
