//! First-in first-out storage with a byte count: the store of droptail and drophead, and of
//! each internal queue of the fair-queueing disciplines to come.

use crate::stage::WirePacket;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct Fifo<P> {
    q: VecDeque<P>,
    bytes: u64,
}

impl<P> Default for Fifo<P> {
    fn default() -> Self {
        Fifo { q: VecDeque::new(), bytes: 0 }
    }
}

impl<P: WirePacket> Fifo<P> {
    #[inline]
    pub fn push(&mut self, p: P) {
        self.bytes += p.wire_size();
        self.q.push_back(p);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<P> {
        let p = self.q.pop_front()?;
        self.bytes -= p.wire_size();
        Some(p)
    }

    /// Removes the newest packet (a tail drop of a packet already queued).
    #[inline]
    pub fn pop_back(&mut self) -> Option<P> {
        let p = self.q.pop_back()?;
        self.bytes -= p.wire_size();
        Some(p)
    }

    pub fn front(&self) -> Option<&P> {
        self.q.front()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Empties the queue, oldest first.
    pub fn drain(&mut self, out: &mut impl FnMut(P)) {
        self.bytes = 0;
        self.q.drain(..).for_each(out);
    }
}

/// A packet with the time it entered a discipline: what sojourn-time disciplines (CoDel, PIE,
/// FQ-CoDel) store in their FIFOs.
#[derive(Clone, Debug)]
pub struct Stamped<P> {
    pub at: cclab_core::time::Time,
    pub p: P,
}

impl<P: WirePacket> WirePacket for Stamped<P> {
    #[inline]
    fn wire_size(&self) -> u64 {
        self.p.wire_size()
    }
    #[inline]
    fn flow(&self) -> u32 {
        self.p.flow()
    }
}
