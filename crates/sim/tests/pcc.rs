//! PCC Allegro and Vivace on whole paths: they keep the link busy under random loss, where a
//! loss-based TCP collapses, and Vivace settles near capacity with a small queue on a clean link.
mod common;
mod measure;
use common::*;
use measure::*;

fn lossy(scheme: &str) -> cclab_sim::RunOutput {
    // The stochastic-loss path of the Copa paper's Fig. 7 (reference targets C7): 12 Mbit/s,
    // 50 ms RTT, a 1-BDP buffer, 60 s, here at 1% i.i.d. loss.
    run(
        &scenario(&format!(
            r#"
            duration = "60s"
            [link]
            rate = "12Mbps"
            delay = "25ms"
            queue = "1bdp"
            loss = 0.01
            [[flows]]
            scheme = "{scheme}"
            "#
        )),
        true,
    )
}

#[test]
fn allegro_and_vivace_hold_the_link_under_one_percent_loss_where_cubic_collapses() {
    // Utilisation while "holding": from 20 s, after PCC's start-up (which under random loss
    // leaves STARTING early and climbs by probing), to the end.
    let (t0, t1) = (20 * SEC, 60 * SEC);
    let utilisation = |scheme: &str| {
        let out = lossy(scheme);
        assert_conserved(&out);
        let u = throughput_mbps(&delivered(&out), None, t0, t1) / 12.0;
        eprintln!("{scheme}: utilisation {u:.3} from 20 s (whole run {:.3})", out.metrics.utilisation);
        u
    };
    let cubic = utilisation("cubic");
    let allegro = utilisation("pcc-allegro");
    let vivace = utilisation("pcc-vivace");
    // Cubic treats each random loss as congestion: Mathis' bound at p = 1% and 50 ms RTT is
    // ~2.8 Mbit/s (23%). PCC's utilities tolerate it: Allegro's loss sigmoid only bites above 5%,
    // and Vivace's loss term 11.35·x·L costs less than the x^0.9 it gains up to ~5% loss. The
    // issue's 90% is the bar; measured: Allegro ~100% (it fills the buffer), Vivace ~93% (each
    // ~50-packet MI sees 0, 1 or 2 random losses, so its probes are noisy).
    assert!(cubic < 0.4, "Cubic should collapse under 1% loss: {cubic}");
    assert!(allegro >= 0.90, "Allegro: {allegro}");
    assert!(vivace >= 0.90, "Vivace: {vivace}");
}

#[test]
fn vivace_converges_on_a_clean_link_with_bounded_oscillation_and_a_small_queue() {
    let out = run(
        &scenario(
            r#"
            duration = "30s"
            [link]
            rate = "20Mbps"
            delay = "15ms"
            queue = "1bdp"
            [[flows]]
            scheme = "pcc-vivace"
            "#,
        ),
        true,
    );
    assert_conserved(&out);
    let pkts = delivered(&out);
    let (t0, t1) = (5 * SEC, 30 * SEC);
    let bins = binned_mbps(&pkts, Some(0), t0, t1, SEC);
    let (lo, hi) = (bins.iter().copied().fold(f64::MAX, f64::min), bins.iter().copied().fold(0.0, f64::max));
    let q = sojourn_ms(&pkts, Some(0), t0, t1);
    let p95 = quantile(&q, 0.95);
    eprintln!(
        "vivace: 1-s throughput {lo:.2}..{hi:.2} Mbit/s (mean {:.2}, cv {:.3}); queue p95 {p95:.2} ms",
        mean(&bins),
        cv(&bins)
    );
    // Converged: every 1-s bin after 5 s carries at least 85% of the link; bounded oscillation:
    // the bins vary by a few percent (the reference targets ±5% around capacity); low queue:
    // the 95th-percentile time in the queue stays under 5 ms, a sixth of the 30 ms RTT and a
    // sixth of the 1-BDP buffer a loss-based flow would fill.
    assert!(lo >= 0.85 * 20.0, "a 1-s bin fell to {lo} Mbit/s");
    assert!(cv(&bins) < 0.05, "oscillation cv {}", cv(&bins));
    assert!(p95 < 5.0, "queue p95 {p95} ms");
}

#[test]
fn sweep_is_deterministic_conserving_and_panic_free() {
    sweep("scheme = \"pcc-allegro\"");
    sweep("scheme = \"pcc-vivace\"");
}
