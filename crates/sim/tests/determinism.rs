mod common;
use common::*;

const SCENARIO: &str = r#"
    duration = "10s"
    seed = 7
    [link]
    rate = "20Mbps"
    delivery = "poisson"
    delay = "15ms"
    queue = "1bdp"
    loss = 0.01
    [[flows]]
    scheme = "cubic"
    count = 3
    every = "1s"
    [[flows]]
    scheme = "newreno"
    extra_rtt = "30ms"
    delayed_ack = true
"#;

#[test]
fn same_scenario_and_seed_give_identical_results() {
    let s = scenario(SCENARIO);
    let a = run(&s, true);
    let b = run(&s, true);
    assert_conserved(&a);
    // Debug formatting compares NaNs (empty bins) as equal, and every bit of every number.
    assert_eq!(format!("{:?}", a.metrics), format!("{:?}", b.metrics));
    assert_eq!(a.packets, b.packets);
    assert_eq!(a.stats.events, b.stats.events);
}

#[test]
fn another_seed_gives_another_run() {
    let a = run(&scenario(SCENARIO), false);
    let b = run(&scenario(&SCENARIO.replace("seed = 7", "seed = 8")), false);
    assert_ne!(format!("{:?}", a.metrics.total), format!("{:?}", b.metrics.total));
}
