//! LEDBAT's behaviour on whole paths: it keeps the queue near its delay target when alone, and
//! yields to a loss-based flow (the scavenger property, reference §17).
mod common;
mod measure;
use common::*;
use measure::*;

/// A lone LEDBAT flow on 10 Mbit/s × 40 ms RTT with a buffer (250 ms) deeper than its target.
fn alone(variant: &str, target_ms: u32, secs: u64) -> cclab_sim::RunOutput {
    run(
        &scenario(&format!(
            r#"
            duration = "{secs}s"
            [link]
            rate = "10Mbps"
            delay = "20ms"
            queue = "208"
            [[flows]]
            scheme = "ledbat"
            variant = "{variant}"
            target_ms = {target_ms}
            "#
        )),
        true,
    )
}

#[test]
fn alone_it_holds_queueing_delay_near_the_target() {
    for (variant, target, secs) in [("rfc6817", 100, 40), ("libutp", 100, 40), ("rfc6817", 25, 30)] {
        let out = alone(variant, target, secs);
        assert_conserved(&out);
        let pkts = delivered(&out);
        let t0 = secs * SEC / 2;
        let t1 = secs * SEC;
        let q = sojourn_ms(&pkts, Some(0), t0, t1);
        let (p10, p50, p90) = (quantile(&q, 0.1), quantile(&q, 0.5), quantile(&q, 0.9));
        let tput = throughput_mbps(&pkts, Some(0), t0, t1);
        eprintln!("{variant} target {target} ms: queue p10/p50/p90 = {p10:.1}/{p50:.1}/{p90:.1} ms, {tput:.2} Mbit/s");
        let t = target as f64;
        assert!((p50 - t).abs() < 0.15 * t, "{variant}: median queue {p50} ms vs target {t}");
        assert!(tput > 9.0, "{variant}: a standing queue keeps the link busy: {tput}");
    }
}

/// LEDBAT alone from 0 s, a Cubic flow from 10 s, on a buffer deeper than LEDBAT's target: once
/// Cubic has filled the buffer beyond the target, LEDBAT must shrink to its minimum window.
#[test]
fn it_yields_to_a_cubic_flow() {
    for variant in ["rfc6817", "libutp"] {
        let out = run(
            &scenario(&format!(
                r#"
                duration = "50s"
                [link]
                rate = "10Mbps"
                delay = "20ms"
                queue = "208"
                [[flows]]
                scheme = "ledbat"
                variant = "{variant}"
                [[flows]]
                scheme = "cubic"
                start = "10s"
                "#
            )),
            true,
        );
        assert_conserved(&out);
        let pkts = delivered(&out);
        let before = throughput_mbps(&pkts, Some(0), 5 * SEC, 10 * SEC);
        // RFC 6817 yields at GAIN·|off_target| ≈ 1.3 packets per (250 ms) RTT, so from the ~90
        // packets it held alone it takes ~20 s to reach MIN_CWND: measure from 30 s.
        let (t0, t1) = (30 * SEC, 50 * SEC);
        let ledbat = throughput_mbps(&pkts, Some(0), t0, t1);
        let cubic = throughput_mbps(&pkts, Some(1), t0, t1);
        let share = ledbat / (ledbat + cubic);
        eprintln!(
            "{variant}: alone {before:.2} Mbit/s; with Cubic {ledbat:.2} vs {cubic:.2} Mbit/s (share {share:.3})"
        );
        // Alone it had the link; against Cubic, whose queue sits far above the 100 ms target,
        // LEDBAT shrinks to its minimum window (2 packets per ~250 ms RTT ≈ 0.1 Mbit/s, 1%).
        // "Well below half" is asserted as under 5%: five times that floor, a tenth of the
        // ~50% a TCP-friendly flow would take.
        assert!(before > 9.0, "{variant}: {before}");
        assert!(share < 0.05, "{variant}: LEDBAT kept {share:.3} of the link against Cubic");
        assert!(ledbat + cubic > 9.0, "the link stays busy: {}", ledbat + cubic);
    }
}

#[test]
fn sweep_is_deterministic_conserving_and_panic_free() {
    sweep("scheme = \"ledbat\"");
    sweep("scheme = \"ledbat\"\nvariant = \"libutp\"\ntarget_ms = 25");
}
