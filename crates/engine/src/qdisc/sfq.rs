//! SFQ: one FIFO per flow (or per hash bucket of flows), served by deficit round robin with a
//! quantum of bytes per round (Shreedhar & Varghese 1995, as Linux `sch_sfq` serves its slots),
//! so backlogged flows get equal byte shares whatever their sending rates. At the limit the
//! longest queue loses its newest packet, so a flow that floods the queue pays for it, not the
//! others. [`FlowQueues`] is the classification FQ-CoDel shares.

use super::{Fifo, InService, Limit, QueueDiscipline};
use crate::stage::WirePacket;
use cclab_core::scenario::SfqParams;
use cclab_core::time::Time;
use std::collections::VecDeque;

/// Which internal queue a flow's packets go to: the flow's own (by id), or a hash bucket shared
/// by colliding flows, as Linux hashes a packet's 5-tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowQueues {
    buckets: Option<u32>,
}

impl FlowQueues {
    pub fn new(buckets: Option<u32>) -> FlowQueues {
        FlowQueues { buckets }
    }

    /// The queue of `flow`.
    #[inline]
    pub fn index(&self, flow: u32) -> usize {
        match self.buckets {
            None => flow as usize,
            Some(n) => {
                // A fixed mixer (SplitMix64's finaliser), not a seeded hash: the same flows
                // collide in every run and on every engine.
                let mut z = flow as u64 ^ 0x9E37_79B9_7F4A_7C15;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                ((z ^ (z >> 31)) % n as u64) as usize
            }
        }
    }
}

#[derive(Clone, Debug)]
struct Slot<P> {
    fifo: Fifo<P>,
    /// Bytes the slot may still send this round; it may go negative by less than a packet.
    deficit: i64,
    active: bool,
}

#[derive(Clone, Debug)]
pub struct Sfq<P> {
    slots: Vec<Slot<P>>,
    /// Slots with packets, in round-robin order.
    active: VecDeque<usize>,
    classify: FlowQueues,
    quantum: i64,
    limit: Limit,
    len: usize,
    bytes: u64,
}

impl<P> Sfq<P> {
    pub fn new(params: &SfqParams, limit: Limit) -> Sfq<P> {
        Sfq {
            slots: Vec::new(),
            active: VecDeque::new(),
            classify: FlowQueues::new(params.buckets),
            quantum: params.quantum as i64,
            limit,
            len: 0,
            bytes: 0,
        }
    }
}

impl<P: WirePacket> Sfq<P> {
    fn slot(&mut self, i: usize) -> &mut Slot<P> {
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || Slot { fifo: Fifo::default(), deficit: 0, active: false });
        }
        &mut self.slots[i]
    }

    /// The slot holding the most (bytes under a byte limit, packets otherwise); the lowest
    /// index among equals, so the choice never depends on anything but the queues.
    fn longest(&self) -> Option<usize> {
        let by_bytes = matches!(self.limit, Limit::Bytes(_));
        self.active.iter().copied().max_by_key(|&i| {
            let f = &self.slots[i].fifo;
            (if by_bytes { f.bytes() } else { f.len() as u64 }, std::cmp::Reverse(i))
        })
    }
}

impl<P: WirePacket> QueueDiscipline<P> for Sfq<P> {
    fn enqueue(&mut self, _now: Time, p: P, serving: InService, drop: &mut impl FnMut(P)) {
        let i = self.classify.index(p.flow());
        let quantum = self.quantum;
        self.len += 1;
        self.bytes += p.wire_size();
        let slot = self.slot(i);
        slot.fifo.push(p);
        if !slot.active {
            slot.active = true;
            slot.deficit = quantum;
            self.active.push_back(i);
        }
        if self.limit.exceeded(self.len as u64 + serving.packets, self.bytes + serving.bytes) {
            let j = self.longest().expect("an active slot: one was just filled");
            let slot = &mut self.slots[j];
            let victim = slot.fifo.pop_back().expect("active slots hold packets");
            if slot.fifo.is_empty() {
                slot.active = false;
                self.active.retain(|&k| k != j);
            }
            self.len -= 1;
            self.bytes -= victim.wire_size();
            drop(victim);
        }
    }

    fn dequeue(&mut self, _now: Time, _drop: &mut impl FnMut(P)) -> Option<P> {
        loop {
            let &i = self.active.front()?;
            let slot = &mut self.slots[i];
            if slot.deficit <= 0 {
                // Its share of this round is spent: a new quantum, and the next slot's turn.
                slot.deficit += self.quantum;
                self.active.rotate_left(1);
                continue;
            }
            let p = slot.fifo.pop().expect("active slots hold packets");
            slot.deficit -= p.wire_size() as i64;
            if slot.fifo.is_empty() {
                slot.active = false;
                self.active.pop_front();
            }
            self.len -= 1;
            self.bytes -= p.wire_size();
            return Some(p);
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn drain(&mut self, out: &mut impl FnMut(P)) {
        let mut ignore = |_: P| {};
        while let Some(p) = self.dequeue(0, &mut ignore) {
            out(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tests::{Pkt, Sim};
    use cclab_core::time::MS;
    use cclab_core::units::Rate;

    fn sfq(limit: Limit) -> Sfq<Pkt> {
        Sfq::new(&SfqParams::default(), limit)
    }

    #[test]
    fn backlogged_flows_of_different_rates_get_equal_shares() {
        // A 12 Mbit/s link (1 packet/ms). Flow 0 offers 4 packets/ms, flow 1 one per 0.8 ms,
        // flow 2 one every 0.5 ms: all exceed a third of the link, so each should get a third.
        let mut sim = Sim::new(sfq(Limit::Packets(300)), Rate(12_000_000));
        let mut arrivals = vec![];
        for k in 0..4000u64 {
            arrivals.push((k * MS / 4, 0));
        }
        for k in 0..1250u64 {
            arrivals.push((k * 800_000, 1));
        }
        for k in 0..2000u64 {
            arrivals.push((k * MS / 2, 2));
        }
        arrivals.sort();
        for (t, f) in arrivals {
            sim.arrive(t, Pkt::new(f, 1500));
        }
        sim.run_until(1000 * MS);
        let by_flow = sim.bytes_by_flow(1000 * MS);
        let total: u64 = by_flow.values().sum();
        for (f, b) in &by_flow {
            let share = *b as f64 / total as f64;
            assert!((share - 1.0 / 3.0).abs() < 0.01, "flow {f}: share {share:.4} of {by_flow:?}");
        }
    }

    #[test]
    fn a_flow_below_its_share_loses_nothing() {
        // Flows 0 and 2 flood the link (2 packets/ms each), flow 1 sends 0.25 packets/ms, less
        // than a third of the link: its queue never grows, so the drops (from the longest
        // queue) all hit the floods, which split what flow 1 leaves of the link.
        let mut sim = Sim::new(sfq(Limit::Packets(100)), Rate(12_000_000));
        let mut arrivals = vec![];
        for k in 0..2000u64 {
            arrivals.push((k * MS / 2, 0));
            arrivals.push((k * MS / 2, 2));
        }
        for k in 0..250u64 {
            arrivals.push((k * 4 * MS, 1));
        }
        arrivals.sort();
        for (t, f) in arrivals {
            sim.arrive(t, Pkt::new(f, 1500));
        }
        sim.run_until(2000 * MS);
        assert!(sim.dropped.iter().all(|d| d.1.flow != 1));
        let by_flow = sim.bytes_by_flow(1000 * MS);
        assert_eq!(by_flow[&1], 250 * 1500);
        let (a, b) = (by_flow[&0] as f64, by_flow[&2] as f64);
        assert!((a / b - 1.0).abs() < 0.01, "{by_flow:?}");
    }

    #[test]
    fn unequal_packet_sizes_share_bytes_not_packets() {
        // Flow 0 sends 1500-byte packets, flow 1 500-byte ones, both backlogged from t = 0:
        // DRR gives equal bytes, so flow 1 sends three packets for each of flow 0's.
        let mut q = sfq(Limit::None);
        for _ in 0..100 {
            q.enqueue(0, Pkt::new(0, 1500), InService::default(), &mut |_| panic!());
        }
        for _ in 0..300 {
            q.enqueue(0, Pkt::new(1, 500), InService::default(), &mut |_| panic!());
        }
        let mut bytes = [0u64; 2];
        for _ in 0..200 {
            let p = q.dequeue(0, &mut |_| panic!()).unwrap();
            bytes[p.flow as usize] += p.size;
        }
        let ratio = bytes[0] as f64 / bytes[1] as f64;
        assert!((ratio - 1.0).abs() < 0.05, "{bytes:?}");
    }

    #[test]
    fn the_longest_queue_loses_its_newest_packet() {
        let mut q = sfq(Limit::Packets(4));
        let mut dropped = vec![];
        let mut offer = |q: &mut Sfq<Pkt>, flow: u32, id: u64| {
            q.enqueue(0, Pkt { flow, size: 1500, id }, InService::default(), &mut |p: Pkt| dropped.push(p.id))
        };
        offer(&mut q, 0, 0);
        offer(&mut q, 0, 1);
        offer(&mut q, 0, 2);
        offer(&mut q, 1, 3);
        // Over the limit: flow 0 holds 3, flow 1 holds 1; flow 1's arrival stays, flow 0's
        // newest (id 2) goes.
        offer(&mut q, 1, 4);
        assert_eq!(dropped, vec![2]);
        assert_eq!((q.len(), q.bytes()), (4, 6000));
    }

    #[test]
    fn hashing_maps_flows_into_the_buckets() {
        let c = FlowQueues::new(Some(8));
        assert!((0..100).all(|f| c.index(f) < 8));
        let used: std::collections::BTreeSet<usize> = (0..100).map(|f| c.index(f)).collect();
        assert_eq!(used.len(), 8, "100 flows spread over every bucket");
        assert_eq!(FlowQueues::new(None).index(17), 17);
    }
}
