//! Queue disciplines: which packet leaves the bottleneck next, and which are dropped. One file
//! per discipline; [`Qdisc`] picks one from the scenario's `aqm`.
//!
//! The model is Linux's: the discipline holds the packets waiting, and hands the next one over
//! ([`QueueDiscipline::dequeue`]) the moment the delivery process is free to serve it; the packet
//! in service is held by the bottleneck, outside the discipline. So a discipline decides at
//! enqueue (droptail, drophead, RED, PIE), at dequeue (CoDel's sojourn-time drops), or picks
//! among internal queues (SFQ, FQ-CoDel, priority), without knowing when packets leave.
//!
//! mahimahi's accounting is kept: the queue limit counts the packet in service too, which is
//! why [`QueueDiscipline::enqueue`] is told about it ([`InService`]).
//!
//! Adding a discipline: a file here implementing [`QueueDiscipline`], a variant of [`Qdisc`]
//! (and of the `each!` forwarding below), and its name in the scenario's `Aqm`
//! (`cclab_core::scenario`). Both engines then run it; the delivery process is not touched.

mod drophead;
mod droptail;
mod fifo;

pub use drophead::DropHead;
pub use droptail::DropTail;
pub use fifo::Fifo;

use crate::stage::WirePacket;
use cclab_core::scenario::{Aqm, PACKET_BYTES};
use cclab_core::time::Time;
use cclab_core::units::{QueueSize, Rate};

/// The queue limit in the unit it is enforced in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u64),
    Bytes(u64),
    None,
}

impl Limit {
    /// Resolves a scenario queue size; a BDP multiple becomes whole packets of 1500 bytes
    /// (as Mininet's `max_queue_size`: 46 Mbit/s × 20 ms = 115 KB → 77 packets).
    pub fn resolve(q: QueueSize, rate: Rate, base_rtt: Time) -> Limit {
        match q {
            QueueSize::Packets(n) => Limit::Packets(n),
            QueueSize::Bytes(b) => Limit::Bytes(b),
            QueueSize::Infinite => Limit::None,
            QueueSize::Bdp(x) => {
                let bdp_bytes = rate.bytes_per_sec() * base_rtt as f64 / 1e9 * x;
                Limit::Packets(((bdp_bytes / PACKET_BYTES as f64).round() as u64).max(1))
            }
        }
    }

    /// Whether a queue of `packets` holding `bytes` is over the limit.
    #[inline]
    pub fn exceeded(self, packets: u64, bytes: u64) -> bool {
        match self {
            Limit::Packets(n) => packets > n,
            Limit::Bytes(b) => bytes > b,
            Limit::None => false,
        }
    }
}

/// The packet the delivery process is serving, as the limit counts it: none, or one of `bytes`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InService {
    pub packets: u64,
    pub bytes: u64,
}

/// Which packet leaves the bottleneck, and which are dropped. Drops go to `drop`, which the
/// engine records; a discipline may drop any number of packets at either end.
pub trait QueueDiscipline<P: WirePacket> {
    /// Offers a packet arriving at `now`; `serving` is the packet in service, counted by the
    /// limit. The discipline keeps it or drops it, and may drop others instead.
    fn enqueue(&mut self, now: Time, p: P, serving: InService, drop: &mut impl FnMut(P));

    /// The delivery process is free at `now`: the next packet to serve, if any. A dequeue-side
    /// discipline (CoDel) may drop packets here before it picks one.
    fn dequeue(&mut self, now: Time, drop: &mut impl FnMut(P)) -> Option<P>;

    /// Packets and bytes waiting (not counting the one in service).
    fn len(&self) -> usize;
    fn bytes(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// When a discipline that holds packets back (a token bucket) may release one, if it holds
    /// any it refused to hand over; a work-conserving discipline never does.
    fn wake_at(&self) -> Option<Time> {
        None
    }

    /// Empties the discipline (end of run), in the order the packets would have left.
    fn drain(&mut self, out: &mut impl FnMut(P));
}

/// The disciplines a scenario can name, dispatched by a match (no virtual calls on the packet
/// path; measured in benches/sim_engine.rs).
#[derive(Clone, Debug)]
pub enum Qdisc<P> {
    DropTail(DropTail<P>),
    DropHead(DropHead<P>),
}

impl<P> Qdisc<P> {
    pub fn new(aqm: Aqm, limit: Limit) -> Qdisc<P> {
        match aqm {
            Aqm::Droptail => Qdisc::DropTail(DropTail::new(limit)),
            Aqm::Drophead => Qdisc::DropHead(DropHead::new(limit)),
        }
    }
}

/// Forwards a call to whichever discipline the enum holds.
macro_rules! each {
    ($self:expr, $q:ident => $e:expr) => {
        match $self {
            Qdisc::DropTail($q) => $e,
            Qdisc::DropHead($q) => $e,
        }
    };
}

impl<P: WirePacket> QueueDiscipline<P> for Qdisc<P> {
    #[inline]
    fn enqueue(&mut self, now: Time, p: P, serving: InService, drop: &mut impl FnMut(P)) {
        each!(self, q => q.enqueue(now, p, serving, drop))
    }
    #[inline]
    fn dequeue(&mut self, now: Time, drop: &mut impl FnMut(P)) -> Option<P> {
        each!(self, q => q.dequeue(now, drop))
    }
    fn len(&self) -> usize {
        each!(self, q => q.len())
    }
    fn bytes(&self) -> u64 {
        each!(self, q => q.bytes())
    }
    fn wake_at(&self) -> Option<Time> {
        each!(self, q => q.wake_at())
    }
    fn drain(&mut self, out: &mut impl FnMut(P)) {
        each!(self, q => q.drain(out))
    }
}
