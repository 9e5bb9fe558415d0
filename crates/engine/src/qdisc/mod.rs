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
//! (and of the `each!` forwarding below) and of [`QdiscSpec`], its name in the scenario's `Aqm`
//! (`cclab_core::scenario`) and its parameter table, if any, in `cclab_core::scenario::queues`.
//! Both engines then run it; the delivery process is not touched. Each discipline is a
//! self-contained type generic over the packet, so a middlebox can run one of its own.

mod codel;
mod drophead;
mod droptail;
mod fifo;
mod fq_codel;
mod pie;
mod prio;
mod red;
mod sfq;
mod token_bucket;

pub use codel::{Codel, CodelState};
pub use drophead::DropHead;
pub use droptail::DropTail;
pub use fifo::{Fifo, Stamped};
pub use fq_codel::FqCodel;
pub use pie::Pie;
pub use prio::Prio;
pub use red::Red;
pub use sfq::{FlowQueues, Sfq};
pub use token_bucket::{Bucket, Mode, TokenBucket};

use crate::stage::WirePacket;
use cclab_core::rng::Rng;
use cclab_core::scenario::{
    Aqm, CodelParams, FqCodelParams, Link, PieParams, PrioBy, RedParams, SfqParams, TokenBucketParams, PACKET_BYTES,
};
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

/// A scenario's discipline with its parameters resolved against the path and its flows: what
/// every engine builds its [`Qdisc`] from.
#[derive(Clone, Debug, PartialEq)]
pub enum QdiscSpec {
    DropTail,
    DropHead,
    Codel(CodelParams),
    FqCodel(FqCodelParams),
    Sfq(SfqParams),
    Pie(PieParams),
    /// RED ages its average over idle time in units of one packet's transmission time.
    Red {
        params: RedParams,
        packet_time: Time,
    },
    /// The class of each flow id (0 is served first); flows past the end take the last class.
    Prio {
        classes: Vec<u8>,
    },
    Tbf(TokenBucketParams),
    Policer(TokenBucketParams),
}

impl QdiscSpec {
    /// The discipline `link` names. `flow_entries[i]` is the `[[flows]]` entry of flow `i`, for
    /// priority classes given by entry; `rate` is the link's mean rate.
    pub fn from_link(link: &Link, flow_entries: &[usize], rate: Rate) -> QdiscSpec {
        match link.aqm {
            Aqm::Droptail => QdiscSpec::DropTail,
            Aqm::Drophead => QdiscSpec::DropHead,
            Aqm::Codel => QdiscSpec::Codel(link.codel.unwrap_or_default()),
            Aqm::FqCodel => QdiscSpec::FqCodel(link.fq_codel.unwrap_or_default()),
            Aqm::Sfq => QdiscSpec::Sfq(link.sfq.unwrap_or_default()),
            Aqm::Pie => QdiscSpec::Pie(link.pie.unwrap_or_default()),
            Aqm::Red => QdiscSpec::Red {
                params: link.red.unwrap_or_default(),
                packet_time: rate.serialisation_ns(PACKET_BYTES),
            },
            Aqm::Prio => {
                let p = link.prio.as_ref().expect("validation requires [link.prio] with aqm = \"prio\"");
                let last = *p.classes.last().expect("validation requires at least one class");
                let class_of = |i: usize| p.classes.get(i).copied().unwrap_or(last);
                let classes = match p.by {
                    PrioBy::Flow => (0..flow_entries.len()).map(class_of).collect(),
                    PrioBy::Entry => flow_entries.iter().map(|&e| class_of(e)).collect(),
                };
                QdiscSpec::Prio { classes }
            }
            Aqm::Tbf => QdiscSpec::Tbf(link.token_bucket.expect("validation requires [link.token_bucket]")),
            Aqm::Policer => QdiscSpec::Policer(link.token_bucket.expect("validation requires [link.token_bucket]")),
        }
    }
}

/// The disciplines a scenario can name, dispatched by a match (no virtual calls on the packet
/// path; measured in benches/sim_engine.rs).
#[derive(Clone, Debug)]
pub enum Qdisc<P> {
    DropTail(DropTail<P>),
    DropHead(DropHead<P>),
    Codel(Codel<P>),
    FqCodel(FqCodel<P>),
    Sfq(Sfq<P>),
    Pie(Pie<P>),
    Red(Red<P>),
    Prio(Prio<P>),
    TokenBucket(TokenBucket<P>),
}

impl<P> Qdisc<P> {
    /// The discipline `spec` describes under `limit`; `rng` feeds the randomised ones (PIE, RED)
    /// and is its own stream (`rng::stream::QUEUE`).
    pub fn new(spec: &QdiscSpec, limit: Limit, rng: Rng) -> Qdisc<P> {
        match spec {
            QdiscSpec::DropTail => Qdisc::DropTail(DropTail::new(limit)),
            QdiscSpec::DropHead => Qdisc::DropHead(DropHead::new(limit)),
            QdiscSpec::Codel(p) => Qdisc::Codel(Codel::new(p, limit)),
            QdiscSpec::FqCodel(p) => Qdisc::FqCodel(FqCodel::new(p, limit)),
            QdiscSpec::Sfq(p) => Qdisc::Sfq(Sfq::new(p, limit)),
            QdiscSpec::Pie(p) => Qdisc::Pie(Pie::new(p, limit, rng)),
            QdiscSpec::Red { params, packet_time } => Qdisc::Red(Red::new(params, *packet_time, limit, rng)),
            QdiscSpec::Prio { classes } => Qdisc::Prio(Prio::new(classes.clone(), limit)),
            QdiscSpec::Tbf(p) => Qdisc::TokenBucket(TokenBucket::new(p, Mode::Shaper, limit)),
            QdiscSpec::Policer(p) => Qdisc::TokenBucket(TokenBucket::new(p, Mode::Policer, limit)),
        }
    }
}

/// Forwards a call to whichever discipline the enum holds.
macro_rules! each {
    ($self:expr, $q:ident => $e:expr) => {
        match $self {
            Qdisc::DropTail($q) => $e,
            Qdisc::DropHead($q) => $e,
            Qdisc::Codel($q) => $e,
            Qdisc::FqCodel($q) => $e,
            Qdisc::Sfq($q) => $e,
            Qdisc::Pie($q) => $e,
            Qdisc::Red($q) => $e,
            Qdisc::Prio($q) => $e,
            Qdisc::TokenBucket($q) => $e,
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

/// Test helpers shared by the disciplines' tests: a packet and a tiny event loop that drives a
/// discipline through a real [`Bottleneck`](crate::bottleneck::Bottleneck).
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bottleneck::Bottleneck;
    use crate::delivery::Service;

    #[derive(Clone, Debug, PartialEq)]
    pub struct Pkt {
        pub flow: u32,
        pub size: u64,
        /// A serial number, so tests can tell packets apart.
        pub id: u64,
    }

    impl Pkt {
        pub fn new(flow: u32, size: u64) -> Pkt {
            Pkt { flow, size, id: 0 }
        }
    }

    impl WirePacket for Pkt {
        fn wire_size(&self) -> u64 {
            self.size
        }
        fn flow(&self) -> u32 {
            self.flow
        }
    }

    /// Arrivals in time order through a bottleneck of a constant rate; records when each packet
    /// left or was dropped.
    pub struct Sim<Q> {
        pub link: Bottleneck<Pkt, Q>,
        arrivals: std::collections::VecDeque<(Time, Pkt)>,
        next_id: u64,
        pub sent: Vec<(Time, Pkt)>,
        pub dropped: Vec<(Time, Pkt)>,
        pub now: Time,
    }

    impl<Q: QueueDiscipline<Pkt>> Sim<Q> {
        pub fn new(q: Q, rate: Rate) -> Sim<Q> {
            Sim {
                link: Bottleneck::with_qdisc(q, Service::Constant(rate), Rng::new(1)),
                arrivals: Default::default(),
                next_id: 0,
                sent: vec![],
                dropped: vec![],
                now: 0,
            }
        }

        /// Schedules an arrival; arrivals must be given in time order.
        pub fn arrive(&mut self, t: Time, mut p: Pkt) {
            assert!(self.arrivals.back().is_none_or(|a| a.0 <= t));
            p.id = self.next_id;
            self.next_id += 1;
            self.arrivals.push_back((t, p));
        }

        /// Runs every event up to `end`; arrivals and departures at the same instant: departures
        /// first, as the simulator's heap orders them by time then insertion.
        pub fn run_until(&mut self, end: Time) {
            loop {
                let link_t = self.link.next_event();
                let arr_t = self.arrivals.front().map(|a| a.0);
                let t = match (link_t, arr_t) {
                    (Some(l), Some(a)) => l.min(a),
                    (Some(l), None) => l,
                    (None, Some(a)) => a,
                    (None, None) => break,
                };
                if t > end {
                    break;
                }
                self.now = t;
                let (sent, dropped) = (&mut self.sent, &mut self.dropped);
                if link_t == Some(t) {
                    self.link.dequeue(t, &mut |p| sent.push((t, p)), &mut |p| dropped.push((t, p)));
                } else {
                    let (_, p) = self.arrivals.pop_front().expect("an arrival is due");
                    self.link.enqueue(t, p, &mut |p| dropped.push((t, p)));
                }
            }
            self.now = end;
        }

        /// Bytes each flow got out by `until`.
        pub fn bytes_by_flow(&self, until: Time) -> std::collections::BTreeMap<u32, u64> {
            let mut m = std::collections::BTreeMap::new();
            for (t, p) in &self.sent {
                if *t <= until {
                    *m.entry(p.flow).or_default() += p.size;
                }
            }
            m
        }
    }
}
