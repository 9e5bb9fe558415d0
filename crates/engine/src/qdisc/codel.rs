//! CoDel (RFC 8289): a FIFO that drops at dequeue when the sojourn time has stayed above
//! `target` for at least `interval`, then at intervals of interval/√count while it stays above,
//! which drives the standing queue (not bursts) towards `target`. [`CodelState`] is the control
//! law alone, so that FQ-CoDel runs one per internal queue.

use super::{Fifo, InService, Limit, QueueDiscipline, Stamped};
use crate::stage::WirePacket;
use cclab_core::scenario::{CodelParams, PACKET_BYTES};
use cclab_core::time::Time;

/// The state of RFC 8289's pseudocode (§5), per queue.
#[derive(Clone, Debug)]
pub struct CodelState {
    target: Time,
    interval: Time,
    /// When the sojourn time will have been above target for an interval (None: below target).
    first_above_time: Option<Time>,
    drop_next: Time,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

impl CodelState {
    pub fn new(p: &CodelParams) -> CodelState {
        CodelState {
            target: p.target.ns(),
            interval: p.interval.ns(),
            first_above_time: None,
            drop_next: 0,
            count: 0,
            lastcount: 0,
            dropping: false,
        }
    }

    /// Whether the control law is in its dropping state.
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// Drops so far in the current (or last) dropping state.
    pub fn count(&self) -> u32 {
        self.count
    }

    fn control_law(&self, t: Time, count: u32) -> Time {
        t + (self.interval as f64 / (count.max(1) as f64).sqrt()) as Time
    }

    /// RFC 8289 `dodequeue`: the head packet and whether CoDel may drop it.
    fn dodequeue<P: WirePacket>(&mut self, now: Time, q: &mut Fifo<Stamped<P>>) -> (Option<P>, bool) {
        let Some(s) = q.pop() else {
            self.first_above_time = None;
            return (None, false);
        };
        let sojourn = now.saturating_sub(s.at);
        let mut ok_to_drop = false;
        // Below target, or too little left to form a queue (at most one MTU): no standing queue.
        if sojourn < self.target || q.bytes() <= PACKET_BYTES {
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                None => self.first_above_time = Some(now + self.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        (Some(s.p), ok_to_drop)
    }

    /// RFC 8289 `dequeue`: the next packet to send from `q`; the packets CoDel drops on the way
    /// go to `drop`.
    pub fn dequeue<P: WirePacket>(
        &mut self,
        now: Time,
        q: &mut Fifo<Stamped<P>>,
        drop: &mut impl FnMut(P),
    ) -> Option<P> {
        let (mut p, mut ok_to_drop) = self.dodequeue(now, q);
        if p.is_none() {
            self.dropping = false;
            return None;
        }
        if self.dropping {
            if !ok_to_drop {
                // Sojourn time fell below target: leave the dropping state.
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                drop(p.take().expect("a packet while dropping"));
                self.count += 1;
                (p, ok_to_drop) = self.dodequeue(now, q);
                if ok_to_drop {
                    self.drop_next = self.control_law(self.drop_next, self.count);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok_to_drop {
            drop(p.take().expect("checked above"));
            (p, _) = self.dodequeue(now, q);
            self.dropping = true;
            // Re-entering soon after the last dropping state: resume near the drop rate that
            // controlled the queue then, rather than from one (RFC 8289 §5.5).
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = if delta > 1 && now < self.drop_next + 16 * self.interval { delta } else { 1 };
            self.drop_next = self.control_law(now, self.count);
            self.lastcount = self.count;
        }
        p
    }
}

/// CoDel over one FIFO, with the link's limit enforced by tail drop at enqueue.
#[derive(Clone, Debug)]
pub struct Codel<P> {
    fifo: Fifo<Stamped<P>>,
    limit: Limit,
    state: CodelState,
}

impl<P> Codel<P> {
    pub fn new(params: &CodelParams, limit: Limit) -> Codel<P> {
        Codel { fifo: Fifo::default(), limit, state: CodelState::new(params) }
    }

    pub fn state(&self) -> &CodelState {
        &self.state
    }
}

impl<P: WirePacket> QueueDiscipline<P> for Codel<P> {
    fn enqueue(&mut self, now: Time, p: P, serving: InService, drop: &mut impl FnMut(P)) {
        let packets = self.fifo.len() as u64 + serving.packets + 1;
        let bytes = self.fifo.bytes() + serving.bytes + p.wire_size();
        if self.limit.exceeded(packets, bytes) {
            drop(p);
        } else {
            self.fifo.push(Stamped { at: now, p });
        }
    }

    fn dequeue(&mut self, now: Time, drop: &mut impl FnMut(P)) -> Option<P> {
        self.state.dequeue(now, &mut self.fifo, drop)
    }

    fn len(&self) -> usize {
        self.fifo.len()
    }

    fn bytes(&self) -> u64 {
        self.fifo.bytes()
    }

    fn drain(&mut self, out: &mut impl FnMut(P)) {
        self.fifo.drain(&mut |s: Stamped<P>| out(s.p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tests::{Pkt, Sim};
    use cclab_core::time::MS;
    use cclab_core::units::Rate;

    fn codel() -> Codel<Pkt> {
        Codel::new(&CodelParams::default(), Limit::Packets(1000))
    }

    #[test]
    fn no_drop_before_an_interval_above_target() {
        // 10 packets at once on a 1 packet/ms link: the last waits 9 ms (> 5 ms target) but
        // only for less than an interval, so a burst passes whole.
        let mut sim = Sim::new(codel(), Rate(12_000_000));
        for _ in 0..10 {
            sim.arrive(0, Pkt::new(0, 1500));
        }
        sim.run_until(200 * MS);
        assert_eq!(sim.dropped.len(), 0);
        assert_eq!(sim.sent.len(), 10);
    }

    #[test]
    fn first_drop_once_sojourn_stays_above_target_for_an_interval() {
        // Arrivals at 2 packets/ms onto a 1 packet/ms link: the sojourn time grows by 0.5 ms per
        // departure. It passes 5 ms at the departure of about the 10th packet (t ≈ 10 ms), so the
        // first drop comes one interval later, at about 110 ms, not before.
        let mut sim = Sim::new(codel(), Rate(12_000_000));
        for i in 0..800u64 {
            sim.arrive(i * MS / 2, Pkt::new(0, 1500));
        }
        sim.run_until(400 * MS);
        let first = sim.dropped.first().expect("CoDel dropped").0;
        assert!((105 * MS..=115 * MS).contains(&first), "first drop at {first}");
        // Then the control law: the next drop an interval later (count 1), then 100/√2 ≈ 70.7
        // ms, then 100/√3 ≈ 57.7 ms (each rounded up to the next departure, 1 ms apart).
        let d: Vec<Time> = sim.dropped.iter().map(|d| d.0).collect();
        let gaps: Vec<f64> = d.windows(2).take(3).map(|w| (w[1] - w[0]) as f64 / MS as f64).collect();
        for (gap, law) in gaps.iter().zip([100.0, 70.71, 57.74]) {
            assert!((gap - law).abs() <= 1.0, "gaps {gaps:?} ms");
        }
    }

    #[test]
    fn leaves_the_dropping_state_when_the_queue_drains() {
        let mut q = codel();
        let mut fifo_drops = 0;
        // A standing queue of 20 packets 10 ms old: after an interval above target it drops.
        for _ in 0..20 {
            q.enqueue(0, Pkt::new(0, 1500), InService::default(), &mut |_| panic!());
        }
        let _ = q.dequeue(10 * MS, &mut |_| fifo_drops += 1);
        let _ = q.dequeue(111 * MS, &mut |_| fifo_drops += 1);
        assert_eq!(fifo_drops, 1);
        assert!(q.state().dropping());
        let mut n = 0;
        while q.dequeue(112 * MS, &mut |_| fifo_drops += 1).is_some() {
            n += 1;
        }
        assert!(!q.state().dropping(), "an empty queue ends the dropping state");
        // One packet left at 10 ms and one at 111 ms; the rest were sent or dropped.
        assert_eq!(n + fifo_drops + 2, 20);
    }
}
