//! `cclab-emu`: runs one scenario on the emulator without Python — for benchmarks, tests and
//! debugging the engine. Researchers use `cclab run --engine emu`, which writes a run directory.
//!
//! ```text
//! cclab-emu SCENARIO [--set KEY=VALUE]... [--log-packets] [--no-pin] [--two-threads] [--rt PRIO (0: off)] [--spin-us N] [--tolerance-us US] [--cpus auto|one|spread] [--pcap FILE]
//! ```
//! (`cclab-emu --help` says more.)
//! Prints the per-flow summary and the engine's own figures as `key = value` lines (easy to
//! grep in scripts). Exit status: 0 ok, 2 bad input or failed run, 130 interrupted.

use cclab_core::metrics::FlowSummary;
use cclab_core::record::{Fate, PacketKind};
use cclab_emu::{Cpus, EmuError, EmuOptions, EmuOutput};
use clap::Parser;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// SIGINT/SIGTERM only set a flag; the run sees it through its progress callback and tears
/// everything down on its normal path.
fn install_signal_handlers() {
    let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::empty(), SigSet::empty());
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe. Neither
        // signal can be refused, so the result needs no check.
        let _ = unsafe { sigaction(sig, &action) };
    }
}

/// Runs one scenario on the emulator (as root) and prints its figures as `key = value` lines.
#[derive(Parser, Debug)]
#[command(name = "cclab-emu", version)]
struct Args {
    /// The scenario file (TOML); wrapper paths in it resolve against its folder.
    scenario: PathBuf,
    /// Overrides one scenario key, as `cclab run --set` does (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    set: Vec<(String, toml::Value)>,
    /// Records every packet and checks the log against the link model.
    #[arg(long)]
    log_packets: bool,
    /// Leaves the path threads unpinned (by default each stays on the CPU it starts on).
    #[arg(long)]
    no_pin: bool,
    /// One path thread per direction instead of one for both.
    #[arg(long)]
    two_threads: bool,
    /// SCHED_FIFO priority of the path threads (0 or less: ordinary scheduling).
    #[arg(long, value_name = "PRIO", allow_negative_numbers = true, default_value_t = default_rt())]
    rt: i32,
    /// The path threads spin rather than sleep when their planned wake-up is within this (µs).
    #[arg(long, value_name = "N", default_value_t = EmuOptions::default().spin_us)]
    spin_us: u64,
    /// How far before or after its model time a packet may leave, so that one wake-up serves
    /// several (µs; default: 5/8 of a packet time at the link's rate, at most 80).
    #[arg(long, value_name = "US")]
    tolerance_us: Option<u64>,
    /// Writes every segment to the receiver on its own instead of merging the segments of a
    /// TCP flow that leave together into one GSO write (as a receiving NIC's GRO would).
    #[arg(long)]
    no_gro: bool,
    /// Where the endpoints run: on the path thread's CPU (one), wherever the scheduler puts
    /// them (spread), or one CPU for kernel flows on links up to 200 Mbit/s with a tolerance
    /// (auto).
    #[arg(long, value_name = "auto|one|spread", default_value = "auto")]
    cpus: Cpus,
    /// Captures the packets at the senders' device into this pcapng file (headers and the
    /// payload's start, 128 bytes a packet).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
}

/// The default priority, as `--rt` shows it: the engine's own default, 0 when that is off.
fn default_rt() -> i32 {
    EmuOptions::default().rt_priority.unwrap_or(0)
}

/// `--set key=value`: the value is read as TOML when it is one (`3`, `0.01`, `true`), else as a
/// string (`link.rate=24Mbps`), as `cclab run --set` does.
fn parse_set(text: &str) -> Result<(String, toml::Value), String> {
    let (k, v) = text.split_once('=').ok_or_else(|| format!("--set expects KEY=VALUE, got {text:?}"))?;
    let value = toml::from_str::<toml::Table>(&format!("v = {v}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(v.trim().to_string()));
    Ok((k.trim().to_string(), value))
}

impl Args {
    /// The scenario overrides and the engine's options the flags ask for.
    fn into_run(self) -> (PathBuf, toml::Table, EmuOptions) {
        // Later `--set`s of the same key win, as they did when each was inserted in turn.
        let overrides: toml::Table = self.set.into_iter().collect();
        let opts = EmuOptions {
            log_packets: self.log_packets,
            base_dir: self.scenario.parent().map(PathBuf::from).unwrap_or_default(),
            pin_threads: !self.no_pin,
            spin_us: self.spin_us,
            tolerance_us: self.tolerance_us,
            rt_priority: (self.rt > 0).then_some(self.rt),
            single_thread: !self.two_threads,
            cpus: self.cpus,
            receive_offload: !self.no_gro,
            trace: None,
            pcap: self.pcap,
        };
        (self.scenario, overrides, opts)
    }
}

fn print_flow(label: &str, s: &FlowSummary) {
    println!(
        "{label}: throughput_mbps = {:.2}  delay_p95_ms = {:.3}  delay_min_ms = {:.3}  loss = {:.5}  sent = {}  delivered = {}  dropped = {}  retransmissions = {}",
        s.throughput_mbps,
        s.delay_p95_ms,
        s.delay_min_ms,
        s.loss_pct,
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
    if !out.run.requests.is_empty() {
        for b in cclab_core::metrics::fct::summary(&out.run.requests) {
            println!(
                "requests {}: requests = {}  completed = {}  fct_median_ms = {:.3}  fct_p99_ms = {:.3}  slowdown_median = {:.3}  slowdown_p99 = {:.3}",
                b.bucket, b.requests, b.completed, b.fct_median_ms, b.fct_p99_ms, b.slowdown_median, b.slowdown_p99
            );
        }
    }
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
                // arrived sooner than the propagation delay less the tolerance by which a
                // wake-up may release it early) would be an engine bug.
                let d = log.fate[i] == Fate::Delivered as u8;
                let tol = out.emu.tolerance_ns;
                if d && (log.dequeued[i] < log.enqueued[i] || log.arrived[i] + tol < log.dequeued[i] + prop_ns) {
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
            "{name}_path: realtime = {}  reads = {}  merged_writes = {}  merged_packets = {}  packets = {}  unclassified = {}  device_drops = {}  early_writes = {}  early_max_us = {:.1}  late_p50_us = {}  late_p99_us = {}  late_max_us = {}  signed_p1_us = {}  signed_p50_us = {}  signed_p99_us = {}",
            p.realtime,
            p.reads,
            p.merged_writes,
            p.merged_packets,
            p.packets,
            p.unclassified,
            p.device_drops,
            p.early_writes,
            p.early_max_ns as f64 / 1e3,
            p.error_quantile_us(0.5),
            p.error_quantile_us(0.99),
            p.error_quantile_us(1.0),
            p.signed_error_quantile_us(0.01),
            p.signed_error_quantile_us(0.5),
            p.signed_error_quantile_us(0.99)
        );
        if let Some(e) = &p.last_write_error {
            println!("{name}_path: last_write_error = {e}");
        }
    }
    println!(
        "tun: sender tx_dropped = {}  receiver rx_dropped = {}  receiver tx_dropped = {}",
        out.emu.sender_tun.tx_dropped, out.emu.receiver_tun.rx_dropped, out.emu.receiver_tun.tx_dropped
    );
    for (i, t) in out.emu.threads.iter().enumerate() {
        println!(
            "path_thread {i}: cpu_s = {:.3}  timer_wakeups = {}  io_wakeups = {}  spins = {}  wake_late_p50_us = {}  wake_late_p99_us = {}  wake_margin_us = {:.1}",
            t.cpu_ns as f64 / 1e9,
            t.timer_wakeups,
            t.io_wakeups,
            t.spins,
            t.wake_late_p50_us,
            t.wake_late_p99_us,
            t.wake_margin_ns as f64 / 1e3
        );
    }
    println!(
        "cpu: path_pct = {:.1}  process_pct = {:.1}  path_cpu_s = {:.3}  process_cpu_s = {:.3}  tolerance_us = {:.1}  one_cpu = {}",
        out.emu.path_cpu_pct(),
        out.emu.process_cpu_pct(),
        out.emu.path_cpu_ns() as f64 / 1e9,
        out.emu.process_cpu_ns as f64 / 1e9,
        out.emu.tolerance_ns as f64 / 1e3,
        out.emu.one_cpu
    );
    println!("capacity_mbps = {:.0}", out.emu.capacity.mbps());
    println!("input_wait_p99_ms = {}", out.emu.input_wait_p99_ms());
    for w in out.emu.warnings() {
        eprintln!("warning: {w}");
    }
    println!("setup_secs = {:.3}  wall_secs = {:.3}", out.emu.setup_secs, st.wall_secs);
    println!("captured_packets = {}", out.emu.captured);
}

fn main() {
    // clap prints usage errors and exits 2, the status of every bad input here; --help and
    // --version exit 0.
    let (path, overrides, opts) = Args::parse().into_run();
    let scenario = match cclab_emu::load_scenario(&path, &overrides) {
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
    match cclab_emu::run(&scenario, &opts, &mut progress) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<(PathBuf, toml::Table, EmuOptions), clap::Error> {
        Args::try_parse_from(std::iter::once("cclab-emu").chain(args.iter().copied())).map(Args::into_run)
    }

    #[test]
    fn the_command_is_well_formed() {
        Args::command().debug_assert();
    }

    #[test]
    fn defaults_are_the_engines() {
        let (path, overrides, opts) = parse(&["dir/s.toml"]).unwrap();
        let d = EmuOptions::default();
        assert_eq!(path, PathBuf::from("dir/s.toml"));
        assert!(overrides.is_empty());
        assert_eq!(opts.base_dir, PathBuf::from("dir"));
        assert_eq!(
            (opts.log_packets, opts.pin_threads, opts.spin_us, opts.tolerance_us, opts.rt_priority, opts.single_thread),
            (d.log_packets, d.pin_threads, d.spin_us, d.tolerance_us, d.rt_priority, d.single_thread)
        );
        assert_eq!(opts.cpus, d.cpus);
    }

    #[test]
    fn flags_set_their_options() {
        let (_, overrides, opts) = parse(&[
            "--set",
            "duration=3",
            "--log-packets",
            "s.toml",
            "--no-pin",
            "--two-threads",
            "--rt",
            "0",
            "--spin-us",
            "7",
            "--tolerance-us",
            "0",
            "--cpus",
            "one",
            "--set",
            "link.rate=24Mbps",
            "--set",
            "duration=4",
        ])
        .unwrap();
        assert_eq!(overrides["duration"], toml::Value::Integer(4), "the last --set of a key wins");
        assert_eq!(overrides["link.rate"], toml::Value::String("24Mbps".into()));
        assert!(opts.log_packets && !opts.pin_threads && !opts.single_thread);
        assert_eq!((opts.rt_priority, opts.spin_us, opts.tolerance_us), (None, 7, Some(0)));
        assert_eq!(opts.cpus, Cpus::One);
        assert_eq!(parse(&["s.toml", "--rt", "-1"]).unwrap().2.rt_priority, None);
        assert_eq!(parse(&["s.toml", "--rt", "20"]).unwrap().2.rt_priority, Some(20));
    }

    #[test]
    fn bad_input_exits_2() {
        for bad in [
            &[][..],
            &["s.toml", "t.toml"],
            &["s.toml", "--set", "novalue"],
            &["s.toml", "--rt", "x"],
            &["s.toml", "--spin-us"],
            &["s.toml", "--cpus", "two"],
            &["s.toml", "--bogus"],
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
        assert_eq!(parse(&["--help"]).unwrap_err().exit_code(), 0);
    }
}
