//! Running an engine without the GIL while still reporting progress and honouring Ctrl-C.

use pyo3::prelude::*;
use std::time::{Duration, Instant};

/// How often a running engine takes the GIL back to report progress and check for Ctrl-C.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Runs `engine` with the GIL released. The engine calls its hook with the run's current time;
/// at most every 250 ms the hook re-acquires the GIL, checks for signals and calls
/// `progress(now_ns, duration_ns)`. An exception from either stops the engine; it is returned
/// beside the engine's own result so the caller can re-raise the original exception.
///
/// With `keep_gil` the GIL stays held: a run whose controllers are Python takes it on every
/// ACK anyway, and taking it back from a released state costs more than the hook itself.
pub fn run_detached<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    duration_ns: u64,
    keep_gil: bool,
    engine: impl Send + FnOnce(&mut dyn FnMut(u64) -> Result<(), String>) -> T,
) -> (T, Option<PyErr>) {
    let mut stopped_by: Option<PyErr> = None;
    let body = || {
        let mut last_call = Instant::now();
        let mut hook = |now_ns: u64| -> Result<(), String> {
            // A Python controller that raised stops the run at once.
            if let Some(e) = crate::pycc::take_error() {
                let message = e.to_string();
                stopped_by = Some(e);
                return Err(message);
            }
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
    };
    let result = if keep_gil { body() } else { py.detach(body) };
    (result, stopped_by)
}
