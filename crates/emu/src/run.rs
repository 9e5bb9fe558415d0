//! One emulator run: build the namespaces and devices, start the path threads and the flows'
//! endpoints on schedule, collect the records, tear everything down.
//!
//! Teardown is structural rather than a list of things to remember: every thread lives in one
//! `std::thread::scope`, every flag that stops them is set by a guard dropped before the scope
//! joins, every external program is a `Program` killed on drop, and the namespaces and TUN
//! devices disappear with their descriptors. So an error, a Ctrl-C (seen through `progress`),
//! a dead child or a panic all leave the same nothing behind as a normal end.

use crate::capacity::{self, Capacity};
use crate::capture::{CaptureFile, SharedTap};
use crate::endpoint::{AppBytes, StartLine, Stop};
use crate::netns::DevCounters;
use crate::path::{
    run_paths, Bundle, CaptureAt, FlowTable, Path, PathConfig, PathStats, ThreadConfig, ThreadStats, Transport,
};
use crate::process::Program;
use crate::records::{Collector, Msg};
use crate::scheme::{self, EmuScheme};
use crate::sys::{self, Clock};
use crate::timing;
use crate::topology::{Topology, RECEIVER_IP, SENDER_IP};
use crate::wrapper::Side;
use crate::{kernel_tcp, requests, udp};
use cclab_core::record::PacketKind;
use cclab_core::scenario::{Scenario, ScenarioErrors, Source};
use cclab_engine::plan::PathPlan;
use cclab_engine::sinks::Sinks;
use cclab_engine::stage::{DelayLine, Loss};
use cclab_engine::RunOutput;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Flow i's server port is `BASE_PORT + i`: below Linux's ephemeral range (32768–60999), so a
/// client's own port can never be mistaken for another flow's.
pub const BASE_PORT: u16 = 5000;
pub const MAX_FLOWS: usize = (32768 - BASE_PORT as usize) - 1;
/// How often the main thread wakes to start/stop programs, check children and report progress.
const TICK: Duration = Duration::from_millis(20);
/// How long the flows' threads may take to reach the start line: far more than thousands of
/// them need; a thread that never arrives has failed in a way the run must report.
const START_LIMIT: Duration = Duration::from_secs(30);

#[derive(Clone, Debug)]
pub struct EmuOptions {
    pub log_packets: bool,
    /// Folder that relative wrapper paths are resolved against (the scenario file's).
    pub base_dir: PathBuf,
    /// Pin each path thread to the CPU it starts on, so the scheduler does not move the
    /// spinning thread around (and other work goes to the other CPUs).
    pub pin_threads: bool,
    /// The path threads spin rather than sleep when their planned wake-up is within this (µs).
    pub spin_us: u64,
    /// How far before or after its model time a packet may leave, so that one wake-up serves
    /// several (µs); None: 5/8 of a packet time at the link's rate, at most 80 µs
    /// (`timing::tolerance_ns`). 0 asks for every packet on time, at the cost of more wake-ups.
    pub tolerance_us: Option<u64>,
    /// Real-time (SCHED_FIFO) priority of the path threads; None leaves them ordinary. Without
    /// the privilege for it the threads stay ordinary (`PathStats::realtime` says which).
    pub rt_priority: Option<i32>,
    /// Serve both directions from one thread (it picks up ACKs while it waits for data
    /// departures) instead of one thread per direction.
    pub single_thread: bool,
    /// Whether the endpoints share the path thread's CPU ([`Cpus`]).
    pub cpus: Cpus,
    /// Merge a kernel TCP flow's segments that leave the path together into one GSO write
    /// to the receiver, as the receiving NIC's GRO would (each segment keeps its own record).
    pub receive_offload: bool,
    /// Trace every flow's sender (`--trace`) at most once per this many ns: cclab senders after
    /// their ACKs as in the simulator (0: every ACK), kernel senders from TCP_INFO (at least
    /// `kernel_tcp::MIN_SAMPLE_NS` apart). None: no trace.
    pub trace: Option<u64>,
    /// Capture the packets at the senders' device into this pcapng file (`capture`): written
    /// while the run goes on, under a temporary name until the run completes.
    pub pcap: Option<PathBuf>,
}

impl Default for EmuOptions {
    fn default() -> Self {
        // Measured on a 2-CPU VM shared with other work (benches/emu_bench.py): one pinned
        // thread serving both directions carries more and is late less often than two; with
        // SCHED_FIFO (and its self-imposed pauses, see `path::drive`) a busy neighbour no
        // longer makes it ms late: at load 6, 1 Gbit/s, p99 lateness 0.12 ms instead of 9 ms.
        EmuOptions {
            log_packets: false,
            base_dir: PathBuf::from("."),
            pin_threads: true,
            spin_us: 5,
            tolerance_us: None,
            rt_priority: Some(10),
            single_thread: true,
            cpus: Cpus::Auto,
            receive_offload: true,
            trace: None,
            pcap: None,
        }
    }
}

/// Where the run's threads go: the path thread, the kernel flows' applications (their TCP
/// stacks run inside their system calls) and the record collector.
///
/// A thread woken from another CPU costs an inter-processor interrupt, and on a VM each is an
/// exit to the host: at 100 Mbit/s most of the emulator's CPU went to them (crates/emu/README.md,
/// "Where 100 Mbit/s spends it"). On one CPU the wake-ups are local. Measured (10 s runs, one
/// CPU / two, default tolerance; "One CPU at low rates" there): one Cubic flow at 100 Mbit/s,
/// the process at 20–26 / 42–46 % of a CPU (three alternated pairs), the delay error's p99
/// 96–142 / 79–178 µs; at 200 Mbit/s 44 / 64 %, at 400 65 / 93 %, the p99s within 13 µs of
/// each other; fifty-one flows at 100 Mbit/s 23 / 39 %. At 1 Gbit/s one CPU is not enough
/// (581–878 Mbit/s carried), and with no tolerance (`tolerance_us = 0`, the fidelity suite's
/// referee) the p99 doubled (87–89 µs against 39–50).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cpus {
    /// One CPU when [`Cpus::one_cpu`] says so, else spread.
    #[default]
    Auto,
    /// Every thread on the CPU the run starts on.
    One,
    /// The path thread on its CPU, the rest wherever the scheduler puts them.
    Spread,
}

impl std::str::FromStr for Cpus {
    type Err = String;
    fn from_str(s: &str) -> Result<Cpus, String> {
        match s {
            "auto" => Ok(Cpus::Auto),
            "one" => Ok(Cpus::One),
            "spread" => Ok(Cpus::Spread),
            _ => Err(format!("{s:?}: expected auto, one or spread")),
        }
    }
}

/// The fastest link [`Cpus::Auto`] emulates on one CPU: half the rate one CPU carried a flow at
/// with room to spare (above), for many flows and a busy machine.
pub const ONE_CPU_MAX_BPS: u64 = 200_000_000;

impl Cpus {
    /// Whether the run goes on one CPU. [`Cpus::Auto`] takes one for a link of at most
    /// [`ONE_CPU_MAX_BPS`], only kernel TCP flows (whose applications' CPU use was measured;
    /// external programs' and cclab's own endpoints' is not known here), and a timing tolerance
    /// (with none, every packet's time counts and two CPUs keep it better).
    pub fn one_cpu(self, link_bps: u64, all_kernel: bool, tolerance_ns: u64) -> bool {
        match self {
            Cpus::One => true,
            Cpus::Spread => false,
            Cpus::Auto => link_bps <= ONE_CPU_MAX_BPS && all_kernel && tolerance_ns > 0,
        }
    }
}

#[derive(Debug)]
pub enum EmuError {
    /// The machine cannot run the emulator (no root, no /dev/net/tun, ...).
    Environment(String),
    Scenario(ScenarioErrors),
    /// Setting up or running failed (a device, a socket, a program that died).
    Failed(String),
    /// The progress callback asked to stop (Ctrl-C).
    Interrupted(String),
}

impl std::fmt::Display for EmuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmuError::Environment(m) => write!(f, "the emulator cannot run here: {m}"),
            EmuError::Scenario(e) => write!(f, "{e}"),
            EmuError::Failed(m) => write!(f, "emulator run failed: {m}"),
            EmuError::Interrupted(m) => write!(f, "interrupted: {m}"),
        }
    }
}
impl std::error::Error for EmuError {}

/// One flow's end-of-run figures, from its endpoints.
#[derive(Clone, Debug, Default)]
pub struct FlowEnd {
    /// What the receiving application read (not available for external programs).
    pub app: AppBytes,
    /// Datagrams a cclab UDP sender's own kernel refused.
    pub local_drops: u64,
    /// TCP_INFO readings of a `kernel:` sender.
    pub tcp: kernel_tcp::TcpTrace,
    /// A cclab sender's trace (with `EmuOptions::trace`).
    pub trace: Option<cclab_engine::CcTrace>,
}

/// Emulator-specific counters, next to the engine-neutral `RunOutput`.
#[derive(Clone, Debug, Default)]
pub struct EmuStats {
    pub forward: PathStats,
    pub reverse: PathStats,
    /// Kernel counters of the TUN devices: `sender_tun.tx_dropped` are packets the sending
    /// kernel dropped before the emulator could read them (never seen, so never recorded).
    pub sender_tun: DevCounters,
    pub receiver_tun: DevCounters,
    pub flows: Vec<FlowEnd>,
    pub setup_secs: f64,
    /// One entry per path thread (one, or two with `single_thread = false`).
    pub threads: Vec<ThreadStats>,
    /// The timing error the path allowed itself, either way (see `EmuOptions::tolerance_us`), ns.
    pub tolerance_ns: u64,
    /// CPU time of the whole emulator process from the run's start to its end (path threads,
    /// endpoints — kernel TCP senders and receivers included — and the record collector), ns.
    pub process_cpu_ns: u64,
    /// Length of the run on the clock, ns.
    pub run_ns: u64,
    /// The forwarding ceiling measured at start-up, and the warning when the link asked for more.
    pub capacity: Capacity,
    pub capacity_warning: Option<String>,
    /// Packets written to the capture file (`EmuOptions::pcap`; 0 without one).
    pub captured: u64,
    /// Whether the run's threads shared one CPU ([`Cpus`]).
    pub one_cpu: bool,
}

/// Writes later or earlier than this (p99 of either direction, µs) mean the emulator did not
/// keep up with the link (or the machine was too busy): the run's delays are partly its own.
pub const LATE_WARNING_US: f64 = 1000.0;

/// Kernel TCP segments that waited longer than this (p99, ms) in their sending host before the
/// path thread read them say the emulator did not keep up with its input (the measure is to
/// the ms, so 0–1 is every run's).
pub const INPUT_WAIT_WARNING_MS: f64 = 2.0;

impl EmuStats {
    /// The p99 over both directions of the time kernel TCP segments waited in their sending
    /// host before the path thread read them, ms (`PathStats::input_wait_quantile_ms`); NaN
    /// when no segment carried a timestamp.
    pub fn input_wait_p99_ms(&self) -> f64 {
        self.forward.input_wait_quantile_ms(0.99).max(self.reverse.input_wait_quantile_ms(0.99))
    }

    /// A warning when that wait exceeded [`INPUT_WAIT_WARNING_MS`]: the link model's clock
    /// starts at the read, so the run's round trips were longer than the model's by it, which
    /// the delay error does not show.
    pub fn input_wait_warning(&self) -> Option<String> {
        let wait = self.input_wait_p99_ms();
        (wait > INPUT_WAIT_WARNING_MS).then(|| {
            format!(
                "1% of the kernel flows' packets waited {wait:.0} ms or more in the sending host before the \
                 emulator read them (it did not keep up with what they sent: a link faster than it can \
                 carry here, or a busy machine); their round trips were longer than the link model's by that"
            )
        })
    }

    /// A warning when 1 % of the writes were further off the model's time than
    /// [`LATE_WARNING_US`].
    pub fn late_warning(&self) -> Option<String> {
        let late = self.forward.error_quantile_us(0.99).max(self.reverse.error_quantile_us(0.99));
        (late > LATE_WARNING_US).then(|| {
            format!(
                "the emulator delivered 1% of packets more than {:.1} ms off the link model's time (a link \
                 faster than it can carry, or a busy machine); delays in this run are partly its own",
                late / 1e3
            )
        })
    }

    /// Packets the kernels dropped at the TUN devices, never seen by the link model: the
    /// sending kernels' when the path thread did not read fast enough (tx), the receiving
    /// kernels' of what it wrote (rx); data and ACKs.
    pub fn unseen_drops(&self) -> u64 {
        let (s, r) = (&self.sender_tun, &self.receiver_tun);
        s.tx_dropped + s.rx_dropped + r.tx_dropped + r.rx_dropped
    }

    /// A warning when there were any: losses the link model did not make.
    pub fn unseen_drops_warning(&self) -> Option<String> {
        let n = self.unseen_drops();
        (n > 0).then(|| {
            format!(
                "the hosts' kernels dropped {n} packets at the emulator's devices before it could read them \
                 or after it wrote them (it did not keep up: a link faster than it can carry here, or a busy \
                 machine); those losses are not the link model's"
            )
        })
    }

    /// Everything a user must hear about how faithful this run was, one sentence each: the
    /// link asked for more than the start-up ceiling, the senders' packets waited, packets
    /// left off their time, the kernels dropped packets the model never saw.
    pub fn warnings(&self) -> Vec<String> {
        let mut all: Vec<String> = self.capacity_warning.iter().cloned().collect();
        all.extend(self.input_wait_warning());
        all.extend(self.late_warning());
        all.extend(self.unseen_drops_warning());
        all
    }

    /// CPU time of the path threads, ns.
    pub fn path_cpu_ns(&self) -> u64 {
        self.threads.iter().map(|t| t.cpu_ns).sum()
    }

    /// The path threads' CPU use, in % of one CPU over the run.
    pub fn path_cpu_pct(&self) -> f64 {
        100.0 * self.path_cpu_ns() as f64 / self.run_ns.max(1) as f64
    }

    /// The whole process's CPU use, in % of one CPU over the run.
    pub fn process_cpu_pct(&self) -> f64 {
        100.0 * self.process_cpu_ns as f64 / self.run_ns.max(1) as f64
    }
}

pub struct EmuOutput {
    pub run: RunOutput,
    pub emu: EmuStats,
}

/// Checks that this process can create namespaces and TUN devices, with a message that says
/// what to do about it.
pub fn preflight() -> Result<(), String> {
    const CAP_NET_ADMIN: u32 = 12;
    const CAP_SYS_ADMIN: u32 = 21;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let missing: Vec<&str> = [(CAP_NET_ADMIN, "CAP_NET_ADMIN"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN")]
        .iter()
        .filter(|(bit, _)| eff & (1 << bit) == 0)
        .map(|(_, name)| *name)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "it needs {} to create network namespaces and TUN devices; run it as root \
             (e.g. `sudo cclab run --engine emu ...`). The simulator (`--engine sim`) needs no privileges.",
            missing.join(" and ")
        ));
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err("/dev/net/tun does not exist; load the TUN driver (`modprobe tun`) or, in a container, \
                    pass the device in (e.g. `--device /dev/net/tun`)"
            .into());
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .map_err(|e| format!("cannot open /dev/net/tun: {e}"))?;
    Ok(())
}

/// What a flow runs on, resolved.
struct FlowPlan {
    id: u32,
    spec: usize,
    scheme: EmuScheme,
    start: u64,
    stop: u64,
    port: u16,
}

impl FlowPlan {
    fn transport(&self) -> Transport {
        match self.scheme {
            EmuScheme::Kernel(_) => Transport::Tcp,
            EmuScheme::Cclab => Transport::CclabUdp,
            EmuScheme::Wrapper(_) => Transport::Any,
        }
    }
}

/// Sets the stop flags when dropped: on every way out of the run's scope, before it joins.
struct StopOnDrop<'a>(&'a [&'a Stop]);
impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        for s in self.0 {
            s.set();
        }
    }
}

/// The external programs of the run, with when to start and stop each.
struct Programs {
    running: Vec<(u32, Side, u64, Program)>,
    /// (start time, flow index): second sides not yet started.
    pending: Vec<(u64, usize)>,
}

fn spawn_side(plan: &FlowPlan, side: Side, topo: &Topology) -> Result<Program, String> {
    let EmuScheme::Wrapper(w) = &plan.scheme else { unreachable!("only wrapper flows have programs") };
    let listen_ip = match w.run_first {
        Side::Receiver => RECEIVER_IP,
        Side::Sender => SENDER_IP,
    }
    .to_string();
    let ns = match side {
        Side::Sender => &topo.sender_ns,
        Side::Receiver => &topo.receiver_ns,
    };
    let label = format!("flow {} {side} ({})", plan.id, w.file.display());
    let env = [
        ("CCLAB_FLOW", plan.id.to_string()),
        ("CCLAB_PORT", plan.port.to_string()),
        ("CCLAB_IP", listen_ip.clone()),
        ("CCLAB_SIDE", side.to_string()),
    ];
    Program::spawn(&label, ns, &w.command(side, &listen_ip, plan.port), &env).map_err(|e| e.to_string())
}

impl Programs {
    /// Starts and stops programs due at `now`; a program that failed before its stop fails the
    /// run.
    fn tick(&mut self, now: u64, plans: &[FlowPlan], topo: &Topology) -> Result<(), String> {
        let mut i = 0;
        while i < self.pending.len() {
            let (t, f) = self.pending[i];
            if t <= now {
                let plan = &plans[f];
                let EmuScheme::Wrapper(w) = &plan.scheme else { unreachable!() };
                let side = w.run_first.other();
                self.running.push((plan.id, side, plan.stop, spawn_side(plan, side, topo)?));
                self.pending.swap_remove(i);
            } else {
                i += 1;
            }
        }
        let mut failure = None;
        self.running.retain_mut(|(_, _, stop, prog)| {
            if now >= *stop {
                prog.kill();
                return false;
            }
            match prog.poll() {
                Ok(Some(st)) if st.success() => false, // finished its work early: fine
                Ok(Some(st)) => {
                    failure.get_or_insert_with(|| prog.describe_exit(st));
                    false
                }
                Ok(None) => true,
                Err(e) => {
                    failure.get_or_insert_with(|| format!("{}: {e}", prog.label));
                    true
                }
            }
        });
        failure.map_or(Ok(()), Err)
    }
}

/// Runs a validated scenario in real time. `progress(run_ns)` is called every ~20 ms; an `Err`
/// from it stops the run (everything is torn down first).
pub fn run(
    scenario: &Scenario,
    opts: &EmuOptions,
    progress: &mut dyn FnMut(u64) -> Result<(), String>,
) -> Result<EmuOutput, EmuError> {
    let wall = Instant::now();
    preflight().map_err(EmuError::Environment)?;
    let src = Source { file: "<scenario>", text: "" };
    let schemes = scheme::resolve(scenario, &src, &opts.base_dir).map_err(EmuError::Scenario)?;
    let path = PathPlan::resolve(scenario).map_err(EmuError::Failed)?;
    let duration = scenario.duration.ns();

    if path.flows.len() > MAX_FLOWS {
        return Err(EmuError::Failed(format!("{} flows; the emulator runs at most {MAX_FLOWS}", path.flows.len())));
    }
    let plans: Vec<FlowPlan> = path
        .flows
        .iter()
        .map(|f| FlowPlan {
            id: f.info.id,
            spec: f.spec,
            scheme: schemes[f.spec].clone(),
            start: f.info.start,
            stop: f.info.stop,
            port: BASE_PORT + f.info.id as u16,
        })
        .collect();
    let table = FlowTable::new(&plans.iter().map(|p| (p.port, p.transport())).collect::<Vec<_>>());
    // The capture file first: a path it cannot write fails the run before anything starts.
    let capture_error = |e: std::io::Error, p: &std::path::Path| {
        EmuError::Failed(format!("cannot write the capture {}: {e}", p.display()))
    };
    let mut capture = match &opts.pcap {
        Some(p) => Some(CaptureFile::create(p).map_err(|e| capture_error(e, p))?),
        None => None,
    };
    let tap = SharedTap::default();
    let tap_ref = capture.is_some().then_some(&tap);

    let topo =
        Topology::build().map_err(|e| EmuError::Failed(format!("setting up namespaces and TUN devices: {e}")))?;
    let capacity = capacity::measure(&topo)
        .map_err(|e| EmuError::Failed(format!("measuring the forwarding capacity at start-up: {e}")))?;
    let link_bps = path.service.mean_rate().bits_per_sec();
    let tolerance_ns = opts.tolerance_us.map_or_else(|| timing::tolerance_ns(link_bps), |us| us * 1000);
    let all_kernel = plans.iter().all(|p| matches!(p.scheme, EmuScheme::Kernel(_)));
    let one_cpu = opts.cpus.one_cpu(link_bps, all_kernel, tolerance_ns);
    // Held from before the first endpoint starts until every thread of the run has been
    // joined: they all inherit its one-CPU mask.
    let held = one_cpu
        .then(sys::OneCpu::hold)
        .transpose()
        .map_err(|e| EmuError::Failed(format!("keeping the run on one CPU: {e}")))?;
    let (tx, rx) = mpsc::channel::<Msg>();
    let stop_paths = Stop::default();
    let stop_flows = Stop::default();
    let mut sinks = Sinks::new(&path, opts.log_packets);
    sinks.reserve_log(cclab_core::scenario::resources::log_reservation(
        path.service.mean_rate(),
        scenario.duration.ns(),
    ));
    let mut collector = Collector::new(sinks);

    // Listening sides first, before the clock starts.
    let failed = |what: &str, e: std::io::Error| EmuError::Failed(format!("{what}: {e}"));
    let mut listeners = Vec::new();
    let mut udp_socks = Vec::new();
    let mut programs = Programs { running: Vec::new(), pending: Vec::new() };
    let mut setup_wait = Duration::ZERO;
    // Request workloads' connections are served by their pools (`requests.rs`), not one
    // bulk sender/receiver per flow.
    let pooled = |p: &FlowPlan| path.carries_requests(p.id);
    let pool_conns: usize = path.requests.iter().map(|r| r.connections.len()).sum();
    if pool_conns > 0 {
        // Three descriptors per connection, and room for the run's own (devices, namespaces).
        requests::ensure_descriptors(3 * pool_conns as u64 + 256).map_err(EmuError::Failed)?;
    }
    let mut pool_listeners = Vec::new();
    for r in &path.requests {
        let mut ls = Vec::new();
        for &id in &r.connections {
            ls.push(
                kernel_tcp::listen(&topo.receiver_ns, plans[id as usize].port)
                    .map_err(|e| failed("request server", e))?,
            );
        }
        pool_listeners.push(ls);
    }
    for (i, p) in plans.iter().enumerate() {
        if pooled(p) {
            continue;
        }
        match &p.scheme {
            EmuScheme::Kernel(_) => listeners
                .push((i, kernel_tcp::listen(&topo.receiver_ns, p.port).map_err(|e| failed("kernel receiver", e))?)),
            EmuScheme::Cclab => udp_socks
                .push((i, topo.receiver_ns.run(|| udp::bind_receiver(p.port)).map_err(|e| failed("UDP receiver", e))?)),
            EmuScheme::Wrapper(w) => {
                let prog = spawn_side(p, w.run_first, &topo).map_err(EmuError::Failed)?;
                programs.running.push((p.id, w.run_first, p.stop, prog));
                programs.pending.push((p.start, i));
                setup_wait = setup_wait.max(Duration::from_nanos(w.setup_time.ns()));
            }
        }
    }
    std::thread::sleep(setup_wait);
    for (_, side, _, prog) in &mut programs.running {
        if let Ok(Some(st)) = prog.poll() {
            return Err(EmuError::Failed(format!(
                "the {side} that listens first did not stay up: {}",
                prog.describe_exit(st)
            )));
        }
    }
    let setup_secs = wall.elapsed().as_secs_f64();

    let mut flow_ends = vec![FlowEnd::default(); plans.len()];
    let spin_ns = opts.spin_us * 1000;
    let line = StartLine::default();
    // The path threads check in here once they serve their devices (`drive`).
    let serving = StartLine::default();
    let cpu_start = sys::process_cpu_ns();
    type Outcome = (PathStats, PathStats, Vec<ThreadStats>, Vec<Vec<cclab_core::metrics::fct::Request>>);
    let outcome: Result<Outcome, EmuError> = std::thread::scope(|s| {
        let _stop_all = StopOnDrop(&[&stop_paths, &stop_flows]);
        let line = &line;
        let serving = &serving;
        // Endpoints. Each thread reports its own failure, so the main loop hears of it at once.
        // cclab's UDP endpoints run just below the path threads' real-time priority; the kernel
        // flows' bulk applications need no timing of their own.
        let endpoint_rt = opts.rt_priority.map(|p| (p - 1).max(1));
        // On one CPU the kernel flows' receiving applications run at the path thread's own
        // priority, so that it can hand them the CPU after writing (`ThreadConfig`).
        let receiver_rt = opts.rt_priority.filter(|_| one_cpu);
        let report = |tx: &mpsc::Sender<Msg>, what: String, e: std::io::Error| {
            let _ = tx.send(Msg::Failed(format!("{what}: {e}")));
        };
        let mut receivers = Vec::new();
        let mut senders = Vec::new();
        for (i, l) in listeners {
            let (stop, tx) = (stop_flows.clone(), tx.clone());
            receivers.push((
                i,
                s.spawn(move || {
                    let buf = kernel_tcp::io_buffer();
                    // Not allowed (no privilege): the path thread's yield then only costs a
                    // system call.
                    if let Some(p) = receiver_rt {
                        let _ = sys::set_realtime(p);
                    }
                    let clock = line.arrive();
                    kernel_tcp::receive(l, buf, clock, &stop).unwrap_or_else(|e| {
                        report(&tx, format!("flow {i} receiver"), e);
                        AppBytes::default()
                    })
                }),
            ));
        }
        for (i, sock) in udp_socks {
            let (stop, tx) = (stop_flows.clone(), tx.clone());
            let spec = &scenario.flows[plans[i].spec];
            let transport = &scenario.transport;
            receivers.push((
                i,
                s.spawn(move || {
                    let clock = line.arrive();
                    udp::receive(sock, spec, transport, clock, endpoint_rt, &stop).unwrap_or_else(|e| {
                        report(&tx, format!("flow {i} receiver"), e);
                        AppBytes::default()
                    })
                }),
            ));
        }
        let mut servers = Vec::new();
        let mut clients = Vec::new();
        for (w, (r, listeners)) in path.requests.iter().zip(pool_listeners).enumerate() {
            let (stop, tx_server) = (stop_flows.clone(), tx.clone());
            servers.push(s.spawn(move || {
                if let Err(e) = requests::serve(listeners, &stop) {
                    report(&tx_server, format!("flows[{}] request server", r.spec), e);
                }
            }));
            let (stop, tx, ns) = (stop_flows.clone(), tx.clone(), &topo.sender_ns);
            let EmuScheme::Kernel(cc) = &schemes[r.spec] else {
                unreachable!("scheme::resolve lets request workloads through on kernel TCP only")
            };
            let conns: Vec<(u32, u16, u64)> =
                r.connections.iter().map(|&id| (id, plans[id as usize].port, plans[id as usize].start)).collect();
            let source = path.request_source(w);
            // Traced runs read each connection's TCP_INFO as a bulk kernel sender's.
            let sample_ns = opts.trace.map(|i| i.max(kernel_tcp::MIN_SAMPLE_NS));
            clients.push(s.spawn(move || {
                let entered = ns.enter();
                let clock = line.arrive();
                let got = entered.and_then(|_| requests::client(cc, source, &conns, clock, (r.stop, sample_ns), &stop));
                got.unwrap_or_else(|e| {
                    report(&tx, format!("flows[{}] request client", r.spec), e);
                    Default::default()
                })
            }));
        }
        for (i, p) in plans.iter().enumerate() {
            if pooled(p) {
                continue;
            }
            let (stop, tx, ns) = (stop_flows.clone(), tx.clone(), &topo.sender_ns);
            let spec = &scenario.flows[p.spec];
            let handle = match &p.scheme {
                EmuScheme::Kernel(cc) => s.spawn(move || {
                    let sample_ns = opts.trace.map_or(kernel_tcp::SAMPLE_NS, |i| i.max(kernel_tcp::MIN_SAMPLE_NS));
                    let sock = ns.enter().and_then(|_| kernel_tcp::tcp_socket(cc));
                    let buf = kernel_tcp::io_buffer();
                    let clock = line.arrive();
                    let when = (p.start, p.stop);
                    let r = sock.and_then(|sock| kernel_tcp::send(sock, buf, p.port, clock, when, sample_ns, &stop));
                    match r {
                        Ok(tcp) => FlowEnd { tcp, ..Default::default() },
                        Err(e) => {
                            report(&tx, format!("flow {i} sender"), e);
                            FlowEnd::default()
                        }
                    }
                }),
                EmuScheme::Cclab => {
                    let rng = path.flow_rng(p.id);
                    s.spawn(move || {
                        let entered = ns.enter();
                        let clock = line.arrive();
                        let when = udp::Schedule {
                            clock,
                            start: p.start,
                            stop_at: p.stop,
                            rt: endpoint_rt,
                            trace: opts.trace,
                            flow: p.id,
                        };
                        let transport = &scenario.transport;
                        let r = entered.and_then(|_| udp::send(spec, transport, p.port, rng, when, &stop));
                        match r {
                            Ok(st) => FlowEnd { local_drops: st.local_drops, trace: st.trace, ..Default::default() },
                            Err(e) => {
                                report(&tx, format!("flow {i} sender"), e);
                                FlowEnd::default()
                            }
                        }
                    })
                }
                EmuScheme::Wrapper(_) => continue,
            };
            senders.push((i, handle));
        }

        // Every endpoint at the start line (made, in its namespace, its socket open); then time
        // zero, the path threads (as they always started, with the clock), and the endpoints
        // released once the path threads serve their devices. Released with them, a client's
        // SYN waited 0.4-2.5 ms in its device for a path thread still starting (and was
        // written up to 1.75 ms late by its first wake-ups): kernel TCP's handshake RTT on a
        // zero-delay link read 0.7-4.2 ms where the link gives 0.1, and BBR keeps the smaller
        // of that and its data's RTTs as its min-RTT for its first 10 s.
        let all_ready = line.gather(receivers.len() + clients.len() + senders.len(), START_LIMIT);
        let clock = Clock::start();
        let forward = Path::new(
            PathConfig {
                name: "data",
                kind: PacketKind::Data,
                uid_parity: 0,
                flows: table.clone(),
                access_delay: path.flows.iter().map(|f| f.access_delay.unwrap_or(0)).collect(),
                unclassified_delay: 0,
                loss: path.loss_stage(),
                link: Some(path.bottleneck()),
                prop: path.prop_line(),
                merge: opts.receive_offload,
                capture_at: CaptureAt::Read,
                // The outbox's feedback returns over the reverse path's delay, as in the simulator.
                bundle: path.inbox().map(|inbox| {
                    Bundle::new(inbox, path.flows.iter().map(|f| f.bundled).collect(), path.reverse_delay)
                }),
            },
            &topo.sender_tun,
            &topo.receiver_tun,
            clock,
            tx.clone(),
            tap_ref,
        );
        let reverse = Path::new(
            PathConfig {
                name: "ACK",
                kind: PacketKind::Ack,
                uid_parity: 1,
                flows: table.clone(),
                access_delay: path.flows.iter().map(|f| f.reverse_delay).collect(),
                unclassified_delay: path.reverse_delay,
                // The ACK path is lossless (and a lossless stage never draws).
                loss: Loss::new(0.0, path.loss_rng()),
                // Uncongested, or queued behind the reverse trace's deliveries.
                link: path.reverse_bottleneck(),
                prop: DelayLine::new(0),
                // GRO does not merge pure ACKs, and the ACK direction carries nothing else
                // from kernel TCP.
                merge: false,
                capture_at: CaptureAt::Write,
                bundle: None,
            },
            &topo.receiver_tun,
            &topo.sender_tun,
            clock,
            tx.clone(),
            tap_ref,
        );
        let th = ThreadConfig {
            spin_ns,
            tolerance_ns,
            pin: opts.pin_threads,
            rt_priority: opts.rt_priority,
            yield_after_write: receiver_rt.is_some(),
            end: duration,
        };
        let mut path_threads = Vec::new();
        let groups = if opts.single_thread { vec![vec![forward, reverse]] } else { vec![vec![forward], vec![reverse]] };
        for group in groups {
            let (stop, tx) = (stop_paths.clone(), tx.clone());
            path_threads.push(s.spawn(move || run_paths(group, th, stop, tx, serving)));
        }
        let paths_serving = serving.gather(path_threads.len(), START_LIMIT);
        line.start(clock);

        // The main loop: records in, programs on schedule, progress out.
        let mut failure = match (all_ready, paths_serving) {
            (false, _) => Some("the flows' threads were not ready"),
            (_, false) => Some("the path threads were not serving"),
            _ => None,
        }
        .map(|what| EmuError::Failed(format!("{what} within {} s", START_LIMIT.as_secs())));
        while failure.is_none() {
            let now = clock.now();
            if now >= duration {
                break;
            }
            if let Err(m) = programs.tick(now, &plans, &topo) {
                failure = Some(EmuError::Failed(m));
                break;
            }
            if let Err(m) = progress(now) {
                failure = Some(EmuError::Interrupted(m));
                break;
            }
            let wait = TICK.min(Duration::from_nanos(duration - now));
            match rx.recv_timeout(wait) {
                Ok(Msg::Records(batch)) => collector.take(batch),
                Ok(Msg::Failed(m)) => {
                    failure = Some(EmuError::Failed(m));
                    break;
                }
                Err(_) => {}
            }
            if let (Some(f), Some(p)) = (&mut capture, &opts.pcap) {
                if let Err(e) = f.drain(&tap) {
                    failure = Some(capture_error(e, p));
                    break;
                }
            }
        }
        // The paths stop at `duration` by themselves (or now, on failure); then the endpoints.
        if failure.is_some() {
            stop_paths.set();
        }
        let mut stats: Vec<PathStats> = Vec::new();
        let mut threads: Vec<ThreadStats> = Vec::new();
        for h in path_threads {
            let (paths, thread) = h.join().expect("the path threads do not panic");
            stats.extend(paths);
            threads.push(thread);
        }
        let rev = stats.pop().expect("two paths");
        let fwd = stats.pop().expect("two paths");
        stop_flows.set();
        programs.running.clear();
        for (i, h) in senders {
            flow_ends[i] = h.join().expect("senders do not panic");
        }
        for (i, h) in receivers {
            flow_ends[i].app = h.join().expect("receivers do not panic");
        }
        let mut logs = Vec::new();
        for h in clients {
            let (log, traces) = h.join().expect("request clients do not panic");
            logs.push(log);
            for (flow, tcp) in traces {
                flow_ends[flow as usize].tcp = tcp;
            }
        }
        for h in servers {
            h.join().expect("request servers do not panic");
        }
        match failure {
            Some(e) => Err(e),
            None => Ok((fwd, rev, threads, logs)),
        }
    });
    drop(held);
    drop(tx);
    // Everything the threads flushed on their way out.
    let mut late_failure = None;
    for m in rx.try_iter() {
        match m {
            Msg::Records(batch) => collector.take(batch),
            Msg::Failed(m) => {
                late_failure.get_or_insert(m);
            }
        }
    }
    let run_ns = line.clock().map_or(0, |c| c.now());
    let process_cpu_ns = sys::process_cpu_ns().saturating_sub(cpu_start);
    let (mut forward, reverse, threads, request_logs) = outcome?;
    collector.set_requests(requests::merge(request_logs));
    collector.set_middlebox(std::mem::take(&mut forward.middlebox));
    if let Some(m) = late_failure {
        return Err(EmuError::Failed(m));
    }
    let captured = tap.lock().unwrap_or_else(|e| e.into_inner()).packets();
    if let (Some(f), Some(p)) = (capture, &opts.pcap) {
        f.finish(&tap).map_err(|e| capture_error(e, p))?;
    }
    let (sender_tun, receiver_tun) = topo.counters().unwrap_or_default();
    drop(topo);

    let mut run = collector.finish(&path, wall.elapsed().as_secs_f64());
    if opts.trace.is_some() {
        // One table for the run: cclab senders' own rows, kernel senders' TCP_INFO readings.
        let mut trace = cclab_engine::CcTrace::default();
        for (p, end) in plans.iter().zip(&mut flow_ends) {
            if let Some(t) = end.trace.take() {
                trace.extend(t);
            } else if matches!(p.scheme, EmuScheme::Kernel(_)) {
                end.tcp.append_to(p.id, &mut trace);
            }
        }
        trace.sort();
        run.trace = Some(trace);
    }
    Ok(EmuOutput {
        run,
        emu: EmuStats {
            forward,
            reverse,
            sender_tun,
            receiver_tun,
            flows: flow_ends,
            setup_secs,
            threads,
            tolerance_ns,
            process_cpu_ns,
            run_ns,
            capacity_warning: capacity.warning(link_bps),
            capacity,
            captured,
            one_cpu,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_one_cpu_for_slow_kernel_flows_with_a_tolerance_only() {
        let auto = |bps, kernel, tol| Cpus::Auto.one_cpu(bps, kernel, tol);
        assert!(auto(100_000_000, true, 75_000));
        assert!(auto(ONE_CPU_MAX_BPS, true, 1));
        assert!(!auto(ONE_CPU_MAX_BPS + 1, true, 75_000), "1 Gbit/s needs two");
        assert!(!auto(100_000_000, false, 75_000), "programs of unknown appetite");
        assert!(!auto(100_000_000, true, 0), "the referee's exact timing");
        assert!(Cpus::One.one_cpu(10_000_000_000, false, 0) && !Cpus::Spread.one_cpu(1, true, 1));
        assert_eq!("one".parse::<Cpus>(), Ok(Cpus::One));
        assert!("two".parse::<Cpus>().unwrap_err().contains("auto, one or spread"));
    }

    #[test]
    fn a_run_that_fell_behind_says_so_with_its_figures() {
        let clean = EmuStats::default();
        assert!(clean.warnings().is_empty(), "{:?}", clean.warnings());
        let mut behind = EmuStats::default();
        // 2 % of the ACKs written 2 ms late, the rest 10 µs.
        let mut late = vec![0; 3000];
        (late[10], late[2000]) = (98, 2);
        behind.reverse = PathStats { late_us: late, early_us: vec![0; 3000], ..PathStats::default() };
        behind.sender_tun.tx_dropped = 5;
        behind.receiver_tun.rx_dropped = 2;
        let w = behind.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("more than 2.0 ms off the link model's time"), "{}", w[0]);
        assert_eq!(behind.unseen_drops(), 7);
        assert!(w[1].contains("dropped 7 packets") && w[1].contains("not the link model's"), "{}", w[1]);
    }
}
