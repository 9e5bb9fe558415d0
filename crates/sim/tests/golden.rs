//! Golden digests, htsim-style: a handful of scenarios whose metrics and packet log are hashed
//! and compared with digests checked into `tests/golden/digests.txt`. `determinism.rs` checks
//! that one build gives identical runs; this checks that every build, on every machine and after
//! every refactor, gives the same bytes. A change that moves a digest on purpose says so in its
//! commit and re-blesses the file with `CCLAB_BLESS=1 cargo test --release --test golden`.

mod common;
use common::*;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// (name, scenario file relative to the repository, duration, scheme replacing every `cubic`
/// flow or "" to keep the file's). Durations are cut so
/// the whole set runs in a few seconds in release mode; together they cover constant, Poisson
/// and trace deliveries, i.i.d. loss, unbounded, packet and BDP queues, drophead, extra RTTs,
/// delayed ACKs, staggered flows and most controllers.
const CASES: &[(&str, &str, &str, &str)] = &[
    ("pantheon-1flow-cubic", "scenarios/pantheon-1flow.toml", "10s", ""),
    ("pantheon-3flows-bbr", "scenarios/pantheon-3flows.toml", "25s", "bbr"),
    ("copa-fairness-copa", "scenarios/copa-fairness.toml", "20s", "copa"),
    ("copa-fairness-cubic", "scenarios/copa-fairness.toml", "20s", ""),
    ("mexico-cellular-cubic", "scenarios/calibrated-mexico-cellular.toml", "15s", ""),
    ("nepal-wifi-vegas", "scenarios/calibrated-nepal-wifi.toml", "15s", "vegas"),
    ("rtt-fairness", "scenarios/repro/copa-rtt-fairness.toml", "10s", ""),
];

/// Inline scenarios for what the shipped files do not cover.
const INLINE: &[(&str, &str)] = &[
    (
        "mixed-poisson-loss-drophead",
        r#"
        duration = "8s"
        seed = 3
        [link]
        rate = "20Mbps"
        delivery = "poisson"
        delay = "15ms"
        queue = "40"
        aqm = "drophead"
        loss = 0.005
        [[flows]]
        scheme = "pcc-vivace"
        [[flows]]
        scheme = "ledbat"
        start = "1s"
        extra_rtt = "30ms"
        delayed_ack = true
        [[flows]]
        scheme = "newreno"
        start = "2s"
        "#,
    ),
    (
        "bytes-queue-allegro-fixed",
        r#"
        duration = "6s"
        seed = 11
        [link]
        rate = "10Mbps"
        delay = "20ms"
        queue = "60KB"
        [[flows]]
        scheme = "pcc-allegro"
        [[flows]]
        scheme = "fixed"
        rate = "3Mbps"
        start = "2s"
        "#,
    ),
];

fn trace_case() -> (String, String) {
    let trace = test_data().join("traces/TMobile-LTE-short.down");
    let text = format!(
        "duration = \"12s\"\nseed = 5\n[link]\ntrace = {:?}\ndelay = \"20ms\"\nqueue = 200\n\
         [[flows]]\nscheme = \"sprout\"\n[[flows]]\nscheme = \"bbr\"\nstart = \"3s\"\n",
        trace.display().to_string()
    );
    ("trace-sprout-bbr".into(), text)
}

fn put_u64(h: &mut Sha256, x: u64) {
    h.update(x.to_le_bytes());
}
fn put_f64(h: &mut Sha256, x: f64) {
    // Every NaN hashes alike (empty bins); otherwise every bit counts.
    h.update(if x.is_nan() { u64::MAX } else { x.to_bits() }.to_le_bytes());
}

/// The run's numbers, field by field, in a fixed order.
fn metrics_digest(out: &cclab_sim::RunOutput) -> String {
    let m = &out.metrics;
    let mut h = Sha256::new();
    for s in m.flows.iter().chain(std::iter::once(&m.total)) {
        put_u64(&mut h, s.flow.map_or(u64::MAX, u64::from));
        for x in [
            s.packets_sent,
            s.packets_delivered,
            s.packets_dropped,
            s.bytes_sent,
            s.bytes_delivered,
            s.retransmissions,
            s.first_delivery,
            s.last_delivery,
        ] {
            put_u64(&mut h, x);
        }
        for x in [s.throughput_mbps, s.delay_p95_ms, s.queueing_p95_ms, s.delay_mean_ms, s.delay_min_ms, s.loss_pct] {
            put_f64(&mut h, x);
        }
    }
    for x in [m.capacity_mbps, m.utilisation, m.jain_median, m.jain_counted] {
        put_f64(&mut h, x);
    }
    for r in &m.series {
        put_u64(&mut h, r.flow as u64);
        put_u64(&mut h, r.t);
        for x in [r.throughput_mbps, r.sending_mbps, r.delay_mean_ms, r.delay_max_ms] {
            put_f64(&mut h, x);
        }
    }
    for r in &m.jain {
        put_u64(&mut h, r.t);
        put_u64(&mut h, r.active_flows as u64);
        put_u64(&mut h, r.delivering_flows as u64);
        put_f64(&mut h, r.jain);
        put_u64(&mut h, r.counted as u64);
    }
    let s = &out.stats;
    for x in [s.events, s.data_sent, s.data_delivered, s.data_dropped, s.data_in_flight_end] {
        put_u64(&mut h, x);
    }
    hex(h)
}

/// Every packet record, column by column.
fn packets_digest(out: &cclab_sim::RunOutput) -> String {
    let log = out.packets.as_ref().expect("the golden runs log packets");
    let mut h = Sha256::new();
    put_u64(&mut h, log.uid.len() as u64);
    for i in 0..log.uid.len() {
        for x in [
            log.uid[i],
            log.flow[i] as u64,
            log.kind[i] as u64,
            log.size[i] as u64,
            log.sent[i],
            log.arrived[i],
            log.fate[i] as u64,
            log.enqueued[i],
            log.dequeued[i],
            log.retransmission[i] as u64,
        ] {
            put_u64(&mut h, x);
        }
    }
    hex(h)
}

fn hex(h: Sha256) -> String {
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn digests() -> BTreeMap<String, String> {
    let mut scenarios: Vec<(String, cclab_core::Scenario)> = Vec::new();
    for (name, file, duration, scheme) in CASES {
        let mut text = std::fs::read_to_string(repo_root().join(file)).expect("shipped scenario");
        if !scheme.is_empty() {
            text = text.replace("scheme = \"cubic\"", &format!("scheme = {scheme:?}"));
        }
        let mut overrides = toml::Table::new();
        overrides.insert("duration".into(), toml::Value::String(duration.to_string()));
        let s = cclab_sim::parse_scenario(&text, file, &overrides).unwrap_or_else(|e| panic!("{name}: {e}"));
        scenarios.push((name.to_string(), s));
    }
    for (name, text) in INLINE {
        scenarios.push((name.to_string(), scenario(text)));
    }
    let (name, text) = trace_case();
    scenarios.push((name, scenario(&text)));

    let mut out = BTreeMap::new();
    for (name, s) in scenarios {
        let run = run(&s, true);
        assert_conserved(&run);
        out.insert(format!("{name} metrics"), metrics_digest(&run));
        out.insert(format!("{name} packets"), packets_digest(&run));
    }
    out
}

#[test]
fn golden_digests_match_the_checked_in_ones() {
    let path = repo_root().join("crates/sim/tests/golden/digests.txt");
    let got = digests();
    let rendered: String = got.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
    if std::env::var_os("CCLAB_BLESS").is_some() {
        std::fs::write(&path, &rendered).expect("write digests");
        return;
    }
    let want = std::fs::read_to_string(&path).expect("tests/golden/digests.txt (bless with CCLAB_BLESS=1)");
    let mut diff = Vec::new();
    for line in want.lines() {
        let (key, digest) = line.rsplit_once(' ').expect("`name kind digest` lines");
        match got.get(key) {
            Some(d) if d == digest => {}
            Some(d) => diff.push(format!("{key}: {digest} → {d}")),
            None => diff.push(format!("{key}: no longer produced")),
        }
    }
    assert_eq!(want.lines().count(), got.len(), "cases added or removed: bless the file on purpose");
    assert!(diff.is_empty(), "golden digests moved:\n{}", diff.join("\n"));
}
