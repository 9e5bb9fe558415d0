//! The link models deliver what they promise, measured end to end through the metrics.
mod common;
use common::*;

/// A fixed window far above the BDP keeps the queue non-empty, so the link is never idle.
fn saturating(link: &str, secs: u32) -> String {
    format!(
        r#"
        duration = "{secs}s"
        [link]
        {link}
        delay = "10ms"
        queue = "infinite"
        [[flows]]
        scheme = "fixed"
        cwnd = 400
        "#
    )
}

#[test]
fn constant_link_delivers_exactly_its_rate() {
    let out = run(&scenario(&saturating(r#"rate = "12Mbps""#, 20)), false);
    assert_conserved(&out);
    let tput = out.metrics.total.throughput_mbps;
    // Back-to-back 1500-byte packets at 12 Mbit/s: one per ms exactly; the first-to-last
    // delivery span holds n−1 gaps for n packets, so the estimate is exact up to 1/n.
    assert!((tput - 12.0).abs() < 12.0 * 1e-3, "throughput {tput}");
    assert!((out.metrics.utilisation - 1.0).abs() < 2e-3, "utilisation {}", out.metrics.utilisation);
}

#[test]
fn poisson_link_averages_its_nominal_rate() {
    let out = run(
        &scenario(&saturating(
            r#"rate = "12Mbps"
        delivery = "poisson""#,
            60,
        )),
        false,
    );
    assert_conserved(&out);
    let tput = out.metrics.total.throughput_mbps;
    // 60 s at 1000 opportunities/s: 60 000 draws; the count's relative s.d. is
    // 1/sqrt(60000) ≈ 0.4%, so 2% is five sigmas.
    assert!((tput - 12.0).abs() < 12.0 * 0.02, "throughput {tput}");
}

#[test]
fn trace_link_matches_the_traces_rate() {
    for name in ["12mbps.trace", "TMobile-LTE-short.down"] {
        let path = shared_data().join("traces").join(name);
        let trace = cclab_engine::delivery::Trace::load(&path).unwrap();
        let out = run(&scenario(&saturating(&format!("trace = {:?}", path.display().to_string()), 30)), false);
        assert_conserved(&out);
        let m = &out.metrics;
        // The link is saturated, so it carries every opportunity: throughput equals the trace's
        // capacity over the same span (exact count of opportunities), to within one packet.
        let t = &m.total;
        let span = (t.last_delivery - t.first_delivery) as f64 / 1e9;
        let cap = trace.capacity_bits(t.first_delivery, t.last_delivery) / 1e6 / span;
        assert!((t.throughput_mbps - cap).abs() < cap * 0.01, "{name}: {} vs {cap}", t.throughput_mbps);
        assert!(m.utilisation > 0.99, "{name}: utilisation {}", m.utilisation);
    }
}

#[test]
fn fixed_window_below_bdp_gets_w_over_rtt() {
    // 100 Mbit/s, 40 ms RTT: BDP ≈ 333 packets; W = 50 packets gives 50·1500·8/0.04 = 15 Mbit/s
    // (plus serialisation of one packet, 0.12 ms, in the RTT).
    let out = run(
        &scenario(
            r#"
            duration = "20s"
            [link]
            rate = "100Mbps"
            delay = "20ms"
            queue = "1bdp"
            [[flows]]
            scheme = "fixed"
            cwnd = 50
            "#,
        ),
        false,
    );
    assert_conserved(&out);
    let rtt = 0.040 + 1500.0 * 8.0 / 100e6;
    let expect = 50.0 * 1500.0 * 8.0 / rtt / 1e6;
    let got = out.metrics.total.throughput_mbps;
    assert!((got - expect).abs() < expect * 0.01, "{got} vs {expect}");
    assert_eq!(out.metrics.total.packets_dropped, 0);
}

#[test]
fn droptail_bounds_the_queue_and_random_loss_matches_p() {
    let out = run(
        &scenario(
            r#"
            duration = "30s"
            [link]
            rate = "12Mbps"
            delay = "10ms"
            queue = "20"
            loss = 0.05
            [[flows]]
            scheme = "fixed"
            cwnd = 200
            "#,
        ),
        true,
    );
    assert_conserved(&out);
    let log = out.packets.as_ref().unwrap();
    let mut random = 0u64;
    let mut offered = 0u64;
    let mut max_sojourn = 0u64;
    for i in 0..log.len() {
        let r = log.get(i);
        if r.kind != cclab_core::PacketKind::Data {
            continue;
        }
        offered += 1;
        random += u64::from(r.fate == cclab_core::Fate::DropLoss);
        if r.fate == cclab_core::Fate::Delivered {
            max_sojourn = max_sojourn.max(r.dequeued - r.enqueued);
        }
    }
    let p = random as f64 / offered as f64;
    // ~30 000 packets: s.d. of p̂ is sqrt(.05·.95/30000) ≈ 0.13%; allow 0.6%.
    assert!((p - 0.05).abs() < 0.006, "random loss {p}");
    // 20 packets in the queue, including the one in service, at 1 ms each.
    assert!(max_sojourn <= 20 * 1_000_000, "sojourn {max_sojourn}");
    assert!(max_sojourn >= 19 * 1_000_000, "the queue never filled: {max_sojourn}");
}

#[test]
fn receive_window_caps_bytes_in_flight() {
    // A window-unlimited flow held to rwnd = 100 packets on a 12 Mbit/s, 40 ms RTT path:
    // BDP = 40 packets, so 60 packets queue and the queueing delay is 60 ms.
    let out = run(
        &scenario(
            r#"
            duration = "20s"
            [link]
            rate = "12Mbps"
            delay = "20ms"
            queue = "infinite"
            [[flows]]
            scheme = "fixed"
            cwnd = 10000
            rwnd = "144800B"
            "#,
        ),
        false,
    );
    assert_conserved(&out);
    let q = out.metrics.total.queueing_p95_ms;
    assert!((q - 60.0).abs() < 2.0, "queueing p95 {q} ms");
    assert_eq!(out.metrics.total.packets_dropped, 0);
}
