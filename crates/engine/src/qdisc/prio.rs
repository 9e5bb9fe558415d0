//! Strict priority: one FIFO per class, class 0 served whenever it holds a packet, class 1 only
//! when class 0 is empty, and so on (Linux `prio` with FIFO bands). A backlogged high class
//! starves every lower one. The limit is shared: an arrival that would exceed it is dropped.

use super::{Fifo, InService, Limit, QueueDiscipline};
use crate::stage::WirePacket;
use cclab_core::time::Time;

#[derive(Clone, Debug)]
pub struct Prio<P> {
    bands: Vec<Fifo<P>>,
    /// The class of each flow id; flows past its end take the last class.
    classes: Vec<u8>,
    limit: Limit,
    len: usize,
    bytes: u64,
}

impl<P> Prio<P> {
    pub fn new(classes: Vec<u8>, limit: Limit) -> Prio<P> {
        let n = classes.iter().copied().max().map_or(1, |m| m as usize + 1);
        Prio { bands: (0..n).map(|_| Fifo::default()).collect(), classes, limit, len: 0, bytes: 0 }
    }

    fn class_of(&self, flow: u32) -> usize {
        let last = self.bands.len() - 1;
        self.classes.get(flow as usize).map_or(last, |&c| c as usize)
    }
}

impl<P: WirePacket> QueueDiscipline<P> for Prio<P> {
    fn enqueue(&mut self, _now: Time, p: P, serving: InService, drop: &mut impl FnMut(P)) {
        let packets = self.len as u64 + serving.packets + 1;
        let bytes = self.bytes + serving.bytes + p.wire_size();
        if self.limit.exceeded(packets, bytes) {
            drop(p);
            return;
        }
        let c = self.class_of(p.flow());
        self.len += 1;
        self.bytes += p.wire_size();
        self.bands[c].push(p);
    }

    fn dequeue(&mut self, _now: Time, _drop: &mut impl FnMut(P)) -> Option<P> {
        let p = self.bands.iter_mut().find_map(|b| b.pop())?;
        self.len -= 1;
        self.bytes -= p.wire_size();
        Some(p)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn drain(&mut self, out: &mut impl FnMut(P)) {
        for b in &mut self.bands {
            b.drain(out);
        }
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

    #[test]
    fn the_low_class_starves_while_the_high_one_is_backlogged() {
        // Flow 0 (class 0) offers 1.5 packets/ms from 0 to 1 s, flow 1 (class 1) the same from
        // t = 0 to 2 s, on a 1 packet/ms link: flow 1 sends nothing while flow 0 has a queue,
        // then gets the whole link once flow 0's backlog has drained.
        let mut sim = Sim::new(Prio::new(vec![0, 1], Limit::Packets(2000)), Rate(12_000_000));
        let gap = MS * 2 / 3;
        let mut arrivals = vec![];
        for k in 0..1500u64 {
            arrivals.push((k * gap, 0));
        }
        for k in 0..3000u64 {
            arrivals.push((k * gap, 1));
        }
        arrivals.sort();
        for (t, f) in arrivals {
            sim.arrive(t, Pkt::new(f, 1500));
        }
        sim.run_until(3000 * MS);
        // Flow 0's 1500 packets occupy the link for 1.5 s; the first packet served (at t = 0,
        // before any queue) may be either flow's.
        let low_early = sim.sent.iter().filter(|(t, p)| p.flow == 1 && *t > 2 * MS && *t <= 1500 * MS).count();
        assert_eq!(low_early, 0, "the low class sent while the high class was backlogged");
        let high = sim.sent.iter().filter(|(_, p)| p.flow == 0).count();
        assert_eq!(high, 1500, "the high class loses nothing");
        let low_late = sim.sent.iter().filter(|(t, p)| p.flow == 1 && *t > 1502 * MS && *t <= 3000 * MS).count();
        assert!(low_late >= 1490, "then the low class has the link: {low_late}");
    }

    #[test]
    fn unlisted_flows_take_the_last_class() {
        let mut q: Prio<Pkt> = Prio::new(vec![1, 0], Limit::None);
        for f in [2, 0, 1] {
            q.enqueue(0, Pkt::new(f, 100), InService::default(), &mut |_| panic!());
        }
        let order: Vec<u32> = (0..3).map(|_| q.dequeue(0, &mut |_| panic!()).unwrap().flow).collect();
        assert_eq!(order, vec![1, 2, 0], "flow 1 is class 0; flows 0 and 2 class 1, in arrival order");
    }
}
