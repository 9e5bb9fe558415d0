//! The result tables, declared once: every column's name, type, unit, one-line meaning and how
//! it is read from the core's results. The bindings hand tables over through [`Columns`] (one
//! generic conversion each) and publish [`Table`] descriptions, so Python, the Parquet files and
//! the docs all read names, types and units from here.
//!
//! Adding a metric: compute it in the kernel (a field of [`FlowSummary`], [`SeriesRow`],
//! [`JainRow`] or [`Metrics`]), add one [`Column`] line to the table below that reads it, and
//! a test of the kernel; the bindings, the Python frames and the Parquet files follow.
//!
//! Tables declared here: `summary`, `metrics` (whole-run scalars), `timeseries`, `jain` and
//! `packets`. The engine-level tables (`flows`, `stats`) are declared with the types they read,
//! beside the engines' result types, with the same [`Column`] machinery.

use crate::cctrace::{self, CcTrace};
use crate::metrics::fct::{FctRow, FctSummary, BUCKETS};
use crate::metrics::{FlowSummary, JainRow, Metrics, SeriesRow};
use crate::record::{Fate, PacketKind, PacketLog};

/// A column's element type. Its name is numpy's (`str`: Python strings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    U8,
    U32,
    U64,
    I64,
    F64,
    Bool,
    Str,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "uint8",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::I64 => "int64",
            DType::F64 => "float64",
            DType::Bool => "bool",
            DType::Str => "str",
        }
    }
}

/// The values of one column.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    U8(Vec<u8>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    Str(Vec<String>),
}

impl Data {
    pub fn dtype(&self) -> DType {
        match self {
            Data::U8(_) => DType::U8,
            Data::U32(_) => DType::U32,
            Data::U64(_) => DType::U64,
            Data::I64(_) => DType::I64,
            Data::F64(_) => DType::F64,
            Data::Bool(_) => DType::Bool,
            Data::Str(_) => DType::Str,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Data::U8(v) => v.len(),
            Data::U32(v) => v.len(),
            Data::U64(v) => v.len(),
            Data::I64(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::Bool(v) => v.len(),
            Data::Str(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Anything that knows the type of the column it reads.
pub trait Access {
    fn dtype(&self) -> DType;
}

/// How a column is read from one row `R` of a row-shaped result (summaries, bins, buckets);
/// the variant is the column's type, so a declaration cannot disagree with its values.
pub enum Get<R> {
    U8(fn(&R) -> u8),
    U32(fn(&R) -> u32),
    U64(fn(&R) -> u64),
    I64(fn(&R) -> i64),
    F64(fn(&R) -> f64),
    Bool(fn(&R) -> bool),
    Str(fn(&R) -> String),
}

impl<R> Access for Get<R> {
    fn dtype(&self) -> DType {
        match self {
            Get::U8(_) => DType::U8,
            Get::U32(_) => DType::U32,
            Get::U64(_) => DType::U64,
            Get::I64(_) => DType::I64,
            Get::F64(_) => DType::F64,
            Get::Bool(_) => DType::Bool,
            Get::Str(_) => DType::Str,
        }
    }
}

impl<R> Get<R> {
    fn collect(&self, rows: &[R]) -> Data {
        match self {
            Get::U8(f) => Data::U8(rows.iter().map(f).collect()),
            Get::U32(f) => Data::U32(rows.iter().map(f).collect()),
            Get::U64(f) => Data::U64(rows.iter().map(f).collect()),
            Get::I64(f) => Data::I64(rows.iter().map(f).collect()),
            Get::F64(f) => Data::F64(rows.iter().map(f).collect()),
            Get::Bool(f) => Data::Bool(rows.iter().map(f).collect()),
            Get::Str(f) => Data::Str(rows.iter().map(f).collect()),
        }
    }
}

/// How a column is moved out of a result that is already columnar (the packet log), so that
/// handing it over never copies it.
pub enum Take<T> {
    U8(fn(&mut T) -> &mut Vec<u8>),
    U32(fn(&mut T) -> &mut Vec<u32>),
    U64(fn(&mut T) -> &mut Vec<u64>),
    F64(fn(&mut T) -> &mut Vec<f64>),
    Bool(fn(&mut T) -> &mut Vec<bool>),
    /// Names from a fixed set (a controller's modes), handed over as strings.
    StaticStr(fn(&mut T) -> &mut Vec<&'static str>),
}

impl<T> Access for Take<T> {
    fn dtype(&self) -> DType {
        match self {
            Take::U8(_) => DType::U8,
            Take::U32(_) => DType::U32,
            Take::U64(_) => DType::U64,
            Take::F64(_) => DType::F64,
            Take::Bool(_) => DType::Bool,
            Take::StaticStr(_) => DType::Str,
        }
    }
}

impl<T> Take<T> {
    fn take(&self, store: &mut T) -> Data {
        match self {
            Take::U8(f) => Data::U8(std::mem::take(f(store))),
            Take::U32(f) => Data::U32(std::mem::take(f(store))),
            Take::U64(f) => Data::U64(std::mem::take(f(store))),
            Take::F64(f) => Data::F64(std::mem::take(f(store))),
            Take::Bool(f) => Data::Bool(std::mem::take(f(store))),
            Take::StaticStr(f) => Data::Str(std::mem::take(f(store)).into_iter().map(str::to_string).collect()),
        }
    }
}

/// One column's declaration.
pub struct Column<A> {
    pub name: &'static str,
    /// "" for a dimensionless number, an id or a flag.
    pub unit: &'static str,
    /// One line: what the value means.
    pub doc: &'static str,
    /// For a categorical column (u8 codes): the names, indexed by code; empty otherwise.
    pub codes: &'static [&'static str],
    pub access: A,
}

impl<A: Access> Column<A> {
    pub fn info(&self) -> ColumnInfo {
        ColumnInfo { name: self.name, dtype: self.access.dtype(), unit: self.unit, doc: self.doc, codes: self.codes }
    }
}

/// A column declaration without its reader, for the bindings and the docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnInfo {
    pub name: &'static str,
    pub dtype: DType,
    pub unit: &'static str,
    pub doc: &'static str,
    pub codes: &'static [&'static str],
}

/// A table's description: its columns in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub name: &'static str,
    pub doc: &'static str,
    pub columns: Vec<ColumnInfo>,
}

/// Describes a declared table.
pub fn describe<A: Access>(name: &'static str, doc: &'static str, columns: &[Column<A>]) -> Table {
    Table { name, doc, columns: columns.iter().map(Column::info).collect() }
}

/// One column's values, with the declaration's name and codes.
#[derive(Clone, Debug, PartialEq)]
pub struct Values {
    pub name: &'static str,
    pub codes: &'static [&'static str],
    pub data: Data,
}

/// A table's values, column by column in declaration order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Columns(pub Vec<Values>);

impl Columns {
    /// Reads every declared column from `rows`.
    pub fn from_rows<R>(columns: &[Column<Get<R>>], rows: &[R]) -> Columns {
        Columns(columns.iter().map(|c| Values { name: c.name, codes: c.codes, data: c.access.collect(rows) }).collect())
    }

    /// Moves every declared column out of `store` (which is left with empty columns).
    pub fn take<T>(columns: &[Column<Take<T>>], store: &mut T) -> Columns {
        Columns(columns.iter().map(|c| Values { name: c.name, codes: c.codes, data: c.access.take(store) }).collect())
    }

    pub fn get(&self, name: &str) -> Option<&Data> {
        self.0.iter().find(|v| v.name == name).map(|v| &v.data)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|v| v.name).collect()
    }
}

/// Shorthand for a declaration line.
pub const fn col<A>(name: &'static str, unit: &'static str, doc: &'static str, access: A) -> Column<A> {
    Column { name, unit, doc, codes: &[], access }
}

/// A categorical column: `u8` codes whose names are `codes`.
pub const fn coded<A>(name: &'static str, doc: &'static str, codes: &'static [&'static str], access: A) -> Column<A> {
    Column { name, unit: "", doc, codes, access }
}

/// The `flow` value of the total row: numpy has no missing integers; Python shows it as <NA>.
pub const TOTAL_FLOW: i64 = -1;
/// The `scheme` value of the total row.
pub const TOTAL_SCHEME: &str = "total";

/// One row of the `summary` table: a flow's (or the total's) summary, the flow's scheme, and
/// on the total row the whole-run figures.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    pub summary: FlowSummary,
    pub scheme: String,
    /// Whole-run figures: NaN except on the total row.
    pub utilisation: f64,
    pub jain_median: f64,
    pub jain_counted: f64,
}

/// Counts are handed over as int64 (as the run directories have always stored them, and as
/// differences of them should be signed); they never approach 2^63.
fn signed(v: u64) -> i64 {
    v as i64
}

pub static SUMMARY: &[Column<Get<SummaryRow>>] = &[
    col(
        "flow",
        "",
        "flow id (-1 in the total row; <NA> in Python)",
        Get::I64(|r| r.summary.flow.map_or(TOTAL_FLOW, i64::from)),
    ),
    col(
        "scheme",
        "",
        "the flow's congestion-control scheme (\"total\" in the total row)",
        Get::Str(|r| r.scheme.clone()),
    ),
    col(
        "throughput_mbps",
        "Mbit/s",
        "delivered bits over the first-to-last delivery span",
        Get::F64(|r| r.summary.throughput_mbps),
    ),
    col(
        "delay_p95_ms",
        "ms",
        "95th percentile (nearest rank) of delivered packets' one-way delay",
        Get::F64(|r| r.summary.delay_p95_ms),
    ),
    col(
        "queueing_p95_ms",
        "ms",
        "95th percentile of one-way delay minus the flow's minimum",
        Get::F64(|r| r.summary.queueing_p95_ms),
    ),
    col("delay_mean_ms", "ms", "mean one-way delay of delivered packets", Get::F64(|r| r.summary.delay_mean_ms)),
    col("delay_min_ms", "ms", "minimum one-way delay of delivered packets", Get::F64(|r| r.summary.delay_min_ms)),
    col(
        "loss_pct",
        "%",
        "bytes sent and not delivered, in % of those sent: queue drops, link losses, and data still in flight at the end",
        Get::F64(|r| r.summary.loss_pct),
    ),
    col(
        "packets_sent",
        "packets",
        "data packets sent, retransmissions included",
        Get::I64(|r| signed(r.summary.packets_sent)),
    ),
    col("packets_delivered", "packets", "data packets that arrived", Get::I64(|r| signed(r.summary.packets_delivered))),
    col(
        "packets_dropped",
        "packets",
        "data packets dropped (queue, loss or device)",
        Get::I64(|r| signed(r.summary.packets_dropped)),
    ),
    col("bytes_sent", "bytes", "bytes of data packets sent", Get::I64(|r| signed(r.summary.bytes_sent))),
    col(
        "bytes_delivered",
        "bytes",
        "bytes of data packets that arrived",
        Get::I64(|r| signed(r.summary.bytes_delivered)),
    ),
    col(
        "retransmissions",
        "packets",
        "data packets sent as retransmissions",
        Get::I64(|r| signed(r.summary.retransmissions)),
    ),
    col(
        "first_delivery_ns",
        "ns",
        "first delivery (0 when nothing was delivered)",
        Get::I64(|r| signed(r.summary.first_delivery)),
    ),
    col(
        "last_delivery_ns",
        "ns",
        "last delivery (0 when nothing was delivered)",
        Get::I64(|r| signed(r.summary.last_delivery)),
    ),
    col(
        "congestion_events",
        "events",
        "loss-triggered window reductions of the sender: recovery epochs entered plus retransmission timeouts (IMC'21's cwnd halvings); NaN where the engine does not know them",
        Get::F64(|r| r.summary.congestion_events.map_or(f64::NAN, |e| e as f64)),
    ),
    col(
        "losses_per_event",
        "packets",
        "packets_dropped / congestion_events (IMC'21's losses per cwnd halving); NaN without events",
        Get::F64(|r| r.summary.losses_per_event()),
    ),
    col(
        "loss_burstiness",
        "",
        "Goh-Barabasi burstiness (sd - mean)/(sd + mean) of the gaps between the sender's loss detections: -1 periodic, 0 Poisson, towards 1 bursty; NaN with fewer than 3 losses",
        Get::F64(|r| r.summary.loss_burstiness),
    ),
    col(
        "utilisation",
        "fraction",
        "whole run: bits delivered after the first delivery / link capacity up to the last (total row only)",
        Get::F64(|r| r.utilisation),
    ),
    col(
        "jain_median",
        "",
        "whole run: median Jain index over counted buckets (total row only)",
        Get::F64(|r| r.jain_median),
    ),
    col(
        "jain_counted",
        "fraction",
        "whole run: fraction of the Jain buckets that count towards the median (total row only)",
        Get::F64(|r| r.jain_counted),
    ),
];

pub static METRICS: &[Column<Get<Metrics>>] = &[
    col("capacity_mbps", "Mbit/s", "link capacity over the total delivery span", Get::F64(|m| m.capacity_mbps)),
    col(
        "utilisation",
        "fraction",
        "bits delivered after the first delivery / capacity over the delivery span",
        Get::F64(|m| m.utilisation),
    ),
    col("jain_median", "", "median Jain index over counted buckets (NaN if none)", Get::F64(|m| m.jain_median)),
    col(
        "jain_counted",
        "fraction",
        "fraction of the Jain buckets that count towards the median (NaN if none)",
        Get::F64(|m| m.jain_counted),
    ),
];

pub static TIMESERIES: &[Column<Get<SeriesRow>>] = &[
    col("flow", "", "flow id", Get::U32(|r| r.flow)),
    col("t_ns", "ns", "bin start, from the run's time origin", Get::U64(|r| r.t)),
    col("t_s", "s", "bin start in seconds", Get::F64(|r| r.t as f64 / 1e9)),
    col("throughput_mbps", "Mbit/s", "delivered (egress) rate in the bin", Get::F64(|r| r.throughput_mbps)),
    col("sending_mbps", "Mbit/s", "sent (ingress) rate in the bin", Get::F64(|r| r.sending_mbps)),
    col(
        "delay_mean_ms",
        "ms",
        "mean one-way delay of packets delivered in the bin (NaN if none)",
        Get::F64(|r| r.delay_mean_ms),
    ),
    col(
        "delay_max_ms",
        "ms",
        "maximum one-way delay of packets delivered in the bin (NaN if none)",
        Get::F64(|r| r.delay_max_ms),
    ),
];

pub static JAIN: &[Column<Get<JainRow>>] = &[
    col("t_ns", "ns", "bucket start, from the run's time origin", Get::U64(|r| r.t)),
    col(
        "active_flows",
        "flows",
        "flows scheduled in the bucket (sending, or their data due)",
        Get::U32(|r| r.active_flows),
    ),
    col("delivering_flows", "flows", "scheduled flows that delivered in the bucket", Get::U32(|r| r.delivering_flows)),
    col(
        "jain",
        "",
        "Jain's index of the scheduled flows' delivered bytes in the bucket (a starved flow counts as 0)",
        Get::F64(|r| r.jain),
    ),
    col(
        "counted",
        "",
        "whether the bucket counts towards the median (the scheduled set is whole and unchanged)",
        Get::Bool(|r| r.counted),
    ),
];

pub static PACKETS: &[Column<Take<PacketLog>>] = &[
    col("uid", "", "packet id, unique over the run", Take::U64(|l| &mut l.uid)),
    col("flow", "", "flow id", Take::U32(|l| &mut l.flow)),
    coded("kind", "data or ACK", &PacketKind::NAMES, Take::U8(|l| &mut l.kind)),
    col("size", "bytes", "bytes on the wire", Take::U32(|l| &mut l.size)),
    col("sent_ns", "ns", "sent, from the start of the run", Take::U64(|l| &mut l.sent)),
    col("arrived_ns", "ns", "arrival at the far end, or NEVER", Take::U64(|l| &mut l.arrived)),
    coded("fate", "what became of the packet", &Fate::NAMES, Take::U8(|l| &mut l.fate)),
    col("enqueued_ns", "ns", "entry into the bottleneck queue, or NEVER", Take::U64(|l| &mut l.enqueued)),
    col("dequeued_ns", "ns", "exit from the bottleneck queue, or NEVER", Take::U64(|l| &mut l.dequeued)),
    col("retransmission", "", "whether the packet was a retransmission", Take::Bool(|l| &mut l.retransmission)),
    col(
        "push",
        "",
        "whether a data segment carried PSH (the end of a write, which its receiver may acknowledge alone once read)",
        Take::Bool(|l| &mut l.push),
    ),
    col(
        "seq",
        "",
        "TCP sequence field mod 2^32: a data packet's stream offset, an ACK's cumulative acknowledgment",
        Take::U32(|l| &mut l.seq),
    ),
];

/// The `trace` table (`--trace`): every flow's sender sampled over time. These are its fixed
/// columns; each controller variable follows as a `cc_<name>` column ([`TRACE_VARS`]).
pub static TRACE: &[Column<Take<CcTrace>>] = &[
    col("flow", "", "flow id", Take::U32(|t| &mut t.flow)),
    col("t_ns", "ns", "sample time, from the run's time origin (after the sender processed an ACK)", Take::U64(|t| &mut t.t)),
    col(
        "mode",
        "",
        "the controller's mode (e.g. startup, probe_bw, slow_start, cong_avoid, recovery, competitive); for kernel flows the TCP state (open, disorder, cwr, recovery, loss)",
        Take::StaticStr(|t| &mut t.mode),
    ),
    col(
        "ca_state",
        "",
        "the sender's TCP congestion state, by Linux's names (tcp_ca_state: open, disorder, cwr, recovery, loss): tcpi_ca_state for kernel flows, the transport's (open, recovery, loss) for cclab's",
        Take::StaticStr(|t| &mut t.ca_state),
    ),
    col("cwnd_bytes", "bytes", "congestion window", Take::U64(|t| &mut t.cwnd)),
    col("in_flight_bytes", "bytes", "bytes sent and not yet acknowledged or declared lost", Take::U64(|t| &mut t.in_flight)),
    col(
        "pacing_rate_mbps",
        "Mbit/s",
        "the rate the sender paces at (NaN when it does not pace); for kernel flows tcpi_pacing_rate, which Linux computes (2x or 1.2x cwnd/srtt) even where it does not pace",
        Take::F64(|t| &mut t.pacing_rate_mbps),
    ),
    col("srtt_ms", "ms", "smoothed RTT (RFC 6298; NaN before the first sample)", Take::F64(|t| &mut t.srtt_ms)),
    col("min_rtt_ms", "ms", "minimum RTT seen by the connection (NaN before the first sample)", Take::F64(|t| &mut t.min_rtt_ms)),
    col(
        "delivery_rate_mbps",
        "Mbit/s",
        "the last delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation; Linux tcpi_delivery_rate; NaN before the first)",
        Take::F64(|t| &mut t.delivery_rate_mbps),
    ),
    col(
        "ssthresh_bytes",
        "bytes",
        "slow-start threshold (inf while unset, as Linux's TCP_INFINITE_SSTHRESH, and for controllers that keep none)",
        Take::F64(|t| &mut t.ssthresh),
    ),
    col(
        "rwnd_bytes",
        "bytes",
        "the receive window the sender is held to (inf for none); for kernel flows the peer's advertised window, tcpi_snd_wnd",
        Take::F64(|t| &mut t.rwnd_bytes),
    ),
    col(
        "rwnd_limited_ms",
        "ms",
        "time so far in which the receive window alone kept data back (Linux's tcpi_rwnd_limited); cumulative",
        Take::F64(|t| &mut t.rwnd_limited_ms),
    ),
];

/// The family of `trace` columns a controller adds, for the docs and `cclab._core.SCHEMA`.
pub static TRACE_VARS: ColumnInfo = ColumnInfo {
    name: "cc_*",
    dtype: DType::F64,
    unit: "per variable",
    doc: "the controller's own variables (CongestionControl::snapshot), one column each, NaN for flows whose controller lacks it: e.g. BBR cc_bw (bytes/s), cc_min_rtt (s), cc_pacing_gain, cc_cycle_idx; Copa cc_velocity, cc_delta; Cubic cc_w_max (packets), cc_k (s); kernel BBR (TCP_CC_INFO) cc_bw (bytes/s), cc_min_rtt (s), cc_pacing_gain, cc_cwnd_gain",
    codes: &[],
};

pub static REQUESTS: &[Column<Get<FctRow>>] = &[
    col("request", "", "request id, in arrival order", Get::U64(|r| r.request.id)),
    col("flow", "", "the connection (flow id) that carried it", Get::U32(|r| r.request.flow)),
    col("size_bytes", "bytes", "payload bytes of the request's response", Get::U64(|r| r.request.size)),
    coded("bucket", "size bucket: small < 10 KB, medium 10 KB–1 MB, large > 1 MB", &BUCKETS, Get::U8(|r| r.bucket)),
    col("start_ns", "ns", "arrival at the sending application", Get::U64(|r| r.request.start)),
    col(
        "completed",
        "",
        "whether its last byte was acknowledged before the run ended",
        Get::Bool(|r| r.request.end.is_some()),
    ),
    col(
        "fct_ms",
        "ms",
        "flow-completion time: arrival to the acknowledgement of the last byte (NaN if not completed)",
        Get::F64(|r| r.fct_ms),
    ),
    col("slowdown", "", "FCT / (size / link rate + base RTT) (NaN if not completed)", Get::F64(|r| r.slowdown)),
];

pub static FCT: &[Column<Get<FctSummary>>] = &[
    col(
        "bucket",
        "",
        "size bucket (small < 10 KB, medium 10 KB–1 MB, large > 1 MB) or all",
        Get::Str(|r| r.bucket.to_string()),
    ),
    col("requests", "requests", "requests that arrived", Get::U64(|r| r.requests)),
    col("completed", "requests", "requests completed before the run ended", Get::U64(|r| r.completed)),
    col("fct_median_ms", "ms", "median FCT of completed requests (nearest rank)", Get::F64(|r| r.fct_median_ms)),
    col("fct_p99_ms", "ms", "99th percentile FCT of completed requests", Get::F64(|r| r.fct_p99_ms)),
    col("slowdown_median", "", "median slowdown of completed requests", Get::F64(|r| r.slowdown_median)),
    col("slowdown_p99", "", "99th percentile slowdown of completed requests", Get::F64(|r| r.slowdown_p99)),
];

/// The `requests` table: one row per request of a request workload.
pub fn requests(rows: &[FctRow]) -> Columns {
    Columns::from_rows(REQUESTS, rows)
}

/// The `fct` table: one row per size bucket, then all requests.
pub fn fct(rows: &[FctRow]) -> Columns {
    Columns::from_rows(FCT, &crate::metrics::fct::summary(rows))
}

/// The `summary` table of `m`: one row per flow, then the total. `schemes[id]` names flow
/// `id` ("" past its end).
pub fn summary(m: &Metrics, schemes: &[&str]) -> Columns {
    let flow_row = |s: &FlowSummary| SummaryRow {
        summary: s.clone(),
        scheme: s.flow.and_then(|id| schemes.get(id as usize)).copied().unwrap_or_default().to_string(),
        utilisation: f64::NAN,
        jain_median: f64::NAN,
        jain_counted: f64::NAN,
    };
    let total = SummaryRow {
        summary: m.total.clone(),
        scheme: TOTAL_SCHEME.to_string(),
        utilisation: m.utilisation,
        jain_median: m.jain_median,
        jain_counted: m.jain_counted,
    };
    let rows: Vec<SummaryRow> = m.flows.iter().map(flow_row).chain(std::iter::once(total)).collect();
    Columns::from_rows(SUMMARY, &rows)
}

/// The whole-run scalars of `m`, as a one-row table.
pub fn metrics(m: &Metrics) -> Columns {
    Columns::from_rows(METRICS, std::slice::from_ref(m))
}

pub fn timeseries(m: &Metrics) -> Columns {
    Columns::from_rows(TIMESERIES, &m.series)
}

pub fn jain(m: &Metrics) -> Columns {
    Columns::from_rows(JAIN, &m.jain)
}

/// The packet log's columns, moved out of `log`.
pub fn packets(mut log: PacketLog) -> Columns {
    Columns::take(PACKETS, &mut log)
}

/// The `trace` table: the fixed columns moved out of `trace`, then a `cc_<name>` column per
/// controller variable.
pub fn trace(mut trace: CcTrace) -> Columns {
    let mut cols = Columns::take(TRACE, &mut trace);
    for (name, data) in trace.vars {
        cols.0.push(Values { name: cctrace::var_column(name), codes: &[], data: Data::F64(data) });
    }
    cols
}

/// Every table declared in the core.
pub fn tables() -> Vec<Table> {
    vec![
        describe("summary", "one row per flow, then the total", SUMMARY),
        describe("metrics", "whole-run figures (one row)", METRICS),
        describe("timeseries", "one row per flow and time-series bin", TIMESERIES),
        describe("jain", "one row per Jain bucket", JAIN),
        describe("packets", "one row per data or ACK packet (when packets are logged)", PACKETS),
        describe("requests", "one row per request of a request workload (empty without one)", REQUESTS),
        describe("fct", "FCT and slowdown per size bucket, then over all requests", FCT),
        {
            let mut t = describe("trace", "one row per sample of a flow's sender (with --trace)", TRACE);
            t.columns.push(TRACE_VARS);
            t
        },
    ]
}

#[cfg(test)]
mod tests;
