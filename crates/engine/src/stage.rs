//! The simple stages of the path: what crosses it, delay lines (constant, or with jitter) and
//! i.i.d. loss. The
//! bottleneck, the one stage with a policy, is in [`crate::bottleneck`].

use cclab_core::rng::Rng;
use cclab_core::scenario::hosts::Stalls;
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

/// A FIFO delay line: a constant delay, optionally plus jitter. Exit times are non-decreasing,
/// so the head is always the next packet due and an engine needs one pending wake-up per line,
/// not one per packet.
#[derive(Clone, Debug)]
pub struct DelayLine<P> {
    delay: Time,
    jitter: Option<Jitter>,
    q: VecDeque<(Time, P)>,
}

/// Variable delay: each packet draws an extra delay uniform in [0, max] ns from its own random
/// stream, and leaves no earlier than the packet ahead of it. So jitter never reorders packets
/// (what mahimahi users ask for: a real path's variable delay, not a reordering link); packets
/// closer together than the jitter bunch behind a late one, which shifts their delays upward
/// compared with the drawn distribution.
#[derive(Clone, Debug)]
pub struct Jitter {
    max: Time,
    /// A host's stalls on top of the uniform draw (`[hosts] stalls`), drawn from the same
    /// stream after it.
    stalls: Option<Stalls>,
    rng: Rng,
    /// Exit time of the last packet taken in.
    last_exit: Time,
}

impl Jitter {
    pub fn new(max: Time, rng: Rng) -> Jitter {
        Jitter { max, stalls: None, rng, last_exit: 0 }
    }

    pub fn with_stalls(self, stalls: Option<Stalls>) -> Jitter {
        Jitter { stalls, ..self }
    }

    /// Whether it ever delays a packet.
    fn is_active(&self) -> bool {
        self.max > 0 || self.stalls.is_some()
    }

    /// The exit time of a packet whose constant-delay exit would be `exit`: a stalled packet
    /// holds the ones behind it, as the host's queue waits with it.
    #[inline]
    fn exit(&mut self, exit: Time) -> Time {
        let mut wait = self.rng.below(self.max + 1);
        if let Some(s) = &self.stalls {
            wait += s.draw(&mut self.rng);
        }
        let t = (exit + wait).max(self.last_exit);
        self.last_exit = t;
        t
    }
}

impl<P> DelayLine<P> {
    pub fn new(delay: Time) -> DelayLine<P> {
        DelayLine { delay, jitter: None, q: VecDeque::new() }
    }

    /// A line that adds `jitter` to its constant delay (a zero jitter draws nothing, so the
    /// line is exactly a constant one).
    pub fn with_jitter(delay: Time, jitter: Jitter) -> DelayLine<P> {
        DelayLine { delay, jitter: jitter.is_active().then_some(jitter), q: VecDeque::new() }
    }

    /// The constant part of the delay.
    pub fn delay(&self) -> Time {
        self.delay
    }

    /// Whether a packet leaves the instant it enters (no delay, no jitter): engines skip it.
    pub fn is_instant(&self) -> bool {
        self.delay == 0 && self.jitter.is_none()
    }

    /// Takes a packet in at `now`; returns its exit time.
    #[inline]
    pub fn push(&mut self, now: Time, p: P) -> Time {
        let mut exit = now + self.delay;
        if let Some(j) = &mut self.jitter {
            exit = j.exit(exit);
        }
        self.q.push_back((exit, p));
        exit
    }

    /// The head, if any (for a cache hint: the engine touches it next).
    #[inline]
    pub fn front(&self) -> Option<&P> {
        self.q.front().map(|x| &x.1)
    }

    /// The packet `k` places behind the head, if any (for a cache hint: a real-time engine
    /// touches it a few packets from now).
    #[inline]
    pub fn nth(&self, k: usize) -> Option<&P> {
        self.q.get(k).map(|x| &x.1)
    }

    /// The exit time of the head, if any.
    #[inline]
    pub fn next_due(&self) -> Option<Time> {
        self.q.front().map(|x| x.0)
    }

    /// The exit times of the packets inside, head first (non-decreasing): a real-time engine
    /// looks ahead at them to group departures into as few wake-ups as it can.
    pub fn exits(&self) -> impl Iterator<Item = Time> + '_ {
        self.q.iter().map(|x| x.0)
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

    /// Gives back memory a past peak took ([`cclab_core::trim`]).
    pub fn trim(&mut self) {
        cclab_core::trim::trim(&mut self.q);
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
    fn jitter_matches_its_uniform_distribution_and_never_reorders() {
        // Packets 20 ms apart, jitter up to 5 ms: no packet waits for the one ahead, so each
        // delay is exactly 10 ms plus the drawn jitter.
        let (delay, max, gap, n) = (10_000_000u64, 5_000_000u64, 20_000_000u64, 20_000u64);
        let mut l = DelayLine::with_jitter(delay, Jitter::new(max, Rng::new(3)));
        let mut extra: Vec<u64> = (0..n).map(|i| l.push(i * gap, i) - i * gap - delay).collect();
        assert!(extra.iter().all(|&e| e <= max));
        extra.sort_unstable();
        // Every decile of Uniform[0, max], within sampling tolerance (the standard error of a
        // decile of 20 000 draws is about 0.2% of max; allow 1%).
        for k in 1..10u64 {
            let q = extra[(n * k / 10) as usize] as f64;
            let want = (max * k / 10) as f64;
            assert!((q - want).abs() < 0.01 * max as f64, "decile {k}: {q} vs {want}");
        }
        let mean = extra.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean - max as f64 / 2.0).abs() < 0.01 * max as f64, "{mean}");

        // Back-to-back packets (1 µs apart, far closer than the jitter): they leave in order,
        // some bunched behind a late one.
        let mut l = DelayLine::with_jitter(delay, Jitter::new(max, Rng::new(4)));
        let exits: Vec<u64> = (0..10_000u64).map(|i| l.push(i * 1_000, i)).collect();
        assert!(exits.windows(2).all(|w| w[0] <= w[1]));
        let order: Vec<u64> = std::iter::from_fn(|| l.pop().map(|x| x.1)).collect();
        assert_eq!(order, (0..10_000).collect::<Vec<_>>());
        assert!(exits.windows(2).any(|w| w[0] == w[1]), "no packet waited for the one ahead");
    }

    /// A host that stalls holds what it sends behind the stalled packet: packets 10 µs apart
    /// (closer than the 100 µs a stall lasts at least) leave in order, and after a stall the
    /// next ones leave with it, bunched, as a late wake-up hands its backlog over at once.
    #[test]
    fn a_stall_holds_the_packets_behind_it() {
        use cclab_core::units::Dur;
        let stalls = Stalls { share: 0.05, from: Dur(100_000), max: Dur(1_000_000) };
        // No uniform jitter: only the stalls move packets, and a line with only them is live.
        let mut l = DelayLine::with_jitter(0, Jitter::new(0, Rng::new(5)).with_stalls(Some(stalls)));
        assert!(!l.is_instant());
        let exits: Vec<u64> = (0..20_000u64).map(|i| l.push(i * 10_000, i)).collect();
        assert!(exits.windows(2).all(|w| w[0] <= w[1]));
        let late: Vec<u64> = exits.iter().enumerate().map(|(i, &e)| e - i as u64 * 10_000).collect();
        // ~1000 stalls of 330 µs on average (from · (1 + ln(max / from))) each hold the next
        // ~20 packets 100 µs or more (14,560 here); on their own they would be ~1000.
        let held = late.iter().filter(|&&w| w >= 100_000).count();
        assert!(held > 10 * 1_000, "{held}");
        assert!(late.iter().all(|&w| w <= 1_000_000));
        let order: Vec<u64> = std::iter::from_fn(|| l.pop().map(|x| x.1)).collect();
        assert_eq!(order, (0..20_000).collect::<Vec<_>>());
    }

    #[test]
    fn zero_jitter_is_a_constant_line() {
        let mut a = DelayLine::with_jitter(7, Jitter::new(0, Rng::new(1)));
        assert!(!a.is_instant() && DelayLine::<u8>::with_jitter(0, Jitter::new(0, Rng::new(1))).is_instant());
        assert_eq!((0..5).map(|i| a.push(i, i)).collect::<Vec<_>>(), vec![7, 8, 9, 10, 11]);
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
