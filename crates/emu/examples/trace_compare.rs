//! Side by side, over time: what the simulator's controller does and what the kernel's does on
//! the same path — the tool behind the fidelity notes in crates/emu/README.md.
//!
//! ```text
//! cargo run --release -p cclab-emu --example trace_compare -- SCENARIO SIM_SCHEME KERNEL_SCHEME [BIN_MS]
//! e.g.  ... -- scenarios/pantheon-1flow.toml bbr kernel:bbr 1000
//! ```
//! Every flow of the scenario runs SIM_SCHEME on the simulator and KERNEL_SCHEME on the emulator
//! (needs root). Per bin, for flow 0: the median window and data in flight (packets), the
//! controller's bandwidth and min-RTT estimates where it has them (BBR), the kernel's smoothed
//! RTT, and the median time packets spent in the bottleneck queue in each engine.

use cclab_core::record::{Fate, PacketKind, PacketLog};
use cclab_core::scenario::{Scenario, MSS};
use cclab_emu::EmuOptions;
use cclab_sim::RunOptions;
use std::path::PathBuf;

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn with_scheme(s: &Scenario, scheme: &str) -> Scenario {
    let mut s = s.clone();
    for f in &mut s.flows {
        f.scheme = scheme.to_string();
        f.options.clear();
    }
    s
}

/// Median bottleneck sojourn (ms) of flow 0's delivered data packets that left in each bin.
fn sojourn_by_bin(log: &PacketLog, bin: u64, bins: usize) -> Vec<f64> {
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); bins];
    for i in 0..log.len() {
        if log.flow[i] == 0 && log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8 {
            let b = (log.dequeued[i] / bin) as usize;
            if b < bins {
                per[b].push((log.dequeued[i] - log.enqueued[i]) as f64 / 1e6);
            }
        }
    }
    per.into_iter().map(median).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: trace_compare SCENARIO SIM_SCHEME KERNEL_SCHEME [BIN_MS]");
        std::process::exit(2);
    }
    let path = PathBuf::from(&args[0]);
    let bin = args.get(3).and_then(|b| b.parse::<u64>().ok()).unwrap_or(1000) * 1_000_000;
    let base = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let bins = base.duration.ns().div_ceil(bin) as usize;

    let sim_s = with_scheme(&base, &args[1]);
    let (sim, trace) =
        cclab_sim::run_traced(&sim_s, &RunOptions { log_packets: true, ..Default::default() }, &mut |_| Ok(()))
            .unwrap_or_else(|e| panic!("simulator: {e}"));
    let emu_s = with_scheme(&base, &args[2]);
    let opts = EmuOptions { log_packets: true, base_dir: path.parent().unwrap().into(), ..EmuOptions::default() };
    let emu = cclab_emu::run(&emu_s, &opts, &mut |_| Ok(())).unwrap_or_else(|e| panic!("emulator: {e}"));

    let pkts = |bytes: f64| bytes / MSS as f64;
    let sim_col = |name: &str, b: usize, scale: &dyn Fn(f64) -> f64| {
        let Some(col) = trace.var(name) else { return f64::NAN };
        median(trace.rows_of(0).filter(|&i| (trace.t[i] / bin) as usize == b).map(|i| scale(col[i])).collect())
    };
    let sim_field = |b: usize, f: &dyn Fn(usize) -> f64| {
        median(trace.rows_of(0).filter(|&i| (trace.t[i] / bin) as usize == b).map(f).collect())
    };
    let tcp = &emu.emu.flows[0].tcp.samples;
    let k = |b: usize, f: &dyn Fn(&cclab_emu::kernel_tcp::TcpSample) -> f64| {
        median(tcp.iter().filter(|s| (s.t / bin) as usize == b).map(f).collect())
    };
    let sim_q = sojourn_by_bin(sim.packets.as_ref().unwrap(), bin, bins);
    let emu_q = sojourn_by_bin(emu.run.packets.as_ref().unwrap(), bin, bins);
    println!(
        "{:>6} | {:>24} | {:>24} | {:>14} | {:>14} | {:>15}",
        "t (s)", "cwnd / in flight (pkts)", "bw est. (Mbit/s)", "min RTT (ms)", "kernel srtt ms", "queue (ms)"
    );
    println!(
        "{:>6} | {:>11} {:>12} | {:>11} {:>12} | {:>6} {:>7} | {:>14} | {:>7} {:>7}",
        "", "sim", "kernel", "sim", "kernel", "sim", "kernel", "", "sim", "kernel"
    );
    for b in 0..bins {
        println!(
            "{:>6.1} | {:>5.1}/{:<5.1} {:>5.1}/{:<6.1} | {:>11.2} {:>12.2} | {:>6.2} {:>7.2} | {:>14.2} | {:>7.2} {:>7.2}",
            (b as u64 * bin) as f64 / 1e9,
            sim_field(b, &|i| pkts(trace.cwnd[i] as f64)),
            sim_field(b, &|i| pkts(trace.in_flight[i] as f64)),
            k(b, &|s| s.cwnd as f64),
            k(b, &|s| s.unacked as f64),
            sim_col("bw", b, &|x| x * 8.0 / 1e6),
            k(b, &|s| if s.bbr_bw > 0 { s.bbr_bw as f64 * 8.0 / 1e6 } else { f64::NAN }),
            sim_col("min_rtt", b, &|x| x * 1e3),
            k(b, &|s| if s.bbr_min_rtt_us > 0 { s.bbr_min_rtt_us as f64 / 1e3 } else { s.min_rtt_us as f64 / 1e3 }),
            k(b, &|s| s.srtt_us as f64 / 1e3),
            sim_q[b],
            emu_q[b],
        );
    }
    let (s, e) = (&sim.metrics.total, &emu.run.metrics.total);
    println!(
        "total: sim {:.2} Mbit/s p95 {:.1} ms | kernel {:.2} Mbit/s p95 {:.1} ms (emulator lateness p99 {} us)",
        s.throughput_mbps,
        s.delay_p95_ms,
        e.throughput_mbps,
        e.delay_p95_ms,
        emu.emu.forward.error_quantile_us(0.99)
    );
}
