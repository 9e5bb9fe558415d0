//! A finished run → a Python dict of plain values and numpy columns. The Python package turns
//! these into DataFrames; the packet log's vectors move into numpy arrays without copying.

use cclab_core::metrics::FlowSummary;
use cclab_core::record::{Fate, PacketLog};
use cclab_core::scenario::Scenario;
use cclab_engine::{EngineStats, RunOutput};
use numpy::{Element, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Names of `PacketKind` values, indexed by their `u8` code.
const KIND_NAMES: [&str; 2] = ["data", "ack"];

/// One numpy column from a field of each row.
fn column<'py, R, T: Element>(py: Python<'py>, rows: &[R], field: impl Fn(&R) -> T) -> Bound<'py, PyArray1<T>> {
    PyArray1::from_vec(py, rows.iter().map(field).collect())
}

pub fn to_dict<'py>(py: Python<'py>, scenario: &Scenario, out: RunOutput) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &scenario.name)?;
    d.set_item("seed", scenario.seed)?;
    d.set_item("duration_ns", scenario.duration.ns())?;
    d.set_item("scenario_toml", scenario.to_toml())?;

    let m = &out.metrics;
    let scheme_of = |flow: Option<u32>| {
        flow.and_then(|id| out.flows.iter().find(|f| f.id == id)).map(|f| f.scheme.as_str()).unwrap_or("total")
    };
    let summary = PyList::empty(py);
    for s in m.flows.iter().chain(std::iter::once(&m.total)) {
        summary.append(summary_row(py, s, scheme_of(s.flow))?)?;
    }
    d.set_item("summary", summary)?;

    let metrics = PyDict::new(py);
    metrics.set_item("capacity_mbps", m.capacity_mbps)?;
    metrics.set_item("utilisation", m.utilisation)?;
    metrics.set_item("jain_median", m.jain_median)?;
    d.set_item("metrics", metrics)?;

    let series = PyDict::new(py);
    series.set_item("flow", column(py, &m.series, |r| r.flow))?;
    series.set_item("t_ns", column(py, &m.series, |r| r.t))?;
    series.set_item("throughput_mbps", column(py, &m.series, |r| r.throughput_mbps))?;
    series.set_item("sending_mbps", column(py, &m.series, |r| r.sending_mbps))?;
    series.set_item("delay_mean_ms", column(py, &m.series, |r| r.delay_mean_ms))?;
    series.set_item("delay_max_ms", column(py, &m.series, |r| r.delay_max_ms))?;
    d.set_item("timeseries", series)?;

    let jain = PyDict::new(py);
    jain.set_item("t_ns", column(py, &m.jain, |r| r.t))?;
    jain.set_item("active_flows", column(py, &m.jain, |r| r.active_flows))?;
    jain.set_item("jain", column(py, &m.jain, |r| r.jain))?;
    jain.set_item("counted", column(py, &m.jain, |r| r.counted))?;
    d.set_item("jain", jain)?;

    let flows = PyDict::new(py);
    flows.set_item("flow", column(py, &out.flows, |f| f.id))?;
    flows.set_item("scheme", out.flows.iter().map(|f| f.scheme.as_str()).collect::<Vec<_>>())?;
    flows.set_item("start_ns", column(py, &out.flows, |f| f.start))?;
    flows.set_item("stop_ns", column(py, &out.flows, |f| f.stop))?;
    flows.set_item("base_rtt_ns", column(py, &out.flows, |f| f.base_rtt))?;
    d.set_item("flows", flows)?;

    d.set_item("stats", stats(py, &out.stats)?)?;
    match out.packets {
        Some(log) => d.set_item("packets", packets(py, log)?)?,
        None => d.set_item("packets", py.None())?,
    }
    Ok(d)
}

fn summary_row<'py>(py: Python<'py>, s: &FlowSummary, scheme: &str) -> PyResult<Bound<'py, PyDict>> {
    let r = PyDict::new(py);
    r.set_item("flow", s.flow)?;
    r.set_item("scheme", scheme)?;
    r.set_item("throughput_mbps", s.throughput_mbps)?;
    r.set_item("delay_p95_ms", s.delay_p95_ms)?;
    r.set_item("queueing_p95_ms", s.queueing_p95_ms)?;
    r.set_item("delay_mean_ms", s.delay_mean_ms)?;
    r.set_item("delay_min_ms", s.delay_min_ms)?;
    r.set_item("loss", s.loss)?;
    r.set_item("packets_sent", s.packets_sent)?;
    r.set_item("packets_delivered", s.packets_delivered)?;
    r.set_item("packets_dropped", s.packets_dropped)?;
    r.set_item("bytes_sent", s.bytes_sent)?;
    r.set_item("bytes_delivered", s.bytes_delivered)?;
    r.set_item("retransmissions", s.retransmissions)?;
    r.set_item("first_delivery_ns", s.first_delivery)?;
    r.set_item("last_delivery_ns", s.last_delivery)?;
    Ok(r)
}

fn stats<'py>(py: Python<'py>, s: &EngineStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("events", s.events)?;
    d.set_item("wall_secs", s.wall_secs)?;
    d.set_item("data_sent", s.data_sent)?;
    d.set_item("data_delivered", s.data_delivered)?;
    d.set_item("data_dropped", s.data_dropped)?;
    d.set_item("data_in_flight_end", s.data_in_flight_end)?;
    Ok(d)
}

/// The packet log's columns, moved (not copied) into numpy arrays.
fn packets(py: Python<'_>, log: PacketLog) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("uid", PyArray1::from_vec(py, log.uid))?;
    d.set_item("flow", PyArray1::from_vec(py, log.flow))?;
    d.set_item("kind", PyArray1::from_vec(py, log.kind))?;
    d.set_item("size", PyArray1::from_vec(py, log.size))?;
    d.set_item("sent_ns", PyArray1::from_vec(py, log.sent))?;
    d.set_item("arrived_ns", PyArray1::from_vec(py, log.arrived))?;
    d.set_item("fate", PyArray1::from_vec(py, log.fate))?;
    d.set_item("enqueued_ns", PyArray1::from_vec(py, log.enqueued))?;
    d.set_item("dequeued_ns", PyArray1::from_vec(py, log.dequeued))?;
    d.set_item("retransmission", PyArray1::from_vec(py, log.retransmission))?;
    d.set_item("kind_names", KIND_NAMES.to_vec())?;
    d.set_item("fate_names", Fate::NAMES.to_vec())?;
    Ok(d)
}
