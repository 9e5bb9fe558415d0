//! Whole-path behaviour of the foundation's controllers.
mod common;
use common::*;

fn lone_cubic(rate: &str, delay: &str) -> cclab_sim::RunOutput {
    run(
        &scenario(&format!(
            r#"
            duration = "30s"
            [link]
            rate = "{rate}"
            delay = "{delay}"
            queue = "1bdp"
            [[flows]]
            scheme = "cubic"
            "#
        )),
        true,
    )
}

#[test]
fn one_cubic_flow_fills_12_and_46_mbps_links_within_the_buffer() {
    for (rate, delay, limit_pkts) in [("12Mbps", "10ms", 20u64), ("46Mbps", "10ms", 77)] {
        let out = lone_cubic(rate, delay);
        assert_conserved(&out);
        let m = &out.metrics;
        // A 1-BDP buffer lets a loss-based flow keep the link busy through its backoff
        // (Wmax = 2 BDP, β = 0.7 → 1.4 BDP ≥ 1 BDP); slow start and the first loss cost
        // a little, so 95% over the run.
        assert!(m.utilisation >= 0.95, "{rate}: utilisation {}", m.utilisation);
        let log = out.packets.as_ref().unwrap();
        let rate_bps = cclab_core::Rate::parse(rate).unwrap().bits_per_sec();
        let per_packet = 1500 * 8 * 1_000_000_000 / rate_bps;
        let max_sojourn = (0..log.len())
            .map(|i| log.get(i))
            .filter(|r| r.fate == cclab_core::Fate::Delivered && r.kind == cclab_core::PacketKind::Data)
            .map(|r| r.dequeued - r.enqueued)
            .max()
            .unwrap();
        assert!(max_sojourn <= limit_pkts * per_packet + 1, "{rate}: queue exceeded its buffer: {max_sojourn}");
    }
}

/// Mathis et al.: throughput = (MSS/RTT)·C/√p with C = √(3/2) for periodic loss and
/// per-packet ACKs. The link is fast enough that loss, not capacity, limits the flow.
#[test]
fn newreno_under_random_loss_follows_mathis() {
    for (p, secs) in [(0.001f64, 400), (0.01, 200)] {
        let out = run(
            &scenario(&format!(
                r#"
                duration = "{secs}s"
                [link]
                rate = "200Mbps"
                delay = "50ms"
                queue = "infinite"
                loss = {p}
                [[flows]]
                scheme = "newreno"
                "#
            )),
            false,
        );
        assert_conserved(&out);
        let t = &out.metrics.total;
        let goodput = t.throughput_mbps * 1e6 / 8.0 * (1448.0 / 1500.0);
        // The link never queues (the window stays far below 200 Mbit/s × 100 ms), so the
        // RTT is the base RTT plus one serialisation.
        let rtt = 0.100 + 1500.0 * 8.0 / 200e6;
        let mathis = 1448.0 / rtt * (1.5f64).sqrt() / p.sqrt();
        let err = (goodput - mathis).abs() / mathis;
        assert!(err < 0.20, "p={p}: {goodput:.0} B/s vs Mathis {mathis:.0} B/s ({:.0}% off)", err * 100.0);
    }
}
