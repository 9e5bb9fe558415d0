//! A drop-tail FIFO drained at a constant rate, with each packet's departure computed the
//! moment it arrives.
//!
//! In that one bottleneck nothing that happens after an arrival can change when the arrival
//! leaves: the server never idles while packets wait, serves them in order, and drops only
//! arrivals. So a packet's departure is the later of its arrival and its predecessor's
//! departure, plus its serialisation time, and a discrete-event engine need not wake up at
//! every departure: it hands the packet on at once, stamped with its departure time. This is
//! [`crate::bottleneck::Bottleneck`] with [`crate::qdisc::QdiscSpec::DropTail`] and
//! [`crate::delivery::Service::Constant`], packet for packet, with one convention for a tie:
//! a packet that finishes at the instant another arrives has left (CoreScale's 10 Gbit/s
//! link spends a quarter of the simulator's events on departures otherwise).

use crate::qdisc::Limit;
use cclab_core::time::Time;
use cclab_core::units::Rate;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct ScheduledFifo {
    rate: Rate,
    limit: Limit,
    /// (departure, bytes) of every packet not yet gone, the one in service included (the limit
    /// counts it, as mahimahi does), oldest first.
    inside: VecDeque<(Time, u64)>,
    bytes: u64,
    /// When the last packet accepted leaves.
    last_departure: Time,
}

impl ScheduledFifo {
    pub fn new(rate: Rate, limit: Limit) -> ScheduledFifo {
        ScheduledFifo { rate, limit, inside: VecDeque::new(), bytes: 0, last_departure: 0 }
    }

    /// Offers a packet of `size` bytes at `now`: its departure time, or None if the queue is
    /// full and drops it.
    #[inline]
    pub fn offer(&mut self, now: Time, size: u64) -> Option<Time> {
        while let Some(&(t, b)) = self.inside.front() {
            if t > now {
                break;
            }
            self.inside.pop_front();
            self.bytes -= b;
        }
        if self.limit.exceeded(self.inside.len() as u64 + 1, self.bytes + size) {
            return None;
        }
        let departure = now.max(self.last_departure) + self.rate.serialisation_ns(size);
        self.last_departure = departure;
        self.inside.push_back((departure, size));
        self.bytes += size;
        Some(departure)
    }

    /// Gives back memory a past peak took ([`cclab_core::trim`]).
    pub fn trim(&mut self) {
        cclab_core::trim::trim(&mut self.inside);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bottleneck::Bottleneck;
    use crate::delivery::Service;
    use crate::qdisc::QdiscSpec;
    use crate::stage::WirePacket;
    use cclab_core::rng::Rng;

    struct Pkt(u64, u64);
    impl WirePacket for Pkt {
        fn wire_size(&self) -> u64 {
            self.0
        }
        fn flow(&self) -> u32 {
            0
        }
    }

    /// Random arrivals (sizes 40–1500 bytes, gaps averaging 0.8 of a serialisation time, so
    /// the queue fills, drains and overflows) offered to both, with the served bottleneck
    /// drained just before each arrival: the same packets dropped, the same departure times.
    fn agree(limit: Limit, seed: u64) {
        let rate = Rate(12_000_000);
        let mut fifo = ScheduledFifo::new(rate, limit);
        let mut served =
            Bottleneck::new(Service::Constant(rate), limit, &QdiscSpec::DropTail, Rng::new(1), Rng::new(2));
        let mut rng = Rng::new(seed);
        let (mut now, mut scheduled, mut left) = (0, Vec::new(), Vec::new());
        for id in 0..20_000 {
            now += rng.below(800_000);
            let size = 40 + rng.below(1461);
            // Departures at or before the arrival first: the tie convention.
            while let Some(t) = served.next_event().filter(|&t| t <= now) {
                served.dequeue(t, &mut |p: Pkt| left.push((p.1, t)), &mut |_| unreachable!());
            }
            let mut dropped = false;
            served.enqueue(now, Pkt(size, id), &mut |_| dropped = true);
            let got = fifo.offer(now, size);
            assert_eq!(got.is_none(), dropped, "packet {id}");
            scheduled.extend(got.map(|t| (id, t)));
        }
        while let Some(t) = served.next_event() {
            served.dequeue(t, &mut |p: Pkt| left.push((p.1, t)), &mut |_| unreachable!());
        }
        assert!(scheduled.len() < 20_000, "the limit was reached");
        assert_eq!(scheduled, left);
    }

    #[test]
    fn departures_and_drops_are_the_served_bottlenecks() {
        agree(Limit::Packets(5), 1);
        agree(Limit::Bytes(6_000), 2);
    }

    #[test]
    fn an_idle_link_sends_at_once_and_a_busy_one_back_to_back() {
        let mut fifo = ScheduledFifo::new(Rate(12_000_000), Limit::Packets(2));
        assert_eq!(fifo.offer(0, 1500), Some(1_000_000));
        assert_eq!(fifo.offer(0, 1500), Some(2_000_000));
        assert_eq!(fifo.offer(0, 1500), None, "the packet in service counts");
        assert_eq!(fifo.offer(1_000_000, 1500), Some(3_000_000), "the first has left at 1 ms");
        assert_eq!(fifo.offer(9_000_000, 750), Some(9_500_000), "idle again");
    }
}
