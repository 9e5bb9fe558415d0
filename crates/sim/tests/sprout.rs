//! Sprout on a cellular trace: its receiver's forecast keeps the self-inflicted delay near the
//! 100 ms target while the sender still uses most of the varying capacity.
mod common;
mod measure;
use common::*;
use measure::*;

fn on_verizon(scheme: &str) -> cclab_sim::RunOutput {
    let trace = test_data().join("traces/Verizon-LTE-short.down");
    run(
        &scenario(&format!(
            r#"
            duration = "60s"
            [link]
            trace = {:?}
            delay = "20ms"
            queue = "infinite"
            [[flows]]
            scheme = "{scheme}"
            "#,
            trace.display().to_string()
        )),
        true,
    )
}

#[test]
fn sprout_keeps_delay_near_its_target_on_a_cellular_trace() {
    let sprout = on_verizon("sprout");
    let cubic = on_verizon("cubic");
    assert_conserved(&sprout);
    let s = &sprout.metrics.flows[0];
    let c = &cubic.metrics.flows[0];
    eprintln!(
        "sprout: utilisation {:.3}, {:.2} Mbit/s, p95 queueing delay {:.0} ms; cubic: {:.3}, p95 {:.0} ms",
        sprout.metrics.utilisation, s.throughput_mbps, s.queueing_p95_ms, cubic.metrics.utilisation, c.queueing_p95_ms
    );
    // Sprout aims at 100 ms with 95% confidence; its forecasts are conservative (5th percentile),
    // so the 95th percentile of queueing delay lands at or somewhat below the target. 150 ms
    // allows for the forecast's misses on the trace's abrupt drops, and stays two orders of
    // magnitude below a buffer-filling flow on the same link (Cubic: tens of seconds here).
    assert!(s.queueing_p95_ms < 150.0, "p95 queueing delay {} ms", s.queueing_p95_ms);
    assert!(s.queueing_p95_ms > 30.0, "a Sprout that never queues is not using its target: {}", s.queueing_p95_ms);
    assert!(c.queueing_p95_ms > 10.0 * s.queueing_p95_ms);
    // A reasonable share of the capacity: the paper reports Sprout using most of the link on the
    // Verizon LTE trace; 60% leaves room for the conservative forecast.
    assert!(sprout.metrics.utilisation > 0.6, "utilisation {}", sprout.metrics.utilisation);
}

#[test]
fn sweep_is_deterministic_conserving_and_panic_free() {
    sweep("scheme = \"sprout\"");
    // The agent's path through the receiver's delayed-ACK logic.
    sweep("scheme = \"sprout\"\ndelayed_ack = true");
}
