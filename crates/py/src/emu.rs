//! The emulator engine from Python: `run_emu` takes the same arguments as `run` and returns the
//! same dict (same packet records, same metrics code), with `engine = "emu"` and the emulator's
//! own figures (timing error, device drops, per-flow application goodput) added to `stats`.

use crate::{errors, output, overrides, progress, INLINE_FILE};
use cclab_core::scenario::{attribute_to_overrides, merge_overrides, Scenario, ScenarioErrors, OVERRIDES_FILE};
use cclab_emu::{EmuError, EmuOptions, EmuOutput};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::{Path, PathBuf};

/// Adds `run_emu` and `validate_emu` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_emu, m)?)?;
    m.add_function(wrap_pyfunction!(validate_emu, m)?)
}

/// Reads a scenario as the emulator reads it (kernel and wrapper schemes allowed). Wrapper
/// paths resolve against the scenario file's folder, or the working directory for a dict.
fn load(source: &str, is_path: bool, overrides_json: &str) -> Result<(Scenario, PathBuf), ScenarioErrors> {
    let overrides = overrides::json_to_table(overrides_json, OVERRIDES_FILE)?;
    if is_path {
        let path = Path::new(source);
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok((cclab_emu::load_scenario(path, &overrides)?, base))
    } else {
        let mut table = overrides::json_to_table(source, INLINE_FILE)?;
        merge_overrides(&mut table, &overrides)?;
        let base = std::env::current_dir().unwrap_or_default();
        let s = cclab_emu::parse_scenario("", INLINE_FILE, &table, &base)
            .map_err(|e| attribute_to_overrides(e, &overrides))?;
        Ok((s, base))
    }
}

/// Validates a scenario for the emulator; returns it as TOML with every default filled in.
#[pyfunction]
#[pyo3(signature = (source, is_path, overrides_json = "{}"))]
pub fn validate_emu(py: Python<'_>, source: &str, is_path: bool, overrides_json: &str) -> PyResult<String> {
    let (scenario, _) = load(source, is_path, overrides_json).map_err(|e| errors::scenario_error(py, &e))?;
    Ok(scenario.to_toml())
}

/// Runs a scenario on the emulator, in real time (needs root). The GIL is released while it
/// runs; every 250 ms it is taken back to call `progress(run_ns, duration_ns)` and to check for
/// signals, so Ctrl-C stops the run — after everything it created is removed — with
/// `KeyboardInterrupt`. `trace_ns`: the sender trace's interval, as for `run`. `pcap`: a
/// pcapng file to capture the real packets at the senders' device into (`cclab_emu::capture`;
/// `stats["pcap_packets"]` counts them); it exists only once the run completed.
/// `tolerance_us`: how far before or after its model time a packet may leave
/// (`EmuOptions::tolerance_us`; None: the link's default, `cclab_emu::timing::tolerance_ns`).
#[pyfunction]
#[pyo3(signature = (source, is_path, overrides_json = "{}", log_packets = false, progress = None, trace_ns = None, pcap = None, tolerance_us = None))]
#[allow(clippy::too_many_arguments)]
pub fn run_emu<'py>(
    py: Python<'py>,
    source: &str,
    is_path: bool,
    overrides_json: &str,
    log_packets: bool,
    progress: Option<Py<PyAny>>,
    trace_ns: Option<u64>,
    pcap: Option<PathBuf>,
    tolerance_us: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let (scenario, base_dir) = load(source, is_path, overrides_json).map_err(|e| errors::scenario_error(py, &e))?;
    let opts = EmuOptions { log_packets, base_dir, trace: trace_ns, pcap, tolerance_us, ..EmuOptions::default() };
    let duration_ns = scenario.duration.ns();
    let (outcome, stopped_by) =
        progress::run_detached(py, progress, duration_ns, false, |hook| cclab_emu::run(&scenario, &opts, hook));
    match outcome {
        Ok(out) => {
            warn(py, &out)?;
            let captured = opts.pcap.is_some().then_some(out.emu.captured);
            let d = to_dict(py, &scenario, out)?;
            if let Some(n) = captured {
                d.get_item("stats")?.expect("to_dict sets stats").set_item("pcap_packets", n)?;
            }
            Ok(d)
        }
        Err(EmuError::Interrupted(m)) => Err(stopped_by.unwrap_or_else(|| errors::interrupted(&m))),
        Err(EmuError::Scenario(e)) => Err(errors::scenario_error(py, &e)),
        Err(e) => Err(errors::simulation_error(py, &e.to_string())),
    }
}

/// Each of the run's warnings (`EmuStats::warnings`) as a Python RuntimeWarning.
fn warn(py: Python<'_>, out: &EmuOutput) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
    for w in out.emu.warnings() {
        PyErr::warn(py, &category, &std::ffi::CString::new(w).expect("no NUL"), 1)?;
    }
    Ok(())
}

fn to_dict<'py>(py: Python<'py>, scenario: &Scenario, out: EmuOutput) -> PyResult<Bound<'py, PyDict>> {
    let EmuOutput { run, emu } = out;
    let d = output::to_dict(py, scenario, run)?;
    d.set_item("engine", "emu")?;
    let stats = d.get_item("stats")?.expect("to_dict sets stats").cast_into::<PyDict>()?;
    for (name, p) in [("data", &emu.forward), ("ack", &emu.reverse)] {
        // |arrival - model arrival| of every packet written: the emulator's timing error (a
        // wake-up releases packets up to the tolerance early as well as late, so the figures
        // are of the absolute error; the keys keep their names); and the earliest write.
        stats.set_item(format!("{name}_late_p50_us"), p.error_quantile_us(0.5))?;
        stats.set_item(format!("{name}_late_p99_us"), p.error_quantile_us(0.99))?;
        stats.set_item(format!("{name}_late_max_us"), p.error_quantile_us(1.0))?;
        stats.set_item(format!("{name}_early_max_us"), p.early_max_ns as f64 / 1e3)?;
        stats.set_item(format!("{name}_device_drops"), p.device_drops)?;
        stats.set_item(format!("{name}_unclassified"), p.unclassified)?;
        // How long kernel TCP segments waited in the sending host before the emulator read them.
        stats.set_item(format!("{name}_input_wait_p99_ms"), p.input_wait_quantile_ms(0.99))?;
    }
    stats.set_item("realtime", emu.forward.realtime)?;
    // What the emulator cost: its path threads (forwarding, and the receiving kernels' work
    // done inside their TUN writes) and the whole process (kernel TCP endpoints included), in
    // % of one CPU over the run; and the timing error it allowed itself (either way) to save
    // wake-ups.
    stats.set_item("emu_path_cpu_pct", emu.path_cpu_pct())?;
    stats.set_item("emu_process_cpu_pct", emu.process_cpu_pct())?;
    stats.set_item("emu_path_cpu_s", emu.path_cpu_ns() as f64 / 1e9)?;
    stats.set_item("emu_tolerance_us", emu.tolerance_ns as f64 / 1e3)?;
    // Whether the endpoints shared the path thread's CPU (`cclab_emu::Cpus`).
    stats.set_item("emu_one_cpu", emu.one_cpu)?;
    // The forwarding ceiling measured at start-up (Mbit/s of 1500-byte packets, one CPU).
    stats.set_item("emu_capacity_mbps", emu.capacity.mbps())?;
    // Drops inside the kernels at the TUN devices, never seen by the link model (should be 0).
    stats.set_item("tun_sender_tx_dropped", emu.sender_tun.tx_dropped)?;
    stats.set_item("tun_receiver_rx_dropped", emu.receiver_tun.rx_dropped)?;
    stats.set_item("emu_unseen_drops", emu.unseen_drops())?;
    // What the run warned of, kept with it (meta.json) for whoever reads it later.
    stats.set_item("emu_warnings", emu.warnings())?;
    stats.set_item("setup_secs", emu.setup_secs)?;
    // Per flow (None where it does not apply): the receiving application's goodput, and for
    // kernel flows the kernel's own RTT figures from TCP_INFO.
    let (goodput, srtt, min_rtt) = (PyList::empty(py), PyList::empty(py), PyList::empty(py));
    for f in &emu.flows {
        goodput.append((f.app.bytes > 0).then(|| f.app.goodput_mbps()))?;
        srtt.append(f.tcp.median_srtt_us().map(|us| us / 1e3))?;
        min_rtt.append((!f.tcp.samples.is_empty()).then(|| f.tcp.min_rtt_us() as f64 / 1e3))?;
    }
    stats.set_item("app_goodput_mbps", goodput)?;
    stats.set_item("tcp_srtt_median_ms", srtt)?;
    stats.set_item("tcp_min_rtt_ms", min_rtt)?;
    Ok(d)
}
