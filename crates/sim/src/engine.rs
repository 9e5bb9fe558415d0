//! The discrete-event loop: a dumbbell of flows through one bottleneck.
//!
//! The path is `cclab_engine`'s (its stages, resolved once by `PathPlan`): data go sender →
//! host jitter and access delay → random loss → bottleneck → propagation delay (and jitter) → receiver, ACKs go
//! receiver → host jitter and reverse delay → the reverse bottleneck (with a reverse trace) → sender. This file
//! is the clock: an event heap in virtual time.
//!
//! Delay lines are FIFO queues with one pending event for their head, so the event heap holds
//! O(flows) entries rather than O(packets in flight). Ties at equal times run in the order they
//! were scheduled (a sequence number breaks them), which makes runs deterministic.

use crate::SimError;
use cclab_core::metrics::LossGaps;
use cclab_core::record::{Fate, PacketKind, PacketRecord, NEVER};
use cclab_core::scenario::{Scenario, ACK_BYTES, MSS};
use cclab_core::time::Time;
use cclab_engine::bottleneck::Bottleneck;
use cclab_engine::middlebox::{boundary_hash, Feedback, Inbox, Outbox};
use cclab_engine::plan::PathPlan;
use cclab_engine::scheduled_fifo::ScheduledFifo;
use cclab_engine::sinks::Sinks;
use cclab_engine::stage::{DelayLine, Loss, WirePacket};
use cclab_engine::workload::RequestSource;
use cclab_engine::{trace_sender, CcTrace, RunOptions, RunOutput, Sampler, SenderView};
use cclab_transport::{AckFrame, DataPacket, Receiver, ReceiverConfig, Sender, SenderConfig, SYN_BYTES};

/// What crosses the forward path: data, or the handshake's SYN and final ACK (`[transport]
/// handshake`).
#[derive(Clone, Copy, Debug)]
enum Fwd {
    Data(DataPacket),
    Syn,
    /// The handshake's third packet, a pure ACK of the SYN-ACK (see `Sim::connected`).
    Ack,
}

/// What comes back: ACKs, or the SYN-ACK echoing the send time of the SYN it answers (TCP's
/// timestamp echo).
#[derive(Clone, Copy, Debug)]
enum Back {
    Ack(AckFrame),
    SynAck(Time),
}

/// A packet's body: its row's kind, retransmission and PSH flags and sequence number, or None
/// for the handshake's packets, which carry no stream data and so are not in the packet table
/// (nor in its metrics).
trait Body: Copy {
    fn row(&self) -> Option<(PacketKind, bool, bool, u32)>;
}

impl Body for Fwd {
    #[inline]
    fn row(&self) -> Option<(PacketKind, bool, bool, u32)> {
        // TCP's sequence numbers are the stream offsets mod 2^32 (RFC 9293 §3.4).
        match self {
            Fwd::Data(d) => Some((PacketKind::Data, d.retransmission, d.push, d.offset as u32)),
            Fwd::Syn | Fwd::Ack => None,
        }
    }
}

impl Body for Back {
    #[inline]
    fn row(&self) -> Option<(PacketKind, bool, bool, u32)> {
        match self {
            Back::Ack(a) => Some((PacketKind::Ack, false, false, a.stream_cum as u32)),
            Back::SynAck(_) => None,
        }
    }
}

/// A packet on the path. Data and ACKs are separate types: a data packet (72 bytes) does not
/// carry the room of an ACK frame's ranges (the shared type was 128 bytes), and data are what
/// fill the bottleneck's queue and the propagation line, so each packet there is fewer cache
/// lines to write and read back.
#[derive(Clone, Copy, Debug)]
struct Packet<B> {
    uid: u64,
    flow: u32,
    size: u32,
    sent: Time,
    enqueued: Time,
    dequeued: Time,
    body: B,
}

type DataPkt = Packet<Fwd>;
type AckPkt = Packet<Back>;

impl<B> WirePacket for Packet<B> {
    #[inline]
    fn wire_size(&self) -> u64 {
        self.size as u64
    }
    #[inline]
    fn flow(&self) -> u32 {
        self.flow
    }
}

impl<B: Body> Packet<B> {
    /// The packet's row in the packet table; None for the handshake's packets.
    fn record(&self, arrived: Time, fate: Fate) -> Option<PacketRecord> {
        let (kind, retransmission, push, seq) = self.body.row()?;
        Some(PacketRecord {
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
            push,
            seq,
        })
    }

    /// Writes the packet's row, if it has one.
    #[inline]
    fn emit(&self, sinks: &mut Sinks, arrived: Time, fate: Fate) {
        if let Some(r) = self.record(arrived, fate) {
            sinks.emit(&r);
        }
    }
}

/// Where a data line's packets go next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FwdDest {
    Bottleneck,
    Receiver,
}

/// Where an ACK line's packets go next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BackDest {
    /// The ACK direction's bottleneck (a reverse trace), then the sender.
    ReverseLink,
    Sender,
}

/// A delay line and where its packets go next.
struct Pipe<B, D> {
    line: DelayLine<Packet<B>>,
    dest: D,
}

impl<B, D: Copy> Pipe<B, D> {
    /// Takes a packet in; returns its exit time if the line was empty (its head event is due).
    #[inline]
    fn push(&mut self, now: Time, p: Packet<B>) -> Option<Time> {
        let was_empty = self.line.is_empty();
        let exit = self.line.push(now, p);
        was_empty.then_some(exit)
    }

    /// The head if it is due at `now`, with its destination; otherwise the time the line's
    /// next event is due (None when empty).
    #[inline]
    fn pop_due(&mut self, now: Time) -> Result<(Packet<B>, D), Option<Time>> {
        match self.line.next_due() {
            Some(t) if t <= now => {}
            next => return Err(next),
        }
        let (_, p) = self.line.pop().expect("checked");
        Ok((p, self.dest))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Link,
    ReverseLink,
    /// The head of data line `i` (`Sim::data_pipes`) is due.
    DataPipe(u32),
    /// The head of ACK line `i` (`Sim::ack_pipes`) is due.
    AckPipe(u32),
    Timer(u32),
    Start(u32),
    Stop(u32),
    /// The next request of workload `i` arrives.
    Request(u32),
    /// The inbox's token bucket or control loop is due.
    Inbox,
    /// The oldest feedback in flight from the outbox reaches the inbox.
    Feedback,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    t: Time,
    seq: u64,
    ev: Ev,
}

impl Entry {
    /// Earliest first, then first scheduled first; `seq` is unique, so the order is total and
    /// any correct priority queue pops the same sequence.
    #[inline]
    fn before(&self, o: &Entry) -> bool {
        (self.t, self.seq) < (o.t, o.seq)
    }
}

/// A binary min-heap of events. Hand-written rather than `std::collections::BinaryHeap` because
/// std's push writes the new entry and then reads it back to sift it up, a store-to-load stall
/// on the simulator's hottest path; here the entry stays in registers until its final slot.
#[derive(Default)]
struct EventHeap {
    v: Vec<Entry>,
}

impl EventHeap {
    #[inline]
    fn push(&mut self, e: Entry) {
        let mut i = self.v.len();
        self.v.push(e);
        while i > 0 {
            let parent = (i - 1) / 2;
            if !e.before(&self.v[parent]) {
                break;
            }
            self.v[i] = self.v[parent];
            i = parent;
        }
        self.v[i] = e;
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry> {
        let last = self.v.pop()?;
        let n = self.v.len();
        if n == 0 {
            return Some(last);
        }
        let top = self.v[0];
        // Sift `last` down from the root into the hole the top left.
        let mut i = 0;
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let c = if l + 1 < n && self.v[l + 1].before(&self.v[l]) { l + 1 } else { l };
            if !self.v[c].before(&last) {
                break;
            }
            self.v[i] = self.v[c];
            i = c;
        }
        self.v[i] = last;
        Some(top)
    }
}

/// A radix heap of events (Ahuja, Mehlhorn, Orlin and Tarjan, 1990) over the 128-bit key
/// (t, seq): exact, as a heap is, for keys that never fall below the last one popped, which the
/// simulator's events never do (nothing is scheduled in the past). An entry sits in the bucket
/// of the highest bit where its key differs from the last popped key; a pop empties the lowest
/// bucket into lower ones around its minimum. Entries move a few times, each move a sequential
/// copy, where a binary heap of 10^4 flows' entries takes ~15 unpredictable comparisons per pop.
struct RadixQueue {
    /// The key of the minimum, once found (it then sits in `buckets[0]`): every key held is at
    /// least this.
    last: u128,
    /// `buckets[b]` holds the keys whose highest bit differing from `last` is bit b - 1
    /// (`buckets[0]`: `last` itself).
    buckets: Vec<Vec<Entry>>,
    /// Bit b - 1 set when `buckets[b]` (b >= 1) is non-empty.
    occupied: u128,
    /// Keys pushed below `last` (possible only while the minimum waits in `buckets[0]`, the
    /// other queue's head having gone first): a plain heap, popped before the buckets.
    early: EventHeap,
}

impl Default for RadixQueue {
    fn default() -> Self {
        RadixQueue {
            last: 0,
            buckets: (0..=128).map(|_| Vec::new()).collect(),
            occupied: 0,
            early: EventHeap::default(),
        }
    }
}

impl RadixQueue {
    #[inline]
    fn key(e: &Entry) -> u128 {
        (e.t as u128) << 64 | e.seq as u128
    }

    #[inline]
    fn bucket(&self, key: u128) -> usize {
        128 - (key ^ self.last).leading_zeros() as usize
    }

    #[inline]
    fn push(&mut self, e: Entry) {
        let key = Self::key(&e);
        if key < self.last {
            return self.early.push(e);
        }
        let b = self.bucket(key);
        self.buckets[b].push(e);
        if b > 0 {
            self.occupied |= 1 << (b - 1);
        }
    }

    /// The minimum entry, moving it to `buckets[0]` if it is not there yet.
    #[inline]
    fn peek(&mut self) -> Option<&Entry> {
        if !self.early.v.is_empty() {
            return self.early.v.first();
        }
        if self.buckets[0].is_empty() && !self.refill() {
            return None;
        }
        self.buckets[0].first()
    }

    /// Empties the lowest non-empty bucket around its minimum, which lands in `buckets[0]`;
    /// false if the queue is empty. Out of line: the loop calls `peek` several times per event
    /// and most calls find the minimum already in place.
    #[inline(never)]
    fn refill(&mut self) -> bool {
        if self.occupied == 0 {
            return false;
        }
        let b = self.occupied.trailing_zeros() as usize + 1;
        let mut moving = std::mem::take(&mut self.buckets[b]);
        self.occupied &= !(1 << (b - 1));
        self.last = moving.iter().map(Self::key).min().expect("occupied");
        // Every key of bucket b agrees with the new minimum above bit b - 1, so each lands
        // in a lower bucket; the minimum itself in bucket 0.
        for e in moving.drain(..) {
            let nb = self.bucket(Self::key(&e));
            self.buckets[nb].push(e);
            if nb > 0 {
                self.occupied |= 1 << (nb - 1);
            }
        }
        self.buckets[b] = moving;
        true
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry> {
        self.peek()?;
        if !self.early.v.is_empty() {
            return self.early.pop();
        }
        self.buckets[0].pop()
    }
}

/// The event queue: two exact priority queues whose heads are merged, so the order is the one
/// a single heap would give ((t, seq) is unique and both pop in that order).
///
/// The bottlenecks' departures and the shared propagation line's head are due within a
/// packet's serialisation time (1.2 µs at 10 Gbit/s): in one heap of all flows' entries each of
/// them sifts the whole depth up on push and down on pop. They are more than half of all
/// events at scale (CoreScale: 16 of 29 M in 10 s), so they get their own heap of a few entries
/// and the large heap holds only the flows' delay lines and timers.
#[derive(Default)]
struct EventQueue {
    /// Links and the propagation line: at most a few entries.
    hot: EventHeap,
    /// Everything else: O(flows) entries (CoreScale: the radix queue took 10 s from 9.7 to
    /// 8.4 CPU-s against a binary heap; a 4-ary heap was no faster).
    cold: RadixQueue,
}

impl EventQueue {
    #[inline]
    fn push(&mut self, e: Entry) {
        match e.ev {
            Ev::Link | Ev::ReverseLink | Ev::DataPipe(PROP) => self.hot.push(e),
            _ => self.cold.push(e),
        }
    }

    /// The next event to pop, if any.
    #[inline]
    fn peek(&mut self) -> Option<Ev> {
        match (self.hot.v.first(), self.cold.peek()) {
            (Some(h), Some(c)) => Some(if c.before(h) { c.ev } else { h.ev }),
            (h, c) => h.or(c).map(|e| e.ev),
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry> {
        match (self.hot.v.first(), self.cold.peek()) {
            (Some(h), Some(c)) if c.before(h) => self.cold.pop(),
            (Some(_), _) => self.hot.pop(),
            (None, _) => self.cold.pop(),
        }
    }
}

/// The shared propagation line's index in `Sim::data_pipes` (the first data line built).
const PROP: u32 = 0;
/// Events between two sweeps that give back the flows' unused deque capacity
/// ([`Sim::trim`]): at CoreScale's ~3 M events per simulated second, three a second. A deque
/// trimmed on every pop shrank and grew again with each burst (the copies were 3-4 % of a
/// profile); a sweep shrinks each at most once per period, and one sweep of 5000 flows costs
/// ~1 ms. (Every 2^22 events: 20 s of CoreScale peaked at 512 MiB, against 435 at 2^20 and 759
/// without trimming.)
const TRIM_EVERY: u64 = 1 << 20;

struct Flow {
    sender: Sender,
    receiver: Receiver,
    /// Access delay line before the bottleneck (None when the flow has no extra RTT).
    access: Option<u32>,
    timer_at: Option<Time>,
    /// The sender's and the receiver's deadlines as of their last change (`Sim::rearm`).
    sender_due: Option<Time>,
    receiver_due: Option<Time>,
    /// The receiving NIC merges this flow's segments that arrive together (`[transport]
    /// gro`: a Linux module's flow with delayed ACKs) …
    gro: bool,
    /// … if the sender's millisecond clock, which ticks at this phase against the run's,
    /// stamped them with one timestamp (`PathPlan::ts_clock_phase`).
    ts_phase: Time,
}

impl Flow {
    /// The earlier of the two deadlines.
    #[inline]
    fn due(&self) -> Option<Time> {
        cclab_core::time::earlier(self.sender_due, self.receiver_due)
    }
}

struct Sim {
    now: Time,
    seq: u64,
    heap: EventQueue,
    flows: Vec<Flow>,
    /// Access lines and the propagation line (data and SYNs).
    data_pipes: Vec<Pipe<Fwd, FwdDest>>,
    /// The flows' reverse lines (ACKs and SYN-ACKs): line i is flow i's.
    ack_pipes: Vec<Pipe<Back, BackDest>>,
    /// The shared propagation line from the bottleneck to the receivers.
    prop: u32,
    link: Forward,
    link_at: Option<Time>,
    /// The ACK direction's bottleneck, when the link has a reverse trace.
    rlink: Option<Bottleneck<AckPkt>>,
    rlink_at: Option<Time>,
    /// Reused buffers for packets leaving the bottleneck (or the inbox) and the reverse one.
    departures: Vec<DataPkt>,
    ack_departures: Vec<AckPkt>,
    /// Reused buffer for a run of segments a receiving NIC merges (`Sim::arrive_merged`).
    gro_run: Vec<DataPacket>,
    loss: Loss,
    next_uid: u64,
    sinks: Sinks,
    /// Sender samples and when each flow is next due one, when the run asked for them.
    cc_trace: Option<(CcTrace, Sampler)>,
    /// Request workloads' arrival processes.
    sources: Vec<RequestSource>,
    /// Scratch: tags of messages a sender completed.
    completed: Vec<u64>,
    /// Bundler's middlebox, when the scenario has one.
    middlebox: Option<Bundle>,
}

/// The bottleneck as the engine drives it (one per run: the variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
enum Forward {
    /// Drop-tail at a constant rate: a packet's departure is known when it arrives, so it goes
    /// straight into the propagation line stamped with it, with no event of its own.
    Scheduled(ScheduledFifo),
    /// Any other discipline or delivery process, drained by `Ev::Link` events.
    Served(Bottleneck<DataPkt>),
}

/// The inbox before the bottleneck, the outbox after it, and the feedback between them.
struct Bundle {
    inbox: Inbox<DataPkt>,
    inbox_at: Option<Time>,
    outbox: Outbox,
    /// Feedback on its way back, due times ascending (one constant delay keeps them in order).
    feedback: std::collections::VecDeque<(Time, Feedback)>,
    feedback_delay: Time,
    /// Per flow: whether it belongs to the bundle (cross traffic bypasses both boxes).
    bundled: Vec<bool>,
}

/// The packet fields Bundler hashes: the destination port (here the flow) and the IP ID (the
/// low bits of the packet's unique id, as a per-packet counter would give).
fn packet_hash(p: &DataPkt) -> u32 {
    boundary_hash(p.flow as u16, p.uid as u16)
}

impl Sim {
    fn schedule(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry { t, seq: self.seq, ev });
    }

    /// Asks for the cache lines event `ev` will touch first, so that their misses overlap the
    /// current event's work (at thousands of flows, misses on per-flow state are most of an
    /// event's cost). Changes nothing but timing.
    #[inline]
    fn prefetch(&self, ev: Ev) {
        use cclab_core::hint::prefetch;
        match ev {
            Ev::AckPipe(i) => {
                let pipe = &self.ack_pipes[i as usize];
                if let Some(p) = pipe.line.front() {
                    prefetch(p);
                }
                // ACK line i is flow i's (built in flow order).
                self.flows[i as usize].sender.prefetch();
            }
            Ev::DataPipe(PROP) => {
                if let Some(p) = self.data_pipes[PROP as usize].line.front() {
                    self.flows[p.flow as usize].receiver.prefetch();
                    self.sinks.prefetch_flow(p.flow);
                }
            }
            Ev::DataPipe(i) => {
                if let Some(p) = self.data_pipes[i as usize].line.front() {
                    prefetch(p);
                }
            }
            Ev::Timer(f) => self.flows[f as usize].sender.prefetch(),
            _ => {}
        }
    }

    /// What the run's output needs from the simulator (the record sinks, each flow's congestion
    /// events and loss gaps, the controller trace); everything else — packets in flight, queues,
    /// senders — is freed here, before the metrics build their rows, so that the end of a long
    /// run at thousands of flows is not its peak of memory.
    fn into_results(self) -> (Sinks, Vec<(u64, LossGaps)>, Option<CcTrace>) {
        let congestion = self
            .flows
            .iter()
            .map(|flow| {
                let st = &flow.sender.stats;
                (st.congestion_events + st.rto_count, st.loss_gaps)
            })
            .collect();
        let Sim { sinks, cc_trace, .. } = self;
        (sinks, congestion, cc_trace.map(|(trace, _)| trace))
    }

    /// Gives back the memory the flows' past peaks took: their senders' records and their delay
    /// lines ([`cclab_core::trim`]).
    fn trim(&mut self) {
        for flow in &mut self.flows {
            flow.sender.trim();
        }
        for pipe in &mut self.data_pipes {
            pipe.line.trim();
        }
        if let Forward::Scheduled(fifo) = &mut self.link {
            fifo.trim();
        }
        for pipe in &mut self.ack_pipes {
            pipe.line.trim();
        }
    }

    fn push_data_pipe(&mut self, pipe: u32, p: DataPkt) {
        if let Some(exit) = self.data_pipes[pipe as usize].push(self.now, p) {
            self.schedule(exit, Ev::DataPipe(pipe));
        }
    }

    fn push_ack_pipe(&mut self, pipe: u32, p: AckPkt) {
        if let Some(exit) = self.ack_pipes[pipe as usize].push(self.now, p) {
            self.schedule(exit, Ev::AckPipe(pipe));
        }
    }

    fn on_data_pipe(&mut self, pipe: u32) -> u64 {
        let mut n = 0;
        loop {
            match self.data_pipes[pipe as usize].pop_due(self.now) {
                Ok((p, FwdDest::Bottleneck)) => self.arrive_site(p),
                Ok((p, FwdDest::Receiver)) => n += self.arrive_receiver(pipe, p),
                Err(next) => {
                    if let Some(t) = next {
                        self.schedule(t, Ev::DataPipe(pipe));
                    }
                    return n;
                }
            }
            n += 1;
        }
    }

    fn on_ack_pipe(&mut self, pipe: u32) -> u64 {
        let mut n = 0;
        loop {
            match self.ack_pipes[pipe as usize].pop_due(self.now) {
                Ok((p, BackDest::ReverseLink)) => self.arrive_reverse_link(p),
                Ok((p, BackDest::Sender)) => self.arrive_sender(p),
                Err(next) => {
                    if let Some(t) = next {
                        self.schedule(t, Ev::AckPipe(pipe));
                    }
                    return n;
                }
            }
            n += 1;
        }
    }

    /// A data packet leaves the sending site: through the inbox if there is one.
    fn arrive_site(&mut self, p: DataPkt) {
        let Some(b) = self.middlebox.as_mut().filter(|b| b.bundled[p.flow as usize]) else {
            return self.arrive_bottleneck(p);
        };
        let sinks = &mut self.sinks;
        b.inbox.enqueue(self.now, p, &mut |victim: DataPkt| victim.emit(sinks, NEVER, Fate::DropQueue));
        self.on_inbox();
    }

    /// Releases what the inbox's token bucket allows now and re-arms its event.
    fn on_inbox(&mut self) -> u64 {
        let now = self.now;
        let mut out = std::mem::take(&mut self.departures);
        let b = self.middlebox.as_mut().expect("only with a middlebox");
        let sinks = &mut self.sinks;
        b.inbox.poll(now, &packet_hash, &mut |p| out.push(p), &mut |victim: DataPkt| {
            victim.emit(sinks, NEVER, Fate::DropQueue)
        });
        let n = out.len() as u64;
        for p in out.drain(..) {
            self.arrive_bottleneck(p);
        }
        self.departures = out;
        let b = self.middlebox.as_mut().expect("only with a middlebox");
        if let Some(t) = b.inbox.next_event() {
            let t = t.max(now + 1);
            if b.inbox_at.is_none_or(|at| t < at || at <= now) {
                b.inbox_at = Some(t);
                self.schedule(t, Ev::Inbox);
            }
        }
        n
    }

    fn arrive_bottleneck(&mut self, mut p: DataPkt) {
        if self.loss.drops() {
            p.emit(&mut self.sinks, NEVER, Fate::DropLoss);
            return;
        }
        p.enqueued = self.now;
        let link = match &mut self.link {
            Forward::Served(link) => link,
            Forward::Scheduled(fifo) => {
                let Some(departure) = fifo.offer(self.now, p.wire_size()) else {
                    return p.emit(&mut self.sinks, NEVER, Fate::DropQueue);
                };
                p.dequeued = departure;
                if let Some(exit) = self.data_pipes[self.prop as usize].push(departure, p) {
                    self.schedule(exit, Ev::DataPipe(self.prop));
                }
                return;
            }
        };
        let sinks = &mut self.sinks;
        link.enqueue(self.now, p, &mut |victim: DataPkt| victim.emit(sinks, NEVER, Fate::DropQueue));
        self.schedule_link();
    }

    fn schedule_link(&mut self) {
        let Forward::Served(link) = &self.link else { return };
        if let Some(t) = link.next_event() {
            if self.link_at.is_none_or(|at| t < at) {
                self.link_at = Some(t);
                self.schedule(t, Ev::Link);
            }
        }
    }

    fn on_link(&mut self) -> u64 {
        let now = self.now;
        let mut out = std::mem::take(&mut self.departures);
        let sinks = &mut self.sinks;
        let Forward::Served(link) = &mut self.link else { unreachable!("only a served link has events") };
        link.dequeue(
            now,
            &mut |mut p: DataPkt| {
                p.dequeued = now;
                out.push(p);
            },
            &mut |victim: DataPkt| victim.emit(sinks, NEVER, Fate::DropQueue),
        );
        let n = out.len() as u64;
        for p in out.drain(..) {
            self.push_data_pipe(self.prop, p);
        }
        self.departures = out;
        self.link_at = None;
        self.schedule_link();
        n
    }

    /// An ACK reaches the reverse bottleneck; a full drop-tail queue (`reverse.queue`) drops it.
    fn arrive_reverse_link(&mut self, mut p: AckPkt) {
        p.enqueued = self.now;
        let rlink = self.rlink.as_mut().expect("only built with a reverse link");
        let sinks = &mut self.sinks;
        rlink.enqueue(self.now, p, &mut |victim: AckPkt| victim.emit(sinks, NEVER, Fate::DropQueue));
        self.schedule_reverse_link();
    }

    fn schedule_reverse_link(&mut self) {
        if let Some(t) = self.rlink.as_ref().and_then(|l| l.next_event()) {
            if self.rlink_at.is_none_or(|at| t < at) {
                self.rlink_at = Some(t);
                self.schedule(t, Ev::ReverseLink);
            }
        }
    }

    fn on_reverse_link(&mut self) -> u64 {
        let now = self.now;
        let mut out = std::mem::take(&mut self.ack_departures);
        let rlink = self.rlink.as_mut().expect("only scheduled with a reverse link");
        rlink.dequeue(
            now,
            &mut |mut p: AckPkt| {
                p.dequeued = now;
                out.push(p);
            },
            // Drop-tail drops only arrivals, never at dequeue.
            &mut |_| unreachable!("a drop-tail queue drops nothing as it sends"),
        );
        let n = out.len() as u64;
        for p in out.drain(..) {
            self.arrive_sender(p);
        }
        self.ack_departures = out;
        self.rlink_at = None;
        self.schedule_reverse_link();
        n
    }

    /// A packet of line `pipe` reaches its receiver; a data segment takes with it those behind
    /// it that the receiving NIC merges with it (`Flow::gro`). Returns how many it took.
    fn arrive_receiver(&mut self, pipe: u32, p: DataPkt) -> u64 {
        self.reach_receiver(&p);
        let d = match p.body {
            Fwd::Data(d) => d,
            Fwd::Syn => {
                self.answer_syn(p);
                return 0;
            }
            // The listener's side of the connection opens; the delayed-ACK bound it takes from
            // that round trip is already set (`connected`).
            Fwd::Ack => return 0,
        };
        let f = p.flow;
        let (ack, merged) = if self.flows[f as usize].gro && self.gro_follows(pipe, f, &d, &d, d.len as u64) {
            self.arrive_merged(pipe, f, d)
        } else {
            (self.flows[f as usize].receiver.on_data(self.now, &d), 0)
        };
        if let Some(ack) = ack {
            self.send_ack(f, ack);
        }
        self.rearm_receiver(f);
        merged
    }

    /// A packet's arrival at its receiver: its record, and Bundler's outbox, which sees every
    /// packet of a bundled flow that crossed the bottleneck (SYNs too, as the inbox did).
    fn reach_receiver(&mut self, p: &DataPkt) {
        let now = self.now;
        p.emit(&mut self.sinks, now, Fate::Delivered);
        if let Some(b) = self.middlebox.as_mut().filter(|b| b.bundled[p.flow as usize]) {
            let epoch = b.inbox.epoch();
            if let Some(fb) = b.outbox.on_packet(now, packet_hash(p), p.size as u64, epoch) {
                let due = now + b.feedback_delay;
                b.feedback.push_back((due, fb));
                self.schedule(due, Ev::Feedback);
            }
        }
    }

    /// Whether the head of line `pipe` reaches flow `f`'s receiver now and joins the GRO run
    /// that `head` begins and `last` ends (`payload` bytes so far).
    #[inline]
    fn gro_follows(&self, pipe: u32, f: u32, head: &DataPacket, last: &DataPacket, payload: u64) -> bool {
        let line = &self.data_pipes[pipe as usize].line;
        match (line.next_due(), line.front()) {
            (Some(t), Some(q)) if t <= self.now && q.flow == f => {
                let phase = self.flows[f as usize].ts_phase;
                matches!(q.body, Fwd::Data(next) if cclab_transport::gro::can_follow(head, last, payload, &next, phase))
            }
            _ => false,
        }
    }

    /// Takes the segments of line `pipe` that join `head` into one GRO run and hands the run
    /// to flow `f`'s receiver; returns its ACK, if any, and how many segments joined.
    #[cold]
    fn arrive_merged(&mut self, pipe: u32, f: u32, head: DataPacket) -> (Option<AckFrame>, u64) {
        let mut run = std::mem::take(&mut self.gro_run);
        run.clear();
        run.push(head);
        let mut payload = head.len as u64;
        while self.gro_follows(pipe, f, &head, run.last().expect("the head"), payload) {
            let (_, q) = self.data_pipes[pipe as usize].line.pop().expect("checked");
            self.reach_receiver(&q);
            let Fwd::Data(d) = q.body else { unreachable!("checked") };
            payload += d.len as u64;
            run.push(d);
        }
        let ack = self.flows[f as usize].receiver.on_merged(self.now, &run);
        let merged = run.len() as u64 - 1;
        self.gro_run = run;
        (ack, merged)
    }

    /// The listener answers a SYN at once with a SYN-ACK (tcp_v4_conn_request →
    /// tcp_v4_send_synack), echoing the SYN's timestamp; every SYN gets one, retransmitted or
    /// not. It goes back as ACKs do: the receiver's host, the reverse delay and reverse link.
    #[cold]
    #[inline(never)]
    fn answer_syn(&mut self, syn: DataPkt) {
        self.send_reverse(syn.flow, Back::SynAck(syn.sent), SYN_BYTES);
    }

    fn send_ack(&mut self, f: u32, ack: AckFrame) {
        self.send_reverse(f, Back::Ack(ack), ACK_BYTES);
    }

    fn send_reverse(&mut self, f: u32, body: Back, size: u64) {
        let uid = self.next_uid;
        self.next_uid += 1;
        let p = Packet { uid, flow: f, size: size as u32, sent: self.now, enqueued: NEVER, dequeued: NEVER, body };
        self.push_ack_pipe(f, p);
    }

    fn arrive_sender(&mut self, p: AckPkt) {
        let ack = match p.body {
            Back::Ack(ack) => ack,
            Back::SynAck(echo) => return self.connected(p.flow, echo),
        };
        p.emit(&mut self.sinks, self.now, Fate::Delivered);
        let f = p.flow;
        let sender = &mut self.flows[f as usize].sender;
        sender.on_ack(self.now, &ack);
        sender.take_completed(&mut self.completed);
        for tag in self.completed.drain(..) {
            self.sinks.requests.complete(tag, self.now);
        }
        self.transmit(f);
        if let Some((trace, sampler)) = &mut self.cc_trace {
            if sampler.due(f, self.now) {
                let s = &self.flows[f as usize].sender;
                let view = SenderView {
                    in_flight: s.in_flight(),
                    pacing_rate: s.pacing_rate(),
                    rtt: s.rtt(),
                    delivery_rate: s.delivery_rate(),
                    rwnd: s.rwnd(),
                    rwnd_limited: s.rwnd_limited(self.now),
                    ca_state: s.ca_state(),
                };
                trace_sender(trace, f, self.now, s.cc(), view);
            }
        }
        self.rearm_sender(f);
    }

    /// A SYN-ACK reaches the sender: the connection is open (if it was still opening) and data
    /// may flow.
    #[cold]
    #[inline(never)]
    fn connected(&mut self, f: u32, echo: Time) {
        let flow = &mut self.flows[f as usize];
        let opening = flow.sender.is_connecting();
        flow.sender.on_syn_ack(self.now, echo);
        if opening {
            // The receiving host times its SYN-ACK by the handshake's final ACK
            // (tcp_synack_rtt_meas): the same round trip, which bounds its delayed-ACK timer.
            flow.receiver.set_handshake_rtt(flow.sender.rtt().smoothed);
            // That ACK is a packet of its own: tcp_rcv_synsent_state_process sends it at once
            // (tcp_send_ack) unless data is already queued, and the application writes only
            // after connect() returns. It goes first, as data go: it takes its place in the
            // queue, a delivery opportunity of a trace or Poisson link, and a loss draw, as the
            // kernel's does in the emulator (there the data that followed it met the next
            // opportunity and the next draws).
            self.send_forward(f, Fwd::Ack, ACK_BYTES);
        }
        self.transmit(f);
        self.rearm(f);
    }

    /// Sends the SYN the opening connection has due, through the flow's access path as data go.
    #[cold]
    #[inline(never)]
    fn send_syn(&mut self, f: u32) {
        let now = self.now;
        while self.flows[f as usize].sender.poll_syn(now).is_some() {
            self.send_forward(f, Fwd::Syn, SYN_BYTES);
        }
    }

    /// Sends one of the handshake's packets through the flow's access path, as data go.
    fn send_forward(&mut self, f: u32, body: Fwd, size: u64) {
        let uid = self.next_uid;
        self.next_uid += 1;
        let p = Packet { uid, flow: f, size: size as u32, sent: self.now, enqueued: NEVER, dequeued: NEVER, body };
        self.forward(f, p);
    }

    fn forward(&mut self, f: u32, p: DataPkt) {
        match self.flows[f as usize].access {
            Some(line) => self.push_data_pipe(line, p),
            None => self.arrive_site(p),
        }
    }

    fn transmit(&mut self, f: u32) {
        let now = self.now;
        if self.flows[f as usize].sender.is_connecting() {
            return self.send_syn(f);
        }
        while let Some(d) = self.flows[f as usize].sender.poll_transmit(now) {
            let uid = self.next_uid;
            self.next_uid += 1;
            self.sinks.count_sent();
            let p = Packet {
                uid,
                flow: f,
                size: d.wire_bytes() as u32,
                sent: now,
                enqueued: NEVER,
                dequeued: NEVER,
                body: Fwd::Data(d),
            };
            self.forward(f, p);
        }
    }

    /// Keeps one timer entry per flow at (or before) the earliest time the flow needs one.
    fn rearm(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        flow.sender_due = flow.sender.next_timeout();
        flow.receiver_due = flow.receiver.next_timeout();
        self.arm(f);
    }

    /// `rearm` after only the receiver changed: the sender's deadline is the one noted when it
    /// last changed (its state moves only in calls followed by a `rearm`). At thousands of
    /// flows this spares each data arrival the sender's and its controller's cache lines
    /// (CoreScale: 0.77–0.87× the CPU time).
    fn rearm_receiver(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        flow.receiver_due = flow.receiver.next_timeout();
        self.arm(f);
    }

    /// `rearm` after only the sender changed (an ACK's arrival), likewise.
    fn rearm_sender(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        flow.sender_due = flow.sender.next_timeout();
        self.arm(f);
    }

    /// Schedules the flow's timer at the earlier of its noted deadlines, unless an entry is
    /// due before it already.
    fn arm(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        if let Some(t) = flow.due() {
            let t = t.max(self.now + 1);
            if flow.timer_at.is_none_or(|at| t < at) {
                flow.timer_at = Some(t);
                self.schedule(t, Ev::Timer(f));
            }
        }
    }

    fn on_timer(&mut self, f: u32, t: Time) -> bool {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        if flow.timer_at != Some(t) {
            return false; // superseded by an earlier entry
        }
        flow.timer_at = None;
        if flow.due().is_none_or(|d| d > now) {
            // What it was armed for went without it (an ACK the receiver's read was due for
            // left with the next segment): nothing to do but wait for what is due next,
            // without touching the sender (a sender or receiver with nothing due does nothing
            // at a timer). Still an event, as it was when the sender was asked.
            self.arm(f);
            return true;
        }
        // Only what is due is asked: a receiver's timer (its delayed ACK, its application's
        // read) leaves the sender, which has nothing due and so nothing to do, untouched.
        let sender_due = flow.sender_due.is_some_and(|d| d <= now);
        if sender_due {
            flow.sender.on_timeout(now);
        }
        if let Some(ack) = flow.receiver.on_timeout(now) {
            self.send_ack(f, ack);
        }
        if sender_due {
            self.transmit(f);
            self.rearm(f);
        } else {
            self.rearm_receiver(f);
        }
        true
    }

    /// A request arrives: it is written to a connection, which sends it as its window allows.
    fn on_request(&mut self, i: u32) -> u64 {
        let now = self.now;
        let flows = &self.flows;
        let source = &mut self.sources[i as usize];
        let (f, size) = source.arrive(&|id| flows[id as usize].sender.pending_messages() == 0);
        if let Some(t) = source.next_arrival() {
            self.schedule(t, Ev::Request(i));
        }
        let tag = self.sinks.requests.start(now, f, size);
        self.flows[f as usize].sender.write_message(size, tag);
        self.transmit(f);
        self.rearm(f);
        1
    }

    /// Records every packet still in the network as in flight, in the order they were made.
    fn flush(&mut self) {
        let mut left: Vec<PacketRecord> = Vec::new();
        let mut keep = |r: Option<PacketRecord>| left.extend(r);
        match &mut self.link {
            Forward::Served(link) => link.drain(&mut |p| keep(p.record(NEVER, Fate::InFlight))),
            // Its packets are in the propagation line, stamped with departures to come.
            Forward::Scheduled(_) => {}
        }
        if let Some(rlink) = &mut self.rlink {
            rlink.drain(&mut |p| keep(p.record(NEVER, Fate::InFlight)));
        }
        let end = self.now;
        for pipe in &mut self.data_pipes {
            pipe.line.drain().for_each(|mut p| {
                if p.dequeued > end {
                    p.dequeued = NEVER; // still in a scheduled bottleneck
                }
                keep(p.record(NEVER, Fate::InFlight))
            });
        }
        for pipe in &mut self.ack_pipes {
            pipe.line.drain().for_each(|p| keep(p.record(NEVER, Fate::InFlight)));
        }
        if let Some(b) = &mut self.middlebox {
            b.inbox.drain(&mut |p| keep(p.record(NEVER, Fate::InFlight)));
            self.sinks.middlebox = b.inbox.take_rows();
        }
        left.sort_by_key(|r| r.uid);
        for r in &left {
            self.sinks.emit(r);
        }
    }
}

/// Builds the topology for a scenario and runs it to the end; with `opts.trace`, the output
/// carries every flow's sender sampled after the ACKs it processed (`RunOutput::trace`).
pub fn simulate(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64) -> Result<(), String>,
) -> Result<RunOutput, SimError> {
    let wall = std::time::Instant::now();
    let mut plan = PathPlan::resolve(scenario).map_err(SimError::Input)?;
    // Data records are emitted as packets arrive, in event order: the metrics can stream.
    plan.metrics.arrivals_ordered = true;

    let mut data_pipes = vec![Pipe { line: plan.prop_line(), dest: FwdDest::Receiver }];
    let mut ack_pipes = Vec::with_capacity(plan.flows.len());
    let rlink = plan.reverse_bottleneck();
    let ack_dest = if rlink.is_some() { BackDest::ReverseLink } else { BackDest::Sender };
    let mut flows = Vec::with_capacity(plan.flows.len());
    for fp in &plan.flows {
        let spec = &scenario.flows[fp.spec];
        let cc =
            cclab_cc::registry::build(spec, MSS).map_err(|e| SimError::Input(format!("flows[{}]: {e}", fp.spec)))?;
        // Two-sided schemes (Sprout) also get a receiver agent; the receiver's timer, which the
        // loop below already runs for delayed ACKs, runs the agent's too.
        let agent =
            cclab_cc::agent::build(spec, MSS).map_err(|e| SimError::Input(format!("flows[{}]: {e}", fp.spec)))?;
        // The host's jitter and the access delay share one in-order line; a flow with neither
        // skips it.
        let line = plan.access_line(fp.info.id);
        let access = (!line.is_instant()).then(|| {
            data_pipes.push(Pipe { line, dest: FwdDest::Bottleneck });
            data_pipes.len() as u32 - 1
        });
        ack_pipes.push(Pipe { line: plan.ack_line(fp.info.id), dest: ack_dest });
        let cfg = SenderConfig::for_flow(spec, &scenario.transport, MSS);
        // `uses_rack`: the controller models a Linux TCP module, so its receiver is Linux's.
        let gro = scenario.transport.gro && spec.delayed_ack && cc.uses_rack();
        let mut sender = Sender::new(cfg, cc, plan.flow_rng(fp.info.id));
        if plan.carries_requests(fp.info.id) {
            // A persistent connection: it sends only the requests written to it.
            sender.set_app_limit(0);
        }
        flows.push(Flow {
            sender,
            receiver: Receiver::new(ReceiverConfig::for_flow(spec, &scenario.transport)).with_agent(agent),
            access,
            timer_at: None,
            sender_due: None,
            receiver_due: None,
            gro,
            ts_phase: plan.ts_clock_phase(fp.info.id),
        });
    }

    let mut sim = Sim {
        now: 0,
        seq: 0,
        heap: EventQueue::default(),
        flows,
        data_pipes,
        ack_pipes,
        prop: PROP,
        link: match plan.scheduled_fifo() {
            Some(fifo) => Forward::Scheduled(fifo),
            None => Forward::Served(plan.bottleneck()),
        },
        link_at: None,
        rlink,
        rlink_at: None,
        departures: Vec::new(),
        ack_departures: Vec::new(),
        gro_run: Vec::new(),
        loss: plan.loss_stage(),
        next_uid: 0,
        sinks: Sinks::new(&plan, opts.log_packets),
        cc_trace: opts.trace.map(|interval| (CcTrace::default(), Sampler::new(interval))),
        sources: (0..plan.requests.len()).map(|i| plan.request_source(i)).collect(),
        completed: Vec::new(),
        middlebox: plan.inbox().map(|inbox| Bundle {
            inbox,
            inbox_at: None,
            outbox: Outbox::default(),
            feedback: std::collections::VecDeque::new(),
            feedback_delay: plan.reverse_delay,
            bundled: plan.flows.iter().map(|f| f.bundled).collect(),
        }),
    };
    for i in 0..sim.sources.len() {
        if let Some(t) = sim.sources[i].next_arrival() {
            sim.schedule(t, Ev::Request(i as u32));
        }
    }
    if let Some(b) = &mut sim.middlebox {
        // The control loop ticks from the start, whether or not traffic has arrived.
        let t = b.inbox.next_event().expect("the inbox always has a next tick");
        b.inbox_at = Some(t);
        sim.schedule(t, Ev::Inbox);
    }
    for f in &plan.flows {
        sim.schedule(f.info.start, Ev::Start(f.info.id));
        sim.schedule(f.info.stop, Ev::Stop(f.info.id));
    }

    let end = scenario.duration.ns();
    let mut events: u64 = 0;
    let mut next_report = 1u64 << 16;
    let mut next_trim = TRIM_EVERY;
    while let Some(e) = sim.heap.pop() {
        if e.t > end {
            break;
        }
        sim.now = e.t;
        if let Some(next) = sim.heap.peek() {
            sim.prefetch(next);
        }
        events += match e.ev {
            Ev::Link => sim.on_link(),
            Ev::ReverseLink => sim.on_reverse_link(),
            Ev::DataPipe(p) => sim.on_data_pipe(p),
            Ev::AckPipe(p) => sim.on_ack_pipe(p),
            Ev::Timer(f) => u64::from(sim.on_timer(f, e.t)),
            Ev::Start(f) => {
                let sender = &mut sim.flows[f as usize].sender;
                if scenario.transport.handshake {
                    sender.connect(e.t);
                } else {
                    sender.start(e.t);
                }
                sim.transmit(f);
                sim.rearm(f);
                1
            }
            Ev::Stop(f) => {
                sim.flows[f as usize].sender.stop();
                1
            }
            Ev::Request(i) => sim.on_request(i),
            Ev::Inbox => {
                let b = sim.middlebox.as_mut().expect("only with a middlebox");
                if b.inbox_at != Some(e.t) {
                    0 // superseded by an earlier entry
                } else {
                    b.inbox_at = None;
                    sim.on_inbox()
                }
            }
            Ev::Feedback => {
                let b = sim.middlebox.as_mut().expect("only with a middlebox");
                let (_, fb) = b.feedback.pop_front().expect("one event per feedback");
                b.inbox.on_feedback(sim.now, fb);
                1
            }
        };
        if events >= next_report {
            next_report = events + (1 << 16);
            progress(sim.now).map_err(SimError::Interrupted)?;
        }
        if events >= next_trim {
            next_trim = events + TRIM_EVERY;
            sim.trim();
        }
    }
    sim.now = end;
    sim.flush();

    let (sinks, congestion, trace) = sim.into_results();
    crate::release_freed_memory();
    let mut out = sinks.finish(&plan, events, wall.elapsed().as_secs_f64());
    // The senders know their congestion events; the total row adds them up (its burstiness is
    // left undefined: gaps of different flows do not form one sequence).
    let mut total_events = 0;
    for (summary, (events, gaps)) in out.metrics.flows.iter_mut().zip(&congestion) {
        summary.set_congestion(*events, gaps);
        total_events += events;
    }
    out.metrics.total.set_congestion(total_events, &Default::default());
    out.trace = trace;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_core::Rng;

    /// Data packets fill the bottleneck's queue and the propagation line: they must not grow
    /// back to the size of an ACK (128 bytes): splitting them took 10 s of CoreScale from 9.4 to
    /// 8.1 CPU-s.
    #[test]
    fn data_packets_stay_small() {
        assert!(std::mem::size_of::<DataPkt>() <= 72, "{} bytes", std::mem::size_of::<DataPkt>());
    }

    /// The radix queue pops the sorted order too, for monotone keys (the simulator's) and for
    /// keys pushed below the last minimum found (its fallback heap).
    #[test]
    fn radix_queue_pops_in_time_then_schedule_order() {
        let mut rng = Rng::new(7);
        let mut q = RadixQueue::default();
        let mut reference: Vec<(Time, u64)> = Vec::new();
        let (mut popped, mut expected) = (Vec::new(), Vec::new());
        let mut now: Time = 0;
        for seq in 0..10_000u64 {
            // Mostly ahead of the clock by up to ~1 s, some at the clock itself (equal times),
            // and some behind the minimum a peek found.
            let t = match rng.below(10) {
                0 => now,
                1 => now.saturating_sub(rng.below(1000)),
                _ => now + rng.below(1 << 30),
            };
            q.push(Entry { t, seq, ev: Ev::Link });
            reference.push((t, seq));
            if rng.below(2) == 0 {
                let _ = q.peek();
            }
            if rng.below(3) == 0 {
                reference.sort_unstable_by(|a, b| b.cmp(a));
                expected.push(reference.pop().expect("pushed"));
                let got = q.pop().expect("non-empty");
                popped.push((got.t, got.seq));
                now = got.t;
            }
        }
        reference.sort_unstable_by(|a, b| b.cmp(a));
        while let Some(e) = q.pop() {
            popped.push((e.t, e.seq));
            expected.push(reference.pop().expect("same length"));
        }
        assert!(reference.is_empty());
        assert_eq!(popped, expected);
    }

    /// The heap pops exactly the sorted order of (t, seq) under interleaved pushes and pops,
    /// with many equal times, as the simulator's determinism relies on.
    #[test]
    fn event_heap_pops_in_time_then_schedule_order() {
        let mut rng = Rng::new(42);
        let mut heap = EventHeap::default();
        let mut reference: Vec<(Time, u64)> = Vec::new();
        let mut popped = Vec::new();
        let mut expected = Vec::new();
        for seq in 0..5000u64 {
            let e = Entry { t: rng.below(50), seq, ev: Ev::Link };
            heap.push(e);
            reference.push((e.t, e.seq));
            if rng.below(3) == 0 {
                reference.sort_unstable_by(|a, b| b.cmp(a));
                expected.push(reference.pop().expect("pushed"));
                let got = heap.pop().expect("non-empty");
                popped.push((got.t, got.seq));
            }
        }
        reference.sort_unstable_by(|a, b| b.cmp(a));
        while let Some(e) = heap.pop() {
            popped.push((e.t, e.seq));
            expected.push(reference.pop().expect("same length"));
        }
        assert!(reference.is_empty());
        assert_eq!(popped, expected);
    }
}
