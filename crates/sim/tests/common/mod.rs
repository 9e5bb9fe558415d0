#![allow(dead_code)]
use cclab_core::scenario::Scenario;
use cclab_sim::{RunOptions, RunOutput};
use std::path::PathBuf;

pub fn scenario(toml: &str) -> Scenario {
    cclab_sim::parse_scenario(toml, "test.toml", &toml::Table::new()).unwrap_or_else(|e| panic!("{e}"))
}

pub fn run(s: &Scenario, log_packets: bool) -> RunOutput {
    cclab_sim::run(s, &RunOptions { log_packets, ..Default::default() }, &mut |_| Ok(()))
        .unwrap_or_else(|e| panic!("{e}"))
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The mahimahi traces the tests read, vendored in `crates/sim/tests/data/` (test fixtures, not
/// shipped in the package; the cellular ones are mahimahi's, GPL-3+, see the NOTICE there).
pub fn test_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Sent = delivered + dropped + still in flight, both in the engine's counters and in the
/// metrics computed from the records.
pub fn assert_conserved(out: &RunOutput) {
    let s = &out.stats;
    assert!(s.data_sent > 0, "nothing was sent");
    assert_eq!(s.data_sent, s.data_delivered + s.data_dropped + s.data_in_flight_end, "{s:?}");
    let t = &out.metrics.total;
    assert_eq!(t.packets_sent, s.data_sent);
    assert_eq!(t.packets_delivered, s.data_delivered);
    assert_eq!(t.packets_dropped, s.data_dropped);
}

/// A mahimahi trace file in the temporary folder, one opportunity time (ms) per line; removed
/// when the returned path is dropped.
pub fn trace_file(name: &str, ms: &[u64]) -> tempfile::TempPath {
    let text: String = ms.iter().map(|t| format!("{t}\n")).collect();
    let file = tempfile::Builder::new().prefix(&format!("cclab-{name}-")).suffix(".trace").tempfile().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file.into_temp_path()
}
