//! RED (Floyd & Jacobson, "Random Early Detection Gateways for Congestion Avoidance", 1993):
//! an exponentially weighted average of the queue length, and arrivals dropped with a
//! probability rising linearly from 0 at `min_th` to `max_p` at `max_th`, spread evenly by the
//! count of packets since the last drop. Classic RED drops everything above `max_th`; "gentle"
//! RED (Floyd, 2000) ramps from `max_p` to 1 between `max_th` and 2·`max_th` instead.

use super::{Fifo, InService, Limit, QueueDiscipline};
use crate::stage::WirePacket;
use cclab_core::rng::Rng;
use cclab_core::scenario::RedParams;
use cclab_core::time::Time;

#[derive(Clone, Debug)]
pub struct Red<P> {
    fifo: Fifo<P>,
    limit: Limit,
    p: RedParams,
    /// Transmission time of a typical packet: the unit in which an idle queue ages `avg`.
    packet_time: Time,
    avg: f64,
    /// Packets since the last drop while `avg` was between the thresholds (−1: below `min_th`).
    count: i64,
    /// When the queue last went idle.
    idle_since: Time,
    rng: Rng,
}

impl<P> Red<P> {
    pub fn new(p: &RedParams, packet_time: Time, limit: Limit, rng: Rng) -> Red<P> {
        Red {
            fifo: Fifo::default(),
            limit,
            p: *p,
            packet_time: packet_time.max(1),
            avg: 0.0,
            count: -1,
            idle_since: 0,
            rng,
        }
    }

    pub fn avg(&self) -> f64 {
        self.avg
    }

    /// The drop probability for the current average before the count spreads it (p_b).
    fn base_prob(&self) -> Option<f64> {
        let RedParams { min_th, max_th, max_p, gentle, .. } = self.p;
        let avg = self.avg;
        if avg < min_th {
            Some(0.0)
        } else if avg < max_th {
            Some(max_p * (avg - min_th) / (max_th - min_th))
        } else if gentle && avg < 2.0 * max_th {
            Some(max_p + (1.0 - max_p) * (avg - max_th) / max_th)
        } else {
            None // forced drop
        }
    }

    /// The paper's per-arrival step: update the average, then decide. True means drop.
    fn early_drop(&mut self, now: Time, queued: u64) -> bool {
        let w = self.p.weight;
        if queued > 0 {
            self.avg = (1.0 - w) * self.avg + w * queued as f64;
        } else {
            // The queue was idle: age the average as if m small packets had left meanwhile.
            let m = now.saturating_sub(self.idle_since) as f64 / self.packet_time as f64;
            self.avg *= (1.0 - w).powf(m);
        }
        match self.base_prob() {
            Some(pb) if pb <= 0.0 => {
                self.count = -1;
                false
            }
            Some(pb) => {
                self.count += 1;
                // p_a = p_b / (1 − count·p_b): drops spaced roughly uniformly, not geometrically.
                let denom = 1.0 - self.count as f64 * pb;
                let pa = if denom <= 0.0 { 1.0 } else { (pb / denom).min(1.0) };
                if self.rng.uniform() < pa {
                    self.count = 0;
                    true
                } else {
                    false
                }
            }
            None => {
                self.count = 0;
                true
            }
        }
    }
}

impl<P: WirePacket> QueueDiscipline<P> for Red<P> {
    fn enqueue(&mut self, now: Time, p: P, serving: InService, drop: &mut impl FnMut(P)) {
        let packets = self.fifo.len() as u64 + serving.packets;
        let bytes = self.fifo.bytes() + serving.bytes + p.wire_size();
        if self.early_drop(now, packets) || self.limit.exceeded(packets + 1, bytes) {
            drop(p);
        } else {
            self.fifo.push(p);
        }
    }

    fn dequeue(&mut self, now: Time, _drop: &mut impl FnMut(P)) -> Option<P> {
        let p = self.fifo.pop();
        if p.is_none() {
            self.idle_since = now;
        }
        p
    }

    fn len(&self) -> usize {
        self.fifo.len()
    }

    fn bytes(&self) -> u64 {
        self.fifo.bytes()
    }

    fn drain(&mut self, out: &mut impl FnMut(P)) {
        self.fifo.drain(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tests::{Pkt, Sim};
    use cclab_core::time::MS;
    use cclab_core::units::Rate;

    fn red(gentle: bool) -> Red<Pkt> {
        Red::new(&RedParams { gentle, ..RedParams::default() }, MS, Limit::Packets(1000), Rng::new(3))
    }

    #[test]
    fn the_average_follows_the_ewma_and_ages_over_idle_time() {
        let mut q = red(true);
        // Arrivals finding 10 packets: avg = 10·(1 − 0.998^n) after n of them.
        for _ in 0..100 {
            let _ = q.early_drop(0, 10);
        }
        let expected = 10.0 * (1.0 - 0.998f64.powi(100));
        assert!((q.avg() - expected).abs() < 1e-9, "{} vs {expected}", q.avg());
        // Idle from 0 for 500 packet times: avg·0.998^500.
        let before = q.avg();
        let _ = q.dequeue(0, &mut |_| {});
        let _ = q.early_drop(500 * MS, 0);
        assert!((q.avg() - before * 0.998f64.powi(500)).abs() < 1e-9);
    }

    #[test]
    fn drop_probability_follows_the_thresholds() {
        let mut q = red(false);
        let at = |q: &mut Red<Pkt>, avg: f64| {
            q.avg = avg;
            q.base_prob()
        };
        assert_eq!(at(&mut q, 4.0), Some(0.0));
        assert!((at(&mut q, 10.0).unwrap() - 0.05).abs() < 1e-12, "halfway: max_p/2");
        assert_eq!(at(&mut q, 15.0), None, "classic: forced drop at max_th");
        let mut g = red(true);
        assert!((at(&mut g, 22.5).unwrap() - (0.1 + 0.9 * 0.5)).abs() < 1e-12, "gentle: halfway to 1");
        assert_eq!(at(&mut g, 30.0), None);
    }

    #[test]
    fn keeps_the_average_queue_between_the_thresholds_under_overload() {
        // Unresponsive arrivals at 1.1× the link for 20 s: RED must drop about 1/11 of them;
        // gentle RED holds the average near where p_b gives that, between max_th and 2·max_th
        // (p_b = 0.09 needs avg ≈ 14.5, just below max_th).
        let mut sim = Sim::new(red(true), Rate(12_000_000));
        let gap = MS * 10 / 11;
        for k in 0..22_000u64 {
            sim.arrive(k * gap, Pkt::new(0, 1500));
        }
        let mut avgs = vec![];
        let mut t = 2000 * MS;
        sim.run_until(t);
        while t < 19_000 * MS {
            t += 50 * MS;
            sim.run_until(t);
            avgs.push(sim.link.qdisc().avg());
        }
        let mean = avgs.iter().sum::<f64>() / avgs.len() as f64;
        assert!((5.0..30.0).contains(&mean), "average queue {mean:.1}");
        let lost = sim.dropped.len() as f64 / 22_000.0;
        assert!((lost - 1.0 / 11.0).abs() < 0.01, "dropped {lost:.4}");
        assert!(sim.link.len() < 60, "RED keeps the instantaneous queue short too: {}", sim.link.len());
    }
}
