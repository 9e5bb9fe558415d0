//! Simulator speed and memory: the foundation's performance targets.
//!
//!     cargo bench -p cclab-sim --bench sim_engine
//!
//! Prints, each measured in this one process:
//! 1. events per second on one core for a 100-flow Cubic dumbbell (target ≥ 10 M/s);
//! 2. wall time of "1 Cubic flow, 100 Mbit/s, 20 ms RTT, 1 BDP buffer, 60 s", packet log off
//!    (target < 1 s);
//! 3. peak resident memory after a 60 s and then a 600 s run of the same single-flow path: with
//!    the packet log off it must not grow with packets delivered.
//!
//! `CCLAB_BENCH_TRACE=10ms` (or `ack`) runs every scenario with the sender trace on at that
//! interval (`--trace`), to measure what tracing costs; unset, tracing is off as by default.
//!
//! An "event" is one packet hop out of a delay line or the bottleneck, one timer firing, or one
//! flow start/stop (the units ns-3 counts as scheduled events).

use std::time::Instant;

fn scenario(text: &str) -> cclab_core::Scenario {
    cclab_sim::parse_scenario(text, "bench.toml", &toml::Table::new()).unwrap_or_else(|e| panic!("{e}"))
}

/// The trace interval `CCLAB_BENCH_TRACE` asks for, ns (None: unset, no trace).
fn trace_interval() -> Option<u64> {
    let v = std::env::var("CCLAB_BENCH_TRACE").ok()?;
    if v == "ack" {
        return Some(0);
    }
    Some(cclab_core::Dur::parse(&v).unwrap_or_else(|e| panic!("CCLAB_BENCH_TRACE={v}: {e}")).ns())
}

fn run(s: &cclab_core::Scenario) -> cclab_sim::RunOutput {
    let opts = cclab_sim::RunOptions { trace: trace_interval(), ..Default::default() };
    cclab_sim::run(s, &opts, &mut |_| Ok(())).expect("bench run")
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn single_flow(duration: &str) -> String {
    format!(
        r#"
        duration = "{duration}"
        [link]
        rate = "100Mbps"
        delay = "10ms"
        queue = "1bdp"
        [[flows]]
        scheme = "cubic"
        "#
    )
}

fn main() {
    let dumbbell = scenario(
        r#"
        duration = "30s"
        [link]
        rate = "1Gbps"
        delay = "10ms"
        queue = "1bdp"
        [[flows]]
        scheme = "cubic"
        count = 100
        every = "10ms"
        "#,
    );
    // The best of three by wall time (same events each run): the rate, and the time itself,
    // which compares versions whose engines count events differently (README, "The 100-flow
    // dumbbell").
    let best = (0..3).map(|_| run(&dumbbell).stats).min_by(|a, b| a.wall_secs.total_cmp(&b.wall_secs)).expect("3 runs");
    println!(
        "100-flow Cubic dumbbell, 1 Gbit/s, 30 s: {:.1} M events/s ({:.2} M events in {:.3} s; best of 3; target >= 10)",
        best.events as f64 / best.wall_secs / 1e6,
        best.events as f64 / 1e6,
        best.wall_secs
    );

    let single = scenario(&single_flow("60s"));
    let mut walls = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = run(&single);
        walls.push(t.elapsed().as_secs_f64());
        assert!(out.metrics.utilisation > 0.9);
    }
    walls.sort_by(f64::total_cmp);
    println!("1 Cubic flow, 100 Mbit/s, 20 ms RTT, 1 BDP, 60 s: {:.3} s wall (median of 5; target < 1 s)", walls[2]);

    let short = run(&single);
    let rss_short = peak_rss_mib();
    let long = run(&scenario(&single_flow("600s")));
    let rss_long = peak_rss_mib();
    println!(
        "peak RSS after 60 s ({} packets): {:.1} MiB; after 600 s ({} packets): {:.1} MiB",
        short.metrics.total.packets_delivered, rss_short, long.metrics.total.packets_delivered, rss_long
    );
}
