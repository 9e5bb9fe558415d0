//! The simple stages of the path: what crosses it, constant-delay lines and i.i.d. loss. The
//! bottleneck, the one stage with a policy, is in [`crate::bottleneck`].

use cclab_core::rng::Rng;
use cclab_core::time::Time;
use std::collections::VecDeque;

/// What crosses the path: anything with a flow and a size on the wire. Engines bring their own
/// packet type (the simulator's carries transport frames, the emulator's a buffer slot).
pub trait WirePacket {
    /// Bytes on the wire: what the queue limit and the delivery process count.
    fn wire_size(&self) -> u64;
    /// The flow the packet belongs to, for disciplines that tell flows apart (fair queueing,
    /// priorities).
    fn flow(&self) -> u32;
}

/// A FIFO with a constant delay: exit times are non-decreasing, so the head is always the next
/// packet due and an engine needs one pending wake-up per line, not one per packet.
#[derive(Clone, Debug)]
pub struct DelayLine<P> {
    delay: Time,
    q: VecDeque<(Time, P)>,
}

impl<P> DelayLine<P> {
    pub fn new(delay: Time) -> DelayLine<P> {
        DelayLine { delay, q: VecDeque::new() }
    }

    pub fn delay(&self) -> Time {
        self.delay
    }

    /// Takes a packet in at `now`; returns its exit time.
    #[inline]
    pub fn push(&mut self, now: Time, p: P) -> Time {
        let exit = now + self.delay;
        self.q.push_back((exit, p));
        exit
    }

    /// The exit time of the head, if any.
    #[inline]
    pub fn next_due(&self) -> Option<Time> {
        self.q.front().map(|x| x.0)
    }

    /// Releases the head with its exit time, whether due or not (the caller checked).
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, P)> {
        self.q.pop_front()
    }

    /// Releases the head if it is due at or before `now`.
    #[inline]
    pub fn pop_due(&mut self, now: Time) -> Option<(Time, P)> {
        match self.q.front() {
            Some(&(t, _)) if t <= now => self.q.pop_front(),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Empties the line (end of run), oldest first.
    pub fn drain(&mut self) -> impl Iterator<Item = P> + '_ {
        self.q.drain(..).map(|x| x.1)
    }
}

/// Independent random loss with probability `p` per packet, from its own random stream.
#[derive(Clone, Debug)]
pub struct Loss {
    p: f64,
    rng: Rng,
}

impl Loss {
    pub fn new(p: f64, rng: Rng) -> Loss {
        Loss { p, rng }
    }

    /// Whether the next packet is lost. A lossless stage draws nothing, so adding loss to one
    /// path never shifts another stream.
    #[inline]
    pub fn drops(&mut self) -> bool {
        self.p > 0.0 && self.rng.bernoulli(self.p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_line_releases_in_order_after_its_delay() {
        let mut l = DelayLine::new(5);
        assert_eq!(l.push(0, 'a'), 5);
        assert_eq!(l.push(3, 'b'), 8);
        assert_eq!(l.next_due(), Some(5));
        assert_eq!(l.pop_due(4), None);
        assert_eq!(l.pop_due(5), Some((5, 'a')));
        assert_eq!(l.pop_due(7), None);
        assert_eq!(l.drain().collect::<Vec<_>>(), vec!['b']);
        assert!(l.is_empty());
    }

    #[test]
    fn lossless_stage_never_draws() {
        let mut a = Loss::new(0.0, Rng::new(7));
        assert!((0..1000).all(|_| !a.drops()));
        let mut half = Loss::new(0.5, Rng::new(7));
        let n = (0..10_000).filter(|_| half.drops()).count();
        assert!((4_700..5_300).contains(&n), "{n}");
    }
}
