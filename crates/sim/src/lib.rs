//! The deterministic discrete-event simulator: the shared path of `cclab_engine` and the flows'
//! transport (`cclab_transport`), driven by an event heap in virtual time.
//!
//! Owns: the event loop and its packet type (`engine`), the simulator's entry points (`run`,
//! `run_traced`) and scenario loading with scheme checks. The path's stages, the record sinks
//! and the result types belong to `cclab_engine`; the result types the entry points take and
//! return are re-exported here for convenience.
//!
//! Must not import: `cclab-emu` (or any other engine); engines share code only through
//! `cclab-engine`.

pub mod engine;

/// The global allocator of every program that links the simulator (the Python extension, the
/// emulator, the benchmarks and tests): mimalloc rather than the system's. At thousands of flows
/// the simulator's time goes to cache and TLB misses on per-flow state (each flow's sender,
/// delay lines and packets in flight are small allocations made and freed all run long), and
/// mimalloc's per-size pages keep them denser: CoreScale (5000 flows, 10 s) ran in 0.85× the
/// CPU time of glibc's malloc, run side by side (benches/core_scale.rs). An embedder with
/// its own allocator turns the default feature off.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Returns the pages freed so far to the operating system. mimalloc keeps freed pages for reuse
/// and releases them lazily, on later allocations; at the end of a run nothing more is allocated
/// but the metrics' rows (one large block, straight from the OS), so without this the memory of
/// the packets in flight, freed just before, would still count as resident while the rows are
/// built.
pub(crate) fn release_freed_memory() {
    #[cfg(feature = "mimalloc")]
    // SAFETY: mi_collect only walks mimalloc's own free lists; it takes no pointer.
    unsafe {
        libmimalloc_sys::mi_collect(true)
    }
}

pub use cclab_engine::{CcTrace, RunOptions, RunOutput};

use cclab_core::scenario::resources::{self, FlowLimits};
use cclab_core::scenario::{attribute_to_overrides, FlowSpec, Scenario, ScenarioError, ScenarioErrors, Source};

#[derive(Debug)]
pub enum SimError {
    Scenario(ScenarioErrors),
    /// The progress callback asked to stop (e.g. Ctrl-C).
    Interrupted(String),
    /// A trace file or other input the scenario names could not be used.
    Input(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Scenario(e) => write!(f, "{e}"),
            SimError::Interrupted(m) => write!(f, "interrupted: {m}"),
            SimError::Input(m) => write!(f, "{m}"),
        }
    }
}
impl std::error::Error for SimError {}

/// Reads a scenario file, merges `overrides` (keys may be dotted: `link.rate`), and validates
/// everything, including scheme names and options.
pub fn load_scenario(path: &std::path::Path, overrides: &toml::Table) -> Result<Scenario, ScenarioErrors> {
    let s = Scenario::load_with(path, overrides)?;
    // Read once already by `load_with`, so it is a regular file within the limit.
    let text = cclab_core::input::read_text(path, cclab_core::input::MAX_SCENARIO_BYTES).unwrap_or_default();
    let file = path.display().to_string();
    check_schemes(&s, &file, &text).map_err(|e| attribute_to_overrides(e, overrides))?;
    check_inputs(&s, &Source { file: &file, text: &text }, &RunOptions::default())
        .map_err(|e| attribute_to_overrides(e, overrides))?;
    Ok(s)
}

/// As [`load_scenario`], from TOML text; `file` names it in errors.
pub fn parse_scenario(text: &str, file: &str, overrides: &toml::Table) -> Result<Scenario, ScenarioErrors> {
    let s = Scenario::parse_with(text, file, overrides)?;
    check_schemes(&s, file, text)?;
    check_inputs(&s, &Source { file, text }, &RunOptions::default())?;
    Ok(s)
}

/// Everything a run reads besides the scenario (its trace files, read and parsed as the run
/// will) and the resource model (`cclab_core::scenario::resources`): physical ranges and the
/// memory estimate against the limit. `validate` and `run` both go through it, so a scenario
/// that validates does not fail on its inputs later.
pub fn check_inputs(s: &Scenario, src: &Source, opts: &RunOptions) -> Result<(), ScenarioErrors> {
    let mut errs = Vec::new();
    for (field, trace) in [("link.trace", &s.link.trace), ("link.reverse_trace", &s.link.reverse_trace)] {
        if let Some(path) = trace {
            if let Err(e) = cclab_engine::delivery::Trace::load(path) {
                errs.push(src.error(field, e));
            }
        }
    }
    match resources::memory_limit() {
        Ok(limit) => {
            if let Err(e) = resources::check(s, src, &flow_limits, opts.recording(), limit.as_ref()) {
                errs.extend(e.0);
            }
        }
        Err(message) => errs.push(ScenarioError {
            file: resources::MAX_MEMORY_ENV.into(),
            field: String::new(),
            line: None,
            message,
        }),
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ScenarioErrors(errs))
    }
}

/// What a flow entry's scheme options bound (only `fixed` bounds its window by an option); a
/// receiver window (`rwnd`) is counted by the resource model itself.
fn flow_limits(spec: &FlowSpec) -> FlowLimits {
    if spec.scheme == cclab_cc::fixed::SCHEME.info.name {
        cclab_cc::fixed::limits(spec)
    } else {
        FlowLimits::default()
    }
}

fn check_schemes(s: &Scenario, file: &str, text: &str) -> Result<(), ScenarioErrors> {
    cclab_cc::registry::check(s, &cclab_core::scenario::Source { file, text })
}

/// Runs a validated scenario. `progress(sim_time_ns)` is called every few thousand events; an
/// `Err` from it stops the run.
pub fn run(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64) -> Result<(), String>,
) -> Result<RunOutput, SimError> {
    engine::simulate(scenario, opts, progress)
}

/// As [`run`], sampling every flow's sender after each ACK it processes (`opts.trace` set to
/// every ACK), and returning the trace beside the output. For tests and studies of controller
/// internals: memory grows with the number of ACKs; `opts.trace = Some(interval)` bounds it.
pub fn run_traced(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64) -> Result<(), String>,
) -> Result<(RunOutput, CcTrace), SimError> {
    let opts = RunOptions { trace: Some(opts.trace.unwrap_or(0)), ..opts.clone() };
    let mut out = engine::simulate(scenario, &opts, progress)?;
    let trace = out.trace.take().unwrap_or_default();
    Ok((out, trace))
}
