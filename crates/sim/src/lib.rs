//! The deterministic discrete-event simulator: links, queues, hosts, the transport and the
//! record sinks, driven by one scenario; and the `flows`/`stats` result tables (`tables`),
//! declared beside the result types they read.

pub mod engine;
pub mod link;
pub mod tables;

use cclab_core::metrics::Metrics;
use cclab_core::scenario::{Scenario, ScenarioErrors};
use cclab_core::PacketLog;

/// What to record besides the always-on metrics.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep every packet's record (memory grows with packets; off by default).
    pub log_packets: bool,
}

/// Controller state over time, one row per ACK a sender processed (after it sent what the ACK
/// allowed), as columns. Produced by [`run_traced`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CcTrace {
    pub flow: Vec<u32>,
    /// ns since the start of the run.
    pub t: Vec<u64>,
    /// The controller's mode (`CcSnapshot::mode`), e.g. "probe_rtt".
    pub mode: Vec<&'static str>,
    /// Bytes in flight and the controller's window, bytes.
    pub in_flight: Vec<u64>,
    pub cwnd: Vec<u64>,
    /// The controller's pacing rate, bytes/s; NaN when it sets none.
    pub pacing_rate: Vec<f64>,
    /// The snapshot variables by name, in order of first appearance; NaN in rows whose
    /// controller does not report that name.
    pub vars: Vec<(&'static str, Vec<f64>)>,
}

impl CcTrace {
    pub fn len(&self) -> usize {
        self.t.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    /// A snapshot variable's column.
    pub fn var(&self, name: &str) -> Option<&[f64]> {
        self.vars.iter().find(|(n, _)| *n == name).map(|(_, c)| c.as_slice())
    }

    /// Row indices of one flow, in time order.
    pub fn rows_of(&self, flow: u32) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(move |&i| self.flow[i] == flow)
    }

    pub(crate) fn push(&mut self, flow: u32, t: u64, cc: &dyn cclab_cc::CongestionControl, in_flight: u64) {
        let n = self.len();
        let snap = cc.snapshot();
        self.flow.push(flow);
        self.t.push(t);
        self.mode.push(snap.mode);
        self.in_flight.push(in_flight);
        self.cwnd.push(cc.cwnd());
        self.pacing_rate.push(cc.pacing_rate().unwrap_or(f64::NAN));
        for (name, value) in snap.vars {
            let col = match self.vars.iter().position(|(c, _)| *c == name) {
                Some(i) => &mut self.vars[i].1,
                None => {
                    self.vars.push((name, vec![f64::NAN; n]));
                    &mut self.vars.last_mut().expect("just pushed").1
                }
            };
            if col.len() == n {
                col.push(value);
            }
        }
        for (_, col) in &mut self.vars {
            if col.len() == n {
                col.push(f64::NAN);
            }
        }
    }
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
    engine::simulate(scenario, opts, false, progress).map(|(out, _)| out)
}

/// As [`run`], also sampling every flow's controller (`snapshot()`, cwnd, pacing rate and
/// bytes in flight) after each ACK it processes. For tests and studies of controller
/// internals: memory grows with the number of ACKs; [`run`] pays nothing for it.
pub fn run_traced(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64) -> Result<(), String>,
) -> Result<(RunOutput, CcTrace), SimError> {
    engine::simulate(scenario, opts, true, progress).map(|(out, trace)| (out, trace.unwrap_or_default()))
}
