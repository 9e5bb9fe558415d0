//! Whole-path behaviour of TCP Vegas (the `vegas` scheme).
mod common;
mod scheme_support;
use common::*;
use scheme_support::*;

use cclab_core::time::SEC;

/// Mean packets waiting ahead of each delivered packet at the bottleneck from `t0` on (its
/// sojourn less its own transmission), per flow and pooled.
fn queue_ahead(out: &cclab_sim::RunOutput, rate_bps: f64, t0: u64) -> Vec<f64> {
    let pkt_ns = 1500.0 * 8.0 / rate_bps * 1e9;
    sojourns(out).into_iter().filter(|&(_, t, _)| t >= t0).map(|(_, _, s)| (s as f64 / pkt_ns - 1.0).max(0.0)).collect()
}

#[test]
fn one_vegas_flow_keeps_between_alpha_and_beta_packets_queued() {
    let (out, trace) = run_traced(&scenario(
        r#"
        duration = "60s"
        [link]
        rate = "20Mbps"
        delay = "20ms"
        queue = "4bdp"
        # Hosts that never stall: a stall (`[hosts] stalls`, 0.54 % of packets held 0.1–3 ms)
        # hands over the packets it held at once, their queue lifts a round's RTT samples, and
        # Vegas, which reads queueing from them, leaves its band for a round or two (diff 0..6
        # with stalls, 4 throughout without): the band is the algorithm's, tested on steady
        # hosts.
        [hosts]
        stalls = "0"
        [[flows]]
        scheme = "vegas"
        "#,
    ));
    assert_conserved(&out);
    let q = queue_ahead(&out, 20e6, 30 * SEC);
    let diff = trace.var("diff").unwrap();
    let late: Vec<f64> = trace.rows_of(0).filter(|&i| trace.t[i] >= 30 * SEC).map(|i| diff[i]).collect();
    println!(
        "queue ahead: mean {:.2} min {:.1} max {:.1}; Vegas diff {}..{}; drops {}",
        mean(&q),
        quantile(&q, 0.0),
        quantile(&q, 1.0),
        quantile(&late, 0.0),
        quantile(&late, 1.0),
        out.metrics.total.packets_dropped
    );
    // Linux's α = 2, β = 4: the window stops moving while 2 ≤ diff ≤ 4, where diff is the
    // truncated estimate cwnd·(rtt − baseRTT)/baseRTT of the flow's queued packets, rtt the
    // round's smallest sample. The truncation lets the queue that sample saw sit up to one
    // packet above β, and each delayed ACK releases a pair whose second packet queues behind
    // its first: one more. After the slow-start overshoot has been worked off (one packet per
    // RTT), the queue must stay in [α, β + 1] on average and under β + 2 for any packet.
    assert!(mean(&q) >= 2.0 && mean(&q) <= 5.0, "mean queue {:.2}", mean(&q));
    assert!(
        quantile(&q, 0.01) >= 1.0 && quantile(&q, 0.99) <= 6.0,
        "queue {:?}",
        (quantile(&q, 0.01), quantile(&q, 0.99))
    );
    assert!(late.iter().all(|&d| (2.0..=4.0).contains(&d)), "Vegas left its α..β band");
    // A delay-based flow alone with a deep buffer never loses a packet after slow start.
    let util = delivered_bytes(&out, None, 30 * SEC, 60 * SEC) as f64 * 8.0 / (20e6 * 30.0);
    assert!(util >= 0.99, "utilisation {util:.3}");
}

#[test]
fn vegas_sweep_determinism_conservation_no_panic() {
    sweep("scheme = \"vegas\"");
}
