//! `cclab._core.analyze`: the metrics kernel over a packet log given as numpy columns — the
//! path the log importers and the analysis benchmark take, so that a log from the Pantheon,
//! mahimahi or anywhere else gets exactly the numbers a simulator run gets, computed by the same
//! accumulator. The columns are read in place (no copy); the GIL is released while counting.

use cclab_core::metrics::{FlowSummary, Metrics, MetricsAccumulator, MetricsConfig};
use cclab_core::record::{Fate, PacketKind, PacketRecord, NEVER};
use numpy::{Element, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One column as a slice, or a ValueError naming it (numpy hands over strided views too).
fn slice<'a, T: Element>(name: &str, column: &'a PyReadonlyArray1<'_, T>) -> PyResult<&'a [T]> {
    column.as_slice().map_err(|_| PyValueError::new_err(format!("column `{name}` must be contiguous")))
}

/// The metrics of a packet log. Required columns (same length): `flow` (u32), `size` (u32,
/// bytes), `sent_ns` and `arrived_ns` (u64; `arrived_ns` is 2^64 − 1 for a packet that did not
/// arrive) and `fate` (u8 codes as in `cclab_core::record::Fate`). Optional: `kind` (u8, 0 data,
/// 1 ACK; ACKs are skipped as the engines' own metrics skip them) and `retransmission` (bool).
/// `capacity_mbps`: the link's average capacity, for utilisation (None: unknown, utilisation 0).
/// Returns a dict of plain values and numpy columns: `summary` (per flow, then the total as the
/// last row), `metrics`, `timeseries` and `jain`, with the same names as a run's.
#[pyfunction]
#[pyo3(signature = (
    flow, size, sent_ns, arrived_ns, fate, *, kind = None, retransmission = None,
    bin_ns = 500_000_000, jain_bucket_ns = 100_000_000, origin_ns = 0, capacity_mbps = None
))]
#[allow(clippy::too_many_arguments)]
pub fn analyze<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, u32>,
    size: PyReadonlyArray1<'py, u32>,
    sent_ns: PyReadonlyArray1<'py, u64>,
    arrived_ns: PyReadonlyArray1<'py, u64>,
    fate: PyReadonlyArray1<'py, u8>,
    kind: Option<PyReadonlyArray1<'py, u8>>,
    retransmission: Option<PyReadonlyArray1<'py, bool>>,
    bin_ns: u64,
    jain_bucket_ns: u64,
    origin_ns: u64,
    capacity_mbps: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    if bin_ns == 0 || jain_bucket_ns == 0 {
        return Err(PyValueError::new_err("bin_ns and jain_bucket_ns must be > 0"));
    }
    let (flow, size, sent, arrived, fate) = (
        slice("flow", &flow)?,
        slice("size", &size)?,
        slice("sent_ns", &sent_ns)?,
        slice("arrived_ns", &arrived_ns)?,
        slice("fate", &fate)?,
    );
    let kind = kind.as_ref().map(|k| slice("kind", k)).transpose()?;
    let retx = retransmission.as_ref().map(|r| slice("retransmission", r)).transpose()?;
    let n = flow.len();
    let lengths = [size.len(), sent.len(), arrived.len(), fate.len()];
    let optional = [kind.map(<[u8]>::len), retx.map(<[bool]>::len)];
    if lengths.iter().chain(optional.iter().flatten()).any(|&len| len != n) {
        return Err(PyValueError::new_err("every column must have the same length"));
    }
    let n_flows = flow.iter().max().map_or(0, |&f| f as usize + 1);
    let cfg = MetricsConfig { n_flows, bin: bin_ns, jain_bucket: jain_bucket_ns, origin: origin_ns };
    let metrics = py.detach(|| {
        let mut acc = MetricsAccumulator::new(cfg);
        for i in 0..n {
            let is_ack = kind.is_some_and(|k| k[i] == PacketKind::Ack as u8);
            acc.add(&PacketRecord {
                uid: i as u64,
                flow: flow[i],
                kind: if is_ack { PacketKind::Ack } else { PacketKind::Data },
                size: size[i],
                sent: sent[i],
                arrived: arrived[i],
                fate: Fate::from_u8(fate[i]).unwrap_or(Fate::InFlight),
                enqueued: NEVER,
                dequeued: NEVER,
                retransmission: retx.is_some_and(|r| r[i]),
            });
        }
        // Mbit/s × ns / 1000 = bits.
        let rate = capacity_mbps.unwrap_or(0.0);
        acc.finish(&|t0, t1| rate * t1.saturating_sub(t0) as f64 / 1000.0)
    });
    to_dict(py, &metrics)
}

fn column<'py, R, T: Element>(py: Python<'py>, rows: &[R], field: impl Fn(&R) -> T) -> Bound<'py, PyArray1<T>> {
    PyArray1::from_vec(py, rows.iter().map(field).collect())
}

fn to_dict<'py>(py: Python<'py>, m: &Metrics) -> PyResult<Bound<'py, PyDict>> {
    let rows: Vec<&FlowSummary> = m.flows.iter().chain(std::iter::once(&m.total)).collect();
    let summary = PyDict::new(py);
    // The total row's flow is -1 here (numpy has no missing integers); Python makes it <NA>.
    summary.set_item("flow", column(py, &rows, |s| s.flow.map_or(-1, i64::from)))?;
    summary.set_item("throughput_mbps", column(py, &rows, |s| s.throughput_mbps))?;
    summary.set_item("delay_p95_ms", column(py, &rows, |s| s.delay_p95_ms))?;
    summary.set_item("queueing_p95_ms", column(py, &rows, |s| s.queueing_p95_ms))?;
    summary.set_item("delay_mean_ms", column(py, &rows, |s| s.delay_mean_ms))?;
    summary.set_item("delay_min_ms", column(py, &rows, |s| s.delay_min_ms))?;
    summary.set_item("loss", column(py, &rows, |s| s.loss))?;
    summary.set_item("packets_sent", column(py, &rows, |s| s.packets_sent))?;
    summary.set_item("packets_delivered", column(py, &rows, |s| s.packets_delivered))?;
    summary.set_item("packets_dropped", column(py, &rows, |s| s.packets_dropped))?;
    summary.set_item("bytes_sent", column(py, &rows, |s| s.bytes_sent))?;
    summary.set_item("bytes_delivered", column(py, &rows, |s| s.bytes_delivered))?;
    summary.set_item("retransmissions", column(py, &rows, |s| s.retransmissions))?;
    summary.set_item("first_delivery_ns", column(py, &rows, |s| s.first_delivery))?;
    summary.set_item("last_delivery_ns", column(py, &rows, |s| s.last_delivery))?;

    let metrics = PyDict::new(py);
    metrics.set_item("capacity_mbps", m.capacity_mbps)?;
    metrics.set_item("utilisation", m.utilisation)?;
    metrics.set_item("jain_median", m.jain_median)?;

    let series = PyDict::new(py);
    series.set_item("flow", column(py, &m.series, |r| r.flow))?;
    series.set_item("t_ns", column(py, &m.series, |r| r.t))?;
    series.set_item("throughput_mbps", column(py, &m.series, |r| r.throughput_mbps))?;
    series.set_item("sending_mbps", column(py, &m.series, |r| r.sending_mbps))?;
    series.set_item("delay_mean_ms", column(py, &m.series, |r| r.delay_mean_ms))?;
    series.set_item("delay_max_ms", column(py, &m.series, |r| r.delay_max_ms))?;

    let jain = PyDict::new(py);
    jain.set_item("t_ns", column(py, &m.jain, |r| r.t))?;
    jain.set_item("active_flows", column(py, &m.jain, |r| r.active_flows))?;
    jain.set_item("jain", column(py, &m.jain, |r| r.jain))?;
    jain.set_item("counted", column(py, &m.jain, |r| r.counted))?;

    let d = PyDict::new(py);
    d.set_item("summary", summary)?;
    d.set_item("metrics", metrics)?;
    d.set_item("timeseries", series)?;
    d.set_item("jain", jain)?;
    Ok(d)
}
