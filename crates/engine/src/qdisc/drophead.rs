//! Drophead: accept the arriving packet, and when the queue is then over the limit drop the
//! oldest packet still waiting (never the one in service, which has partly left).

use super::{Fifo, InService, Limit, QueueDiscipline};
use crate::stage::WirePacket;
use cclab_core::time::Time;

#[derive(Clone, Debug)]
pub struct DropHead<P> {
    fifo: Fifo<P>,
    limit: Limit,
}

impl<P> DropHead<P> {
    pub fn new(limit: Limit) -> DropHead<P> {
        DropHead { fifo: Fifo::default(), limit }
    }
}

impl<P: WirePacket> QueueDiscipline<P> for DropHead<P> {
    #[inline]
    fn enqueue(&mut self, _now: Time, p: P, serving: InService, drop: &mut impl FnMut(P)) {
        self.fifo.push(p);
        let packets = self.fifo.len() as u64 + serving.packets;
        let bytes = self.fifo.bytes() + serving.bytes;
        // One drop at most, as before; a lone arrival to an idle link goes straight into
        // service, so it is never the victim even when alone it exceeds a byte limit.
        if self.limit.exceeded(packets, bytes) && packets > 1 {
            drop(self.fifo.pop().expect("packets > 1 with at most one in service"));
        }
    }

    #[inline]
    fn dequeue(&mut self, _now: Time, _drop: &mut impl FnMut(P)) -> Option<P> {
        self.fifo.pop()
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
