//! A token bucket of `rate` and depth `burst`, as a shaper or as a policer. Tokens accrue at
//! `rate` up to `burst` bytes; a packet passes when the bucket holds its size. The shaper (Linux
//! `tbf`) holds a packet in its FIFO until the bucket allows it; the policer lets every packet
//! the bucket allows join the FIFO at once and drops the others (a traffic policer, the
//! Pantheon's pathological 12/60/108 Mbit/s links). Both start with a full bucket.
//!
//! [`Bucket`] is the bucket alone, so that a middlebox can rate-limit with it and change the
//! rate as its controller decides.

use super::{Fifo, InService, Limit, QueueDiscipline};
use crate::stage::WirePacket;
use cclab_core::scenario::TokenBucketParams;
use cclab_core::time::{Time, SEC};
use cclab_core::units::{Bytes, Rate};

/// Tokens in exact integer units: one byte is 8·10⁹ units, and `rate` bits/s adds `rate` units
/// per nanosecond, so no rounding ever creeps into hand-checkable results.
#[derive(Clone, Debug)]
pub struct Bucket {
    rate: u64,
    depth: u128,
    tokens: u128,
    last: Time,
}

const UNITS_PER_BYTE: u128 = 8 * SEC as u128;

impl Bucket {
    /// A full bucket at time 0.
    pub fn new(rate: Rate, burst: Bytes) -> Bucket {
        let depth = burst.0 as u128 * UNITS_PER_BYTE;
        Bucket { rate: rate.0, depth, tokens: depth, last: 0 }
    }

    fn refill(&mut self, now: Time) {
        if now > self.last {
            self.tokens = (self.tokens + self.rate as u128 * (now - self.last) as u128).min(self.depth);
            self.last = now;
        }
    }

    /// Whole bytes the bucket holds at `now`.
    pub fn bytes_at(&mut self, now: Time) -> u64 {
        self.refill(now);
        (self.tokens / UNITS_PER_BYTE) as u64
    }

    /// Takes `bytes` from the bucket if it holds them at `now`.
    pub fn take(&mut self, now: Time, bytes: u64) -> bool {
        self.refill(now);
        let cost = bytes as u128 * UNITS_PER_BYTE;
        if cost <= self.tokens {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }

    /// The first time the bucket holds `bytes` (they never fit if `bytes` exceeds the depth).
    pub fn ready_at(&self, bytes: u64) -> Time {
        let cost = (bytes as u128 * UNITS_PER_BYTE).min(self.depth);
        match cost.checked_sub(self.tokens) {
            None | Some(0) => self.last,
            Some(missing) => self.last + missing.div_ceil(self.rate.max(1) as u128) as Time,
        }
    }

    /// Changes the rate from `now` on (tokens earned so far at the old rate are kept).
    pub fn set_rate(&mut self, now: Time, rate: Rate) {
        self.refill(now);
        self.rate = rate.0;
    }

    pub fn rate(&self) -> Rate {
        Rate(self.rate)
    }
}

/// What the bucket does with a packet it cannot pass yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Hold it until tokens allow (shaping adds delay, not loss).
    Shaper,
    /// Drop it (policing adds loss, not delay).
    Policer,
}

#[derive(Clone, Debug)]
pub struct TokenBucket<P> {
    fifo: Fifo<P>,
    limit: Limit,
    bucket: Bucket,
    mode: Mode,
}

impl<P> TokenBucket<P> {
    pub fn new(p: &TokenBucketParams, mode: Mode, limit: Limit) -> TokenBucket<P> {
        TokenBucket { fifo: Fifo::default(), limit, bucket: Bucket::new(p.rate, p.burst), mode }
    }

    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    pub fn bucket_mut(&mut self) -> &mut Bucket {
        &mut self.bucket
    }
}

impl<P: WirePacket> QueueDiscipline<P> for TokenBucket<P> {
    fn enqueue(&mut self, now: Time, p: P, serving: InService, drop: &mut impl FnMut(P)) {
        let packets = self.fifo.len() as u64 + serving.packets + 1;
        let bytes = self.fifo.bytes() + serving.bytes + p.wire_size();
        if self.limit.exceeded(packets, bytes) {
            drop(p);
            return;
        }
        match self.mode {
            Mode::Shaper => self.fifo.push(p),
            Mode::Policer if self.bucket.take(now, p.wire_size()) => self.fifo.push(p),
            Mode::Policer => drop(p),
        }
    }

    fn dequeue(&mut self, now: Time, _drop: &mut impl FnMut(P)) -> Option<P> {
        if self.mode == Mode::Shaper {
            let size = self.fifo.front()?.wire_size();
            if !self.bucket.take(now, size) {
                return None;
            }
        }
        self.fifo.pop()
    }

    fn len(&self) -> usize {
        self.fifo.len()
    }

    fn bytes(&self) -> u64 {
        self.fifo.bytes()
    }

    /// A shaper holding packets wakes when the bucket holds the head packet.
    fn wake_at(&self) -> Option<Time> {
        match self.mode {
            Mode::Shaper => self.fifo.front().map(|p| self.bucket.ready_at(p.wire_size())),
            Mode::Policer => None,
        }
    }

    fn drain(&mut self, out: &mut impl FnMut(P)) {
        self.fifo.drain(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tests::{Pkt, Sim};
    use cclab_core::time::{MS, US};

    fn params(mbps: u64, burst: u64) -> TokenBucketParams {
        TokenBucketParams { rate: Rate(mbps * 1_000_000), burst: Bytes(burst) }
    }

    #[test]
    fn bucket_arithmetic_by_hand() {
        // 12 Mbit/s = 1500 bytes per ms; depth 3000 bytes, full at 0.
        let mut b = Bucket::new(Rate(12_000_000), Bytes(3000));
        assert!(b.take(0, 1500) && b.take(0, 1500));
        assert!(!b.take(0, 1));
        assert_eq!(b.ready_at(1500), MS);
        assert_eq!(b.ready_at(750), 500 * US);
        assert!(!b.take(999_999, 1500));
        assert!(b.take(MS, 1500));
        // Idle for a second: capped at the depth.
        assert_eq!(b.bytes_at(SEC), 3000);
        b.set_rate(SEC, Rate(1_200_000));
        assert!(b.take(SEC, 3000));
        assert_eq!(b.ready_at(1500), SEC + 10 * MS);
    }

    #[test]
    fn shaper_releases_a_burst_then_paces_at_the_rate() {
        // A 12 Mbit/s shaper with a 3-packet burst in front of a 120 Mbit/s link (0.1 ms per
        // packet), 10 packets arriving at once: three leave back to back (0.1, 0.2, 0.3 ms),
        // then one per ms as tokens accrue: the 4th may start at 1 ms and leaves at 1.1 ms.
        let q = TokenBucket::new(&params(12, 4500), Mode::Shaper, Limit::None);
        let mut sim = Sim::new(q, Rate(120_000_000));
        for _ in 0..10 {
            sim.arrive(0, Pkt::new(0, 1500));
        }
        sim.run_until(SEC);
        let times: Vec<Time> = sim.sent.iter().map(|s| s.0).collect();
        let us = |x: u64| x * US;
        assert_eq!(
            times,
            vec![us(100), us(200), us(300), us(1100), us(2100), us(3100), us(4100), us(5100), us(6100), us(7100)]
        );
        assert!(sim.dropped.is_empty(), "a shaper delays, it does not drop");
    }

    #[test]
    fn policer_passes_the_burst_and_the_rate_and_drops_the_rest() {
        // A 12 Mbit/s policer with a 2-packet burst; arrivals of 1500 bytes every 0.5 ms (twice
        // the rate) from t = 0 on a fast link. Tokens at arrival k (t = k/2 ms): the full 3000
        // at t = 0, then 750 bytes per arrival. Passed: t = 0 (3000 → 1500), 0.5 ms (2250 →
        // 750), 1.0 (1500 → 0), then every 2nd: 2.0 ms, 3.0 ms, … — a hand count of 2 + 1 per
        // ms over the first 10 ms (t = 0 … 9.5 ms): 3 + 8 = 11 passed of 20.
        let q = TokenBucket::new(&params(12, 3000), Mode::Policer, Limit::None);
        let mut sim = Sim::new(q, Rate(1_200_000_000));
        for k in 0..20u64 {
            sim.arrive(k * MS / 2, Pkt::new(0, 1500));
        }
        sim.run_until(SEC);
        let passed: Vec<Time> = sim.sent.iter().map(|(_, p)| p.id * MS / 2).collect();
        let expected: Vec<Time> = [0, 1, 2, 4, 6, 8, 10, 12, 14, 16, 18].iter().map(|&k: &u64| k * MS / 2).collect();
        assert_eq!(passed, expected);
        assert_eq!(sim.dropped.len(), 9);
        // Nothing waits: the policer adds loss, not delay.
        for (t, p) in &sim.sent {
            assert!(*t - p.id * MS / 2 <= 10 * US, "packet {} waited", p.id);
        }
    }
}
