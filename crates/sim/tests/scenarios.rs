//! Every scenario shipped in scenarios/ validates and conserves packets.
mod common;
use common::*;

#[test]
fn every_shipped_scenario_conserves_packets() {
    let dir = repo_root().join("scenarios");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let mut s = cclab_sim::load_scenario(&path, &toml::Table::new()).unwrap_or_else(|e| panic!("{e}"));
        // Keep CI short: the first 20 s say as much about conservation as the whole run.
        s.duration = s.duration.min(cclab_core::Dur::from_millis(20_000));
        let out = run(&s, false);
        assert_conserved(&out);
        n += 1;
    }
    assert!(n >= 3, "expected the shipped scenarios in {}", dir.display());
}
