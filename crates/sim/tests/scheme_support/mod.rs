//! Helpers shared by the behavioural tests of the scheme library (bbr, copa, vegas).
#![allow(dead_code)]
use cclab_core::scenario::Scenario;
use cclab_core::{Fate, PacketKind};
use cclab_sim::{CcTrace, RunOptions, RunOutput};

/// Runs with the packet log and the controller trace.
pub fn run_traced(s: &Scenario) -> (RunOutput, CcTrace) {
    cclab_sim::run_traced(s, &RunOptions { log_packets: true, ..Default::default() }, &mut |_| Ok(()))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// One delivered data packet: (flow, enqueue time, sojourn in the bottleneck queue), ns.
pub fn sojourns(out: &RunOutput) -> Vec<(u32, u64, u64)> {
    let log = out.packets.as_ref().expect("run with the packet log");
    (0..log.len())
        .map(|i| log.get(i))
        .filter(|r| r.kind == PacketKind::Data && r.fate == Fate::Delivered)
        .map(|r| (r.flow, r.enqueued, r.dequeued - r.enqueued))
        .collect()
}

/// Delivered data bytes (wire size) of `flow` (all flows if None) arriving in [t0, t1).
pub fn delivered_bytes(out: &RunOutput, flow: Option<u32>, t0: u64, t1: u64) -> u64 {
    let log = out.packets.as_ref().expect("run with the packet log");
    (0..log.len())
        .map(|i| log.get(i))
        .filter(|r| r.kind == PacketKind::Data && r.fate == Fate::Delivered)
        .filter(|r| flow.is_none_or(|f| r.flow == f) && r.arrived >= t0 && r.arrived < t1)
        .map(|r| r.size as u64)
        .sum()
}

/// The q-quantile (0..=1) of a sample, by nearest rank.
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Runs `scheme` (with its option lines) over a grid of paths spanning the issue's ranges —
/// rates 1 Mbit/s–1 Gbit/s, RTTs 2–400 ms, buffers 2 packets–10 BDP, loss 0–10 % — and checks
/// that every run completes (no panic), conserves packets, delivers something, and that the
/// same seed reproduces it exactly. (Not that every flow gets something: on 1 Mbit/s with a
/// 2-packet buffer a second flow may legitimately lose every packet to the first.) Durations keep each run to a few hundred thousand packets.
pub fn sweep(scheme_lines: &str) {
    // (rate, one-way delay, queue, loss, duration): corners and a few interior points, chosen
    // so that each parameter reaches both ends of its range at least once.
    let grid: &[(&str, &str, &str, f64, &str)] = &[
        ("1Mbps", "1ms", "2", 0.0, "20s"),
        ("1Mbps", "200ms", "10bdp", 0.1, "30s"),
        ("10Mbps", "20ms", "1bdp", 0.01, "10s"),
        ("50Mbps", "5ms", "2", 0.05, "4s"),
        ("100Mbps", "100ms", "0.5bdp", 0.0, "6s"),
        ("1Gbps", "1ms", "10bdp", 0.0, "1s"),
        ("1Gbps", "50ms", "2", 0.1, "1s"),
        ("1Gbps", "200ms", "1bdp", 0.001, "2s"),
    ];
    for &(rate, delay, queue, loss, duration) in grid {
        let text = format!(
            r#"
            duration = "{duration}"
            seed = 3
            [link]
            rate = "{rate}"
            delay = "{delay}"
            queue = "{queue}"
            loss = {loss}
            [[flows]]
            {scheme_lines}
            count = 2
            every = "100ms"
            "#
        );
        let s = crate::common::scenario(&text);
        let a = crate::common::run(&s, false);
        let label = format!("{scheme_lines} on {rate}, {delay}, queue {queue}, loss {loss}");
        crate::common::assert_conserved(&a);
        assert!(a.stats.data_delivered > 0, "{label}: nothing delivered");
        let b = crate::common::run(&s, false);
        assert_eq!(format!("{:?}", a.metrics), format!("{:?}", b.metrics), "{label}: not deterministic");
        assert_eq!(a.stats.events, b.stats.events, "{label}: not deterministic");
    }
}
