//! The result schema and the codes, published to Python so that it never re-declares them:
//! `SCHEMA` (table → list of (name, dtype, unit, doc)), `FATE_NAMES`/`KIND_NAMES` (indexed by
//! code) with `FATE`/`KIND` (name → code), `NEVER`, `TRACE_INTERVAL_NS`, and the scenario unit
//! parsers.

use cclab_core::record::{Fate, PacketKind, NEVER};
use cclab_core::units::{Bytes, Dur, Rate};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Adds the schema, the codes and the unit parsers to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let schema = PyDict::new(py);
    for table in cclab_core::schema::tables().into_iter().chain(cclab_engine::tables::tables()) {
        let columns: Vec<_> = table.columns.iter().map(|c| (c.name, c.dtype.name(), c.unit, c.doc)).collect();
        schema.set_item(table.name, columns)?;
    }
    m.add("SCHEMA", schema)?;
    m.add("FATE_NAMES", Fate::NAMES.to_vec())?;
    m.add("KIND_NAMES", PacketKind::NAMES.to_vec())?;
    m.add("FATE", codes(py, &Fate::NAMES)?)?;
    m.add("KIND", codes(py, &PacketKind::NAMES)?)?;
    m.add("NEVER", NEVER)?;
    // The sender trace's default sampling interval (`--trace`), ns.
    m.add("TRACE_INTERVAL_NS", cclab_core::cctrace::DEFAULT_INTERVAL_NS)?;
    // Packet sizes, for models that convert between packets and bytes (python/cclab/models.py).
    m.add("MSS", cclab_core::scenario::MSS)?;
    m.add("PACKET_BYTES", cclab_core::scenario::PACKET_BYTES)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)
}

/// Name → code of a code list indexed by code.
fn codes<'py>(py: Python<'py>, names: &[&str]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (code, name) in names.iter().enumerate() {
        d.set_item(name, code)?;
    }
    Ok(d)
}

/// A duration as scenarios write it ("10ms", "1.5s") → ns; ValueError when it is not one.
#[pyfunction]
fn parse_duration(text: &str) -> PyResult<u64> {
    Dur::parse(text).map(Dur::ns).map_err(PyValueError::new_err)
}

/// A rate as scenarios write it ("46Mbps", "2640kbps") → bit/s; ValueError when it is not one.
#[pyfunction]
fn parse_rate(text: &str) -> PyResult<u64> {
    Rate::parse(text).map(Rate::bits_per_sec).map_err(PyValueError::new_err)
}

/// A size as scenarios write it ("1500B", "115KB", "64KiB") → bytes; ValueError when it is not one.
#[pyfunction]
fn parse_size(text: &str) -> PyResult<u64> {
    Bytes::parse(text).map(|b| b.0).map_err(PyValueError::new_err)
}
