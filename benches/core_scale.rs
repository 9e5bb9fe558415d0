//! CoreScale at the paper's durations: speed and memory of the simulator with thousands of flows.
//!
//!     CARGO_TARGET_DIR=... cargo bench -p cclab-sim --bench core_scale            # 10, 60, 600 s
//!     cargo bench -p cclab-sim --bench core_scale -- 60 --flows 5000 --scheme newreno
//!     cargo bench -p cclab-sim --bench core_scale -- 60 --bin-ms 50   # a 600 s run's series
//!
//! The setting is IMC'21's CoreScale (reproduction-targets.md §3.1): 10 Gbit/s, a 375 MB
//! drop-tail buffer, NewReno flows in three equal groups at 20, 100 and 200 ms base RTT, arriving
//! over the first 2 s (one every 2 s / flows, interleaved across the groups so that each group
//! spreads over the whole 2 s). Every duration runs in a fresh child process, so that its peak
//! resident set (VmHWM) is its own, and prints: simulated seconds, CPU seconds (user + system of
//! the child), events, events per CPU-second, peak RSS, and the metrics kernel's heap (delay
//! histograms, time series and Jain buckets). Budget (issue 12): 60 s in ≤ 60 CPU-s with ≤ 2 GB
//! peak RSS, and 600 s within the same peak.

use std::process::Command;
use std::time::Instant;

fn scenario(duration: u64, flows: u32, scheme: &str, bin_ms: u64) -> cclab_core::Scenario {
    // Three RTT groups; a flow of group g starts at (3·k + g)·gap so the arrivals interleave.
    let per = flows / 3;
    let gap_us = 2_000_000 / flows.max(1) as u64;
    let mut text = format!(
        "name = \"corescale\"\nduration = \"{duration}s\"\n[output]\nbin = \"{bin_ms}ms\"\n[link]\nrate = \"10Gbps\"\ndelay = \"10ms\"\nqueue = \"375MB\"\n"
    );
    for (g, extra) in [0u64, 80, 180].into_iter().enumerate() {
        let count = if g == 2 { flows - 2 * per } else { per };
        text += &format!(
            "[[flows]]\nscheme = \"{scheme}\"\ncount = {count}\nstart = \"{}us\"\nevery = \"{}us\"\nextra_rtt = \"{extra}ms\"\n",
            g as u64 * gap_us,
            3 * gap_us,
        );
    }
    cclab_sim::parse_scenario(&text, "corescale.toml", &toml::Table::new()).unwrap_or_else(|e| panic!("{e}"))
}

fn status_kib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

/// User + system CPU seconds of this process (from /proc/self/stat, in clock ticks of 1/100 s).
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN);
    (tick(11) + tick(12)) / 100.0
}

fn child(duration: u64, flows: u32, scheme: &str, bin_ms: u64) {
    let s = scenario(duration, flows, scheme, bin_ms);
    let cpu0 = cpu_secs();
    let wall = Instant::now();
    let (mut last_sample, mut last_report, mut rss_max) = (0u64, 0u64, 0f64);
    let out = cclab_sim::run(&s, &cclab_sim::RunOptions::default(), &mut |now| {
        // The resident set sampled once per simulated second; its largest value over each 10
        // simulated seconds on stderr, so that the time of the peak shows.
        if now >= last_sample + 1_000_000_000 {
            last_sample = now;
            rss_max = rss_max.max(status_kib("VmRSS:") / 1024.0);
        }
        if now >= last_report + 10_000_000_000 {
            last_report = now;
            eprintln!("  t = {:>4} s  rss max {rss_max:.0} MiB", now / 1_000_000_000);
            rss_max = 0.0;
        }
        Ok(())
    })
    .expect("bench run");
    eprintln!("  end       rss {:.0} MiB (after the metrics' rows are built)", status_kib("VmRSS:") / 1024.0);
    let cpu = cpu_secs() - cpu0;
    println!(
        "{duration:>5} s  {flows} {scheme} flows: cpu {cpu:.1} s, wall {:.1} s, {:.0} M events, {:.2} M events/cpu-s, \
         peak RSS {:.0} MiB, util {:.3}, Jain median {:.3}, delivered {} pkts, dropped {} pkts",
        wall.elapsed().as_secs_f64(),
        out.stats.events as f64 / 1e6,
        out.stats.events as f64 / cpu / 1e6,
        status_kib("VmHWM:") / 1024.0,
        out.metrics.utilisation,
        out.metrics.jain_median,
        out.metrics.total.packets_delivered,
        out.metrics.total.packets_dropped,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut durations = Vec::new();
    let (mut flows, mut scheme, mut is_child) = (5000u32, "newreno".to_string(), false);
    // The time series' bin (the Pantheon's 500 ms by default); a finer one makes a short run
    // hold as many bins as a long one, to see the series' memory bound without waiting.
    let mut bin_ms = 500u64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--flows" => flows = it.next().and_then(|v| v.parse().ok()).expect("--flows N"),
            "--scheme" => scheme = it.next().expect("--scheme NAME").clone(),
            "--bin-ms" => bin_ms = it.next().and_then(|v| v.parse().ok()).expect("--bin-ms N"),
            "--child" => is_child = true,
            d => durations.push(d.parse::<u64>().unwrap_or_else(|_| panic!("not a duration in s: {d}"))),
        }
    }
    if is_child {
        child(durations[0], flows, &scheme, bin_ms);
        return;
    }
    if durations.is_empty() {
        durations = vec![10, 60, 600];
    }
    println!("CoreScale: 10 Gbit/s, 375 MB drop-tail, RTT 20/100/200 ms (budget: 60 s in <= 60 cpu-s, <= 2 GB RSS)");
    let exe = std::env::current_exe().expect("own path");
    for d in durations {
        let status = Command::new(&exe)
            .args([d.to_string(), "--flows".into(), flows.to_string(), "--scheme".into(), scheme.clone()])
            .args(["--bin-ms".into(), bin_ms.to_string()])
            .arg("--child")
            .status()
            .expect("spawn child");
        assert!(status.success(), "child run of {d} s failed");
    }
}
