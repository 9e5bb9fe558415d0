//! The deterministic discrete-event simulator: links, queues, hosts, the transport and the
//! record sinks, driven by one scenario.

pub mod engine;
pub mod link;

use cclab_core::metrics::Metrics;
use cclab_core::scenario::{Scenario, ScenarioErrors};
use cclab_core::PacketLog;

/// What to record besides the always-on metrics.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep every packet's record (memory grows with packets; off by default).
    pub log_packets: bool,
}

/// One concrete flow of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowInfo {
    pub id: u32,
    pub scheme: String,
    /// Start and stop of sending, ns.
    pub start: u64,
    pub stop: u64,
    /// Base round-trip propagation delay of this flow, ns.
    pub base_rtt: u64,
}

/// Engine counters, for conservation checks and benchmarks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineStats {
    pub events: u64,
    pub wall_secs: f64,
    /// Data packets by fate.
    pub data_sent: u64,
    pub data_delivered: u64,
    pub data_dropped: u64,
    pub data_in_flight_end: u64,
}

/// Everything a run produces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    pub metrics: Metrics,
    pub packets: Option<PacketLog>,
    pub flows: Vec<FlowInfo>,
    pub stats: EngineStats,
}

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
    let text = std::fs::read_to_string(path).unwrap_or_default();
    check_schemes(&s, &path.display().to_string(), &text)?;
    Ok(s)
}

/// As [`load_scenario`], from TOML text; `file` names it in errors.
pub fn parse_scenario(text: &str, file: &str, overrides: &toml::Table) -> Result<Scenario, ScenarioErrors> {
    let s = Scenario::parse_with(text, file, overrides)?;
    check_schemes(&s, file, text)?;
    Ok(s)
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
