//! `cclab._core.analyze`: the metrics kernel over a packet log given as numpy columns — the
//! path the log importers and the analysis benchmark take, so that a log from the Pantheon,
//! mahimahi or anywhere else gets exactly the numbers a simulator run gets, computed by the same
//! accumulator. The columns are read in place (no copy); the GIL is released while counting.

use crate::output;
use cclab_core::metrics::{analyze_columns, MetricsConfig, PacketColumns};
use numpy::{Element, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One column as a slice, or a ValueError naming it (numpy hands over strided views too).
pub(crate) fn slice<'a, T: Element>(name: &str, column: &'a PyReadonlyArray1<'_, T>) -> PyResult<&'a [T]> {
    column.as_slice().map_err(|_| PyValueError::new_err(format!("column `{name}` must be contiguous")))
}

/// The metrics of a packet log. Required columns (same length): `flow` (u32), `size` (u32,
/// bytes), `sent_ns` and `arrived_ns` (u64; `arrived_ns` is `NEVER` for a packet that did not
/// arrive) and `fate` (u8 codes, `FATE_NAMES`). Optional: `kind` (u8 codes, `KIND_NAMES`; ACKs
/// are skipped as the engines' own metrics skip them) and `retransmission` (bool).
/// `capacity_mbps`: the link's average capacity, for utilisation (None: unknown, utilisation 0).
/// Returns a dict of the tables `summary` (per flow, then the total as the last row; schemes
/// empty), `metrics`, `timeseries` and `jain`, with the same columns as a run's (`SCHEMA`).
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
    let cols = PacketColumns {
        flow: slice("flow", &flow)?,
        size: slice("size", &size)?,
        sent: slice("sent_ns", &sent_ns)?,
        arrived: slice("arrived_ns", &arrived_ns)?,
        fate: slice("fate", &fate)?,
        kind: kind.as_ref().map(|k| slice("kind", k)).transpose()?,
        retransmission: retransmission.as_ref().map(|r| slice("retransmission", r)).transpose()?,
    };
    // A log carries no schedule: the kernel schedules each flow from its first send to its last.
    let cfg = MetricsConfig {
        n_flows: cols.n_flows(),
        bin: bin_ns,
        jain_bucket: jain_bucket_ns,
        origin: origin_ns,
        schedule: Vec::new(),
        arrivals_ordered: false,
    };
    // Mbit/s × ns / 1000 = bits.
    let rate = capacity_mbps.unwrap_or(0.0);
    let metrics = py
        .detach(|| analyze_columns(cols, cfg, &|t0, t1| rate * t1.saturating_sub(t0) as f64 / 1000.0))
        .map_err(|_| PyValueError::new_err("every column must have the same length"))?;
    let d = PyDict::new(py);
    output::set_metrics(py, &d, &metrics, &[])?;
    Ok(d)
}
