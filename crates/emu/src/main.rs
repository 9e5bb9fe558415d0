//! `cclab-emu`: runs one scenario on the emulator without Python — for benchmarks, tests and
//! debugging the engine. Researchers use `cclab run --engine emu`, which writes a run directory.
//!
//! ```text
//! cclab-emu SCENARIO [--set KEY=VALUE]... [--log-packets] [--no-pin] [--two-threads] [--rt PRIO (0: off)] [--spin-us N]
//! ```
//! Prints the per-flow summary and the engine's own figures as `key = value` lines (easy to
//! grep in scripts). Exit status: 0 ok, 2 bad input or failed run, 130 interrupted.

use cclab_core::metrics::FlowSummary;
use cclab_core::record::{Fate, PacketKind};
use cclab_emu::{EmuError, EmuOptions, EmuOutput};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// SIGINT/SIGTERM only set a flag; the run sees it through its progress callback and tears
/// everything down on its normal path.
fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

struct Args {
    scenario: PathBuf,
    overrides: toml::Table,
    opts: EmuOptions,
}

fn usage() -> ! {
    eprintln!("usage: cclab-emu SCENARIO [--set KEY=VALUE]... [--log-packets] [--no-pin] [--two-threads] [--rt PRIO (0: off)] [--spin-us N]");
    std::process::exit(2);
}

/// `--set key=value`: the value is read as TOML when it is one (`3`, `0.01`, `true`), else as a
/// string (`link.rate=24Mbps`), as `cclab run --set` does.
fn parse_set(text: &str, table: &mut toml::Table) -> Result<(), String> {
    let (k, v) = text.split_once('=').ok_or_else(|| format!("--set expects KEY=VALUE, got {text:?}"))?;
    let value = toml::from_str::<toml::Table>(&format!("v = {v}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(v.trim().to_string()));
    table.insert(k.trim().to_string(), value);
    Ok(())
}

fn parse_args() -> Args {
    let mut it = std::env::args().skip(1);
    let mut scenario = None;
    let mut overrides = toml::Table::new();
    let mut opts = EmuOptions::default();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--set" => {
                let v = it.next().unwrap_or_else(|| usage());
                if let Err(e) = parse_set(&v, &mut overrides) {
                    eprintln!("error: {e}");
                    std::process::exit(2);
                }
            }
            "--log-packets" => opts.log_packets = true,
            "--no-pin" => opts.pin_threads = false,
            "--two-threads" => opts.single_thread = false,
            "--rt" => {
                let prio: i32 = it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage());
                opts.rt_priority = (prio > 0).then_some(prio);
            }
            "--spin-us" => {
                opts.spin_us = it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage());
            }
            "-h" | "--help" => usage(),
            _ if scenario.is_none() && !a.starts_with('-') => scenario = Some(PathBuf::from(a)),
            _ => usage(),
        }
    }
    let scenario = scenario.unwrap_or_else(|| usage());
    opts.base_dir = scenario.parent().map(PathBuf::from).unwrap_or_default();
    Args { scenario, overrides, opts }
}

fn print_flow(label: &str, s: &FlowSummary) {
    println!(
        "{label}: throughput_mbps = {:.2}  delay_p95_ms = {:.3}  delay_min_ms = {:.3}  loss = {:.5}  sent = {}  delivered = {}  dropped = {}  retransmissions = {}",
        s.throughput_mbps,
        s.delay_p95_ms,
        s.delay_min_ms,
        s.loss,
        s.packets_sent,
        s.packets_delivered,
        s.packets_dropped,
        s.retransmissions
    );
}

/// `prop_ns`: the link's propagation delay, which no delivered packet may beat.
fn report(out: &EmuOutput, prop_ns: u64) {
    let m = &out.run.metrics;
    for (s, f) in m.flows.iter().zip(&out.run.flows) {
        print_flow(&format!("flow {} {}", f.id, f.scheme), s);
    }
    print_flow("total", &m.total);
    println!("utilisation = {:.4}", m.utilisation);
    for (i, f) in out.emu.flows.iter().enumerate() {
        if f.app.bytes > 0 {
            println!("flow {i} app_goodput_mbps = {:.2}  app_bytes = {}", f.app.goodput_mbps(), f.app.bytes);
        }
        if let Some(rtt) = f.tcp.median_srtt_us() {
            println!(
                "flow {i} tcp_srtt_median_ms = {:.3}  tcp_min_rtt_ms = {:.3}  tcp_total_retrans = {}",
                rtt / 1e3,
                f.tcp.min_rtt_us() as f64 / 1e3,
                f.tcp.total_retrans()
            );
        }
        if f.local_drops > 0 {
            println!("flow {i} local_send_drops = {}", f.local_drops);
        }
    }
    let st = &out.run.stats;
    println!(
        "data_sent = {}  data_delivered = {}  data_dropped = {}  data_in_flight_end = {}  conserved = {}",
        st.data_sent,
        st.data_delivered,
        st.data_dropped,
        st.data_in_flight_end,
        st.data_sent == st.data_delivered + st.data_dropped + st.data_in_flight_end
    );
    if let Some(log) = &out.run.packets {
        let mut by_fate = [0u64; 5];
        let mut q: Vec<u64> = Vec::new();
        let mut ack_min = u64::MAX;
        let mut violations = 0u64;
        for i in 0..log.len() {
            if log.kind[i] == PacketKind::Ack as u8 && log.fate[i] == Fate::Delivered as u8 {
                ack_min = ack_min.min(log.arrived[i] - log.sent[i]);
            }
            if log.kind[i] == PacketKind::Data as u8 {
                // A delivered packet that beat the model (left the queue before it entered, or
                // arrived sooner than the propagation delay) would be an engine bug.
                let d = log.fate[i] == Fate::Delivered as u8;
                if d && (log.dequeued[i] < log.enqueued[i] || log.arrived[i] < log.dequeued[i] + prop_ns) {
                    violations += 1;
                }
                by_fate[log.fate[i] as usize] += 1;
                if log.fate[i] == Fate::Delivered as u8 {
                    q.push(log.dequeued[i] - log.enqueued[i]);
                }
            }
        }
        q.sort_unstable();
        let med = q.get(q.len() / 2).copied().unwrap_or(0);
        println!(
            "log: data by fate: delivered = {} queue = {} loss = {} device = {} in_flight = {}  median_bottleneck_sojourn_ms = {:.3}  ack_delay_min_ms = {:.3}  model_violations = {violations}",
            by_fate[0],
            by_fate[1],
            by_fate[2],
            by_fate[3],
            by_fate[4],
            med as f64 / 1e6,
            ack_min as f64 / 1e6
        );
    }
    for (name, p) in [("data", &out.emu.forward), ("ack", &out.emu.reverse)] {
        println!(
            "{name}_path: realtime = {}  reads = {}  packets = {}  unclassified = {}  device_drops = {}  early_writes = {}  late_p50_us = {}  late_p99_us = {}  late_max_us = {}",
            p.realtime,
            p.reads,
            p.packets,
            p.unclassified,
            p.device_drops,
            p.early_writes,
            p.lateness_quantile_us(0.5),
            p.lateness_quantile_us(0.99),
            p.lateness_quantile_us(1.0)
        );
        if let Some(e) = &p.last_write_error {
            println!("{name}_path: last_write_error = {e}");
        }
    }
    println!(
        "tun: sender tx_dropped = {}  receiver rx_dropped = {}  receiver tx_dropped = {}",
        out.emu.sender_tun.tx_dropped, out.emu.receiver_tun.rx_dropped, out.emu.receiver_tun.tx_dropped
    );
    println!("setup_secs = {:.3}  wall_secs = {:.3}", out.emu.setup_secs, st.wall_secs);
}

fn main() {
    let args = parse_args();
    let scenario = match cclab_emu::load_scenario(&args.scenario, &args.overrides) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    install_signal_handlers();
    let mut progress = |_: u64| {
        if INTERRUPTED.load(Ordering::Relaxed) {
            Err("signal received".to_string())
        } else {
            Ok(())
        }
    };
    match cclab_emu::run(&scenario, &args.opts, &mut progress) {
        Ok(out) => report(&out, scenario.link.delay.ns()),
        Err(e @ EmuError::Interrupted(_)) => {
            eprintln!("{e}");
            std::process::exit(130);
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
