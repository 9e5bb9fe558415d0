//! Nimbus (reference §10): elasticity detection switches it to competitive mode against a
//! backlogged Cubic flow and back to delay mode when Cubic leaves.
mod common;
mod scheme_support;
use cclab_core::time::SEC;
use common::*;
use scheme_support::*;

/// The share of flow 0's trace rows in [t0, t1) in `mode`.
fn fraction_in(trace: &cclab_sim::CcTrace, mode: &str, t0: u64, t1: u64) -> f64 {
    let rows: Vec<usize> = trace.rows_of(0).filter(|&i| trace.t[i] >= t0 && trace.t[i] < t1).collect();
    rows.iter().filter(|&&i| trace.mode[i] == mode).count() as f64 / rows.len() as f64
}

#[test]
fn nimbus_competes_with_cubic_and_returns_to_delay_mode_when_it_leaves() {
    // 24 Mbit/s, 40 ms RTT, a 2-BDP buffer. Nimbus alone for 25 s, a backlogged Cubic flow
    // from 25 s to 60 s, Nimbus alone again until 100 s.
    let (out, trace) = run_traced(&scenario(
        r#"
        duration = "100s"
        [link]
        rate = "24Mbps"
        delay = "20ms"
        queue = "2bdp"
        [[flows]]
        scheme = "nimbus"
        [[flows]]
        scheme = "cubic"
        start = "25s"
        stop = "60s"
        "#,
    ));
    assert_conserved(&out);
    let col = |name: &str| &trace.vars.iter().find(|v| v.0 == name).unwrap().1;
    // The trace every 2 s (for a reader of `--nocapture`).
    for s in (0..100).step_by(2) {
        let i = trace.rows_of(0).find(|&i| trace.t[i] >= s * SEC).unwrap();
        println!(
            "{s:3} s {:12} eta {:6.2} elasticity {:5.2} rate {:6.2} Mbit/s z {:6.2} mu {:6.2}",
            trace.mode[i],
            col("eta")[i],
            col("elasticity")[i],
            col("rate")[i] * 8e-6,
            col("z")[i] * 8e-6,
            col("mu")[i] * 8e-6
        );
    }
    let alone = fraction_in(&trace, "delay", 5 * SEC, 25 * SEC);
    let against = fraction_in(&trace, "competitive", 40 * SEC, 60 * SEC);
    let after = fraction_in(&trace, "delay", 80 * SEC, 100 * SEC);
    let share = delivered_bytes(&out, Some(0), 40 * SEC, 60 * SEC) as f64
        / delivered_bytes(&out, None, 40 * SEC, 60 * SEC) as f64;
    println!("delay alone {alone:.2}, competitive vs cubic {against:.2}, delay after {after:.2}; share {share:.2}");
    assert_eq!(alone, 1.0, "Nimbus alone stays in delay mode");
    assert!(against > 0.7, "competitive only {against:.2} of the time against Cubic");
    assert!(after > 0.95, "delay mode only {after:.2} of the time after Cubic left");
    // Competing is what keeps Nimbus a share: its delay mode alone would back off to the floor
    // (5% of μ) against a buffer-filling flow.
    assert!(share > 0.3, "Nimbus's share against Cubic {share:.2}");
}
