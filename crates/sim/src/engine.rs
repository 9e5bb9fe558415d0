//! The discrete-event loop: a dumbbell of flows through one bottleneck.
//!
//! Data: sender → access delay (half the flow's extra RTT) → random loss → bottleneck queue and
//! delivery process → propagation delay → receiver. ACKs: receiver → reverse delay (plus the
//! other half of the extra RTT) → sender; the reverse path is uncongested.
//!
//! Delay lines are FIFO queues with one pending event for their head, so the event heap holds
//! O(flows) entries rather than O(packets in flight). Ties at equal times run in the order they
//! were scheduled (a sequence number breaks them), which makes runs deterministic.

use crate::link::{Bottleneck, Enqueued, Limit, Service, Trace, WirePacket};
use crate::{CcTrace, EngineStats, FlowInfo, RunOptions, RunOutput, SimError};
use cclab_cc::{Rng, Time};
use cclab_core::metrics::{MetricsAccumulator, MetricsConfig};
use cclab_core::record::{Fate, PacketKind, PacketLog, PacketRecord, RecordSink, NEVER};
use cclab_core::scenario::{Pacing, Scenario, ACK_BYTES, MSS};
use cclab_transport::{AckFrame, DataPacket, Receiver, ReceiverConfig, Sender, SenderConfig};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

/// RNG stream labels: one independent stream per random process.
const STREAM_LOSS: u64 = 1;
const STREAM_LINK: u64 = 2;
const STREAM_FLOW: u64 = 1000;

#[derive(Clone, Copy, Debug)]
enum Body {
    Data(DataPacket),
    Ack(AckFrame),
}

#[derive(Clone, Copy, Debug)]
struct Packet {
    uid: u64,
    flow: u32,
    size: u32,
    sent: Time,
    enqueued: Time,
    dequeued: Time,
    body: Body,
}

impl WirePacket for Packet {
    fn wire_size(&self) -> u64 {
        self.size as u64
    }
}

impl Packet {
    fn record(&self, arrived: Time, fate: Fate) -> PacketRecord {
        let (kind, retransmission) = match self.body {
            Body::Data(d) => (PacketKind::Data, d.retransmission),
            Body::Ack(_) => (PacketKind::Ack, false),
        };
        PacketRecord {
            uid: self.uid,
            flow: self.flow,
            kind,
            size: self.size,
            sent: self.sent,
            arrived,
            fate,
            enqueued: self.enqueued,
            dequeued: self.dequeued,
            retransmission,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dest {
    Bottleneck,
    Receiver,
    Sender,
}

/// A constant-delay FIFO line.
struct Pipe {
    delay: Time,
    dest: Dest,
    q: VecDeque<(Time, Packet)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Link,
    Pipe(u32),
    Timer(u32),
    Start(u32),
    Stop(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    t: Time,
    seq: u64,
    ev: Ev,
}

impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse for earliest-first, then first-scheduled-first.
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

struct Flow {
    sender: Sender,
    receiver: Receiver,
    /// Access delay line before the bottleneck (None when the flow has no extra RTT).
    access: Option<u32>,
    /// The flow's reverse (ACK) delay line.
    reverse: u32,
    timer_at: Option<Time>,
}

struct Sinks {
    metrics: MetricsAccumulator,
    log: Option<PacketLog>,
    stats: EngineStats,
}

impl Sinks {
    fn emit(&mut self, r: PacketRecord) {
        if r.kind == PacketKind::Data {
            match r.fate {
                Fate::Delivered => self.stats.data_delivered += 1,
                Fate::InFlight => self.stats.data_in_flight_end += 1,
                _ => self.stats.data_dropped += 1,
            }
        }
        self.metrics.record(&r);
        if let Some(log) = &mut self.log {
            log.record(&r);
        }
    }
}

struct Sim {
    now: Time,
    seq: u64,
    heap: BinaryHeap<Entry>,
    flows: Vec<Flow>,
    pipes: Vec<Pipe>,
    /// The shared propagation line from the bottleneck to the receivers.
    prop: u32,
    link: Bottleneck<Packet>,
    link_at: Option<Time>,
    /// Reused buffer for packets leaving the bottleneck.
    departures: Vec<Packet>,
    loss: f64,
    loss_rng: Rng,
    next_uid: u64,
    sinks: Sinks,
    /// Controller samples, when the run asked for them.
    cc_trace: Option<CcTrace>,
}

impl Sim {
    fn schedule(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry { t, seq: self.seq, ev });
    }

    fn push_pipe(&mut self, pipe: u32, p: Packet) {
        let now = self.now;
        let line = &mut self.pipes[pipe as usize];
        let exit = now + line.delay;
        let was_empty = line.q.is_empty();
        line.q.push_back((exit, p));
        if was_empty {
            self.schedule(exit, Ev::Pipe(pipe));
        }
    }

    fn on_pipe(&mut self, pipe: u32) -> u64 {
        let now = self.now;
        let mut n = 0;
        loop {
            let line = &mut self.pipes[pipe as usize];
            match line.q.front() {
                Some(&(t, _)) if t <= now => {}
                Some(&(t, _)) => {
                    self.schedule(t, Ev::Pipe(pipe));
                    break;
                }
                None => break,
            }
            let dest = line.dest;
            let (_, p) = line.q.pop_front().expect("checked");
            n += 1;
            match dest {
                Dest::Bottleneck => self.arrive_bottleneck(p),
                Dest::Receiver => self.arrive_receiver(p),
                Dest::Sender => self.arrive_sender(p),
            }
        }
        n
    }

    fn arrive_bottleneck(&mut self, mut p: Packet) {
        if self.loss > 0.0 && self.loss_rng.bernoulli(self.loss) {
            self.sinks.emit(p.record(NEVER, Fate::DropLoss));
            return;
        }
        p.enqueued = self.now;
        if let Enqueued::Dropped(victim, _) = self.link.enqueue(self.now, p) {
            self.sinks.emit(victim.record(NEVER, Fate::DropQueue));
        }
        self.schedule_link();
    }

    fn schedule_link(&mut self) {
        if let Some(t) = self.link.next_event() {
            if self.link_at.is_none_or(|at| t < at) {
                self.link_at = Some(t);
                self.schedule(t, Ev::Link);
            }
        }
    }

    fn on_link(&mut self) -> u64 {
        let now = self.now;
        let mut out = std::mem::take(&mut self.departures);
        self.link.dequeue(now, &mut |mut p: Packet, _enq| {
            p.dequeued = now;
            out.push(p);
        });
        let n = out.len() as u64;
        for p in out.drain(..) {
            self.push_pipe(self.prop, p);
        }
        self.departures = out;
        self.link_at = None;
        self.schedule_link();
        n
    }

    fn arrive_receiver(&mut self, p: Packet) {
        let Body::Data(d) = p.body else { unreachable!("only data crosses the bottleneck") };
        let now = self.now;
        self.sinks.emit(p.record(now, Fate::Delivered));
        let f = p.flow;
        if let Some(ack) = self.flows[f as usize].receiver.on_data(now, &d) {
            self.send_ack(f, ack);
        }
        self.rearm(f);
    }

    fn send_ack(&mut self, f: u32, ack: AckFrame) {
        let uid = self.next_uid;
        self.next_uid += 1;
        let p = Packet {
            uid,
            flow: f,
            size: ACK_BYTES as u32,
            sent: self.now,
            enqueued: NEVER,
            dequeued: NEVER,
            body: Body::Ack(ack),
        };
        let reverse = self.flows[f as usize].reverse;
        self.push_pipe(reverse, p);
    }

    fn arrive_sender(&mut self, p: Packet) {
        let Body::Ack(ack) = p.body else { unreachable!("only ACKs travel back") };
        self.sinks.emit(p.record(self.now, Fate::Delivered));
        let f = p.flow;
        self.flows[f as usize].sender.on_ack(self.now, &ack);
        self.transmit(f);
        if let Some(trace) = &mut self.cc_trace {
            let sender = &self.flows[f as usize].sender;
            trace.push(f, self.now, sender.cc(), sender.in_flight());
        }
        self.rearm(f);
    }

    fn transmit(&mut self, f: u32) {
        let now = self.now;
        while let Some(d) = self.flows[f as usize].sender.poll_transmit(now) {
            let uid = self.next_uid;
            self.next_uid += 1;
            self.sinks.stats.data_sent += 1;
            let p = Packet {
                uid,
                flow: f,
                size: d.wire_bytes() as u32,
                sent: now,
                enqueued: NEVER,
                dequeued: NEVER,
                body: Body::Data(d),
            };
            match self.flows[f as usize].access {
                Some(line) => self.push_pipe(line, p),
                None => self.arrive_bottleneck(p),
            }
        }
    }

    /// Keeps one timer entry per flow at (or before) the earliest time the flow needs one.
    fn rearm(&mut self, f: u32) {
        let flow = &self.flows[f as usize];
        let want = match (flow.sender.next_timeout(), flow.receiver.next_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(t) = want {
            let t = t.max(self.now + 1);
            if flow.timer_at.is_none_or(|at| t < at) {
                self.flows[f as usize].timer_at = Some(t);
                self.schedule(t, Ev::Timer(f));
            }
        }
    }

    fn on_timer(&mut self, f: u32, t: Time) -> bool {
        if self.flows[f as usize].timer_at != Some(t) {
            return false; // superseded by an earlier entry
        }
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        flow.timer_at = None;
        flow.sender.on_timeout(now);
        if let Some(ack) = flow.receiver.on_timeout(now) {
            self.send_ack(f, ack);
        }
        self.transmit(f);
        self.rearm(f);
        true
    }

    /// Records every packet still in the network as in flight.
    fn flush(&mut self) {
        let mut left: Vec<Packet> = self.link.drain().map(|(p, _)| p).collect();
        for line in &mut self.pipes {
            left.extend(line.q.drain(..).map(|(_, p)| p));
        }
        left.sort_by_key(|p| p.uid);
        for p in left {
            self.sinks.emit(p.record(NEVER, Fate::InFlight));
        }
    }
}

/// Builds the topology for a scenario and runs it to the end; with `trace_cc`, also returns
/// every flow's controller sampled after each ACK.
pub fn simulate(
    scenario: &Scenario,
    opts: &RunOptions,
    trace_cc: bool,
    progress: &mut dyn FnMut(u64) -> Result<(), String>,
) -> Result<(RunOutput, Option<CcTrace>), SimError> {
    let wall = std::time::Instant::now();
    let seed = scenario.seed;
    let link = &scenario.link;
    let trace = match &link.trace {
        Some(path) => Some(Arc::new(Trace::load(path).map_err(SimError::Input)?)),
        None => None,
    };
    let service = Service::from_link(link, trace);
    let rev_delay = scenario.reverse_delay().ns();
    let base_rtt = link.delay.ns() + rev_delay;
    let limit = Limit::resolve(link.queue, service.mean_rate(), base_rtt);
    let instances = scenario.flow_instances();

    let mut pipes = vec![Pipe { delay: link.delay.ns(), dest: Dest::Receiver, q: VecDeque::new() }];
    let mut flows = Vec::with_capacity(instances.len());
    let mut infos = Vec::with_capacity(instances.len());
    for inst in &instances {
        let spec = &scenario.flows[inst.spec];
        let cc =
            cclab_cc::registry::build(spec, MSS).map_err(|e| SimError::Input(format!("flows[{}]: {e}", inst.spec)))?;
        // Two-sided schemes (Sprout) also get a receiver agent; the receiver's timer, which the
        // loop below already runs for delayed ACKs, runs the agent's too.
        let agent =
            cclab_cc::agent::build(spec, MSS).map_err(|e| SimError::Input(format!("flows[{}]: {e}", inst.spec)))?;
        let extra = spec.extra_rtt.ns();
        let access = (extra > 0).then(|| {
            pipes.push(Pipe { delay: extra / 2, dest: Dest::Bottleneck, q: VecDeque::new() });
            pipes.len() as u32 - 1
        });
        pipes.push(Pipe { delay: rev_delay + (extra - extra / 2), dest: Dest::Sender, q: VecDeque::new() });
        let reverse = pipes.len() as u32 - 1;
        let cfg = SenderConfig {
            mss: MSS,
            min_rto: spec.min_rto.ns(),
            pace_windowed: spec.pacing == Pacing::On,
            never_pace: spec.pacing == Pacing::Off,
            rwnd: spec.rwnd.map_or(u64::MAX, |b| b.0),
        };
        let rng = Rng::derive(seed, STREAM_FLOW + inst.id as u64);
        infos.push(FlowInfo {
            id: inst.id,
            scheme: spec.scheme.clone(),
            start: inst.start.ns(),
            stop: inst.stop.ns(),
            base_rtt: base_rtt + extra,
        });
        flows.push(Flow {
            sender: Sender::new(cfg, cc, rng),
            receiver: Receiver::new(ReceiverConfig { delayed_ack: spec.delayed_ack, ..Default::default() })
                .with_agent(agent),
            access,
            reverse,
            timer_at: None,
        });
    }

    let metrics = MetricsAccumulator::new(MetricsConfig {
        n_flows: flows.len(),
        bin: scenario.output.bin.ns(),
        jain_bucket: scenario.output.jain_bucket.ns(),
        origin: 0,
    });
    let mut sim = Sim {
        now: 0,
        seq: 0,
        heap: BinaryHeap::new(),
        flows,
        pipes,
        prop: 0,
        link: Bottleneck::new(service.clone(), limit, link.aqm, Rng::derive(seed, STREAM_LINK)),
        link_at: None,
        departures: Vec::new(),
        loss: link.loss,
        loss_rng: Rng::derive(seed, STREAM_LOSS),
        next_uid: 0,
        sinks: Sinks { metrics, log: opts.log_packets.then(PacketLog::default), stats: EngineStats::default() },
        cc_trace: trace_cc.then(CcTrace::default),
    };
    for inst in &instances {
        sim.schedule(inst.start.ns(), Ev::Start(inst.id));
        sim.schedule(inst.stop.ns(), Ev::Stop(inst.id));
    }

    let end = scenario.duration.ns();
    let mut events: u64 = 0;
    let mut next_report = 1u64 << 16;
    while let Some(e) = sim.heap.pop() {
        if e.t > end {
            break;
        }
        sim.now = e.t;
        events += match e.ev {
            Ev::Link => sim.on_link(),
            Ev::Pipe(p) => sim.on_pipe(p),
            Ev::Timer(f) => u64::from(sim.on_timer(f, e.t)),
            Ev::Start(f) => {
                sim.flows[f as usize].sender.start(e.t);
                sim.transmit(f);
                sim.rearm(f);
                1
            }
            Ev::Stop(f) => {
                sim.flows[f as usize].sender.stop();
                1
            }
        };
        if events >= next_report {
            next_report = events + (1 << 16);
            progress(sim.now).map_err(SimError::Interrupted)?;
        }
    }
    sim.now = end;
    sim.flush();

    let Sinks { metrics, log, mut stats } = sim.sinks;
    let metrics = metrics.finish(&|t0, t1| service.capacity_bits(t0, t1));
    stats.events = events;
    stats.wall_secs = wall.elapsed().as_secs_f64();
    Ok((RunOutput { metrics, packets: log, flows: infos, stats }, sim.cc_trace))
}
