//! `cclab presets`: the named links a scenario's `[link] preset` may use, and the wire size of
//! a data packet (what turns a buffer in packets into bytes and time).

use cclab_core::scenario::presets::{trace_dir, PRESETS, TRACE_DIR_ENV};
use cclab_core::scenario::PACKET_BYTES;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Every preset: a list of dicts with `name`, `summary`, `source` and `keys` (a list of
/// (key, value as written in a scenario) pairs: `[link]` keys bare, `[reverse]` keys as
/// `reverse.KEY`).
#[pyfunction]
fn presets(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for p in PRESETS {
        let d = PyDict::new(py);
        d.set_item("name", p.name)?;
        d.set_item("summary", p.summary)?;
        d.set_item("source", p.source)?;
        let keys: Vec<(String, String)> = p.all_keys().map(|(k, v)| (k, v.display())).collect();
        d.set_item("keys", keys)?;
        out.append(d)?;
    }
    Ok(out)
}

/// The folder a preset's trace is read from now.
#[pyfunction]
fn preset_trace_dir() -> String {
    trace_dir().display().to_string()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(preset_trace_dir, m)?)?;
    m.add("TRACE_DIR_ENV", TRACE_DIR_ENV)?;
    m.add("PACKET_BYTES", PACKET_BYTES)?;
    Ok(())
}
