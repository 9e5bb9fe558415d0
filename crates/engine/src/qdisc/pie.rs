//! PIE (RFC 8033): every `tupdate` a PI controller moves a drop probability by
//! α·(qdelay − target) + β·(qdelay − qdelay_old), scaled down while the probability is small;
//! arrivals are dropped with that probability, except during a burst allowance after a quiet
//! queue. The queueing delay is measured by timestamps (RFC 8033 §5.2's alternative to a
//! departure-rate estimate, and Linux's default since 5.x): the sojourn time of the last packet
//! dequeued, zero once the queue is empty.

use super::{Fifo, InService, Limit, QueueDiscipline, Stamped};
use crate::stage::WirePacket;
use cclab_core::rng::Rng;
use cclab_core::scenario::{PieParams, PACKET_BYTES};
use cclab_core::time::{Time, SEC};

#[derive(Clone, Debug)]
pub struct Pie<P> {
    fifo: Fifo<Stamped<P>>,
    limit: Limit,
    target: Time,
    tupdate: Time,
    alpha: f64,
    beta: f64,
    max_burst: Time,
    drop_prob: f64,
    qdelay: Time,
    qdelay_old: Time,
    burst_allowance: Time,
    /// When the controller next updates; None before the first packet.
    next_update: Option<Time>,
    rng: Rng,
}

impl<P> Pie<P> {
    pub fn new(p: &PieParams, limit: Limit, rng: Rng) -> Pie<P> {
        Pie {
            fifo: Fifo::default(),
            limit,
            target: p.target.ns(),
            tupdate: p.tupdate.ns(),
            alpha: p.alpha,
            beta: p.beta,
            max_burst: p.max_burst.ns(),
            drop_prob: 0.0,
            qdelay: 0,
            qdelay_old: 0,
            burst_allowance: p.max_burst.ns(),
            next_update: None,
            rng,
        }
    }

    pub fn drop_prob(&self) -> f64 {
        self.drop_prob
    }

    /// RFC 8033 §4.2 `calculate_drop_prob`, once per `tupdate`.
    fn update(&mut self) {
        let secs = |t: Time| t as f64 / SEC as f64;
        let qdelay = secs(self.qdelay);
        let mut p = self.alpha * (qdelay - secs(self.target)) + self.beta * (qdelay - secs(self.qdelay_old));
        // Small probabilities move in small steps, so that light congestion is not met with
        // a jump in drops (the RFC's table of scale factors).
        let scale = match self.drop_prob {
            d if d < 0.000_001 => 1.0 / 2048.0,
            d if d < 0.000_01 => 1.0 / 512.0,
            d if d < 0.000_1 => 1.0 / 128.0,
            d if d < 0.001 => 1.0 / 32.0,
            d if d < 0.01 => 1.0 / 8.0,
            d if d < 0.1 => 1.0 / 2.0,
            _ => 1.0,
        };
        p *= scale;
        // No jump of more than 2% at once above 10% (RFC 8033 §4.2, against sudden bursts).
        if self.drop_prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        // An idle queue lets the probability decay (by 2% per update).
        if self.qdelay == 0 && self.qdelay_old == 0 {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.burst_allowance = self.burst_allowance.saturating_sub(self.tupdate);
        if self.drop_prob == 0.0 && self.qdelay < self.target / 2 && self.qdelay_old < self.target / 2 {
            self.burst_allowance = self.max_burst;
        }
        self.qdelay_old = self.qdelay;
    }

    /// Runs the updates due by `now` (the timer Linux arms, run lazily: nothing else changes
    /// between them).
    fn catch_up(&mut self, now: Time) {
        let next = *self.next_update.get_or_insert(now + self.tupdate);
        let mut next = next;
        while now >= next {
            self.update();
            next += self.tupdate;
        }
        self.next_update = Some(next);
    }
}

impl<P: WirePacket> Pie<P> {
    /// RFC 8033 §4.1 `drop_early`.
    fn drop_early(&mut self) -> bool {
        if self.burst_allowance > 0 {
            return false;
        }
        if self.qdelay_old < self.target / 2 && self.drop_prob < 0.2 {
            return false;
        }
        if self.fifo.bytes() <= 2 * PACKET_BYTES {
            return false;
        }
        self.rng.uniform() < self.drop_prob
    }
}

impl<P: WirePacket> QueueDiscipline<P> for Pie<P> {
    fn enqueue(&mut self, now: Time, p: P, serving: InService, drop: &mut impl FnMut(P)) {
        self.catch_up(now);
        let packets = self.fifo.len() as u64 + serving.packets + 1;
        let bytes = self.fifo.bytes() + serving.bytes + p.wire_size();
        if self.limit.exceeded(packets, bytes) || self.drop_early() {
            drop(p);
        } else {
            self.fifo.push(Stamped { at: now, p });
        }
    }

    fn dequeue(&mut self, now: Time, _drop: &mut impl FnMut(P)) -> Option<P> {
        self.catch_up(now);
        let s = self.fifo.pop();
        self.qdelay = match (&s, self.fifo.is_empty()) {
            (Some(s), false) => now - s.at,
            _ => 0,
        };
        s.map(|s| s.p)
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
    use cclab_core::units::{Dur, Rate};

    #[test]
    fn the_first_update_moves_the_probability_by_the_hand_computed_step() {
        // A queue whose head has waited 115 ms: p = 0.125·(0.115 − 0.015) + 1.25·(0.115 − 0)
        // = 0.0125 + 0.14375 = 0.15625, scaled by 1/2048 as the probability starts at 0.
        let mut q: Pie<Pkt> = Pie::new(&PieParams::default(), Limit::None, Rng::new(1));
        for _ in 0..10 {
            q.enqueue(0, Pkt::new(0, 1500), InService::default(), &mut |_| panic!());
        }
        let _ = q.dequeue(115 * MS, &mut |_| panic!());
        // The dequeue at 115 ms ran the 7 updates due (15, 30, … 105 ms) before measuring,
        // with qdelay 0: nothing moved.
        assert_eq!(q.drop_prob(), 0.0);
        let _ = q.dequeue(120 * MS, &mut |_| panic!()); // the update at 120 ms sees 115 ms
        let expected = (0.125 * 0.100 + 1.25 * 0.115) / 2048.0;
        assert!((q.drop_prob() - expected).abs() < 1e-12, "{} vs {expected}", q.drop_prob());
    }

    #[test]
    fn holds_the_queueing_delay_near_target_against_an_unresponsive_overload() {
        // Arrivals at 1.25× a 12 Mbit/s link for 20 s. Unresponsive traffic needs a drop
        // probability of 0.2 to fit; PIE finds it and keeps the queue short while droptail's
        // would fill its 1000 packets (1 s).
        let mut sim = Sim::new(Pie::new(&PieParams::default(), Limit::Packets(1000), Rng::new(7)), Rate(12_000_000));
        for k in 0..25_000u64 {
            sim.arrive(k * 800_000, Pkt::new(0, 1500));
        }
        let mut delays = vec![];
        let mut t = 5 * 1000 * MS;
        sim.run_until(t);
        while t < 20_000 * MS {
            t += 100 * MS;
            sim.run_until(t);
            // The waiting time of a packet arriving now: the queue ahead of it at the link rate.
            delays.push(sim.link.len() as f64 * 1.0);
        }
        let mean = delays.iter().sum::<f64>() / delays.len() as f64;
        assert!(mean < 2.0 * Dur::from_millis(15).millis(), "mean queueing delay {mean:.1} ms");
        assert!(mean > 1.0, "PIE should not drop the queue to nothing: {mean:.1} ms");
        let lost = sim.dropped.len() as f64 / 25_000.0;
        assert!((lost - 0.2).abs() < 0.03, "dropped {lost:.3}");
    }
}
