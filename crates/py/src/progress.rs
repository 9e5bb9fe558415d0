//! Running an engine without the GIL while still reporting progress and honouring Ctrl-C.

use pyo3::prelude::*;
use std::time::{Duration, Instant};

/// How often a running engine takes the GIL back to report progress and check for Ctrl-C.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Runs `engine` with the GIL released. The engine calls its hook with the run's current time;
/// at most every 250 ms the hook re-acquires the GIL, checks for signals and calls
/// `progress(now_ns, duration_ns)`. An exception from either stops the engine; it is returned
/// beside the engine's own result so the caller can re-raise the original exception.
pub fn run_detached<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    duration_ns: u64,
    engine: impl Send + FnOnce(&mut dyn FnMut(u64) -> Result<(), String>) -> T,
) -> (T, Option<PyErr>) {
    let mut stopped_by: Option<PyErr> = None;
    let result = py.detach(|| {
        let mut last_call = Instant::now();
        let mut hook = |now_ns: u64| -> Result<(), String> {
            if last_call.elapsed() < PROGRESS_EVERY {
                return Ok(());
            }
            last_call = Instant::now();
            Python::attach(|py| {
                py.check_signals()?;
                if let Some(callback) = &progress {
                    callback.call1(py, (now_ns, duration_ns))?;
                }
                Ok(())
            })
            .map_err(|e: PyErr| {
                let message = e.to_string();
                stopped_by = Some(e);
                message
            })
        };
        engine(&mut hook)
    });
    (result, stopped_by)
}
