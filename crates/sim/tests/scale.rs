//! Issue 12 at small scale: the per-flow congestion statistics on paths whose sawtooth can be
//! worked out by hand, and memory that does not grow with simulated time.

mod common;
use common::{run, scenario};

/// One NewReno flow, 12 Mbit/s (1000 packets/s), 20 ms base RTT, a 20-packet drop-tail buffer.
/// BDP = 20 packets, so the window peaks at W ≈ BDP + buffer = 40 packets and halves to 20; in
/// congestion avoidance it grows one packet per RTT, so a cycle lasts ~20 RTTs, each RTT being
/// 20–40 ms as the queue fills: 0.4–0.8 s, i.e. 38–75 halvings in 30 s. The full queue drops
/// the one extra packet of each RTT's growth, and the sender learns of the first drop about one
/// RTT later, after growing once more: two drops per halving in congestion avoidance, plus
/// slow start's overshoot (tens of packets in one epoch) spread over the ~45 events.
#[test]
fn newreno_sawtooth_counts_its_halvings() {
    let out = run(
        &scenario(
            r#"
            duration = "30s"
            [link]
            rate = "12Mbps"
            delay = "10ms"
            queue = 20
            [[flows]]
            scheme = "newreno"
            "#,
        ),
        false,
    );
    let f = &out.metrics.flows[0];
    let events = f.congestion_events.expect("the simulator knows its senders");
    assert!((38..=75).contains(&events), "{events} halvings");
    let per = f.losses_per_event();
    assert!((1.8..3.5).contains(&per), "{per} losses per halving");
    // The Mathis constant from the halving rate: throughput·RTT/MSS·√p, p = halvings/packets.
    // Its theoretical value for a periodic sawtooth is √(3/2) ≈ 1.22 (with the average RTT).
    let p = events as f64 / f.packets_sent as f64;
    let rtt_avg = 0.020 + 0.010; // base + mean queueing delay of a half-full buffer
    let c = f.throughput_mbps * 1e6 / 8.0 * rtt_avg / 1448.0 * p.sqrt();
    assert!((0.9..1.6).contains(&c), "C = {c}");
    // Pairs of drops one RTT apart, once a cycle: neither periodic (−1) nor extremely bursty.
    assert!(f.loss_burstiness > -0.5 && f.loss_burstiness < 0.5, "B = {}", f.loss_burstiness);
    // The total row adds the events up.
    assert_eq!(out.metrics.total.congestion_events, Some(events));
}

/// The simulator streams the Jain buckets (its records come in arrival order) and keeps the
/// configured series bin while the run fits the series' budget: the tables read as before.
#[test]
fn long_runs_keep_the_configured_bins_and_stream_jain() {
    let text = |d: &str| {
        format!(
            r#"
            duration = "{d}"
            [link]
            rate = "100Mbps"
            delay = "10ms"
            queue = "3MB"
            [[flows]]
            scheme = "newreno"
            count = 10
            every = "100ms"
            "#
        )
    };
    let out = run(&scenario(&text("20s")), false);
    assert_eq!(out.metrics.series_bin, 500_000_000);
    // 40 bins of 500 ms per flow, less those before the flow's first data arrive. Flow i starts
    // at 0.1·i s; its first data arrive after the opening handshake and the first packet's trip
    // (30 ms on an empty path), and at most ~0.5 s later when its SYN and first window each
    // queue behind the earlier flows' standing queue (up to 240 ms in 3 MB at 100 Mbit/s).
    let rows = |f: u32| out.metrics.series.iter().filter(|r| r.flow == f).count();
    let per_flow: Vec<usize> = (0..10).map(rows).collect();
    println!("series rows per flow {per_flow:?}");
    assert_eq!(per_flow[0], 40, "flow 0 starts on an empty path");
    for (i, &n) in per_flow.iter().enumerate() {
        let start_ms = 100 * i;
        let (fewest, most) = (40 - (start_ms + 500) / 500, 40 - (start_ms + 30) / 500);
        assert!((fewest..=most).contains(&n), "flow {i}: {n} rows, {per_flow:?}");
    }
    // Streamed Jain buckets: one per 100 ms from the first delivery's to the last's (at 20 s).
    assert!((195..=201).contains(&out.metrics.jain.len()), "{}", out.metrics.jain.len());
}
