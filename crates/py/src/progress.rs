//! Running an engine without the GIL while still reporting progress and honouring Ctrl-C.

use cclab_core::scenario::resources::{self, human_bytes, MAX_MEMORY_ENV};
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
    let guard = MemoryGuard::new();
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
            if let Some(message) = guard.as_ref().and_then(|g| g.exceeded(now_ns)) {
                stopped_by = Some(Python::attach(|py| crate::errors::simulation_error(py, &message)));
                return Err(message);
            }
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

/// The run-time half of the resource model: what no scenario field bounds (an ACK-clocked window
/// growing into an unbounded queue over a long run) is watched while the run goes, so a run
/// stops with an error naming the memory instead of being killed by the allocator or the
/// kernel's OOM killer.
struct MemoryGuard {
    /// The process's resident memory may reach this (a `--max-memory` limit) ...
    max_rss: Option<u64>,
    /// ... and grow by at most this over its size at the start (90% of what was available).
    max_growth: Option<u64>,
    start_rss: u64,
}

impl MemoryGuard {
    fn new() -> Option<MemoryGuard> {
        let start_rss = resources::rss_bytes()?;
        let user = std::env::var(MAX_MEMORY_ENV).ok().and_then(|_| resources::memory_limit().ok().flatten());
        let available = resources::available_memory().map(|a| a / 10 * 9);
        Some(MemoryGuard { max_rss: user.map(|l| l.bytes), max_growth: available, start_rss })
    }

    fn exceeded(&self, now_ns: u64) -> Option<String> {
        let rss = resources::rss_bytes()?;
        let at = format!("{:.1} s", now_ns as f64 / 1e9);
        let hint = "memory grows with simulated time when a window fills an unbounded queue: \
                    give `link.queue` a limit (e.g. \"1bdp\") or shorten `duration`";
        if let Some(max) = self.max_rss.filter(|&m| rss > m) {
            return Some(format!(
                "stopped at {at} of simulated time: the run uses {} of memory, more than the {} set by \
                 --max-memory / {MAX_MEMORY_ENV}; {hint}",
                human_bytes(rss),
                human_bytes(max)
            ));
        }
        let growth = rss.saturating_sub(self.start_rss);
        if let Some(max) = self.max_growth.filter(|&m| growth > m) {
            return Some(format!(
                "stopped at {at} of simulated time: the run grew by {}, nearly all the memory this \
                 machine had available ({}); {hint}",
                human_bytes(growth),
                human_bytes(max)
            ));
        }
        None
    }
}
