//! Raising cclab's Python exceptions. The classes are defined in Python (`cclab.errors`), where
//! they get readable messages; this side only fills them.

use cclab_core::scenario::ScenarioErrors;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Instantiates `cclab.errors.<class>(arg)`, or `None` if the package is not importable (the
/// extension loaded on its own).
fn make<'py>(py: Python<'py>, class: &str, arg: Bound<'py, PyAny>) -> Option<PyErr> {
    let module = py.import("cclab.errors").ok()?;
    let instance = module.getattr(class).ok()?.call1((arg,)).ok()?;
    Some(PyErr::from_value(instance))
}

/// `cclab.ScenarioError` carrying one dict (file, field, line, message, text) per problem.
pub fn scenario_error(py: Python<'_>, errors: &ScenarioErrors) -> PyErr {
    let build = || -> PyResult<Bound<'_, PyList>> {
        let list = PyList::empty(py);
        for e in &errors.0 {
            let d = PyDict::new(py);
            d.set_item("file", &e.file)?;
            d.set_item("field", &e.field)?;
            d.set_item("line", e.line)?;
            d.set_item("message", &e.message)?;
            // The core's own one-line rendering, so Python does not format errors a second way.
            d.set_item("text", e.to_string())?;
            list.append(d)?;
        }
        Ok(list)
    };
    match build() {
        Ok(list) => {
            make(py, "ScenarioError", list.into_any()).unwrap_or_else(|| PyValueError::new_err(errors.to_string()))
        }
        Err(e) => e,
    }
}

/// `cclab.SimulationError`: the scenario was valid but the run could not happen.
pub fn simulation_error(py: Python<'_>, message: &str) -> PyErr {
    let text = pyo3::types::PyString::new(py, message).into_any();
    make(py, "SimulationError", text).unwrap_or_else(|| PyRuntimeError::new_err(message.to_string()))
}

/// The run stopped on request without a Python exception to re-raise.
pub fn interrupted(message: &str) -> PyErr {
    PyKeyboardInterrupt::new_err(message.to_string())
}
