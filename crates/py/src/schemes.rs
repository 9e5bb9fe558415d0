//! `cclab schemes`: the controller registry as Python values.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Every scheme a scenario may name: a list of dicts with `name`, `summary` and `options`
/// (each with `name`, `accepts`, `default` (as written in a scenario, or None) and `help`).
#[pyfunction]
pub fn schemes(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for scheme in cclab_cc::registry::schemes() {
        let options = PyList::empty(py);
        for o in scheme.options {
            let d = PyDict::new(py);
            d.set_item("name", o.name)?;
            d.set_item("accepts", o.kind.to_string())?;
            d.set_item("default", o.default.map(|v| v.to_string()))?;
            d.set_item("help", o.help)?;
            options.append(d)?;
        }
        let d = PyDict::new(py);
        d.set_item("name", scheme.name)?;
        d.set_item("summary", scheme.summary)?;
        d.set_item("options", options)?;
        out.append(d)?;
    }
    Ok(out)
}
