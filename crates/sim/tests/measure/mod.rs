//! Measurements over a packet log, shared by the behavioural tests of LEDBAT, PCC and Sprout.
#![allow(dead_code, unused_imports)]
use cclab_core::{Fate, PacketKind, PacketRecord};
use cclab_sim::RunOutput;

pub use cclab_core::time::{MS, SEC};

/// Every delivered data packet of the run.
pub fn delivered(out: &RunOutput) -> Vec<PacketRecord> {
    let log = out.packets.as_ref().expect("run with the packet log");
    (0..log.len()).map(|i| log.get(i)).filter(|r| r.kind == PacketKind::Data && r.fate == Fate::Delivered).collect()
}

/// Mbit/s of `flow` (every flow if `None`) delivered in [t0, t1), wire bytes.
pub fn throughput_mbps(pkts: &[PacketRecord], flow: Option<u32>, t0: u64, t1: u64) -> f64 {
    let bytes: u64 = pkts
        .iter()
        .filter(|r| flow.is_none_or(|f| r.flow == f) && r.arrived >= t0 && r.arrived < t1)
        .map(|r| r.size as u64)
        .sum();
    bytes as f64 * 8.0 / ((t1 - t0) as f64 / 1e9) / 1e6
}

/// Time in the bottleneck queue (dequeue − enqueue), ms, of `flow`'s packets (all if `None`)
/// that arrived in [t0, t1).
pub fn sojourn_ms(pkts: &[PacketRecord], flow: Option<u32>, t0: u64, t1: u64) -> Vec<f64> {
    pkts.iter()
        .filter(|r| flow.is_none_or(|f| r.flow == f) && r.arrived >= t0 && r.arrived < t1)
        .map(|r| (r.dequeued - r.enqueued) as f64 / 1e6)
        .collect()
}

/// Queueing delay as the metrics define it (one-way delay − the flow's minimum one-way delay),
/// ms, of packets that arrived in [t0, t1).
pub fn queueing_delay_ms(pkts: &[PacketRecord], flow: u32, t0: u64, t1: u64) -> Vec<f64> {
    let min = pkts.iter().filter(|r| r.flow == flow).map(|r| r.arrived - r.sent).min().unwrap_or(0);
    pkts.iter()
        .filter(|r| r.flow == flow && r.arrived >= t0 && r.arrived < t1)
        .map(|r| (r.arrived - r.sent - min) as f64 / 1e6)
        .collect()
}

/// Throughput of `flow` per `bin` over [t0, t1), Mbit/s.
pub fn binned_mbps(pkts: &[PacketRecord], flow: Option<u32>, t0: u64, t1: u64, bin: u64) -> Vec<f64> {
    let n = ((t1 - t0) / bin) as usize;
    let mut bytes = vec![0u64; n];
    for r in pkts.iter().filter(|r| flow.is_none_or(|f| r.flow == f) && r.arrived >= t0) {
        let i = ((r.arrived - t0) / bin) as usize;
        if i < n {
            bytes[i] += r.size as u64;
        }
    }
    bytes.iter().map(|b| *b as f64 * 8.0 / (bin as f64 / 1e9) / 1e6).collect()
}

/// The q-quantile (0..=1) by nearest rank; NaN for an empty sample.
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Coefficient of variation (standard deviation / mean).
pub fn cv(xs: &[f64]) -> f64 {
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64).sqrt() / m
}

/// The corners and a few interior points of the path ranges — rates 1 Mbit/s–1 Gbit/s,
/// RTTs 2–400 ms, buffers 2 packets–10 BDP, i.i.d. loss 0–10% — plus a Poisson link and a
/// cellular trace, as `[link]` bodies with a duration. Durations keep each run under about
/// 2 million packets, so that a scheme's whole sweep, run twice, takes a few seconds in release
/// mode.
pub fn sweep_paths() -> Vec<(String, &'static str)> {
    let trace = crate::common::test_data().join("traces/Verizon-LTE-short.down");
    let mut paths: Vec<(String, &'static str)> = [
        ("rate = \"1Mbps\"\ndelay = \"1ms\"\nqueue = \"2\"", "30s"),
        ("rate = \"1Mbps\"\ndelay = \"200ms\"\nqueue = \"10bdp\"\nloss = 0.1", "60s"),
        ("rate = \"1Gbps\"\ndelay = \"1ms\"\nqueue = \"10bdp\"", "2s"),
        ("rate = \"1Gbps\"\ndelay = \"200ms\"\nqueue = \"2\"\nloss = 0.05", "20s"),
        ("rate = \"1Gbps\"\ndelay = \"200ms\"\nqueue = \"1bdp\"\nloss = 0.001", "20s"),
        ("rate = \"100Mbps\"\ndelay = \"20ms\"\nqueue = \"1bdp\"\nloss = 0.01", "10s"),
        ("rate = \"10Mbps\"\ndelay = \"50ms\"\nqueue = \"0.5bdp\"\nloss = 0.1", "20s"),
        ("rate = \"20Mbps\"\ndelivery = \"poisson\"\ndelay = \"5ms\"\nqueue = \"3bdp\"\nloss = 0.02", "10s"),
    ]
    .iter()
    .map(|(l, d)| (l.to_string(), *d))
    .collect();
    paths.push((format!("trace = {:?}\ndelay = \"30ms\"\nqueue = \"2\"", trace.display().to_string()), "30s"));
    paths
}

/// Runs `flow` (a `[[flows]]` body) over every sweep path: each run must complete without a
/// panic, conserve packets, deliver data, and reproduce itself exactly from the same seed.
pub fn sweep(flow: &str) {
    for (link, duration) in sweep_paths() {
        let text = format!("duration = \"{duration}\"\nseed = 3\n[link]\n{link}\n[[flows]]\n{flow}\n");
        let s = crate::common::scenario(&text);
        let a = crate::common::run(&s, false);
        crate::common::assert_conserved(&a);
        assert!(a.metrics.total.packets_delivered > 0, "nothing delivered on\n{text}");
        eprintln!(
            "{}: {} packets delivered, {:.1} Mbit/s, loss {:.2} %, {:.3} s wall",
            link.lines().next().unwrap_or(""),
            a.metrics.total.packets_delivered,
            a.metrics.total.throughput_mbps,
            a.metrics.total.loss_pct,
            a.stats.wall_secs
        );
        let b = crate::common::run(&s, false);
        assert_eq!(format!("{:?}", a.metrics), format!("{:?}", b.metrics), "not deterministic on\n{text}");
        assert_eq!(a.stats.events, b.stats.events);
    }
}
