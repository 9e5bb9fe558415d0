//! The simulator's side of the fidelity table (python/cclab/fidelity.py's figures) for a few
//! scenarios, seeds and `key=value` overrides, without the Python package:
//! `cargo run --release -p cclab-sim --example fidelity_figures -- SCENARIO[:SCHEME] SEEDS [key=value...]`.
//! With `:SCHEME` every flow runs that scheme (a scheme test); without, the file's own mix.
//! Prints per scheme: throughput (Mbit/s), p95 delay (ms; a mix: mean of the scheme's flows'
//! p95s), share of bytes delivered, the run's median Jain index, and the scheme's flows' drops
//! at the bottleneck and congestion events (window cuts and RTOs), to see why a share moved.
use std::collections::BTreeMap;

fn main() {
    let mut args = std::env::args().skip(1);
    let spec = args.next().expect("usage: fidelity_figures SCENARIO[:SCHEME] SEEDS [key=value...]");
    let seeds: Vec<u64> =
        args.next().expect("SEEDS, e.g. 1,2,3").split(',').map(|s| s.parse().expect("seed")).collect();
    let mut o = toml::Table::new();
    for kv in args {
        let (k, v) = kv.split_once('=').expect("key=value");
        let v: toml::Value =
            format!("x = {v}").parse::<toml::Table>().map(|t| t["x"].clone()).unwrap_or(toml::Value::String(v.into()));
        let mut parts: Vec<&str> = k.split('.').collect();
        let last = parts.pop().expect("a key");
        let mut t = &mut o;
        for p in parts {
            t = t.entry(p).or_insert_with(|| toml::Value::Table(toml::Table::new())).as_table_mut().expect("table");
        }
        t.insert(last.into(), v);
    }
    let (path, scheme) = match spec.split_once(':') {
        Some((p, s)) => (std::path::PathBuf::from(p), Some(s.to_string())),
        None => (std::path::PathBuf::from(&spec), None),
    };
    let mut text = std::fs::read_to_string(&path).expect("scenario file");
    if let Some(s) = &scheme {
        for from in ["\"cubic\"", "\"bbr\"", "\"newreno\""] {
            text = text.replace(&format!("scheme = {from}"), &format!("scheme = \"{s}\""));
        }
    }
    // `FIG_DELAYED_ACK=false` (or true) sets every flow's `delayed_ack`.
    if let Ok(v) = std::env::var("FIG_DELAYED_ACK") {
        text = text.replace("[[flows]]", &format!("[[flows]]\ndelayed_ack = {v}"));
    }
    // Beside the original, so relative trace paths resolve as they do for it.
    let tmp = path.with_file_name(format!(".fidelity-figures-{}.toml", std::process::id()));
    std::fs::write(&tmp, &text).expect("temp scenario");
    for seed in seeds {
        let mut o = o.clone();
        o.insert("seed".into(), toml::Value::Integer(seed as i64));
        let s = cclab_sim::load_scenario(&tmp, &o).unwrap_or_else(|e| panic!("{e}"));
        let out = cclab_sim::run(&s, &cclab_sim::RunOptions::default(), &mut |_| Ok(())).unwrap();
        let m = &out.metrics;
        let total_bytes: u64 = m.flows.iter().map(|f| f.bytes_delivered).sum();
        // Per scheme: bytes, sum of p95s, flows, drops, congestion events (cuts and RTOs).
        let mut by: BTreeMap<&str, (u64, f64, usize, u64, u64)> = BTreeMap::new();
        // Flows are numbered entry by entry, `count` each.
        let schemes = s.flows.iter().flat_map(|e| std::iter::repeat_n(e.scheme.as_str(), e.count as usize));
        for (f, scheme) in m.flows.iter().zip(schemes) {
            let e = by.entry(scheme).or_default();
            e.0 += f.bytes_delivered;
            e.1 += f.delay_p95_ms;
            e.2 += 1;
            e.3 += f.packets_dropped;
            e.4 += f.congestion_events.unwrap_or(0);
        }
        let single = by.len() == 1;
        for (name, (bytes, p95_sum, n, drops, events)) in by {
            let share = bytes as f64 / total_bytes as f64;
            let p95 = if single { m.total.delay_p95_ms } else { p95_sum / n as f64 };
            println!(
                "{} {name} seed {seed}: tput {:.2} p95 {:.1} share {:.3} jain {:.3} drops {drops} events {events}",
                path.file_stem().unwrap().to_string_lossy(),
                m.total.throughput_mbps * share,
                p95,
                share,
                m.jain_median
            );
        }
    }
    let _ = std::fs::remove_file(&tmp);
}
