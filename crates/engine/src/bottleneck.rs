//! The bottleneck: a queue discipline (which packet leaves, which is dropped) in front of a
//! delivery process (when it can leave), with the packet in service between them. Pure state
//! machines over the engine's packet type, so every engine applies exactly the same models.

use crate::delivery::{DeliveryProcess, Server, Service};
use crate::qdisc::{InService, Limit, Qdisc, QdiscSpec, QueueDiscipline};
use crate::stage::WirePacket;
use cclab_core::rng::Rng;
use cclab_core::time::Time;

/// A queue discipline and the delivery process that drains it. `Q` defaults to the enum of the
/// disciplines a scenario can name.
pub struct Bottleneck<P, Q = Qdisc<P>> {
    qdisc: Q,
    /// The packet the delivery process is serving: out of the discipline, still counted by the
    /// limit (as mahimahi counts it).
    head: Option<P>,
    delivery: DeliveryProcess,
}

impl<P: WirePacket> Bottleneck<P> {
    /// The bottleneck a scenario describes: its discipline, limit and delivery process; `rng`
    /// draws the delivery process's randomness, `qdisc_rng` the discipline's (PIE, RED).
    pub fn new(service: Service, limit: Limit, spec: &QdiscSpec, rng: Rng, qdisc_rng: Rng) -> Self {
        Bottleneck::with_qdisc(Qdisc::new(spec, limit, qdisc_rng), service, rng)
    }
}

/// What the delivery process sees of the bottleneck while it serves: completing the packet in
/// service hands it to `out` and pulls the next one from the discipline.
struct Serving<'a, P, Q, O, D> {
    head: &'a mut Option<P>,
    qdisc: &'a mut Q,
    out: &'a mut O,
    drop: &'a mut D,
}

impl<P: WirePacket, Q: QueueDiscipline<P>, O: FnMut(P), D: FnMut(P)> Server for Serving<'_, P, Q, O, D> {
    #[inline]
    fn complete(&mut self, t: Time) -> Option<u64> {
        let p = self.head.take().expect("a packet in service");
        (self.out)(p);
        let next = self.qdisc.dequeue(t, self.drop)?;
        let size = next.wire_size();
        *self.head = Some(next);
        Some(size)
    }
}

impl<P: WirePacket, Q: QueueDiscipline<P>> Bottleneck<P, Q> {
    pub fn with_qdisc(qdisc: Q, service: Service, rng: Rng) -> Self {
        Bottleneck { qdisc, head: None, delivery: DeliveryProcess::new(service, rng) }
    }

    pub fn service(&self) -> &Service {
        self.delivery.service()
    }

    pub fn qdisc(&self) -> &Q {
        &self.qdisc
    }

    /// Packets in the bottleneck, the one in service included.
    pub fn len(&self) -> usize {
        self.qdisc.len() + usize::from(self.head.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.head.is_none() && self.qdisc.is_empty()
    }

    /// Bytes in the bottleneck, the packet in service included.
    pub fn bytes(&self) -> u64 {
        self.qdisc.bytes() + self.head.as_ref().map_or(0, |p| p.wire_size())
    }

    /// Offers a packet at `now`; whatever the discipline drops (the arrival or another) goes to
    /// `drop`.
    #[inline]
    pub fn enqueue(&mut self, now: Time, p: P, drop: &mut impl FnMut(P)) {
        let serving = match &self.head {
            Some(h) => InService { packets: 1, bytes: h.wire_size() },
            None => InService::default(),
        };
        self.qdisc.enqueue(now, p, serving, drop);
        if self.head.is_none() {
            self.start_next(now, drop);
        }
    }

    /// An idle delivery process takes the discipline's next packet, if it gives one.
    #[inline]
    fn start_next(&mut self, now: Time, drop: &mut impl FnMut(P)) {
        if let Some(p) = self.qdisc.dequeue(now, drop) {
            self.delivery.start(now, p.wire_size());
            self.head = Some(p);
        }
    }

    /// When something is next due: a departure or opportunity for the packet in service, or a
    /// discipline holding packets back asking to be woken.
    #[inline]
    pub fn next_event(&self) -> Option<Time> {
        match self.head {
            Some(_) => self.delivery.next_event(),
            None => self.qdisc.wake_at(),
        }
    }

    /// Lets out every packet due at `now` to `out`, oldest first; packets the discipline drops
    /// on the way go to `drop`.
    #[inline]
    pub fn dequeue(&mut self, now: Time, out: &mut impl FnMut(P), drop: &mut impl FnMut(P)) {
        if self.head.is_none() {
            // Only a discipline that held packets back has anything to give here.
            self.start_next(now, drop);
        }
        let mut server = Serving { head: &mut self.head, qdisc: &mut self.qdisc, out, drop };
        self.delivery.serve(now, &mut server);
    }

    /// Empties the bottleneck (end of run): the packet in service, then the rest in order.
    pub fn drain(&mut self, out: &mut impl FnMut(P)) {
        if let Some(p) = self.head.take() {
            out(p);
        }
        self.qdisc.drain(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::Trace;
    use cclab_core::time::MS;
    use cclab_core::units::Rate;
    use std::sync::Arc;

    struct Pkt(u64);
    impl WirePacket for Pkt {
        fn wire_size(&self) -> u64 {
            self.0
        }
        fn flow(&self) -> u32 {
            0
        }
    }

    /// Offers a packet; returns the sizes of the packets dropped.
    fn offer(b: &mut Bottleneck<Pkt>, now: Time, p: Pkt) -> Vec<u64> {
        let mut dropped = vec![];
        b.enqueue(now, p, &mut |v: Pkt| dropped.push(v.0));
        dropped
    }

    fn no_drops(p: Pkt) {
        panic!("unexpected drop of {}", p.0)
    }

    #[test]
    fn constant_link_serialises_back_to_back() {
        let mut b = Bottleneck::new(
            Service::Constant(Rate(12_000_000)),
            Limit::Packets(2),
            &QdiscSpec::DropTail,
            Rng::new(1),
            Rng::new(2),
        );
        assert!(offer(&mut b, 0, Pkt(1500)).is_empty());
        assert!(offer(&mut b, 0, Pkt(1500)).is_empty());
        assert_eq!(offer(&mut b, 0, Pkt(1500)), vec![1500], "limit counts the packet in service");
        let mut out = vec![];
        b.dequeue(2 * MS, &mut |p: Pkt| out.push(p.0), &mut no_drops);
        assert_eq!(out.len(), 2);
        assert_eq!(b.next_event(), None);
    }

    #[test]
    fn opportunities_carry_bytes_across_packets() {
        let trace = Arc::new(Trace::parse("1\n").unwrap());
        let mut b = Bottleneck::new(Service::Trace(trace), Limit::None, &QdiscSpec::DropTail, Rng::new(1), Rng::new(2));
        for _ in 0..3 {
            let _ = offer(&mut b, 0, Pkt(1000));
        }
        let mut n = 0;
        b.dequeue(MS, &mut |_| n += 1, &mut no_drops);
        assert_eq!(n, 1, "1500 bytes carry one 1000-byte packet and half of the next");
        b.dequeue(2 * MS, &mut |_| n += 1, &mut no_drops);
        assert_eq!(n, 3);
    }

    #[test]
    fn drophead_drops_oldest_waiting() {
        let mut b = Bottleneck::new(
            Service::Constant(Rate(12_000_000)),
            Limit::Packets(2),
            &QdiscSpec::DropHead,
            Rng::new(1),
            Rng::new(2),
        );
        let _ = offer(&mut b, 0, Pkt(100));
        let _ = offer(&mut b, 0, Pkt(200));
        assert_eq!(offer(&mut b, 0, Pkt(300)), vec![200], "over the limit");
    }

    #[test]
    fn lone_arrival_to_an_idle_link_goes_into_service() {
        // A byte limit below one packet: droptail refuses the packet, drophead serves it (it
        // never drops the packet in service).
        let limit = Limit::Bytes(1000);
        let mut tail =
            Bottleneck::new(Service::Constant(Rate(12_000_000)), limit, &QdiscSpec::DropTail, Rng::new(1), Rng::new(2));
        assert_eq!(offer(&mut tail, 0, Pkt(1500)), vec![1500]);
        assert!(tail.is_empty());
        let mut head =
            Bottleneck::new(Service::Constant(Rate(12_000_000)), limit, &QdiscSpec::DropHead, Rng::new(1), Rng::new(2));
        assert!(offer(&mut head, 0, Pkt(1500)).is_empty());
        assert_eq!((head.len(), head.bytes()), (1, 1500));
        assert_eq!(head.next_event(), Some(MS));
    }
}
