//! Results → Python: every table goes through [`columns`] (a dict of numpy columns; owned
//! vectors move into numpy without copying) or, for one-row tables, [`scalars`]. Names,
//! types and codes come from the declarations (`cclab_core::schema`, `cclab_engine::tables`), so
//! nothing here lists a column.

use cclab_core::metrics::Metrics;
use cclab_core::scenario::Scenario;
use cclab_core::schema::{self, Columns, Data};
use cclab_engine::{tables, RunOutput};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;

/// A table as a dict of numpy columns (strings as a list); a categorical column `c` also gets
/// `c_names`, its categories indexed by code.
pub fn columns(py: Python<'_>, table: Columns) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for v in table.0 {
        let column = match v.data {
            Data::U8(x) => PyArray1::from_vec(py, x).into_any(),
            Data::U32(x) => PyArray1::from_vec(py, x).into_any(),
            Data::U64(x) => PyArray1::from_vec(py, x).into_any(),
            Data::I64(x) => PyArray1::from_vec(py, x).into_any(),
            Data::F64(x) => PyArray1::from_vec(py, x).into_any(),
            Data::Bool(x) => PyArray1::from_vec(py, x).into_any(),
            Data::Str(x) => x.into_bound_py_any(py)?,
        };
        d.set_item(v.name, column)?;
        if !v.codes.is_empty() {
            d.set_item(format!("{}_names", v.name), v.codes.to_vec())?;
        }
    }
    Ok(d)
}

/// A one-row table as a dict of plain Python values (JSON-ready, unlike numpy scalars).
pub fn scalars(py: Python<'_>, table: Columns) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for v in table.0 {
        let value = match v.data {
            Data::U8(x) => x[0].into_bound_py_any(py)?,
            Data::U32(x) => x[0].into_bound_py_any(py)?,
            Data::U64(x) => x[0].into_bound_py_any(py)?,
            Data::I64(x) => x[0].into_bound_py_any(py)?,
            Data::F64(x) => x[0].into_bound_py_any(py)?,
            Data::Bool(x) => x[0].into_bound_py_any(py)?,
            Data::Str(mut x) => x.swap_remove(0).into_bound_py_any(py)?,
        };
        d.set_item(v.name, value)?;
    }
    Ok(d)
}

/// The metrics' tables into `d`: `summary`, `metrics`, `timeseries` and `jain`. `schemes[id]`
/// names flow `id` in the summary.
pub fn set_metrics(py: Python<'_>, d: &Bound<'_, PyDict>, m: &Metrics, schemes: &[&str]) -> PyResult<()> {
    d.set_item("summary", columns(py, schema::summary(m, schemes))?)?;
    d.set_item("metrics", scalars(py, schema::metrics(m))?)?;
    d.set_item("timeseries", columns(py, schema::timeseries(m))?)?;
    d.set_item("jain", columns(py, schema::jain(m))?)
}

/// A finished run → a dict of plain values and tables; the Python package makes DataFrames.
pub fn to_dict<'py>(py: Python<'py>, scenario: &Scenario, out: RunOutput) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &scenario.name)?;
    d.set_item("seed", scenario.seed)?;
    d.set_item("duration_ns", scenario.duration.ns())?;
    d.set_item("scenario_toml", scenario.to_toml())?;

    let n = out.flows.iter().map(|f| f.id as usize + 1).max().unwrap_or(0);
    let mut schemes = vec![""; n];
    for f in &out.flows {
        schemes[f.id as usize] = &f.scheme;
    }
    set_metrics(py, &d, &out.metrics, &schemes)?;
    d.set_item("flows", columns(py, tables::flows(&out.flows))?)?;
    d.set_item("stats", scalars(py, tables::stats(&out.stats))?)?;
    d.set_item("requests", columns(py, schema::requests(&out.requests))?)?;
    d.set_item("fct", columns(py, schema::fct(&out.requests))?)?;
    d.set_item("middlebox", columns(py, tables::middlebox(&out.middlebox))?)?;
    match out.packets {
        Some(log) => d.set_item("packets", columns(py, schema::packets(log))?)?,
        None => d.set_item("packets", py.None())?,
    }
    match out.trace {
        Some(trace) => d.set_item("trace", columns(py, schema::trace(trace))?)?,
        None => d.set_item("trace", py.None())?,
    }
    Ok(d)
}
