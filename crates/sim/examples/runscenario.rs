//! Runs a scenario file and prints the summary: `cargo run --release -p cclab-sim --example runscenario -- FILE`.
fn main() {
    let path = std::env::args().nth(1).expect("usage: runscenario FILE [key=value...]");
    let mut o = toml::Table::new();
    for kv in std::env::args().skip(2) {
        let (k, v) = kv.split_once('=').expect("key=value");
        let v: toml::Value =
            format!("x = {v}").parse::<toml::Table>().map(|t| t["x"].clone()).unwrap_or(toml::Value::String(v.into()));
        o.insert(k.into(), v);
    }
    let s = cclab_sim::load_scenario(std::path::Path::new(&path), &o).unwrap_or_else(|e| panic!("{e}"));
    let out = cclab_sim::run(&s, &cclab_sim::RunOptions::default(), &mut |_| Ok(())).unwrap();
    for f in &out.metrics.flows {
        println!(
            "flow {:?}: tput {:.3} Mbps p95 {:.2} ms qp95 {:.2} loss {:.2} % sent {} retx {}",
            f.flow, f.throughput_mbps, f.delay_p95_ms, f.queueing_p95_ms, f.loss_pct, f.packets_sent, f.retransmissions
        );
    }
    let t = &out.metrics.total;
    println!(
        "total: tput {:.3} util {:.4} p95 {:.2} loss {:.2} % jain {:.3} ({:.0} % of buckets)",
        t.throughput_mbps,
        out.metrics.utilisation,
        t.delay_p95_ms,
        t.loss_pct,
        out.metrics.jain_median,
        100.0 * out.metrics.jain_counted
    );
    println!(
        "events {} wall {:.3}s -> {:.1} M events/s",
        out.stats.events,
        out.stats.wall_secs,
        out.stats.events as f64 / out.stats.wall_secs / 1e6
    );
}
