//! The Python module `cclab._core`: scenario validation, simulator runs and the scheme list,
//! with results handed to Python as numpy columns, and the result schema, codes and unit
//! parsers the Python package reads instead of re-declaring them. Everything user-facing (the `cclab.run`
//! API, DataFrames, the archive, the CLI) lives in the Python package on top of this.
//!
//! May import every crate; nothing imports it. Every table crosses to Python through one
//! function (`output::columns`), never a per-column list.

mod analyze;
#[cfg(all(feature = "emu", target_os = "linux"))]
mod emu;
mod errors;
mod output;
mod overrides;
mod pcap;
mod presets;
mod progress;
mod pycc;
mod schema;
mod schemes;

use cclab_core::scenario::{attribute_to_overrides, merge_overrides, Scenario, ScenarioErrors, OVERRIDES_FILE};
use cclab_engine::RunOptions;
use cclab_sim::SimError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::Path;

/// What errors call a scenario given inline (as a dict) rather than as a file.
const INLINE_FILE: &str = "<scenario dict>";

/// Reads a scenario from a file (`is_path`) or from the JSON text of a table, merges the JSON
/// object `overrides_json` (dotted keys allowed) and validates the result.
fn load(source: &str, is_path: bool, overrides_json: &str) -> Result<Scenario, ScenarioErrors> {
    let overrides = overrides::json_to_table(overrides_json, OVERRIDES_FILE)?;
    if is_path {
        cclab_sim::load_scenario(Path::new(source), &overrides)
    } else {
        // An inline scenario is the set of keys merged into an empty file, so every key goes
        // through exactly the same schema and checks as a file's (without line numbers).
        let mut table = overrides::json_to_table(source, INLINE_FILE)?;
        merge_overrides(&mut table, &overrides)?;
        cclab_sim::parse_scenario("", INLINE_FILE, &table).map_err(|e| attribute_to_overrides(e, &overrides))
    }
}

/// Validates a scenario and returns it as TOML with every default filled in.
#[pyfunction]
#[pyo3(signature = (source, is_path, overrides_json = "{}"))]
fn validate(py: Python<'_>, source: &str, is_path: bool, overrides_json: &str) -> PyResult<String> {
    let scenario = load(source, is_path, overrides_json).map_err(|e| errors::scenario_error(py, &e))?;
    Ok(scenario.to_toml())
}

/// Validates and simulates a scenario. The GIL is released while simulating; at most every
/// 250 ms of wall time the run re-acquires it to call `progress(sim_ns, duration_ns)` and to
/// check for signals, so Ctrl-C stops a run with `KeyboardInterrupt`. `trace_ns`: sample every
/// flow's sender at most once per that many ns (0: every ACK) into the `trace` table.
#[pyfunction]
#[pyo3(signature = (source, is_path, overrides_json = "{}", log_packets = false, progress = None, trace_ns = None))]
fn run<'py>(
    py: Python<'py>,
    source: &str,
    is_path: bool,
    overrides_json: &str,
    log_packets: bool,
    progress: Option<Py<PyAny>>,
    trace_ns: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let scenario = load(source, is_path, overrides_json).map_err(|e| errors::scenario_error(py, &e))?;
    let opts = RunOptions { log_packets, trace: trace_ns };
    if log_packets || trace_ns.is_some() {
        // `load` checked the resources of a run that records nothing more; this one does.
        let file = if is_path { source } else { INLINE_FILE };
        cclab_sim::check_inputs(&scenario, &cclab_core::scenario::Source { file, text: "" }, &opts)
            .map_err(|e| errors::scenario_error(py, &e))?;
    }
    let duration_ns = scenario.duration.ns();
    let keep_gil = scenario.flows.iter().any(|f| cclab_cc::registry::external::is_registered(&f.scheme));
    let (outcome, stopped_by) =
        progress::run_detached(py, progress, duration_ns, keep_gil, |hook| cclab_sim::run(&scenario, &opts, hook));
    // A Python controller that raised after the last progress call.
    if let Some(e) = stopped_by.is_none().then(pycc::take_error).flatten() {
        return Err(e);
    }
    match outcome {
        Ok(out) => output::to_dict(py, &scenario, out),
        Err(SimError::Interrupted(message)) => Err(stopped_by.unwrap_or_else(|| errors::interrupted(&message))),
        Err(SimError::Scenario(e)) => Err(errors::scenario_error(py, &e)),
        Err(e @ SimError::Input(_)) => Err(errors::simulation_error(py, &e.to_string())),
    }
}

/// What built this extension (see build.rs): empty strings where it was not known.
fn build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let info = PyDict::new(py);
    info.set_item("version", env!("CARGO_PKG_VERSION"))?;
    info.set_item("rustc", env!("CCLAB_BUILD_RUSTC"))?;
    info.set_item("git_commit", env!("CCLAB_BUILD_GIT_COMMIT"))?;
    info.set_item("git_dirty", env!("CCLAB_BUILD_GIT_DIRTY"))?;
    info.set_item("profile", env!("CCLAB_BUILD_PROFILE"))?;
    Ok(info)
}

/// The engines this build lacks, by name, each with why (read by `cclab.engines`).
fn unavailable_engines(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    if !cfg!(target_os = "linux") {
        d.set_item("emu", "the emulator needs Linux (network namespaces and TUN devices)")?;
    } else if !cfg!(feature = "emu") {
        d.set_item("emu", "this build was compiled without the `emu` Cargo feature (rebuild with default features)")?;
    }
    Ok(d)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Reach numpy's C API now, at import: done lazily at a run's first array, a Ctrl-C pending
    // at that moment fails numpy's import inside the binding and panics ("Failed to access
    // NumPy array API capsule") instead of raising KeyboardInterrupt.
    numpy::PyArray1::<u8>::zeros(m.py(), 0, false);
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    #[cfg(all(feature = "emu", target_os = "linux"))]
    emu::register(m)?;
    m.add("UNAVAILABLE_ENGINES", unavailable_engines(m.py())?)?;
    m.add_function(wrap_pyfunction!(schemes::schemes, m)?)?;
    pycc::register(m)?;
    m.add_function(wrap_pyfunction!(analyze::analyze, m)?)?;
    m.add_function(wrap_pyfunction!(pcap::write_pcap, m)?)?;
    schema::register(m)?;
    presets::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("BUILD_INFO", build_info(m.py())?)?;
    // What a scenario error names as its file when an override caused it.
    m.add("OVERRIDES_FILE", OVERRIDES_FILE)?;
    // The environment variable that caps a run's memory (the CLI's --max-memory sets it).
    m.add("MAX_MEMORY_ENV", cclab_core::scenario::resources::MAX_MEMORY_ENV)?;
    Ok(())
}
