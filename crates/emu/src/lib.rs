//! cclab's real-time engine: the sender and the receiver of every flow live in two Linux
//! network namespaces joined through TUN devices to a user-space link emulator, which drives the
//! scenario's path — `cclab_engine`'s stages, the same objects the simulator drives — in real
//! time and records every packet it forwards, with exact send and arrival times (it owns both
//! ends, so no clocks need synchronising).
//!
//! Schemes: Linux TCP (`kernel:cubic`, any name the kernel offers), cclab's own controllers
//! over a UDP transport running the simulator's transport code, and external programs described
//! by a wrapper file. See `run.rs` for the life of a run and `path.rs` for the packet path.
//!
//! Owns: the real-time clock of the path (`path`), the namespaces, TUN devices and endpoints,
//! and the run's life (`run`). The path's stages, the plan, the record sinks and the result
//! types belong to `cclab_engine`.
//!
//! Must not import: `cclab-sim` (or any other engine); engines share code only through
//! `cclab-engine`. (The `trace_compare` example, which runs both engines, takes `cclab-sim` as a
//! dev-dependency.)

pub mod capacity;
pub mod capture;
pub mod endpoint;
pub mod kernel_tcp;
pub mod netns;
pub mod packet;
pub mod path;
pub mod process;
mod records;
pub mod requests;
pub mod run;
pub mod scheme;
pub mod sys;
pub mod timing;
pub mod topology;
pub mod tun;
pub mod udp;
pub mod wrapper;

pub use run::{preflight, run, Cpus, EmuError, EmuOptions, EmuOutput, EmuStats, FlowEnd, ONE_CPU_MAX_BPS};
pub use scheme::EmuScheme;

use cclab_core::scenario::{attribute_to_overrides, Scenario, ScenarioErrors, Source};
use std::path::Path;

/// Reads a scenario file for the emulator: the shared schema and checks, then every flow's
/// scheme as the emulator reads it (`kernel:`, `wrapper:` or a cclab controller).
pub fn load_scenario(path: &Path, overrides: &toml::Table) -> Result<Scenario, ScenarioErrors> {
    let s = Scenario::load_with(path, overrides)?;
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let file = path.display().to_string();
    let base = path.parent().unwrap_or(Path::new("."));
    scheme::resolve(&s, &Source { file: &file, text: &text }, base)
        .map_err(|e| attribute_to_overrides(e, overrides))?;
    Ok(s)
}

/// As [`load_scenario`], from text; wrapper paths resolve against `base_dir`.
pub fn parse_scenario(
    text: &str,
    file: &str,
    overrides: &toml::Table,
    base_dir: &Path,
) -> Result<Scenario, ScenarioErrors> {
    let s = Scenario::parse_with(text, file, overrides)?;
    scheme::resolve(&s, &Source { file, text }, base_dir)?;
    Ok(s)
}
