//! Droptail: a FIFO that drops the arriving packet when it would not fit.

use super::{Fifo, InService, Limit, QueueDiscipline};
use crate::stage::WirePacket;
use cclab_core::time::Time;

#[derive(Clone, Debug)]
pub struct DropTail<P> {
    fifo: Fifo<P>,
    limit: Limit,
}

impl<P> DropTail<P> {
    pub fn new(limit: Limit) -> DropTail<P> {
        DropTail { fifo: Fifo::default(), limit }
    }
}

impl<P: WirePacket> QueueDiscipline<P> for DropTail<P> {
    #[inline]
    fn enqueue(&mut self, _now: Time, p: P, serving: InService, drop: &mut impl FnMut(P)) {
        // With the arrival and the packet in service counted, as mahimahi does.
        let packets = self.fifo.len() as u64 + serving.packets + 1;
        let bytes = self.fifo.bytes() + serving.bytes + p.wire_size();
        if self.limit.exceeded(packets, bytes) {
            drop(p);
        } else {
            self.fifo.push(p);
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
