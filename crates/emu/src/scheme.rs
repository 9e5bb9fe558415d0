//! What a `[[flows]]` entry's `scheme` means in the emulator, and the checks that catch every
//! scheme the emulator cannot run before anything is created.
//!
//! - `kernel:<name>`: Linux TCP with that congestion control (any name in
//!   `/proc/sys/net/ipv4/tcp_available_congestion_control`), driven by cclab's bulk
//!   sender/receiver, or by its request client and server pools (`requests.rs`);
//! - `wrapper:<file.toml>`: an external sender/receiver pair described by a wrapper file
//!   (`wrapper.rs`), the path relative to the scenario file;
//! - anything else: a cclab controller from the registry, run for real over the UDP transport.

use crate::wrapper::Wrapper;
use cclab_core::scenario::{FlowSpec, Pacing, Scenario, ScenarioError, ScenarioErrors, Source, Traffic};
use cclab_core::units::Dur;
use std::path::{Path, PathBuf};

pub const KERNEL_PREFIX: &str = "kernel:";
pub const WRAPPER_PREFIX: &str = "wrapper:";
const AVAILABLE_CC: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// A scheme as the emulator runs it.
#[derive(Clone, Debug)]
pub enum EmuScheme {
    Kernel(String),
    Wrapper(Box<Wrapper>),
    /// A cclab controller over UDP; the flow entry builds it through the registry.
    Cclab,
}

/// The congestion controls this kernel offers now.
pub fn kernel_congestion_controls() -> Vec<String> {
    std::fs::read_to_string(AVAILABLE_CC)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Resolves a wrapper path: absolute, or relative to the scenario's folder.
fn wrapper_path(path: &str, base_dir: &Path) -> PathBuf {
    let p = PathBuf::from(path);
    if p.is_absolute() {
        p
    } else {
        base_dir.join(p)
    }
}

/// Keys of a flow entry that only the UDP transport can honour, with their defaults: a kernel or
/// external scheme with anything else set would silently not do what the file says.
/// (`delayed_ack = true`, the default, describes what a Linux receiver does anyway.)
fn transport_only_keys(spec: &FlowSpec) -> Vec<&'static str> {
    let mut keys = Vec::new();
    // Linux has no exact equivalent of a fixed receive window: TCP_WINDOW_CLAMP and a fixed
    // SO_RCVBUF were measured to leave 1.3-2.6x the asked window in flight.
    if spec.rwnd.is_some() {
        keys.push("rwnd");
    }
    if spec.pacing != Pacing::Auto {
        keys.push("pacing");
    }
    // Linux receivers always delay ACKs (with quick-ACK phases), which is what `delayed_ack`
    // (default true) asks the simulator for; neither a kernel receiver nor an external program
    // can be told to acknowledge every packet.
    if !spec.delayed_ack {
        keys.push("delayed_ack");
    }
    if spec.min_rto != Dur::from_millis(200) {
        keys.push("min_rto");
    }
    keys
}

/// Reads every flow's scheme; all problems are reported together, each at its field.
pub fn resolve(scenario: &Scenario, src: &Source, base_dir: &Path) -> Result<Vec<EmuScheme>, ScenarioErrors> {
    let mut errs: Vec<ScenarioError> = Vec::new();
    let mut out = Vec::new();
    let mut kernel_ccs: Option<Vec<String>> = None;
    let mut cclab_flows = Vec::new();
    for (i, f) in scenario.flows.iter().enumerate() {
        let at = |k: &str| format!("flows[{i}].{k}");
        // Request workloads run over Linux TCP (requests.rs); cclab's UDP transport and
        // external programs have no way to carry requests yet.
        if f.traffic == Traffic::Requests && !f.scheme.starts_with(KERNEL_PREFIX) {
            errs.push(src.error(
                &at("traffic"),
                format!(
                    "the emulator runs request workloads over Linux TCP only: use a `{KERNEL_PREFIX}` scheme \
                     (e.g. `kernel:cubic`), or run `{}` with --engine sim",
                    f.scheme
                ),
            ));
        }
        let scheme = if let Some(name) = f.scheme.strip_prefix(KERNEL_PREFIX) {
            let ccs = kernel_ccs.get_or_insert_with(kernel_congestion_controls);
            if !ccs.iter().any(|c| c == name) {
                let hint =
                    cclab_core::scenario::did_you_mean(name, &ccs.iter().map(String::as_str).collect::<Vec<_>>())
                        .map(|s| format!("did you mean `kernel:{s}`? "))
                        .unwrap_or_default();
                errs.push(src.error(
                    &at("scheme"),
                    format!(
                        "`{name}` is not a congestion control this kernel offers; {hint}available here: {} \
                         (from {AVAILABLE_CC}; another may load with `modprobe tcp_{name}`)",
                        ccs.iter().map(|c| format!("kernel:{c}")).collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            EmuScheme::Kernel(name.to_string())
        } else if let Some(path) = f.scheme.strip_prefix(WRAPPER_PREFIX) {
            match Wrapper::load(&wrapper_path(path, base_dir)) {
                Ok(w) => EmuScheme::Wrapper(Box::new(w)),
                Err(e) => {
                    errs.push(src.error(&at("scheme"), e));
                    continue;
                }
            }
        } else {
            cclab_flows.push(i);
            EmuScheme::Cclab
        };
        if !matches!(scheme, EmuScheme::Cclab) {
            if let Some(k) = f.options.keys().next() {
                errs.push(src.error(
                    &at(k),
                    format!("`{}` takes no scheme options (`{k}` is an option of cclab's own schemes)", f.scheme),
                ));
            }
            for k in transport_only_keys(f) {
                errs.push(src.error(
                    &at(k),
                    format!("`{k}` applies to cclab's own transport only; `{}` uses its own TCP stack", f.scheme),
                ));
            }
        }
        out.push(scheme);
    }
    // The registry checks names and options of cclab's schemes; its findings about the
    // emulator-only flows do not apply (they name `kernel:` or `wrapper:` schemes).
    if let Err(e) = cclab_cc::registry::check(scenario, src) {
        let ours = |field: &str| {
            cclab_flows.iter().any(|i| {
                let p = format!("flows[{i}]");
                field == p || field.starts_with(&format!("{p}."))
            })
        };
        for mut x in e.0.into_iter().filter(|x| ours(&x.field) || !x.field.starts_with("flows[")) {
            if x.field.ends_with("].scheme") {
                x.message += &format!(
                    " In the emulator also: `{KERNEL_PREFIX}<name>` for Linux TCP (e.g. `kernel:cubic`) and \
                     `{WRAPPER_PREFIX}<file.toml>` for external programs."
                );
            }
            errs.push(x);
        }
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(ScenarioErrors(errs))
    }
}
