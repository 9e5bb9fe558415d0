//! One direction of the emulated path, run in real time by one dedicated thread.
//!
//! Data direction: sender's TUN → per-flow access delay (half the flow's extra RTT) → Bundler's
//! inbox for the flows of a `[middlebox]` bundle (`cclab_engine::middlebox`) → i.i.d.
//! loss → the bottleneck (queue discipline + constant/Poisson/trace delivery) → propagation
//! delay (and jitter) → receiver's TUN. ACK direction: receiver's TUN → per-flow delay (reverse
//! delay + the other half of the extra RTT) → the reverse bottleneck when the link has a
//! reverse trace → sender's TUN. The outbox sits where data packets reach the receiver's TUN;
//! its feedback goes back to the inbox after the reverse delay, out of band (inside this
//! thread, as the simulator carries it). The stages are `cclab_engine`'s, the same
//! objects the simulator drives; this file is their real-time clock.
//!
//! Time: every stage is computed in model time — a packet leaves a delay line exactly `delay`
//! after it entered, leaves the bottleneck when the link model says — and the thread only has to
//! *write* at those times. A packet leaving its direction's last delay line may be written up
//! to the tolerance before or after its model time, so one wake-up writes a whole group
//! (`timing`); the stages ahead of that line are served in model time whenever the thread wakes
//! or reads a packet, and need no wake-up of their own. It sleeps in `epoll_pwait2` until its
//! planned release (woken early by an arriving packet), with 1 ns timer slack, and spins only
//! the last few µs when a wake-up comes too early. A packet is recorded with its true arrival
//! time (the write), early or late, and the error is reported (`PathStats`), never hidden.

use crate::capture::SharedTap;
use crate::endpoint::{StartLine, Stop};
use crate::packet::{
    can_follow, mergeable, merged_headers, parse_ipv4, segment_count, tcp_segment_push, tcp_segment_range, tcp_tsval,
    write_segment, Ipv4Info, Mergeable, PROTO_TCP, PROTO_UDP,
};
use crate::records::{Msg, RecordBatcher};
use crate::sys::{self, Clock};
use crate::timing::{self, Plan, WakeLatency};
use crate::tun::{Tun, VnetHdr, VNET_HDR_LEN};
use cclab_core::record::{Fate, PacketKind, PacketRecord, NEVER};
use cclab_engine::bottleneck::Bottleneck;
use cclab_engine::middlebox::{boundary_hash, Feedback, Inbox, MiddleboxRow, Outbox};
use cclab_engine::stage::{DelayLine, Loss, WirePacket};
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// Bytes per packet buffer: a virtio header and one MTU-sized packet, with room to spare.
const SLOT: usize = 2048;
const CHUNK_SLOTS: usize = 512;
/// Largest packet a TUN read can return: a 64 KB TSO super-packet and its header.
const READ_BUF: usize = 128 * 1024;
/// Reads per loop turn before the due packets are served again, so a burst of arrivals cannot
/// delay departures by more than a few reads.
const READS_PER_TURN: usize = 8;
/// Loop turns in a row that may read the inputs the last turn's writes answered without
/// waiting first (`drive`): a wake-up's writes, then what they released a few µs later.
const MAX_ANSWERED_TURNS: u32 = 3;
/// How many packets ahead of the one being written the next one's slot is prefetched: enough
/// to cover a memory access (~0.1 µs) with the per-packet work between (~0.1–0.2 µs each).
const PREFETCH_AHEAD: usize = 4;
/// Longest sleep, so the stop flag is seen promptly.
const MAX_SLEEP_NS: u64 = 20_000_000;
/// Flow id of packets that match no flow: forwarded through the model, never recorded.
pub(crate) const UNCLASSIFIED: u32 = u32::MAX;

/// How a flow's packets are told apart, and how its retransmissions are recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Kernel TCP: retransmissions are segments that carry no new sequence space.
    Tcp,
    /// cclab's UDP transport: the header says whether a packet is a retransmission.
    CclabUdp,
    /// An external program: any protocol on the flow's port; retransmissions unknown.
    Any,
}

/// Maps packets to flows by the flow's server port (the one end of the 5-tuple fixed before the
/// connection exists; the addresses are fixed for the whole run) and protocol.
#[derive(Clone)]
pub(crate) struct FlowTable {
    by_port: Vec<u32>,
    transports: Vec<Transport>,
}

impl FlowTable {
    pub fn new(ports_and_transports: &[(u16, Transport)]) -> FlowTable {
        let mut by_port = vec![UNCLASSIFIED; 65536];
        for (i, (port, _)) in ports_and_transports.iter().enumerate() {
            by_port[*port as usize] = i as u32;
        }
        FlowTable { by_port, transports: ports_and_transports.iter().map(|x| x.1).collect() }
    }

    pub fn len(&self) -> usize {
        self.transports.len()
    }

    #[inline]
    fn classify(&self, info: &Ipv4Info) -> u32 {
        for port in [info.dport, info.sport] {
            if port == 0 {
                continue;
            }
            let f = self.by_port[port as usize];
            if f != UNCLASSIFIED {
                let ok = match self.transports[f as usize] {
                    Transport::Tcp => info.proto == PROTO_TCP,
                    Transport::CclabUdp => info.proto == PROTO_UDP,
                    Transport::Any => true,
                };
                return if ok { f } else { UNCLASSIFIED };
            }
        }
        UNCLASSIFIED
    }
}

/// Packet buffers in fixed slots, allocated in chunks that never move.
struct Pool {
    chunks: Vec<Box<[u8]>>,
    free: Vec<u32>,
}

impl Pool {
    fn new() -> Pool {
        Pool { chunks: Vec::new(), free: Vec::new() }
    }

    fn alloc(&mut self) -> u32 {
        if let Some(i) = self.free.pop() {
            return i;
        }
        let base = (self.chunks.len() * CHUNK_SLOTS) as u32;
        self.chunks.push(vec![0u8; CHUNK_SLOTS * SLOT].into_boxed_slice());
        self.free.extend((base + 1..base + CHUNK_SLOTS as u32).rev());
        base
    }

    #[inline]
    fn slot_ref(&self, i: u32) -> &[u8] {
        let (c, o) = (i as usize / CHUNK_SLOTS, i as usize % CHUNK_SLOTS * SLOT);
        &self.chunks[c][o..o + SLOT]
    }

    #[inline]
    fn slot(&mut self, i: u32) -> &mut [u8] {
        let (c, o) = (i as usize / CHUNK_SLOTS, i as usize % CHUNK_SLOTS * SLOT);
        &mut self.chunks[c][o..o + SLOT]
    }

    fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    /// Asks the CPU to bring the first `bytes` of slot `i` in, the headers and the payload the
    /// write will copy: a packet's slot sits untouched for the whole delay (at 10 Gbit/s and
    /// 10 ms, megabytes of slots), so its first touch misses. The first cache line alone (the
    /// headers) took the misses off the thread's own work (~11 % of its samples); the whole
    /// slot takes them off the kernel's copy in the write too: kernel Cubic through 10 Gbit/s
    /// × 10 ms, 10 s, three runs each alternated, 5,972–6,280 → 6,846–7,184 Mbit/s with the
    /// thread at the same 90 % of a CPU (crates/emu/README.md).
    #[inline]
    fn prefetch(&self, i: u32, bytes: usize) {
        cclab_core::hint::prefetch_bytes(self.slot_ref(i), bytes);
    }
}

/// A packet in the emulator: its buffer and what its record needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pkt {
    uid: u64,
    sent: u64,
    enq: u64,
    deq: u64,
    slot: u32,
    flow: u32,
    /// IP packet length (bytes on the wire).
    wire: u16,
    /// Bytes to write to the TUN (virtio header + packet).
    io_len: u16,
    retx: bool,
    /// A data segment with PSH (PacketRecord::push).
    push: bool,
    /// TCP's sequence field as the record carries it (PacketRecord::seq).
    seq: u32,
    /// Bundler's boundary hash of the packet's destination port and IP ID (`middlebox`).
    hash: u32,
}

impl WirePacket for Pkt {
    #[inline]
    fn wire_size(&self) -> u64 {
        self.wire as u64
    }
    #[inline]
    fn flow(&self) -> u32 {
        self.flow
    }
}

/// A stage of the path with something due.
#[derive(Clone, Copy, Debug)]
enum Stage {
    Access(usize),
    /// The inbox's token bucket or control loop.
    Inbox,
    /// The oldest feedback on its way from the outbox reaches the inbox.
    Feedback,
    Link,
    Prop,
}

/// The stage a direction's packets leave from, towards the far side's device: what decides
/// whether the thread may write them before their model time (`Path::release`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exit {
    /// The propagation delay line (data; a FIFO whose exits depend on nothing that comes later).
    Prop,
    /// The access lines, with nothing after them (ACKs without a reverse bottleneck).
    Access,
    /// The bottleneck itself (no delay after it): its departures must not be served before
    /// their time, or a packet arriving meanwhile would find the model already past it.
    Link,
}

/// Where a packet goes after its access line.
enum Next {
    Bottleneck,
    Prop,
    Out,
}

/// How one direction is built.
pub(crate) struct PathConfig {
    pub name: &'static str,
    pub kind: PacketKind,
    /// Record uids are `2·n + uid_parity`, so the two directions never collide.
    pub uid_parity: u64,
    pub flows: FlowTable,
    /// Per-flow delay before the bottleneck (data) or of the whole path (ACKs), ns.
    pub access_delay: Vec<u64>,
    /// Delay for packets matching no flow.
    pub unclassified_delay: u64,
    pub loss: Loss,
    pub link: Option<Bottleneck<Pkt>>,
    /// The delay line after the bottleneck (with its jitter, if any).
    pub prop: DelayLine<Pkt>,
    /// Merge runs of a kernel TCP flow's segments that leave together into one GSO write, as
    /// a receiving NIC's GRO would (`packet::mergeable`).
    pub merge: bool,
    /// When this direction's packets are at the senders' device, where `--pcap` captures
    /// them (`capture`): data when read from it, ACKs when written to it.
    pub capture_at: CaptureAt,
    /// Bundler's middlebox on this (data) direction, when the scenario has one.
    pub bundle: Option<Bundle>,
}

/// Bundler's middlebox as stages of the data direction: the inbox before the bottleneck, the
/// outbox where packets reach the receiver's device, and the outbox's feedback on its way back
/// (a constant delay, so due times stay in order). The boxes' logic is the simulator's.
pub(crate) struct Bundle {
    inbox: Inbox<Pkt>,
    outbox: Outbox,
    feedback: VecDeque<(u64, Feedback)>,
    feedback_delay: u64,
    /// Per flow: whether it belongs to the bundle (other traffic bypasses both boxes).
    bundled: Vec<bool>,
    /// When the inbox was last served: it is next due 1 ns later at the earliest, as in the
    /// simulator, so a discipline that holds packets back cannot make `advance` spin.
    polled: Option<u64>,
}

impl Bundle {
    pub fn new(inbox: Inbox<Pkt>, bundled: Vec<bool>, feedback_delay: u64) -> Bundle {
        Bundle { inbox, outbox: Outbox::default(), feedback: VecDeque::new(), feedback_delay, bundled, polled: None }
    }

    #[inline]
    fn carries(&self, p: &Pkt) -> bool {
        self.bundled.get(p.flow as usize).copied().unwrap_or(false)
    }
}

/// Which of a direction's device operations happens at the senders' device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CaptureAt {
    Read,
    Write,
}

/// How a forwarding thread runs (it may serve both directions).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ThreadConfig {
    /// Spin instead of sleeping when the planned wake-up is this close (a shorter sleep is not
    /// worth its wake-up).
    pub spin_ns: u64,
    /// How far before or after its model time a packet may be written so that one wake-up can
    /// release several (`timing::tolerance_ns`).
    pub tolerance_ns: u64,
    /// Pin the thread to the CPU it starts on (when the process may use more than one).
    pub pin: bool,
    /// Real-time priority for the thread (None: an ordinary thread).
    pub rt_priority: Option<i32>,
    /// After a turn that wrote, let the receiving applications read what it wrote before the
    /// thread goes on ([`sys::yield_cpu`]): when the run shares one CPU and they run at this
    /// thread's real-time priority (`run`).
    pub yield_after_write: bool,
    /// Run time at which the paths stop: what is still inside then is in flight.
    pub end: u64,
}

/// What a direction reports at the end.
#[derive(Clone, Debug, Default)]
pub struct PathStats {
    /// TUN reads, and the wire packets they held (super-packets count their segments).
    pub reads: u64,
    pub packets: u64,
    pub unclassified: u64,
    pub device_drops: u64,
    pub last_write_error: Option<String>,
    /// Delay error of the writes, arrival minus model arrival: histograms of how late and of
    /// how early, in whole µs (last bucket: that or more).
    pub late_us: Vec<u64>,
    pub early_us: Vec<u64>,
    /// Writes before their model time (released with a group, at most the tolerance early),
    /// and the earliest of them, ns before its model time.
    pub early_writes: u64,
    pub early_max_ns: u64,
    /// Whether the thread got the real-time priority it asked for.
    pub realtime: bool,
    /// The middlebox's samples (`middlebox` table), on the direction that has one.
    pub middlebox: Vec<MiddleboxRow>,
    /// Writes that carried several segments merged (GRO-like), and the segments they carried.
    pub merged_writes: u64,
    pub merged_packets: u64,
    /// How long kernel TCP segments waited in their sending host before this thread read
    /// them ([`InputWait`]): a histogram in whole ms, per wire packet.
    pub input_wait_ms: Vec<u64>,
}

impl PathStats {
    /// The q-quantile of the absolute delay error |arrival − model arrival|, whole µs (rounded
    /// down; NaN when nothing was written).
    pub fn error_quantile_us(&self, q: f64) -> f64 {
        let abs = self.late_us.iter().zip(&self.early_us).map(|(l, e)| l + e);
        quantile(abs.enumerate().map(|(i, c)| (i as f64, c)), q)
    }

    /// The q-quantile of the time kernel TCP segments waited in their sending host before the
    /// thread read them, whole ms, to ±1 ms (NaN when no segment carried a timestamp).
    pub fn input_wait_quantile_ms(&self, q: f64) -> f64 {
        quantile(self.input_wait_ms.iter().enumerate().map(|(i, &c)| (i as f64, c)), q)
    }

    /// The q-quantile of the signed delay error, whole µs (rounded toward zero; negative:
    /// early), so that `signed_error_quantile_us(0.01)` says how early the early ones were.
    pub fn signed_error_quantile_us(&self, q: f64) -> f64 {
        let early = self.early_us.iter().enumerate().rev().map(|(i, &c)| (-(i as f64), c));
        let late = self.late_us.iter().enumerate().map(|(i, &c)| (i as f64, c));
        quantile(early.chain(late), q)
    }
}

/// The q-quantile of a histogram given as (value, count) in increasing order of value.
fn quantile(hist: impl Iterator<Item = (f64, u64)> + Clone, q: f64) -> f64 {
    let n: u64 = hist.clone().map(|x| x.1).sum();
    if n == 0 {
        return f64::NAN;
    }
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut acc = 0;
    let mut last = f64::NAN;
    for (v, c) in hist {
        acc += c;
        last = v;
        if acc >= rank {
            break;
        }
    }
    last
}

/// Histogram range for the delay error, µs; beyond it everything lands in the last bucket.
const ERROR_BUCKETS: usize = 100_000;

/// Histogram range for the input wait, ms.
const WAIT_BUCKETS: usize = 10_000;

/// How long a kernel TCP segment waited in its sending host before the path thread read it,
/// from its timestamp option. Its TSval is the sender's clock in ms (plus a per-connection
/// offset) when TCP sent it, so the read time less TSval is a constant plus the wait; the
/// least of it over a flow's segments is the wait-free constant, and each segment's excess
/// over that is its wait, to the ms. The delay error does not see this: the link model starts
/// a packet's clock when the thread reads it. A path thread that cannot keep up with its
/// input leaves the excess queued in the sending kernel (its device queue), and this is
/// where it shows.
#[derive(Clone, Debug)]
struct InputWait {
    /// Per flow: the least read time (ms) − TSval seen so far (wrapping, as TSval does).
    base: Vec<Option<u32>>,
}

impl InputWait {
    /// A segment (or a super-packet: its segments share one stamp) of `flow` stamped `tsval`,
    /// read at `now_ns`: its wait in ms.
    fn observe(&mut self, flow: usize, now_ns: u64, tsval: u32) -> u32 {
        let d = ((now_ns / 1_000_000) as u32).wrapping_sub(tsval);
        let base = self.base[flow].get_or_insert(d);
        if (d.wrapping_sub(*base) as i32) < 0 {
            *base = d;
        }
        d.wrapping_sub(*base)
    }
}

pub(crate) struct Path<'a> {
    cfg: PathConfig,
    input: &'a Tun,
    output: &'a Tun,
    clock: Clock,
    pool: Pool,
    /// One line per flow plus one for unclassified packets (index `flows.len()`).
    access: Vec<Option<DelayLine<Pkt>>>,
    /// Indices of access lines holding packets (the only ones worth scanning).
    busy_access: Vec<usize>,
    prop: DelayLine<Pkt>,
    exit: Exit,
    /// Whether a packet was written since the thread last looked (`drive`).
    wrote_any: bool,
    next_uid: u64,
    /// Highest TCP sequence number sent per flow (None before the first segment).
    snd_max: Vec<Option<u32>>,
    input_wait: InputWait,
    /// Reused buffer for packets leaving the bottleneck together.
    departures: Vec<Pkt>,
    /// Reused buffer for packets the bottleneck drops.
    dropped: Vec<Pkt>,
    records: RecordBatcher,
    stats: PathStats,
    /// Packets released together that may leave as one GSO write (`cfg.merge`): their due
    /// times, the head's and the last one's merge view, the payload so far, and the buffer
    /// the merged packet is built in.
    train: Vec<(u64, Pkt)>,
    train_head: Option<Mergeable>,
    train_last: Option<Mergeable>,
    train_payload: usize,
    merged: Vec<u8>,
    /// Where `--pcap` captures this direction's packets (None: no capture).
    tap: Option<&'a SharedTap>,
}

impl<'a> Path<'a> {
    pub fn new(
        mut cfg: PathConfig,
        input: &'a Tun,
        output: &'a Tun,
        clock: Clock,
        tx: mpsc::Sender<Msg>,
        tap: Option<&'a SharedTap>,
    ) -> Path<'a> {
        let mut access: Vec<Option<DelayLine<Pkt>>> =
            cfg.access_delay.iter().map(|&d| (d > 0).then(|| DelayLine::new(d))).collect();
        access.push((cfg.unclassified_delay > 0).then(|| DelayLine::new(cfg.unclassified_delay)));
        let n = cfg.flows.len();
        let prop = std::mem::replace(&mut cfg.prop, DelayLine::new(0));
        let exit = if !prop.is_instant() {
            Exit::Prop
        } else if cfg.link.is_some() {
            Exit::Link
        } else {
            Exit::Access
        };
        Path {
            cfg,
            input,
            output,
            clock,
            pool: Pool::new(),
            access,
            busy_access: Vec::new(),
            prop,
            exit,
            wrote_any: false,
            next_uid: 0,
            snd_max: vec![None; n],
            input_wait: InputWait { base: vec![None; n] },
            departures: Vec::new(),
            dropped: Vec::new(),
            records: RecordBatcher::new(tx),
            stats: PathStats {
                late_us: vec![0; ERROR_BUCKETS],
                early_us: vec![0; ERROR_BUCKETS],
                input_wait_ms: vec![0; WAIT_BUCKETS],
                ..Default::default()
            },
            train: Vec::new(),
            train_head: None,
            train_last: None,
            train_payload: 0,
            merged: Vec::new(),
            tap,
        }
    }

    /// Captures packet `p` at `time` if this direction is captured at `when`.
    #[inline]
    fn capture(&self, when: CaptureAt, time: u64, p: &Pkt) {
        if let Some(tap) = self.tap {
            if self.cfg.capture_at == when && p.flow != UNCLASSIFIED {
                let bytes = &self.pool.slot_ref(p.slot)[..p.io_len as usize];
                tap.lock().unwrap_or_else(|e| e.into_inner()).packet(time, bytes);
            }
        }
    }

    /// Reads one packet from the input into `buf`: its length, or None when nothing waits.
    fn read_one(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            match self.input.read(buf) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io::Error::new(e.kind(), format!("reading {}: {e}", self.input.name))),
            }
        }
    }

    /// Records what is still inside as in flight and hands back the counters.
    fn finish_run(mut self) -> PathStats {
        self.flush_in_flight();
        self.records.flush();
        self.stats
    }

    /// Takes one TUN read: classifies it, cuts it into wire segments and starts each on its way.
    fn ingest(&mut self, now: u64, raw: &[u8]) {
        self.stats.reads += 1;
        if raw.len() < VNET_HDR_LEN {
            return;
        }
        let vnet = VnetHdr::parse(raw);
        let pkt = &raw[VNET_HDR_LEN..];
        let Some(info) = parse_ipv4(pkt) else {
            // Not IPv4 (the namespaces have IPv6 off): nothing of ours; count and drop.
            self.stats.unclassified += 1;
            return;
        };
        let flow = self.cfg.flows.classify(&info);
        let n = segment_count(&vnet, &info);
        if n == 1 && info.total_len + VNET_HDR_LEN > SLOT {
            // Larger than the MTU without being a super-packet: cannot come from our devices.
            self.stats.unclassified += 1;
            return;
        }
        let transport = self.cfg.flows.transports.get(flow as usize).copied();
        if transport == Some(Transport::Tcp) {
            if let Some(tsval) = tcp_tsval(pkt, &info) {
                let wait = self.input_wait.observe(flow as usize, now, tsval) as usize;
                self.stats.input_wait_ms[wait.min(WAIT_BUCKETS - 1)] += n as u64;
            }
        }
        let udp = (transport == Some(Transport::CclabUdp)).then(|| &pkt[info.ihl..info.total_len]);
        let udp_retx = udp.is_some_and(crate::udp::is_retransmission);
        let udp_push = udp.is_some_and(crate::udp::is_push);
        let udp_seq = udp.map_or(0, crate::udp::sequence_field);
        for k in 0..n {
            let slot = self.pool.alloc();
            let io_len = write_segment(&vnet, &info, pkt, k, n, self.pool.slot(slot));
            let hash = wire_hash(&self.pool.slot_ref(slot)[VNET_HDR_LEN..io_len], info.ihl);
            // A data segment's own sequence number; an ACK's acknowledgment number.
            let (retx, push, seq) = match (transport, self.cfg.kind) {
                (Some(Transport::Tcp), PacketKind::Data) => {
                    let (seq, len) = tcp_segment_range(&vnet, &info, k, n);
                    (self.tcp_retransmission(flow, seq, len), tcp_segment_push(&info, k, n), seq)
                }
                (Some(Transport::Tcp), PacketKind::Ack) => (false, false, info.tcp_ack),
                (Some(Transport::CclabUdp), _) => (udp_retx, udp_push, udp_seq),
                _ => (false, false, 0),
            };
            let uid = 2 * self.next_uid + self.cfg.uid_parity;
            self.next_uid += 1;
            self.stats.packets += 1;
            if flow == UNCLASSIFIED {
                self.stats.unclassified += 1;
            }
            let p = Pkt {
                uid,
                sent: now,
                enq: NEVER,
                deq: NEVER,
                slot,
                flow,
                wire: (io_len - VNET_HDR_LEN) as u16,
                io_len: io_len as u16,
                retx,
                push,
                seq,
                hash,
            };
            self.capture(CaptureAt::Read, now, &p);
            let line = if flow == UNCLASSIFIED { self.cfg.flows.len() } else { flow as usize };
            match &mut self.access[line] {
                Some(l) => {
                    if l.is_empty() {
                        self.busy_access.push(line);
                    }
                    l.push(now, p);
                }
                None => self.after_access(now, p),
            }
        }
    }

    /// Whether a TCP segment carries only sequence space already sent.
    fn tcp_retransmission(&mut self, flow: u32, seq: u32, len: u32) -> bool {
        if len == 0 {
            return false;
        }
        let end = seq.wrapping_add(len);
        let max = &mut self.snd_max[flow as usize];
        match *max {
            // Sequence comparison modulo 2^32, as TCP does.
            Some(m) if (end.wrapping_sub(m) as i32) <= 0 => true,
            _ => {
                *max = Some(end);
                false
            }
        }
    }

    /// Serves the inbox at model time `t`: its control loop if due, and every packet its
    /// tokens release, which enter the bottleneck at `t`.
    fn poll_inbox(&mut self, t: u64) {
        let Some(b) = self.cfg.bundle.as_mut() else { return };
        b.polled = Some(t);
        let mut departures = std::mem::take(&mut self.departures);
        let mut dropped = std::mem::take(&mut self.dropped);
        b.inbox.poll(t, &|p: &Pkt| p.hash, &mut |p| departures.push(p), &mut |victim| dropped.push(victim));
        self.finish_dropped(dropped);
        for p in departures.drain(..) {
            self.enter_link(t, p);
        }
        self.departures = departures;
    }

    /// A packet reaches the receiver's side at model time `t` (a bundled flow's, SYNs too, as
    /// the inbox saw them on the way in): the outbox counts it and
    /// answers an epoch boundary with feedback. (Released early, a packet reads the inbox's
    /// epoch as of up to the tolerance before `t`: the epoch changes at most once per control
    /// interval, 10 ms.)
    #[inline]
    fn outbox(&mut self, t: u64, p: &Pkt) {
        if let Some(b) = self.cfg.bundle.as_mut().filter(|b| b.carries(p)) {
            let epoch = b.inbox.epoch();
            if let Some(fb) = b.outbox.on_packet(t, p.hash, p.wire as u64, epoch) {
                b.feedback.push_back((t + b.feedback_delay, fb));
            }
        }
    }

    /// Loss, then the bottleneck, at model time `t`.
    fn enter_link(&mut self, t: u64, mut p: Pkt) {
        if self.cfg.loss.drops() {
            self.finish(p, NEVER, Fate::DropLoss);
            return;
        }
        p.enq = t;
        let link = self.cfg.link.as_mut().expect("only with a bottleneck");
        let mut dropped = std::mem::take(&mut self.dropped);
        link.enqueue(t, p, &mut |victim| dropped.push(victim));
        self.finish_dropped(dropped);
    }

    fn next_stage(&self) -> Next {
        if self.cfg.link.is_some() {
            Next::Bottleneck
        } else if !self.prop.is_instant() {
            Next::Prop
        } else {
            Next::Out
        }
    }

    /// A packet that finished its access delay at model time `t`.
    fn after_access(&mut self, t: u64, p: Pkt) {
        match self.next_stage() {
            Next::Bottleneck => match self.cfg.bundle.as_mut().filter(|b| b.carries(&p)) {
                Some(b) => {
                    let mut dropped = std::mem::take(&mut self.dropped);
                    b.inbox.enqueue(t, p, &mut |victim| dropped.push(victim));
                    self.finish_dropped(dropped);
                    self.poll_inbox(t);
                }
                None => self.enter_link(t, p),
            },
            Next::Prop => {
                self.prop.push(t, p);
            }
            Next::Out => self.write_out(t, p),
        }
    }

    /// The earliest due stage: ties go to upstream stages first (access lines, then the
    /// bottleneck, then propagation), as in the simulator where an earlier-scheduled event runs
    /// first.
    fn earliest(&self) -> Option<(u64, Stage)> {
        let upstream = self.earliest_upstream();
        match (upstream, self.prop.next_due()) {
            (Some(u), Some(t)) if t < u.0 => Some((t, Stage::Prop)),
            (None, Some(t)) => Some((t, Stage::Prop)),
            (u, _) => u,
        }
    }

    /// The earliest due stage ahead of the propagation line.
    fn earliest_upstream(&self) -> Option<(u64, Stage)> {
        let mut best: Option<(u64, Stage)> = None;
        let mut consider = |t: Option<u64>, stage: Stage| {
            if let Some(t) = t {
                if best.is_none_or(|b| t < b.0) {
                    best = Some((t, stage));
                }
            }
        };
        for &i in &self.busy_access {
            consider(self.access[i].as_ref().and_then(|l| l.next_due()), Stage::Access(i));
        }
        if let Some(b) = &self.cfg.bundle {
            let due = b.inbox.next_event().map(|t| b.polled.map_or(t, |p| t.max(p + 1)));
            consider(due, Stage::Inbox);
            consider(b.feedback.front().map(|f| f.0), Stage::Feedback);
        }
        consider(self.cfg.link.as_ref().and_then(|l| l.next_event()), Stage::Link);
        best
    }

    /// What is due next, split by whether it may be acted on early: (the earliest departure
    /// that may leave up to the tolerance before its model time, the earliest event that must
    /// not be served before it). A stage ahead of the propagation line is not a departure:
    /// it is served (in model time) whenever the thread next wakes, and wakes it only as what
    /// it could send into the line could be due — at its time plus the line's delay, a lower
    /// bound (jitter only adds) — unless that delay is shorter than the tolerance.
    fn ahead(&self, tolerance: u64) -> (Option<u64>, Option<u64>) {
        match self.exit {
            Exit::Link => (None, self.earliest().map(|(t, _)| t)),
            Exit::Access => (self.access_exits().map(|(t, _)| t).min(), None),
            Exit::Prop => {
                let upstream = self.earliest_upstream().map(|(t, _)| t);
                let delay = self.prop.delay();
                if delay >= tolerance {
                    let lower_bound = upstream.map(|u| u + delay);
                    ([self.prop.next_due(), lower_bound].into_iter().flatten().min(), None)
                } else {
                    (self.prop.next_due(), upstream)
                }
            }
        }
    }

    /// The latest departure that may leave early due at or before `horizon`, if any.
    fn last_early_by(&self, horizon: u64) -> Option<u64> {
        let last = |l: &DelayLine<Pkt>| l.exits().take_while(|&t| t <= horizon).last();
        match self.exit {
            Exit::Link => None,
            Exit::Prop => last(&self.prop),
            Exit::Access => self.busy_access.iter().filter_map(|&i| last(self.access[i].as_ref()?)).max(),
        }
    }

    /// The head of every busy access line: (its exit time, the line).
    fn access_exits(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        self.busy_access.iter().filter_map(|&i| Some((self.access[i].as_ref()?.next_due()?, i)))
    }

    /// Writes, in model-time order, every departure from the exit stage that may leave early
    /// and is due by `horizon` (the caller's now plus the tolerance; the model was advanced to
    /// now, so nothing else can still join the line ahead of them; what it writes may wait in
    /// the train: the caller flushes it). The bottleneck's own
    /// departures are never taken early ([`Exit::Link`]).
    fn release(&mut self, horizon: u64) {
        match self.exit {
            Exit::Link => {}
            Exit::Prop => {
                while let Some((t, p)) = self.prop.pop_due(horizon) {
                    self.prefetch_ahead();
                    self.write_out(t, p);
                }
            }
            Exit::Access => {
                while let Some((_, i)) = self.access_exits().min().filter(|&(t, _)| t <= horizon) {
                    let line = self.access[i].as_mut().expect("busy line");
                    let (t, p) = line.pop().expect("head exists");
                    if line.is_empty() {
                        self.busy_access.retain(|&x| x != i);
                    }
                    self.after_access(t, p);
                }
            }
        }
    }

    /// Serves, in model-time order, everything due at or before `now`, then writes the
    /// departures that may leave early due by `horizon` ([`Path::release`]); segments of a
    /// flow that leave in one call go out as one write.
    fn serve(&mut self, now: u64, horizon: u64) {
        self.advance(now);
        self.release(horizon);
        self.flush_train();
    }

    /// Serves, in model-time order, everything due at or before `now` (what it writes may wait
    /// in the train: the caller flushes it).
    fn advance(&mut self, now: u64) {
        while let Some((t, stage)) = self.earliest() {
            if t > now {
                break;
            }
            match stage {
                Stage::Access(i) => {
                    let line = self.access[i].as_mut().expect("busy line");
                    let (t, p) = line.pop().expect("head exists");
                    if line.is_empty() {
                        self.busy_access.retain(|&x| x != i);
                    }
                    self.after_access(t, p);
                }
                Stage::Inbox => self.poll_inbox(t),
                Stage::Feedback => {
                    let b = self.cfg.bundle.as_mut().expect("feedback event");
                    let (t, fb) = b.feedback.pop_front().expect("head exists");
                    b.inbox.on_feedback(t, fb);
                }
                Stage::Link => {
                    let link = self.cfg.link.as_mut().expect("link event");
                    let mut departures = std::mem::take(&mut self.departures);
                    let mut dropped = std::mem::take(&mut self.dropped);
                    // Dequeue exactly at the model time, so each packet's departure is exact.
                    link.dequeue(
                        t,
                        &mut |mut p: Pkt| {
                            p.deq = t;
                            departures.push(p);
                        },
                        &mut |victim| dropped.push(victim),
                    );
                    self.finish_dropped(dropped);
                    for p in departures.drain(..) {
                        if !self.prop.is_instant() {
                            self.prop.push(t, p);
                        } else {
                            self.write_out(t, p);
                        }
                    }
                    self.departures = departures;
                }
                Stage::Prop => {
                    let (t, p) = self.prop.pop().expect("head exists");
                    self.prefetch_ahead();
                    self.write_out(t, p);
                }
            }
        }
    }

    /// Prefetches the slot of the packet `PREFETCH_AHEAD` places behind the propagation
    /// line's head, which leaves a few packets from now.
    #[inline]
    fn prefetch_ahead(&self) {
        if let Some(p) = self.prop.nth(PREFETCH_AHEAD) {
            self.pool.prefetch(p.slot, p.io_len as usize);
        }
    }

    /// Sends a packet due at model time `due` on to the far side's TUN: at once, or as part of
    /// a train of segments that leave together in one GSO write (flushed when the next packet
    /// cannot join it, and at the end of every `serve`).
    fn write_out(&mut self, due: u64, p: Pkt) {
        // The outbox sees the packet where it reaches the receiver, at its model time.
        self.outbox(due, &p);
        let tcp =
            self.cfg.merge && self.cfg.flows.transports.get(p.flow as usize).is_some_and(|t| *t == Transport::Tcp);
        let m = if tcp { mergeable(&self.pool.slot_ref(p.slot)[VNET_HDR_LEN..p.io_len as usize]) } else { None };
        let Some(m) = m else {
            self.flush_train();
            self.write_one(due, p);
            return;
        };
        if let (Some(head), Some(last), Some(&(_, first))) = (self.train_head, self.train_last, self.train.first()) {
            let head_ip = &self.pool.slot_ref(first.slot)[VNET_HDR_LEN..first.io_len as usize];
            let ip = &self.pool.slot_ref(p.slot)[VNET_HDR_LEN..p.io_len as usize];
            if first.flow == p.flow && can_follow(head_ip, &head, &last, self.train_payload, ip, &m) {
                self.train.push((due, p));
                self.train_last = Some(m);
                self.train_payload += m.payload;
                return;
            }
            self.flush_train();
        }
        self.train.push((due, p));
        self.train_head = Some(m);
        self.train_last = Some(m);
        self.train_payload = m.payload;
    }

    /// Writes the train: one packet as it is, several as one GSO packet; every segment's
    /// record gets the write's time. The merged packet goes out in one vectored write, the
    /// payloads taken from their slots: building it in a buffer first copied every byte once
    /// more, ~15 % of the thread's time at 10 Gbit/s (perf).
    fn flush_train(&mut self) {
        let head = self.train_head.take();
        let last = self.train_last.take();
        match self.train.len() {
            0 => {}
            1 => {
                let (due, p) = self.train.pop().expect("one packet");
                self.write_one(due, p);
            }
            n => {
                let head = head.expect("a train has a head");
                let push = last.is_some_and(|l| l.push);
                let mut train = std::mem::take(&mut self.train);
                let mut hdr = std::mem::take(&mut self.merged);
                let pool = &self.pool;
                let ip = |p: &Pkt| &pool.slot_ref(p.slot)[VNET_HDR_LEN..p.io_len as usize];
                // Every segment has the head's header length (`can_follow`).
                let payload = train.iter().map(|(_, p)| ip(p).len() - head.hdrs).sum();
                merged_headers(ip(&train[0].1), &head, payload, push, &mut hdr);
                let mut iov = Vec::with_capacity(n + 1);
                iov.push(IoSlice::new(&hdr));
                iov.extend(train.iter().map(|(_, p)| IoSlice::new(&ip(p)[head.hdrs..])));
                let at = self.clock.now();
                let res = self.output.write_vectored(&iov);
                drop(iov);
                self.stats.merged_writes += 1;
                self.stats.merged_packets += n as u64;
                for (due, p) in train.drain(..) {
                    self.wrote(due, at, p, &res);
                }
                self.train = train;
                self.merged = hdr;
            }
        }
        self.train_payload = 0;
    }

    /// Writes one packet due at model time `due` to the far side's TUN and records its arrival.
    fn write_one(&mut self, due: u64, p: Pkt) {
        let io_len = p.io_len as usize;
        let at = self.clock.now();
        let slot = self.pool.slot(p.slot);
        let res = self.output.write(&slot[..io_len]);
        self.wrote(due, at, p, &res);
    }

    /// Accounts for packet `p`, due at `due`, written at `at` with result `res`.
    fn wrote(&mut self, due: u64, at: u64, p: Pkt, res: &io::Result<usize>) {
        if at < due {
            // Released with its group, within the tolerance before its model time.
            self.stats.early_writes += 1;
            self.stats.early_max_ns = self.stats.early_max_ns.max(due - at);
            self.stats.early_us[(((due - at) / 1000) as usize).min(ERROR_BUCKETS - 1)] += 1;
        } else {
            self.stats.late_us[(((at - due) / 1000) as usize).min(ERROR_BUCKETS - 1)] += 1;
        }
        match res {
            Ok(_) => {
                self.wrote_any = true;
                self.capture(CaptureAt::Write, at, &p);
                self.finish(p, at, Fate::Delivered)
            }
            Err(e) => {
                // The receiving kernel refused the packet: a device drop, recorded as such.
                self.stats.device_drops += 1;
                self.stats.last_write_error = Some(format!("writing to {}: {e}", self.output.name));
                self.finish(p, NEVER, Fate::DropDevice);
            }
        }
    }

    /// Releases the packet's buffer and emits its record (unless it belongs to no flow).
    fn finish(&mut self, p: Pkt, arrived: u64, fate: Fate) {
        self.pool.release(p.slot);
        if p.flow == UNCLASSIFIED {
            return;
        }
        self.records.push(PacketRecord {
            uid: p.uid,
            flow: p.flow,
            kind: self.cfg.kind,
            size: p.wire as u32,
            sent: p.sent,
            arrived,
            fate,
            enqueued: p.enq,
            dequeued: p.deq,
            retransmission: p.retx,
            push: p.push,
            seq: p.seq,
        });
    }

    /// Records the packets the bottleneck dropped and gives the buffer back for reuse.
    fn finish_dropped(&mut self, mut dropped: Vec<Pkt>) {
        for victim in dropped.drain(..) {
            self.finish(victim, NEVER, Fate::DropQueue);
        }
        self.dropped = dropped;
    }

    /// At the end of the run: everything still on the path is in flight.
    fn flush_in_flight(&mut self) {
        let mut left: Vec<Pkt> = Vec::new();
        for l in self.access.iter_mut().flatten() {
            left.extend(l.drain());
        }
        if let Some(b) = &mut self.cfg.bundle {
            b.inbox.drain(&mut |p| left.push(p));
            self.stats.middlebox = b.inbox.take_rows();
        }
        if let Some(link) = &mut self.cfg.link {
            link.drain(&mut |p| left.push(p));
        }
        left.extend(self.prop.drain());
        for p in left {
            self.finish(p, NEVER, Fate::InFlight);
        }
    }
}

/// Bundler's boundary hash of an IPv4 packet (`ip`, header length `ihl`): its destination
/// port (0 for protocols without one) and IP ID, as both boxes read them off the wire.
fn wire_hash(ip: &[u8], ihl: usize) -> u32 {
    let be16 = |i: usize| ip.get(i..i + 2).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let dport = match ip.get(9) {
        Some(&PROTO_TCP) | Some(&PROTO_UDP) => be16(ihl + 2),
        _ => 0,
    };
    boundary_hash(dport, be16(4))
}

/// What a forwarding thread reports at the end: what it cost and how it slept.
#[derive(Clone, Debug, Default)]
pub struct ThreadStats {
    /// CPU time of the thread (user + system: the system part includes the receiving kernels'
    /// work done inside its TUN writes), ns.
    pub cpu_ns: u64,
    /// Sleeps that ended by their timer, and by a packet arriving.
    pub timer_wakeups: u64,
    pub io_wakeups: u64,
    /// Loop turns that polled the devices again instead of sleeping.
    pub spins: u64,
    /// Lateness of timed wake-ups, µs: median and 99th percentile; and the margin the thread
    /// ended up aiming before due times, ns.
    pub wake_late_p50_us: f64,
    pub wake_late_p99_us: f64,
    pub wake_margin_ns: u64,
    /// Whether the thread got the real-time priority it asked for.
    pub realtime: bool,
}

/// Forwards on the current thread, for every path given, until `stop` or the end time; then
/// records what is still inside as in flight. One thread may serve both directions: while it
/// waits for the next data departure it also picks up ACKs.
///
/// Sleeping and spinning follow [`timing`]: each wake-up serves the model up to now and writes
/// every departure due within the tolerance ahead, and is timed at the middle of the group it
/// is for, so that one wake-up serves as many departures as it can.
pub(crate) fn drive(
    mut paths: Vec<Path<'_>>,
    th: ThreadConfig,
    stop: &AtomicBool,
    serving: &StartLine,
) -> io::Result<(Vec<PathStats>, ThreadStats)> {
    sys::set_timer_slack_1ns();
    if th.pin && sys::cpus_available() >= 2 {
        // SAFETY: sched_getcpu has no arguments.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu >= 0 {
            let _ = sys::pin_to_cpu(cpu as usize);
        }
    }
    let cpu_start = sys::thread_cpu_ns();
    let Some(clock) = paths.first().map(|p| p.clock) else { return Ok((Vec::new(), ThreadStats::default())) };
    let mut duty = sys::RtDuty::start(th.rt_priority, &clock);
    let mut waiter = sys::Readiness::new(&paths.iter().map(|p| p.input.raw_fd()).collect::<Vec<_>>())?;
    let mut buf = vec![0u8; READ_BUF];
    let end = th.end;
    let mut wake = WakeLatency::new();
    let mut ts = ThreadStats::default();
    // Which inputs to read this turn: those the last poll found readable (reading the others
    // would only return EAGAIN, one system call each).
    let mut readable = vec![true; paths.len()];
    // The path whose input is each path's output. The kernel behind a device often answers a
    // write inside it (an ACK for data, new data for an ACK), so after writing the thread reads
    // that input at once instead of polling first: the poll would find it readable anyway, at
    // the cost of a system call per wake-up. At most `MAX_ANSWERED_TURNS` such turns in a row:
    // a busy thread (it writes at every turn at 10 Gbit/s) must still look at every input
    // between them, or one direction waits in its device while the other keeps answering
    // (measured with no limit: ACKs p99 12–58 ms late instead of 5–8).
    let answers: Vec<Option<usize>> =
        paths.iter().map(|p| paths.iter().position(|q| q.input.raw_fd() == p.output.raw_fd())).collect();
    // Inputs to read once because a write answered them (not because a poll said so): one
    // read, not until EAGAIN. Whether more waits, the next wait tells (it returns at once
    // then): at 100 Mbit/s the read that would find nothing is two system calls per wake-up.
    let mut answered_input = vec![false; paths.len()];
    let mut budget = vec![0usize; paths.len()];
    let mut answered = 0;
    // The last reading of the clock, reused until something (a read, a write, a wait) may
    // have taken time: the vDSO clock is ~2 % of the thread's time at 100 Mbit/s otherwise.
    let mut now = clock.now();
    serving.check_in();
    while !stop.load(Ordering::Relaxed) && now < end {
        // Reads: one packet from each input in turn, up to READS_PER_TURN from an input the
        // last wait found readable and one from an input a write answered. Before a packet
        // enters, every direction is brought up to its arrival: if this thread was held up, a
        // queue must not take the newcomer in before the packets due earlier left, and a burst
        // on one input (64 KB super-packets at 10 Gbit/s) must not hold the other direction's
        // departures back (reading one input until it was empty left ACKs up to ms late).
        for i in 0..paths.len() {
            budget[i] = if readable[i] {
                READS_PER_TURN
            } else if answered_input[i] {
                1
            } else {
                0
            };
            answered_input[i] = false;
        }
        let mut got = 0;
        let mut reading = true;
        while reading {
            reading = false;
            for i in 0..paths.len() {
                if budget[i] == 0 {
                    continue;
                }
                let Some(n) = paths[i].read_one(&mut buf)? else {
                    budget[i] = 0;
                    readable[i] = false;
                    continue;
                };
                got += 1;
                budget[i] -= 1;
                let t = clock.now();
                if t >= end {
                    budget.iter_mut().for_each(|b| *b = 0);
                    break;
                }
                // Its own direction first, then the packet, then the others: a capture (data
                // when read, ACKs when written) stays in time order, as the newcomer is
                // stamped `t` and the other directions' writes come after it.
                paths[i].serve(t, t);
                paths[i].ingest(t, &buf[..n]);
                for (j, p) in paths.iter_mut().enumerate() {
                    if j != i {
                        p.serve(t, t);
                    }
                }
                reading = true;
            }
        }
        // An input the wait found readable that gave its whole share may hold more: read it
        // again at once (an EAGAIN above cleared it).
        let more = readable.iter().any(|&r| r);
        if got > 0 {
            now = clock.now();
        }
        let served_at = now.min(end);
        let mut answer = false;
        let mut wrote = false;
        for (i, p) in paths.iter_mut().enumerate() {
            // What the run's end would find still inside stays there.
            p.serve(served_at, (served_at + th.tolerance_ns).min(end));
            if std::mem::take(&mut p.wrote_any) {
                wrote = true;
                if answered < MAX_ANSWERED_TURNS {
                    if let Some(j) = answers[i] {
                        answered_input[j] = true;
                        answer = true;
                    }
                }
            }
        }
        if wrote && th.yield_after_write {
            // On one CPU a receiving application reads only when this thread stops, so before
            // it would wait for the next sleep; and a read that sends an ACK (Linux ACKs at the
            // read when the unread data held the window back) woke the thread again 20-50 µs
            // into that sleep, a round of context switches per ACK (~25 µs of CPU each on this
            // VM; 100 Mbit/s cost 26 % of a CPU in runs where the kernel ACKed so, 19 % where
            // it ACKed on arrival). Yielding now, the applications read at once, as on a host
            // with CPUs to spare, and the ACK is waiting when the thread reads its input next.
            sys::yield_cpu();
        }
        answered = if answer { answered + 1 } else { 0 };
        if more || answer {
            now = if wrote { clock.now() } else { now };
            now = duty.turn_at(&clock, now);
            continue; // more may be waiting
        }
        if wrote {
            now = clock.now();
        }
        let ahead = look_ahead(&paths, th.tolerance_ns);
        let timeout = match timing::plan(now, ahead, end, th.tolerance_ns, wake.margin_ns(), th.spin_ns) {
            Plan::Spin => 0,
            Plan::SleepUntil(until) => until.min(now + MAX_SLEEP_NS) - now,
        };
        // A zero timeout only looks; otherwise it sleeps until an input is readable or the
        // time comes.
        let ready = waiter.wait(&mut readable, timeout)?;
        let before = now;
        now = clock.now();
        if timeout == 0 {
            ts.spins += 1;
        } else {
            if ready == 0 {
                ts.timer_wakeups += 1;
                wake.observe(before + timeout, now);
            } else {
                ts.io_wakeups += 1;
            }
            duty.waited(now - before);
        }
        now = duty.turn_at(&clock, now);
    }
    ts.realtime = duty.realtime();
    ts.wake_late_p50_us = wake.quantile_us(0.5);
    ts.wake_late_p99_us = wake.quantile_us(0.99);
    ts.wake_margin_ns = wake.margin_ns();
    let stats = paths.into_iter().map(|p| PathStats { realtime: ts.realtime, ..p.finish_run() }).collect();
    ts.cpu_ns = sys::thread_cpu_ns().saturating_sub(cpu_start);
    Ok((stats, ts))
}

/// What lies ahead in all the thread's paths: the earliest thing due, whether it must not be
/// served early, and the last departure that may leave early within two tolerances of it (the
/// group one wake-up can release).
fn look_ahead(paths: &[Path<'_>], tolerance: u64) -> Option<timing::Ahead> {
    let (mut early_ok, mut exact) = (None::<u64>, None::<u64>);
    for p in paths {
        let (e, x) = p.ahead(tolerance);
        early_ok = [early_ok, e].into_iter().flatten().min();
        exact = [exact, x].into_iter().flatten().min();
    }
    let first = [early_ok, exact].into_iter().flatten().min()?;
    let horizon = first + 2 * tolerance;
    let last = paths.iter().filter_map(|p| p.last_early_by(horizon)).max().unwrap_or(first).max(first);
    Some(timing::Ahead { first, last, exact: exact == Some(first) })
}

/// Runs [`drive`] and reports a failure to the main thread.
pub(crate) fn run_paths(
    paths: Vec<Path<'_>>,
    th: ThreadConfig,
    stop: Stop,
    tx: mpsc::Sender<Msg>,
    serving: &StartLine,
) -> (Vec<PathStats>, ThreadStats) {
    let names: Vec<&str> = paths.iter().map(|p| p.cfg.name).collect::<Vec<_>>();
    let n = paths.len();
    match drive(paths, th, stop.flag(), serving) {
        Ok(s) => s,
        Err(e) => {
            // Failed, perhaps before serving: checked in all the same, so the endpoints are not
            // held at the line for `START_LIMIT` (a second check-in after the run failed is
            // harmless).
            serving.check_in();
            let _ = tx.send(Msg::Failed(format!("the {} path stopped: {e}", names.join("/"))));
            (vec![PathStats::default(); n], ThreadStats::default())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_wait_is_a_segments_excess_over_the_least_read_time_less_tsval() {
        const MS: u64 = 1_000_000;
        let mut w = InputWait { base: vec![None; 2] };
        // The sender's TSval: its clock in ms plus an offset that makes it wrap within the run.
        let ts = |sent_ms: u64| (sent_ms as u32).wrapping_add(u32::MAX - 5);
        assert_eq!(w.observe(0, 10 * MS, ts(10)), 0, "the first sets the base");
        assert_eq!(w.observe(0, 25 * MS + 400_000, ts(20)), 5, "sent at 20 ms, read at 25.4");
        assert_eq!(w.observe(0, 40 * MS, ts(40)), 0);
        // A read that finds the base lower (the sender's tick ahead of the reader's) lowers it:
        // the waits after count from there.
        assert_eq!(w.observe(0, 50 * MS, ts(51)), 0);
        assert_eq!(w.observe(0, 62 * MS, ts(60)), 3);
        // Each flow has its own base (its own offset).
        assert_eq!(w.observe(1, 70 * MS, 7), 0);
        assert_eq!(w.observe(1, 80 * MS, 12), 5);
    }
}
