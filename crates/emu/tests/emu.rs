//! The emulator end to end: real namespaces, TUN devices, kernel TCP, cclab's UDP transport and
//! an external program. These need root (CI runs as root); without it each test says so and
//! passes. Runs are serialised: two emulations at once would share the CPUs and each other's
//! timing, and the cleanup checks count namespaces machine-wide.

use cclab_core::record::{Fate, PacketKind, PacketLog};
use cclab_core::scenario::Scenario;
use cclab_emu::{EmuOptions, EmuOutput};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn can_run() -> bool {
    match cclab_emu::preflight() {
        Ok(()) => true,
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

fn scenario(text: &str, dir: &Path) -> Scenario {
    cclab_emu::parse_scenario(text, "test.toml", &toml::Table::new(), dir).unwrap_or_else(|e| panic!("{e}"))
}

fn emulate(text: &str) -> EmuOutput {
    let dir = repo();
    let s = scenario(text, &dir);
    let opts = EmuOptions { log_packets: true, base_dir: dir, ..EmuOptions::default() };
    cclab_emu::run(&s, &opts, &mut |_| Ok(())).unwrap_or_else(|e| panic!("{e}"))
}

/// Every delivered data packet obeys the link model: it entered the queue no earlier than it
/// was sent, left it no earlier than it entered, and arrived no earlier than its departure plus
/// the propagation delay, less the run's tolerance (a wake-up releases packets due up to the
/// tolerance after it, `timing`), and never before it was sent.
fn check_causality(out: &EmuOutput, prop_ns: u64) {
    let log = out.run.packets.as_ref().unwrap();
    let tolerance = out.emu.tolerance_ns;
    for i in 0..log.len() {
        if log.kind[i] != PacketKind::Data as u8 || log.fate[i] != Fate::Delivered as u8 {
            continue;
        }
        assert!(log.enqueued[i] >= log.sent[i], "packet {} queued before it was sent", log.uid[i]);
        assert!(log.dequeued[i] >= log.enqueued[i], "packet {} left before it arrived", log.uid[i]);
        assert!(
            log.arrived[i] + tolerance >= log.dequeued[i] + prop_ns,
            "packet {} beat the propagation delay by more than the tolerance",
            log.uid[i]
        );
        assert!(log.arrived[i] >= log.sent[i], "packet {} arrived before it was sent", log.uid[i]);
    }
}

fn conserved(out: &EmuOutput) {
    let st = &out.run.stats;
    assert!(st.data_sent > 0);
    assert_eq!(st.data_sent, st.data_delivered + st.data_dropped + st.data_in_flight_end, "{st:?}");
    assert_eq!(out.emu.forward.unclassified, 0, "every data packet belongs to a flow");
    assert_eq!(out.emu.sender_tun.tx_dropped, 0, "no packet dropped unseen in the sending kernel");
}

#[test]
fn kernel_cubic_on_a_12_mbps_link() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let out = emulate(
        r#"
        duration = "3s"
        [link]
        rate = "12Mbps"
        delay = "10ms"
        queue = 20
        [[flows]]
        scheme = "kernel:cubic"
        "#,
    );
    conserved(&out);
    let log = out.run.packets.as_ref().unwrap();
    check_causality(&out, 10_000_000);
    let total = &out.run.metrics.total;
    // Rate: the link is the bottleneck and Cubic keeps it busy after its first round trips.
    assert!(total.throughput_mbps > 11.0 && total.throughput_mbps <= 12.05, "{total:?}");
    // Delay: propagation plus at most 20 queued packets (1 ms each at 12 Mbit/s), plus the
    // emulator's own lateness, which the run reports.
    assert!(total.delay_min_ms >= 10.0 && total.delay_min_ms < 11.5, "{total:?}");
    let late_p99_ms = out.emu.forward.error_quantile_us(0.99) / 1e3;
    assert!(total.delay_p95_ms <= 31.0 + late_p99_ms, "{total:?}, lateness p99 {late_p99_ms} ms");
    // Loss accounting: every drop is a queue overflow with a record, and the byte-weighted loss
    // is what the records say.
    let mut drops = 0;
    for i in 0..log.len() {
        if log.kind[i] == PacketKind::Data as u8
            && log.fate[i] != Fate::Delivered as u8
            && log.fate[i] != Fate::InFlight as u8
        {
            assert_eq!(log.fate[i], Fate::DropQueue as u8, "only the queue drops on this link");
            drops += 1;
        }
    }
    assert!(drops > 0, "Cubic fills a 20-packet queue in 3 s");
    assert_eq!(drops, total.packets_dropped);
    // Linux retransmits every segment the queue dropped, unless the run ended first: a drop in
    // the last 300 ms may still wait for its detection (RACK: an RTT and a quarter, ~30 ms; a
    // tail-loss probe: 2·srtt; the RTO: ≥ 200 ms). A retransmission may be cut differently
    // from the original, so a drop counts as repaired when one covers its first byte (payload:
    // the wire size less 52 bytes of IPv4 and TCP headers with timestamps).
    let last_sent = (0..log.len()).map(|i| log.sent[i]).max().unwrap_or(0);
    let is_data = |i: usize| log.kind[i] == PacketKind::Data as u8;
    let resent: Vec<(u32, u32)> = (0..log.len())
        .filter(|&i| is_data(i) && log.retransmission[i])
        .map(|i| (log.seq[i], log.size[i].saturating_sub(52)))
        .collect();
    let covered = |seq: u32| resent.iter().any(|&(start, len)| seq.wrapping_sub(start) < len.max(1));
    let early_drops: Vec<usize> = (0..log.len())
        .filter(|&i| is_data(i) && log.fate[i] == Fate::DropQueue as u8 && log.sent[i] + 300_000_000 <= last_sent)
        .collect();
    assert!(!early_drops.is_empty(), "slow start overflows the queue well before the end");
    let unrepaired: Vec<u32> = early_drops.iter().map(|&i| log.seq[i]).filter(|&seq| !covered(seq)).collect();
    assert!(unrepaired.is_empty(), "dropped and never sent again: {unrepaired:?} ({drops} drops)");
    let want = 100.0 * (1.0 - total.bytes_delivered as f64 / total.bytes_sent as f64);
    assert!((total.loss_pct - want).abs() < 1e-10);
    // The kernel's own view agrees on the base RTT.
    let tcp = &out.emu.flows[0].tcp;
    assert!(tcp.min_rtt_us() >= 20_000 && tcp.min_rtt_us() < 23_000, "kernel min RTT {} µs", tcp.min_rtt_us());
    assert!(out.emu.flows[0].app.bytes > 3_000_000);
    // Both directions' segments carry Linux's timestamps, and at 12 Mbit/s the thread reads
    // them as they come: their wait before the read is the measure's own millisecond.
    for p in [&out.emu.forward, &out.emu.reverse] {
        let wait = p.input_wait_quantile_ms(0.5);
        assert!(wait <= 1.0, "median wait before the read {wait} ms");
    }
}

#[test]
fn staggered_flows_start_and_stop_on_schedule() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    // Copa's departure pattern in miniature: flow 0 runs [0, 3 s), flow 1 [1 s, 2 s). BBR with
    // an unbounded queue: nothing is dropped (a lost SYN would wait 1 s to be resent), and BBR
    // keeps its queue bounded and lets the newcomer in.
    let out = emulate(
        r#"
        duration = "3500ms"
        [link]
        rate = "12Mbps"
        delay = "10ms"
        queue = "infinite"
        [[flows]]
        scheme = "kernel:bbr"
        count = 2
        every = "1s"
        leave = "lifo"
        "#,
    );
    conserved(&out);
    let log = out.run.packets.as_ref().unwrap();
    for (flow, start, stop) in [(0u32, 0u64, 3_000_000_000u64), (1, 1_000_000_000, 2_000_000_000)] {
        let mine: Vec<usize> =
            (0..log.len()).filter(|&i| log.flow[i] == flow && log.kind[i] == PacketKind::Data as u8).collect();
        let first = mine.iter().map(|&i| log.sent[i]).min().unwrap();
        assert!(first >= start && first < start + 50_000_000, "flow {flow} first sent at {first}");
        // No payload leaves after the stop (plus the few ms the sender needs to notice it): what
        // follows are only the sender's kernel answering ACKs still in flight with resets.
        let last_full = mine.iter().filter(|&&i| log.size[i] > 100).map(|&i| log.sent[i]).max().unwrap();
        assert!(last_full < stop + 5_000_000, "flow {flow} sent data at {last_full}, after its stop");
    }
    // While both run they share the link.
    let m = &out.run.metrics;
    assert_eq!(m.total.packets_dropped, 0);
    assert!(m.flows[1].throughput_mbps > 2.0, "{:?}", m.flows[1]);
}

#[test]
fn many_flows_planned_at_zero_all_start_at_zero() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    // Twenty sender threads and twenty receivers, made, in their namespaces and with their
    // sockets and buffers ready before time zero, so the twenty SYNs leave together and the
    // twenty first data packets follow the handshake together. (When the threads were made
    // after time zero, their first data left over 9 ms here and up to 80 ms under Python.)
    let out = emulate(
        r#"
        duration = "300ms"
        [link]
        rate = "100Mbps"
        delay = "5ms"
        queue = "infinite"
        [[flows]]
        scheme = "kernel:cubic"
        count = 10
        [[flows]]
        scheme = "kernel:reno"
        count = 10
        "#,
    );
    let log = out.run.packets.as_ref().unwrap();
    let first = |flow: u32, min_size: u32| {
        (0..log.len())
            .filter(|&i| log.flow[i] == flow && log.kind[i] == PacketKind::Data as u8 && log.size[i] >= min_size)
            .map(|i| log.sent[i])
            .min()
            .unwrap_or_else(|| panic!("flow {flow} sent nothing"))
    };
    let spread = |t: &[u64]| (t.iter().max().unwrap() - t.iter().min().unwrap()) as f64 / 1e6;
    let syns: Vec<u64> = (0..20).map(|f| first(f, 0)).collect();
    let data: Vec<u64> = (0..20).map(|f| first(f, 1000)).collect();
    // Time zero is when the threads are released: the SYNs follow within a few ms (the
    // threads' wake-ups on two CPUs), all within one.
    assert!(*syns.iter().max().unwrap() < 20_000_000, "SYNs at {syns:?} ns");
    assert!(spread(&syns) < 2.0, "SYNs {} ms apart: {syns:?}", spread(&syns));
    assert!(spread(&data) < 4.0, "first data {} ms apart: {data:?}", spread(&data));
}

#[test]
fn a_slow_link_costs_little_cpu_and_stays_within_its_tolerance() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    // available_parallelism reads the calling thread's affinity mask.
    let cpus_before = std::thread::available_parallelism().unwrap();
    let out = emulate(
        r#"
        duration = "3s"
        [link]
        rate = "12Mbps"
        delay = "10ms"
        queue = 20
        [[flows]]
        scheme = "kernel:cubic"
        "#,
    );
    conserved(&out);
    let emu = &out.emu;
    // A kernel flow this slow runs on one CPU (`Cpus::Auto`), and the caller gets its CPUs back.
    assert!(emu.one_cpu);
    assert_eq!(std::thread::available_parallelism().unwrap(), cpus_before, "the caller's CPUs given back");
    // 12 Mbit/s: a packet every 1 ms, half of it is beyond the 80 µs cap.
    assert_eq!(emu.tolerance_ns, 80_000);
    let t = &emu.threads[0];
    let written = out.emu.forward.packets + out.emu.reverse.packets;
    // The thread sleeps between departures: about one wake-up per packet written or read, not
    // the millions of turns of a spinning loop (which would also use the whole CPU).
    assert!(t.timer_wakeups + t.io_wakeups < 2 * written, "{t:?}, {written} packets");
    assert!(t.spins < written, "{t:?}");
    // ~1,500 packets/s at ~20 µs each (wake-up and write, measured on a loaded 2-CPU VM) is
    // ~3 % of a CPU; 25 % leaves room for a busy machine and fails a spinning thread (~90 %).
    assert!(emu.path_cpu_pct() < 25.0, "path thread {:.1} % of a CPU", emu.path_cpu_pct());
    assert!(emu.process_cpu_pct() >= emu.path_cpu_pct() * 0.99, "the process includes the path thread");
    // Packets leave early only with a group, never by more than the tolerance (the early side
    // has no wake-up lateness to blur it); the median one within the tolerance plus a wake-up's
    // lateness (tens of µs on a VM), whatever the load.
    for p in [&out.emu.forward, &out.emu.reverse] {
        assert!(p.early_max_ns <= emu.tolerance_ns, "{} ns early", p.early_max_ns);
    }
    assert!(out.emu.forward.early_writes > 0, "the window is centred on the model's time");
    assert!(out.emu.forward.error_quantile_us(0.5) <= 80.0 + 100.0, "{:?}", out.emu.forward.error_quantile_us(0.5));
    // The start-up probe measured something, and far more than 12 Mbit/s.
    assert!(emu.capacity.mbps() > 100.0, "{:?}", emu.capacity);
    assert!(emu.capacity_warning.is_none());
}

#[test]
fn segments_leaving_together_reach_the_receiver_merged() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    // At 1 Gbit/s (a packet every 12 µs, a 6 µs tolerance) runs of a flow's segments leave in
    // one turn whenever the thread wakes or catches up; they go to the receiver as one GSO
    // packet, which its kernel must accept (no device drops) and deliver (goodput).
    let out = emulate(
        r#"
        duration = "2s"
        [link]
        rate = "1Gbps"
        delay = "5ms"
        queue = "1bdp"
        [[flows]]
        scheme = "kernel:cubic"
        "#,
    );
    conserved(&out);
    let fwd = &out.emu.forward;
    assert!(fwd.merged_writes > 0 && fwd.merged_packets >= 2 * fwd.merged_writes, "{fwd:?}");
    assert_eq!(fwd.device_drops, 0, "{:?}", fwd.last_write_error);
    check_causality(&out, 5_000_000);
    // The receiving application read what the link delivered (merged writes carry the same
    // bytes): the payload of the delivered packets (1448 of every 1500 bytes), less what was
    // still in the receiver's buffer at the end (a few MB at most) and retransmitted copies.
    // (No goodput threshold: on a loaded machine the sending application itself can be
    // starved of CPU for long enough to leave the flow application-limited, GRO or not.)
    let payload = out.run.metrics.total.bytes_delivered as f64 * 1448.0 / 1500.0;
    let app = out.emu.flows[0].app.bytes as f64;
    assert!(app > 0.9 * payload - 8e6 && app <= payload, "app read {app} bytes of {payload} delivered");
    assert_eq!(out.emu.reverse.merged_writes, 0, "ACKs are never merged");
}

#[test]
fn refuses_without_privileges() {
    // Run the binary as an unprivileged user (util-linux setpriv), where it must refuse with a
    // message saying what it needs.
    if Command::new("setpriv").arg("--version").output().is_err() || !can_run() {
        eprintln!("skipped: needs root and setpriv");
        return;
    }
    let tmp = temp_dir("nopriv");
    let dir = tmp.path();
    let scenario = dir.join("s.toml");
    std::fs::write(&scenario, "[link]\nrate = \"12Mbps\"\n[[flows]]\nscheme = \"kernel:cubic\"\n").unwrap();
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let bin = std::env::temp_dir().join(format!("cclab-emu-nopriv-{}", std::process::id()));
    std::fs::copy(env!("CARGO_BIN_EXE_cclab-emu"), &bin).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"])
        .arg(&bin)
        .arg(&scenario)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the emulator cannot run here: it needs CAP_NET_ADMIN and CAP_SYS_ADMIN"), "{stderr}");
    assert!(stderr.contains("run it as root"), "{stderr}");
    std::fs::remove_file(bin).ok();
}

#[test]
fn cclab_controller_over_udp() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    // Copa when the registry has it (the scheme the issue names), else Cubic.
    let names: Vec<&str> = cclab_cc::registry::schemes().iter().map(|s| s.name).collect();
    let scheme = if names.contains(&"copa") { "copa" } else { "cubic" };
    let out = emulate(&format!(
        r#"
        duration = "3s"
        [link]
        rate = "12Mbps"
        delay = "10ms"
        queue = "1bdp"
        [[flows]]
        scheme = "{scheme}"
        extra_rtt = "10ms"
        "#
    ));
    conserved(&out);
    let log = out.run.packets.as_ref().unwrap();
    check_causality(&out, 10_000_000);
    let total = &out.run.metrics.total;
    assert!(total.throughput_mbps > 6.0, "{scheme}: {total:?}");
    // Extra RTT of 10 ms: 5 ms before the bottleneck, so no data arrives sooner than 15 ms,
    // less the tolerance by which a wake-up may release a packet early (measured 14.996 ms).
    let early_ms = out.emu.tolerance_ns as f64 / 1e6;
    assert!(total.delay_min_ms >= 15.0 - early_ms, "{scheme}: {total:?}");
    // Full packets are 1500 bytes on the wire, as in the simulator.
    let full = (0..log.len()).filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.size[i] == 1500).count();
    assert!(full as f64 > 0.99 * total.packets_sent as f64);
    // Retransmission flags come from the transport's header and match its losses.
    let retx = (0..log.len()).filter(|&i| log.retransmission[i]).count() as u64;
    assert_eq!(retx, total.retransmissions);
    assert!(out.emu.flows[0].app.bytes > 2_000_000, "the receiver got the stream in order");
}

/// Processes whose command line contains `tag`.
fn processes_with(tag: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(tag) {
                out.push(pid);
            }
        }
    }
    out
}

/// The network namespaces alive machine-wide (by inode): those some thread is in, and those
/// held only by an open descriptor, as the emulator holds its own.
fn net_namespaces() -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    let mut add = |path: PathBuf| {
        if let Ok(link) = std::fs::read_link(path) {
            let s = link.display().to_string();
            if s.starts_with("net:[") {
                set.insert(s);
            }
        }
    };
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if entry.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        for sub in ["task", "fd"] {
            for e in std::fs::read_dir(entry.path().join(sub)).into_iter().flatten().flatten() {
                add(if sub == "task" { e.path().join("ns/net") } else { e.path() });
            }
        }
    }
    set
}

/// A wrapper file whose commands carry `tag`, so the test can find the processes.
fn tagged_wrapper(dir: &Path, tag: &str) -> PathBuf {
    let pair = repo().join("tests/emu/pair.py");
    let path = dir.join(format!("{tag}.toml"));
    std::fs::write(
        &path,
        format!(
            "run_first = \"receiver\"\nreceiver = \"exec python3 {p} recv {{port}} {tag}\"\n\
             sender = \"exec python3 {p} send {{ip}} {{port}} {tag}\"\nsetup_time = \"300ms\"\n",
            p = pair.display()
        ),
    )
    .unwrap();
    path
}

/// A fresh folder that is removed when the test ends, also when it fails.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("cclab-emu-test-{name}-")).tempdir().unwrap()
}

#[test]
fn wrapper_scheme_runs_an_external_program() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let tmp = temp_dir("wrapper");
    let dir = tmp.path();
    let tag = format!("cclabtag{}w", std::process::id());
    let wrapper = tagged_wrapper(dir, &tag);
    let out = emulate(&format!(
        r#"
        duration = "3s"
        [link]
        rate = "12Mbps"
        delay = "10ms"
        queue = "1bdp"
        [[flows]]
        scheme = "wrapper:{}"
        start = "500ms"
        stop = "2500ms"
        "#,
        wrapper.display()
    ));
    conserved(&out);
    let total = &out.run.metrics.total;
    assert!(total.throughput_mbps > 8.0, "{total:?}");
    // Nothing sent outside the flow's lifetime (plus the path's delay).
    let log = out.run.packets.as_ref().unwrap();
    let first = (0..log.len()).map(|i| log.sent[i]).min().unwrap();
    let last = (0..log.len()).filter(|&i| log.kind[i] == PacketKind::Data as u8).map(|i| log.sent[i]).max().unwrap();
    assert!(first >= 500_000_000 && last < 2_600_000_000, "sent from {first} to {last} ns");
    assert!(processes_with(&tag).is_empty(), "the programs are gone after the run");
}

#[test]
fn bad_schemes_give_clear_errors() {
    let tmp = temp_dir("bad");
    let dir = tmp.path();
    let err = |text: &str| cclab_emu::parse_scenario(text, "s.toml", &toml::Table::new(), dir).unwrap_err().to_string();
    let flows = |scheme: &str| format!("[link]\nrate = \"12Mbps\"\n[[flows]]\nscheme = \"{scheme}\"\n");
    let e = err(&flows("kernel:cubci"));
    assert!(e.contains("s.toml:4: field `flows[0].scheme`: `cubci` is not a congestion control this kernel offers; did you mean `kernel:cubic`?"), "{e}");
    assert!(e.contains("available here: kernel:"), "{e}");
    let e = err(&flows("wrapper:missing.toml"));
    assert!(e.contains("cannot read wrapper file") && e.contains("missing.toml"), "{e}");
    std::fs::write(dir.join("w.toml"), "run_first = \"receiver\"\nreceiver = \"rx {prot}\"\nsender = \"tx {port}\"\n")
        .unwrap();
    let e = err(&flows("wrapper:w.toml"));
    assert!(e.contains("w.toml:2: `receiver`: unknown placeholder `{prot}`; did you mean `{port}`?"), "{e}");
    assert!(e.contains("so its command needs `{ip}`"), "{e}");
    let e = err(&flows("cubik"));
    assert!(e.contains("kernel:<name>"), "an unknown name mentions the emulator's own schemes: {e}");
    let e = err("[link]\nrate = \"12Mbps\"\n[[flows]]\nscheme = \"kernel:cubic\"\nbeta = 0.5\n");
    assert!(e.contains("`kernel:cubic` takes no scheme options"), "{e}");
    // Request workloads run over kernel TCP only.
    let e = err("[link]\nrate = \"12Mbps\"\n[[flows]]\nscheme = \"cubic\"\ntraffic = \"requests\"\n\
                 [flows.requests]\ncdf = \"TINY_CDF\"\nload = \"1Mbps\"\n");
    assert!(
        e.contains(
            "field `flows[0].traffic`: the emulator runs request workloads over Linux TCP only: use a `kernel:` scheme"
        ),
        "{e}"
    );
}

/// Starts the `cclab-emu` binary on a long run with a kernel flow, a cclab flow and an
/// external program, capturing into `dir/TAG.pcapng`, and waits until its flows are running.
fn start_long_run(dir: &Path, tag: &str) -> std::process::Child {
    let wrapper = tagged_wrapper(dir, tag);
    let scenario = dir.join(format!("{tag}-scenario.toml"));
    std::fs::write(
        &scenario,
        format!(
            "duration = \"60s\"\n[link]\nrate = \"12Mbps\"\ndelay = \"10ms\"\nqueue = \"1bdp\"\n\
             [[flows]]\nscheme = \"kernel:cubic\"\n[[flows]]\nscheme = \"cubic\"\n\
             [[flows]]\nscheme = \"wrapper:{}\"\n",
            wrapper.display()
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_cclab-emu"))
        .arg(&scenario)
        .arg("--pcap")
        .arg(dir.join(format!("{tag}.pcapng")))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while processes_with(&format!("send 10.64.0.2 5002 {tag}")).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(10), "the run did not start its programs");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    child
}

/// Waits until the run's processes and namespaces are gone (the kernel tears a namespace down
/// as soon as its last holder goes; give it a moment).
fn assert_nothing_left(tag: &str, before: &BTreeSet<String>) {
    let t0 = Instant::now();
    loop {
        let procs = processes_with(tag);
        let extra: Vec<String> = net_namespaces().difference(before).cloned().collect();
        if procs.is_empty() && extra.is_empty() {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "left behind: processes {procs:?}, namespaces {extra:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid and a signal number.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

#[test]
fn killed_runs_leave_nothing_behind() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let tmp = temp_dir("kill");
    let dir = tmp.path();
    let before = net_namespaces();

    // Ctrl-C: the run stops, removes everything and says it was interrupted.
    let tag = format!("cclabtag{}i", std::process::id());
    let mut child = start_long_run(dir, &tag);
    assert!(net_namespaces().len() >= before.len() + 2, "the run made its namespaces");
    // The capture is streamed under a temporary name while the run goes on: the file grows
    // (in 64 KB writes; at 12 Mbit/s that is a few per second).
    let partial = dir.join(format!(".{tag}.pcapng.partial"));
    let t0 = Instant::now();
    while std::fs::metadata(&partial).map_or(0, |m| m.len()) < 64 << 10 {
        assert!(t0.elapsed() < Duration::from_secs(5), "the capture is not being written");
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(child.id(), libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_nothing_left(&tag, &before);
    // An interrupted run leaves no capture, complete-looking or not.
    assert!(!partial.exists() && !dir.join(format!("{tag}.pcapng")).exists());

    // SIGKILL: no handler runs; the kernel must do it all (anonymous namespaces, death signals).
    let tag = format!("cclabtag{}k", std::process::id());
    let mut child = start_long_run(dir, &tag);
    kill(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    assert_nothing_left(&tag, &before);
    // Nothing could remove the temporary file, but nothing named it as finished either.
    assert!(!dir.join(format!("{tag}.pcapng")).exists());

    // A child dies: the run notices, fails with a message naming it, and cleans up.
    let tag = format!("cclabtag{}c", std::process::id());
    let child = start_long_run(dir, &tag);
    for pid in processes_with(&format!("send 10.64.0.2 5002 {tag}")) {
        kill(pid, libc::SIGKILL);
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("flow 2 sender") && stderr.contains("killed by signal 9"), "{stderr}");
    assert_nothing_left(&tag, &before);
    assert!(!dir.join(format!("{tag}.pcapng")).exists() && !dir.join(format!(".{tag}.pcapng.partial")).exists());
}

/// mahimahi's paths in the emulator: ACKs queue behind a reverse trace (`mm-link UP DOWN`) and
/// the data direction's delay varies (`delay_jitter`) without reordering; the same stages as
/// the simulator's, so the same model times.
#[test]
fn reverse_trace_and_delay_jitter() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let tmp = temp_dir("reverse-trace");
    let dir = tmp.path();
    let trace = dir.join("ack.trace");
    // One 1500-byte ACK opportunity every 20 ms.
    std::fs::write(&trace, "20\n").unwrap();
    let out = emulate(&format!(
        r#"
        duration = "3s"
        [link]
        rate = "12Mbps"
        delay = "10ms"
        delay_jitter = "4ms"
        reverse_trace = {:?}
        queue = "infinite"
        [[flows]]
        scheme = "cubic"
        "#,
        trace.display().to_string()
    ));
    conserved(&out);
    let log = out.run.packets.as_ref().unwrap();
    check_causality(&out, 10_000_000);
    let ms = 1_000_000u64;
    let mut acks = 0;
    let mut data: Vec<(u64, u64, u64)> = Vec::new();
    for i in 0..log.len() {
        if log.fate[i] != Fate::Delivered as u8 {
            continue;
        }
        if log.kind[i] == PacketKind::Ack as u8 {
            // ACKs leave the reverse bottleneck only at the trace's opportunities (model time).
            assert_eq!(log.dequeued[i] % (20 * ms), 0, "ACK left off the trace at {}", log.dequeued[i]);
            acks += 1;
        } else {
            data.push((log.dequeued[i], log.arrived[i], log.uid[i]));
        }
    }
    assert!(acks > 100, "{acks} ACKs");
    // Propagation is 10 ms plus up to 4 ms of jitter; the real-time loop may add its lateness
    // (tens of µs on a quiet host, more on a loaded one, which the run reports) or release a
    // packet up to its tolerance early (checked above), never more. One packet in a hundred may
    // meet a wake-up later than the lateness p99, so two in a hundred may exceed the bound.
    let extra: Vec<u64> = data.iter().map(|&(d, a, _)| a.saturating_sub(d + 10 * ms)).collect();
    let late_p99 = out.emu.forward.error_quantile_us(0.99) * 1e3;
    let bound = 4 * ms + ms / 2 + late_p99 as u64;
    let over = extra.iter().filter(|&&e| e > bound).count();
    assert!(over * 50 < extra.len(), "{over} of {} over {bound} ns (lateness p99 {late_p99} ns)", extra.len());
    let spread = extra.iter().filter(|&&e| e > ms).count();
    assert!(spread * 2 > extra.len(), "jitter applied to {spread} of {}", extra.len());
    // No reordering: packets reach the receiver in the order they left the bottleneck.
    data.sort();
    assert!(data.windows(2).all(|w| w[0].1 <= w[1].1 + 200_000), "reordered");
}

/// The queue disciplines run in the emulator's bottleneck as in the simulator's: kernel Cubic
/// under CoDel keeps a short standing queue, a policer never lets more through than its rate
/// and burst allow, and `10-every-200` releases ACKs only at its 200 ms bursts.
#[test]
fn queue_disciplines_policer_and_ack_aggregation() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let ms = 1_000_000u64;
    let delivered_data = |log: &PacketLog| -> Vec<usize> {
        (0..log.len())
            .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
            .collect()
    };

    // CoDel (RFC 8289) under kernel Cubic: a 1000-packet buffer that droptail would fill.
    let out = emulate(
        r#"
        duration = "6s"
        [link]
        rate = "12Mbps"
        delay = "20ms"
        queue = 1000
        aqm = "codel"
        [[flows]]
        scheme = "kernel:cubic"
        "#,
    );
    conserved(&out);
    let log = out.run.packets.as_ref().unwrap();
    check_causality(&out, 20 * ms);
    let mut sojourn: Vec<u64> = delivered_data(log)
        .into_iter()
        .filter(|&i| log.enqueued[i] > 2000 * ms)
        .map(|i| log.dequeued[i] - log.enqueued[i])
        .collect();
    sojourn.sort_unstable();
    let median = sojourn[sojourn.len() / 2] as f64 / ms as f64;
    assert!(median < 20.0, "CoDel's median sojourn {median} ms");
    assert!(out.run.metrics.total.throughput_mbps > 9.0, "{}", out.run.metrics.total.throughput_mbps);

    // A 12 Mbit/s policer with a 15 KB bucket before a 100 Mbit/s link.
    let out = emulate(
        r#"
        duration = "4s"
        [link]
        rate = "100Mbps"
        delay = "10ms"
        queue = 1000
        aqm = "policer"
        [link.token_bucket]
        rate = "12Mbps"
        burst = "15KB"
        [[flows]]
        scheme = "kernel:cubic"
        "#,
    );
    conserved(&out);
    let log = out.run.packets.as_ref().unwrap();
    let mut passed: Vec<(u64, u64)> = (0..log.len())
        .filter(|&i| log.kind[i] == PacketKind::Data as u8)
        .filter(|&i| log.fate[i] != Fate::DropQueue as u8 && log.fate[i] != Fate::DropLoss as u8)
        .filter(|&i| log.enqueued[i] != cclab_core::NEVER)
        .map(|i| (log.enqueued[i], log.size[i] as u64))
        .collect();
    passed.sort_unstable();
    assert!(out.run.stats.data_dropped > 0, "the policer dropped nothing");
    for i in (0..passed.len()).step_by(53) {
        let mut bytes = 0u64;
        for &(t, b) in &passed[i..] {
            bytes += b;
            let allowed = 15_000.0 + 12e6 / 8.0 * (t - passed[i].0) as f64 / 1e9;
            assert!(bytes as f64 <= allowed + 1e-6, "{bytes} B passed by {t} from {}", passed[i].0);
        }
    }

    // The Pantheon's ACK aggregation: ten opportunities every 200 ms on the ACK path.
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/cclab/data/traces/10-every-200.trace");
    if trace.exists() {
        let out = emulate(&format!(
            r#"
            duration = "4s"
            [link]
            rate = "12Mbps"
            delay = "10ms"
            reverse_trace = {:?}
            [[flows]]
            scheme = "kernel:cubic"
            "#,
            trace.canonicalize().unwrap().display().to_string()
        ));
        conserved(&out);
        let log = out.run.packets.as_ref().unwrap();
        let mut bursts: BTreeSet<u64> = BTreeSet::new();
        for i in 0..log.len() {
            if log.kind[i] == PacketKind::Ack as u8 && log.fate[i] == Fate::Delivered as u8 {
                assert_eq!(log.dequeued[i] % (200 * ms), 0, "ACK left off the bursts at {}", log.dequeued[i]);
                bursts.insert(log.dequeued[i]);
            }
        }
        assert!(bursts.len() >= 15, "ACK bursts at {bursts:?}");
    }
}

/// A request workload over kernel Cubic: K persistent connections, Poisson arrivals, sizes
/// from a CDF file (60% below 1 KB, the rest up to 50 KB: one to 35 packets).
#[test]
fn request_workload_over_kernel_tcp() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let tmp = temp_dir("requests");
    let dir = tmp.path();
    let cdf_file = dir.join("small.cdf");
    std::fs::write(&cdf_file, "0 0\n1000 0.6\n50000 1\n").unwrap();
    let text = format!(
        r#"
        duration = "5s"
        [link]
        rate = "20Mbps"
        delay = "10ms"
        queue = "1bdp"
        [[flows]]
        scheme = "kernel:cubic"
        traffic = "requests"
        [flows.requests]
        cdf = "{}"
        load = "8Mbps"
        connections = 20
        "#,
        cdf_file.display()
    );
    let out = emulate(&text);
    conserved(&out);
    let reqs = &out.run.requests;
    let (rate, base_rtt) = (20e6 / 8.0, 20_000_000u64);
    let cdf = cclab_core::cdf::EmpiricalCdf::load(cdf_file.to_str().unwrap()).unwrap();

    // The arrivals are the simulator's: the same RequestSource on the same seed streams gives
    // the same times and sizes (a connection drawn when all 20 are busy comes from a stream
    // of its own, so it would not change them).
    let s = scenario(&text, dir);
    let plan = cclab_engine::plan::PathPlan::resolve(&s).unwrap();
    let mut src = plan.request_source(0);
    let mut want = Vec::new();
    while let Some(t) = src.next_arrival() {
        want.push((t, src.arrive(&|_| true).1));
    }
    let got: Vec<(u64, u64)> = reqs.iter().map(|r| (r.request.start, r.request.size)).collect();
    assert_eq!(got, want, "the emulator issued the planned requests");

    // Offered load: λ = 8 Mbit/s / (8 × E[size]) ≈ 95 requests/s, ~476 in 5 s; the count is
    // Poisson, σ ≈ 22, so 4σ (±18%) holds it.
    let expected = 5.0 * 8e6 / (8.0 * cdf.mean());
    let n = reqs.len() as f64;
    assert!((n - expected).abs() < 4.0 * expected.sqrt(), "{n} requests, {expected:.0} expected");
    // Every request that arrived 0.5 s before the end completed: the worst case is a 50 KB
    // request (20 ms at the link rate) behind a full 1-BDP queue (20 ms) plus one RTT, or a
    // lost SYN's 1 s retransmission, which would show here as a failure worth seeing.
    for r in reqs.iter().filter(|r| r.request.start < 4_500_000_000) {
        assert!(r.request.end.is_some(), "request {:?} did not complete", r.request);
    }
    let done: Vec<_> = reqs.iter().filter(|r| r.request.end.is_some()).collect();
    assert!(done.len() as f64 > 0.9 * n, "{} of {n} completed", done.len());
    // No request beats its ideal time (the transfer at the link rate plus the base RTT) by more
    // than the emulator allows itself: a wake-up may release a packet up to its tolerance
    // before its model time, once on the way there (the request) and once on the way back
    // (the response's last packet); the client and the path read one clock, and 10 µs covers
    // the ns rounding of the model's times. (Seen: 11.3 µs early at 20 Mbit/s, whose
    // tolerance is 80 µs.)
    let early = 2.0 * out.emu.tolerance_ns as f64 + 10_000.0;
    for r in &done {
        let ideal = cclab_core::metrics::fct::ideal_ns(r.request.size, rate, base_rtt);
        let fct = (r.request.end.unwrap() - r.request.start) as f64;
        assert!(fct >= ideal - early, "{:?}: FCT {fct} ns < ideal {ideal} ns", r.request);
    }
    let summary = cclab_core::metrics::fct::summary(reqs);
    let all = summary.last().unwrap();
    assert_eq!(all.completed as usize, done.len());
    assert!(all.slowdown_median.is_finite() && all.slowdown_median >= 1.0, "{all:?}");
    // The connections' data crossed the recorded path: every request's bytes (and no more than
    // a retransmission's worth beyond) in data records of the connections' flows.
    let log = out.run.packets.as_ref().unwrap();
    let payload: u64 = (0..log.len())
        .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
        .map(|i| (log.size[i] as u64).saturating_sub(52))
        .sum();
    let sent: u64 = reqs.iter().filter(|r| r.request.end.is_some()).map(|r| r.request.size.max(8)).sum();
    assert!(payload >= sent, "{payload} payload bytes delivered for {sent} bytes of completed requests");
}

/// An interrupted request run (Ctrl-C reaches `run` as an error from its progress callback)
/// stops within a poll interval of its threads and leaves no namespace behind, with 200
/// connections (600 sockets) open.
#[test]
fn interrupted_request_run_stops_and_cleans_up() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let before = net_namespaces();
    let dir = repo();
    let s = scenario(
        r#"
        duration = "60s"
        [link]
        rate = "20Mbps"
        delay = "10ms"
        [[flows]]
        scheme = "kernel:cubic"
        traffic = "requests"
        [flows.requests]
        cdf = "TINY_CDF"
        load = "10Mbps"
        "#,
        &dir,
    );
    let opts = EmuOptions { base_dir: dir, ..EmuOptions::default() };
    let mut asked: Option<Instant> = None;
    let r = cclab_emu::run(&s, &opts, &mut |t| {
        if t < 1_000_000_000 {
            return Ok(());
        }
        asked.get_or_insert_with(Instant::now);
        Err("Ctrl-C".into())
    });
    assert!(matches!(r, Err(cclab_emu::EmuError::Interrupted(_))), "{:?}", r.err());
    // The endpoints poll their stop flag every 20 ms; the path thread finishes its turn.
    let took = asked.unwrap().elapsed();
    assert!(took < Duration::from_millis(500), "the run took {took:?} to stop");
    assert_nothing_left("cclab-no-such-process-tag", &before);
}

/// Bundler's inbox as a stage of the emulated path, with kernel Cubic end hosts (issue 11):
/// without it, four backlogged Cubic flows keep a standing queue in the bottleneck's
/// 300-packet buffer (up to 150 ms at 24 Mbit/s); with it (Copa at the inbox, drop-tail there),
/// the bottleneck queue is short and the standing queue sits in the inbox. The simulator's
/// test of the same claim (`crates/sim/tests/workloads.rs`) runs 96 Mbit/s for 20 s; here
/// 24 Mbit/s for 6 s, as two real-time runs must stay short.
#[test]
fn the_inbox_moves_the_standing_queue_from_the_bottleneck_to_itself() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let base = r#"
        duration = "6s"
        [link]
        rate = "24Mbps"
        delay = "20ms"
        queue = 300
        [[flows]]
        scheme = "kernel:cubic"
        count = 4
        "#;
    let without = emulate(base);
    let with = emulate(&format!("{base}\n[middlebox]\nscheduler = \"droptail\"\n"));
    conserved(&without);
    conserved(&with);
    const SEC: u64 = 1_000_000_000;
    // Median time in the bottleneck's queue of the data packets delivered over 3-6 s, ms.
    let sojourn = |out: &EmuOutput| {
        let log = out.run.packets.as_ref().unwrap();
        let mut q: Vec<u64> = (0..log.len())
            .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
            .filter(|&i| log.arrived[i] >= 3 * SEC)
            .map(|i| log.dequeued[i] - log.enqueued[i])
            .collect();
        q.sort_unstable();
        q[q.len() / 2] as f64 / 1e6
    };
    let (q0, q1) = (sojourn(&without), sojourn(&with));
    // The inbox's queue over the same seconds, as time at the link rate (3 MB/s), ms.
    let late: Vec<_> = with.run.middlebox.iter().filter(|r| r.t >= 3 * SEC).collect();
    assert!(late.len() >= 250, "the control loop sampled every 10 ms: {} rows", late.len());
    let inbox_ms = late.iter().map(|r| r.queue_bytes as f64 / 3e6 * 1e3).sum::<f64>() / late.len() as f64;
    eprintln!("bottleneck sojourn: {q0:.1} ms without, {q1:.1} ms with; inbox queue {inbox_ms:.1} ms");
    // Tolerances: Cubic without the inbox refills the buffer after each loss (a sawtooth
    // between ~half and all of 150 ms), so its median is far above 30 ms. Copa's standing
    // queue at δ = 0.5 is a few packets (a 1,500-byte packet is 0.5 ms here); 10 ms leaves room
    // for its oscillation and for the emulator's write lateness, which the records include.
    // The inbox holds what Cubic would have queued at the bottleneck: at least 20 ms of it.
    assert!(q0 > 30.0, "Cubic alone keeps a standing queue at the bottleneck ({q0} ms)");
    assert!(q1 < 10.0, "with the inbox the bottleneck queue is short ({q1} ms)");
    assert!(inbox_ms > 20.0, "the queue now sits in the inbox ({inbox_ms} ms)");
    // The inbox keeps releasing the bundle: the link is not starved. Not "at about the link
    // rate": in some runs Copa at the inbox settles well below it (10.5 of 24 Mbit/s over
    // 3-6 s in one CI rehearsal, above 80 % in the runs before it) with its queue still full,
    // the open under-use of issue 11 (Copa's start-up at the inbox); 35 % separates that
    // from a stall.
    let log = with.run.packets.as_ref().unwrap();
    let bytes: u64 = (0..log.len())
        .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
        .filter(|&i| log.arrived[i] >= 3 * SEC)
        .map(|i| log.size[i] as u64)
        .sum();
    let mbps = bytes as f64 * 8.0 / 3.0 / 1e6;
    assert!(mbps > 0.35 * 24.0, "throughput over 3-6 s with the inbox: {mbps} Mbit/s");
}
