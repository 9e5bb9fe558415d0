//! FQ-CoDel (RFC 8290): per-flow queues, each under its own CoDel, scheduled by deficit round
//! robin with two lists. A queue that becomes active joins the new-flows list, which is served
//! before the old one, so a sparse flow (a request, an ACK stream) gets its packets out ahead of
//! bulk flows; a queue that spends its quantum moves to the end of the old list.

use super::{CodelState, Fifo, FlowQueues, InService, Limit, QueueDiscipline, Stamped};
use crate::stage::WirePacket;
use cclab_core::scenario::{CodelParams, FqCodelParams};
use cclab_core::time::Time;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Clone, Debug)]
struct FlowQueue<P> {
    fifo: Fifo<Stamped<P>>,
    deficit: i64,
    list: List,
    codel: CodelState,
}

#[derive(Clone, Debug)]
pub struct FqCodel<P> {
    queues: Vec<FlowQueue<P>>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    classify: FlowQueues,
    codel: CodelParams,
    quantum: i64,
    limit: Limit,
    len: usize,
    bytes: u64,
}

impl<P> FqCodel<P> {
    pub fn new(params: &FqCodelParams, limit: Limit) -> FqCodel<P> {
        FqCodel {
            queues: Vec::new(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            classify: FlowQueues::new(params.buckets),
            codel: CodelParams { target: params.target, interval: params.interval },
            quantum: params.quantum as i64,
            limit,
            len: 0,
            bytes: 0,
        }
    }
}

impl<P: WirePacket> FqCodel<P> {
    fn queue(&mut self, i: usize) -> &mut FlowQueue<P> {
        if i >= self.queues.len() {
            let codel = CodelState::new(&self.codel);
            self.queues.resize_with(i + 1, || FlowQueue {
                fifo: Fifo::default(),
                deficit: 0,
                list: List::None,
                codel: codel.clone(),
            });
        }
        &mut self.queues[i]
    }

    /// The queue with the most bytes (RFC 8290 §4.1: the drop on overflow hits the fattest
    /// flow); the lowest index among equals.
    fn fattest(&self) -> Option<usize> {
        (0..self.queues.len())
            .filter(|&i| !self.queues[i].fifo.is_empty())
            .max_by_key(|&i| (self.queues[i].fifo.bytes(), std::cmp::Reverse(i)))
    }
}

impl<P: WirePacket> QueueDiscipline<P> for FqCodel<P> {
    fn enqueue(&mut self, now: Time, p: P, serving: InService, drop: &mut impl FnMut(P)) {
        let i = self.classify.index(p.flow());
        let quantum = self.quantum;
        self.len += 1;
        self.bytes += p.wire_size();
        let q = self.queue(i);
        q.fifo.push(Stamped { at: now, p });
        if q.list == List::None {
            q.list = List::New;
            q.deficit = quantum;
            self.new_flows.push_back(i);
        }
        if self.limit.exceeded(self.len as u64 + serving.packets, self.bytes + serving.bytes) {
            let j = self.fattest().expect("a queue holds the packet just added");
            // From the head, as RFC 8290 drops; an emptied queue stays on its list until the
            // scheduler finds it empty.
            let victim = self.queues[j].fifo.pop().expect("the fattest queue is not empty");
            self.len -= 1;
            self.bytes -= victim.wire_size();
            drop(victim.p);
        }
    }

    fn dequeue(&mut self, now: Time, drop: &mut impl FnMut(P)) -> Option<P> {
        loop {
            let (i, from_new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i, true),
                (None, Some(&i)) => (i, false),
                (None, None) => return None,
            };
            let q = &mut self.queues[i];
            if q.deficit <= 0 {
                q.deficit += self.quantum;
                q.list = List::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(i);
                continue;
            }
            let (len0, bytes0) = (q.fifo.len(), q.fifo.bytes());
            let p = q.codel.dequeue(now, &mut q.fifo, drop);
            self.len -= len0 - q.fifo.len();
            self.bytes -= bytes0 - q.fifo.bytes();
            match p {
                Some(p) => {
                    q.deficit -= p.wire_size() as i64;
                    return Some(p);
                }
                None => {
                    // An empty new queue moves to the old list (so that a flow cannot stay
                    // "new" by emptying its queue every round); an empty old one goes idle.
                    if from_new {
                        self.new_flows.pop_front();
                        if self.old_flows.is_empty() {
                            q.list = List::None;
                        } else {
                            q.list = List::Old;
                            self.old_flows.push_back(i);
                        }
                    } else {
                        self.old_flows.pop_front();
                        q.list = List::None;
                    }
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn drain(&mut self, out: &mut impl FnMut(P)) {
        // In the scheduler's order, without CoDel's drops (the run is over).
        for &i in self.new_flows.iter().chain(self.old_flows.iter()) {
            self.queues[i].fifo.drain(&mut |s: Stamped<P>| out(s.p));
        }
        for q in &mut self.queues {
            q.fifo.drain(&mut |s: Stamped<P>| out(s.p));
            q.list = List::None;
        }
        self.new_flows.clear();
        self.old_flows.clear();
        self.len = 0;
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tests::{Pkt, Sim};
    use cclab_core::time::MS;
    use cclab_core::units::Rate;

    fn fq(limit: Limit) -> FqCodel<Pkt> {
        FqCodel::new(&FqCodelParams::default(), limit)
    }

    #[test]
    fn a_sparse_flow_overtakes_a_standing_queue() {
        // A bulk flow has 100 packets queued and has spent its first quantum (two packets of
        // 1500 against 1514 bytes), so it sits on the old list; a new flow's packet then goes
        // out next, not behind the 97 still queued (it joins the new-flows list).
        let mut q = fq(Limit::None);
        for _ in 0..100 {
            q.enqueue(0, Pkt::new(0, 1500), InService::default(), &mut |_| panic!());
        }
        for _ in 0..3 {
            assert_eq!(q.dequeue(0, &mut |_| panic!()).unwrap().flow, 0);
        }
        q.enqueue(MS, Pkt::new(1, 100), InService::default(), &mut |_| panic!());
        assert_eq!(q.dequeue(MS, &mut |_| panic!()).unwrap().flow, 1);
        assert_eq!(q.len(), 97);
    }

    #[test]
    fn backlogged_flows_share_equally_and_codel_holds_each_queue_near_target() {
        // Two flows each offering 1 packet/ms (twice their share) to a 1 packet/ms link for
        // 3 s: equal shares, and CoDel keeps the sojourn time of what leaves near its target
        // (a droptail queue would keep growing to the 1000-packet limit).
        let mut sim = Sim::new(fq(Limit::Packets(1000)), Rate(12_000_000));
        for k in 0..3000u64 {
            sim.arrive(k * MS, Pkt::new(0, 1500));
            sim.arrive(k * MS, Pkt::new(1, 1500));
        }
        sim.run_until(3000 * MS);
        let by_flow = sim.bytes_by_flow(3000 * MS);
        let (a, b) = (by_flow[&0] as f64, by_flow[&1] as f64);
        assert!((a / b - 1.0).abs() < 0.02, "{by_flow:?}");
        // Without responsive senders CoDel cannot bring the queue down, only drop at its
        // control law's growing rate; the drops come from both flows.
        assert!(sim.dropped.iter().any(|d| d.1.flow == 0) && sim.dropped.iter().any(|d| d.1.flow == 1));
        // Overflow drops hit the fattest queue: with one flow flooding, the other loses nothing.
        let mut q = fq(Limit::Packets(10));
        let mut dropped = vec![];
        for _ in 0..10 {
            q.enqueue(0, Pkt::new(0, 1500), InService::default(), &mut |p: Pkt| dropped.push(p.flow));
        }
        q.enqueue(0, Pkt::new(1, 1500), InService::default(), &mut |p: Pkt| dropped.push(p.flow));
        assert_eq!(dropped, vec![0]);
    }

    #[test]
    fn quantum_limits_each_turn() {
        // With a 3000-byte quantum, a flow of 1000-byte packets sends three per turn.
        let params = FqCodelParams { quantum: 3000, ..FqCodelParams::default() };
        let mut q: FqCodel<Pkt> = FqCodel::new(&params, Limit::None);
        for _ in 0..9 {
            q.enqueue(0, Pkt::new(0, 1000), InService::default(), &mut |_| panic!());
            q.enqueue(0, Pkt::new(1, 1000), InService::default(), &mut |_| panic!());
        }
        let order: Vec<u32> = (0..12).map(|_| q.dequeue(0, &mut |_| panic!()).unwrap().flow).collect();
        assert_eq!(order, vec![0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1]);
    }
}
