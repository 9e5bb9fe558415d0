//! The queue disciplines end to end: scenario keys → plan → bottleneck → transports → metrics,
//! against the behaviour their specifications promise.
mod common;
use cclab_core::record::{Fate, PacketKind};
use cclab_core::time::MS;
use common::*;

/// Median of the sojourn times (ns) of delivered data packets that entered the queue after
/// `after` (past slow start).
fn median_sojourn(out: &cclab_engine::RunOutput, after: u64) -> f64 {
    let log = out.packets.as_ref().unwrap();
    let mut s: Vec<u64> = (0..log.len())
        .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
        .filter(|&i| log.enqueued[i] >= after)
        .map(|i| log.dequeued[i] - log.enqueued[i])
        .collect();
    s.sort_unstable();
    s[s.len() / 2] as f64 / MS as f64
}

fn cubic_through(aqm: &str) -> String {
    format!(
        r#"
        duration = "30s"
        [link]
        rate = "12Mbps"
        delay = "20ms"
        queue = 1000
        {aqm}
        [[flows]]
        scheme = "cubic"
        "#
    )
}

#[test]
fn codel_holds_the_standing_delay_near_target_where_droptail_fills_the_buffer() {
    // A backlogged Cubic flow, 12 Mbit/s, 40 ms RTT, a 1000-packet (1 s) buffer. Droptail lets
    // Cubic fill the buffer, so the median packet waits hundreds of ms; CoDel (RFC 8289: 5 ms
    // target, 100 ms interval) keeps the standing queue within a few targets at full rate.
    let tail = run(&scenario(&cubic_through("")), true);
    let codel = run(&scenario(&cubic_through(r#"aqm = "codel""#)), true);
    assert_conserved(&tail);
    assert_conserved(&codel);
    let (d_tail, d_codel) = (median_sojourn(&tail, 5_000 * MS), median_sojourn(&codel, 5_000 * MS));
    println!("median sojourn: droptail {d_tail:.1} ms, codel {d_codel:.1} ms");
    assert!(d_tail > 300.0, "droptail should sit near the buffer: {d_tail} ms");
    assert!(d_codel < 15.0, "CoDel's standing queue: {d_codel} ms (target 5 ms)");
    assert!(codel.metrics.utilisation > 0.9, "CoDel keeps the link busy: {}", codel.metrics.utilisation);
    // Its drops came at dequeue, not from the full buffer.
    assert!(codel.metrics.total.packets_dropped > 0);
}

#[test]
fn every_new_discipline_runs_a_scenario_and_conserves_packets() {
    for aqm in [
        r#"aqm = "codel""#,
        r#"aqm = "fq_codel""#,
        r#"aqm = "sfq""#,
        "aqm = \"sfq\"\n[link.sfq]\nbuckets = 2",
        r#"aqm = "pie""#,
        r#"aqm = "red""#,
        "aqm = \"prio\"\n[link.prio]\nclasses = [0, 1]",
        "aqm = \"tbf\"\n[link.token_bucket]\nrate = \"6Mbps\"\nburst = \"15KB\"",
        "aqm = \"policer\"\n[link.token_bucket]\nrate = \"6Mbps\"\nburst = \"15KB\"",
    ] {
        let text = format!(
            r#"
            duration = "5s"
            [link]
            rate = "12Mbps"
            delay = "10ms"
            queue = 100
            {aqm}
            [[flows]]
            scheme = "cubic"
            count = 2
            "#
        );
        let s = scenario(&text);
        let a = run(&s, false);
        assert_conserved(&a);
        assert!(a.metrics.total.throughput_mbps > 1.0, "{aqm}: {}", a.metrics.total.throughput_mbps);
        // Same scenario and seed, same results (PIE and RED draw from their own stream).
        let b = run(&s, false);
        // Compared as printed: a NaN statistic (no loss gaps to measure) equals itself there.
        assert_eq!(format!("{:?}", a.metrics.total), format!("{:?}", b.metrics.total), "{aqm}");
    }
}

#[test]
fn sfq_equalises_flows_that_droptail_treats_by_rtt() {
    // Two Cubic flows, base RTTs 20 ms and 120 ms. Droptail favours the short RTT (less than
    // Reno's 1/RTT would, as Cubic grows its window by time, not by RTTs); SFQ serves each
    // flow's queue in turn, so both get about half.
    let text = |aqm: &str| {
        format!(
            r#"
            duration = "40s"
            [link]
            rate = "24Mbps"
            delay = "10ms"
            queue = 200
            {aqm}
            [[flows]]
            scheme = "cubic"
            [[flows]]
            scheme = "cubic"
            extra_rtt = "100ms"
            "#
        )
    };
    let ratio = |out: &cclab_engine::RunOutput| {
        let f = &out.metrics.flows;
        f[0].throughput_mbps / f[1].throughput_mbps
    };
    let tail = run(&scenario(&text("")), false);
    let sfq = run(&scenario(&text(r#"aqm = "sfq""#)), false);
    println!("short/long RTT throughput: droptail {:.2}, sfq {:.2}", ratio(&tail), ratio(&sfq));
    assert!(ratio(&tail) > 1.25, "droptail's RTT unfairness: {}", ratio(&tail));
    assert!((ratio(&sfq) - 1.0).abs() < 0.1, "SFQ: {}", ratio(&sfq));
    assert!(sfq.metrics.jain_median > 0.98, "{}", sfq.metrics.jain_median);
}

#[test]
fn policer_bounds_delivery_by_rate_and_burst_and_adds_no_delay() {
    // A 12 Mbit/s policer with a 15 KB bucket in front of a 100 Mbit/s link. Over any span the
    // bucket passes at most burst + rate·span bytes, so delivery never beats it; and a policer
    // drops rather than delays, so no packet waits more than the link's own queue.
    let out = run(
        &scenario(
            r#"
            duration = "20s"
            [link]
            rate = "100Mbps"
            delay = "10ms"
            queue = 1000
            aqm = "policer"
            [link.token_bucket]
            rate = "12Mbps"
            burst = "15KB"
            [[flows]]
            scheme = "cubic"
            "#,
        ),
        true,
    );
    assert_conserved(&out);
    let log = out.packets.as_ref().unwrap();
    let mut passed: Vec<(u64, u64)> = (0..log.len())
        .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] != Fate::DropQueue as u8)
        .filter(|&i| log.fate[i] != Fate::DropLoss as u8 && log.enqueued[i] != cclab_core::NEVER)
        .map(|i| (log.enqueued[i], log.size[i] as u64))
        .collect();
    passed.sort_unstable();
    // The bound on every window [t_i, t_j] of arrivals that passed (checked for windows
    // starting at each of the first 2000 packets, every end).
    for i in (0..passed.len().min(2000)).step_by(97) {
        let mut bytes = 0u64;
        for &(t, b) in &passed[i..] {
            bytes += b;
            let allowed = 15_000.0 + 12e6 / 8.0 * (t - passed[i].0) as f64 / 1e9;
            assert!(bytes as f64 <= allowed + 1e-6, "{bytes} B passed by {t} from {}", passed[i].0);
        }
    }
    let tput = out.metrics.total.throughput_mbps;
    assert!(tput <= 12.0 * 1.01, "{tput}");
    assert!(out.metrics.total.packets_dropped > 0);
    // What passes meets a link 8× faster than the bucket: at most the bucket's worth queues.
    let max_sojourn = (0..log.len())
        .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
        .map(|i| log.dequeued[i] - log.enqueued[i])
        .max()
        .unwrap();
    assert!(max_sojourn <= 1_300_000, "a packet waited {max_sojourn} ns behind the policer");
}

#[test]
fn ten_every_200_releases_acks_in_bursts() {
    // The Pantheon's ACK-aggregation link: the reverse trace `10-every-200` gives ten 1500-byte
    // opportunities at t ≡ 0 (mod 200 ms), so ACKs leave only then. A fixed window of 100
    // packets on a 12 Mbit/s, 10 ms one-way path: at each burst the sender learns of its whole
    // window and sends 100 packets (1 ms apart), which are ACKed by T + 120 ms and wait for the
    // next burst at T + 200 ms. Hand count: exactly 100 packets per 200 ms, 6 Mbit/s.
    let trace = repo_root().join("python/cclab/data/traces/10-every-200.trace");
    let out = run(
        &scenario(&format!(
            r#"
            duration = "10s"
            [link]
            rate = "12Mbps"
            delay = "10ms"
            reverse_trace = {:?}
            [[flows]]
            scheme = "fixed"
            cwnd = 100
            "#,
            trace.display().to_string()
        )),
        true,
    );
    assert_conserved(&out);
    let log = out.packets.as_ref().unwrap();
    let mut burst_bytes: std::collections::BTreeMap<u64, u64> = Default::default();
    for i in 0..log.len() {
        if log.kind[i] == PacketKind::Ack as u8 && log.fate[i] == Fate::Delivered as u8 {
            assert_eq!(log.arrived[i] % (200 * MS), 0, "ACK off the bursts at {}", log.arrived[i]);
            *burst_bytes.entry(log.arrived[i]).or_default() += log.size[i] as u64;
        }
    }
    assert!(burst_bytes.values().all(|&b| b <= 15_000 + 52), "{burst_bytes:?}");
    let delivered = (0..log.len())
        .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
        .filter(|&i| (1000 * MS..9000 * MS).contains(&log.arrived[i]))
        .count();
    assert_eq!(delivered, 40 * 100, "40 bursts of 100 packets in [1 s, 9 s)");
}
