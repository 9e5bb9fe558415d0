//! Bottleneck link models: a queue in front of a delivery process (constant rate, Poisson
//! delivery opportunities, or a mahimahi trace). Pure state machines over an abstract packet
//! type, so the real-time emulator applies exactly the same models.

use cclab_cc::{Rng, Time};
use cclab_core::scenario::{Aqm, Delivery, Link, PACKET_BYTES};
use cclab_core::units::{QueueSize, Rate};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use cclab_core::time::MS;
/// Bytes one delivery opportunity carries (mahimahi's MTU-sized opportunity).
pub const OPPORTUNITY_BYTES: u64 = PACKET_BYTES;

/// A mahimahi trace: delivery opportunities at whole milliseconds, repeating with a period
/// equal to the last timestamp.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// Distinct opportunity times in ms within one period, ascending, with their counts.
    times: Vec<u64>,
    counts: Vec<u32>,
    /// Cumulative opportunities before index i (for capacity over a span).
    before: Vec<u64>,
    period_ms: u64,
    total: u64,
}

impl Trace {
    pub fn load(path: &Path) -> Result<Trace, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read trace file {}: {e}", path.display()))?;
        Trace::parse(&text).map_err(|e| format!("trace file {}: {e}", path.display()))
    }

    /// Parses mahimahi's format: one non-decreasing integer (ms) per line.
    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut times: Vec<u64> = Vec::new();
        let mut counts: Vec<u32> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let t: u64 =
                line.parse().map_err(|_| format!("line {}: {line:?} is not a whole number of milliseconds", i + 1))?;
            match times.last() {
                Some(&last) if t < last => {
                    return Err(format!("line {}: timestamps must not decrease ({t} after {last})", i + 1))
                }
                Some(&last) if t == last => *counts.last_mut().expect("parallel to times") += 1,
                _ => {
                    times.push(t);
                    counts.push(1);
                }
            }
        }
        let period_ms = *times.last().ok_or("the trace has no delivery opportunities")?;
        if period_ms == 0 {
            return Err("the last timestamp must be positive (it is the trace's period)".into());
        }
        let mut before = Vec::with_capacity(times.len());
        let mut acc = 0;
        for c in &counts {
            before.push(acc);
            acc += *c as u64;
        }
        Ok(Trace { times, counts, before, period_ms, total: acc })
    }

    /// Average rate of the trace.
    pub fn mean_rate(&self) -> Rate {
        Rate((self.total * OPPORTUNITY_BYTES * 8 * 1000 / self.period_ms).max(1))
    }

    /// The first opportunity at or after `t` (ns): its time and how many opportunities it holds.
    pub fn next_at_or_after(&self, t: Time) -> (Time, u32) {
        let period = self.period_ms * MS;
        let cycle = t / period;
        let within = t - cycle * period;
        let ms = within.div_ceil(MS);
        // Timestamps are in (0, period]; an offset of 0 in this cycle is the previous
        // cycle's final timestamp, which equals `period`.
        let i = self.times.partition_point(|&x| x < ms.max(1));
        if i < self.times.len() {
            (cycle * period + self.times[i] * MS, self.counts[i])
        } else {
            ((cycle + 1) * period + self.times[0] * MS, self.counts[0])
        }
    }

    /// Opportunities in [0, t).
    fn opportunities_before(&self, t: Time) -> u64 {
        let period = self.period_ms * MS;
        let cycles = t / period;
        let within = (t - cycles * period).div_ceil(MS);
        let i = self.times.partition_point(|&x| x < within);
        let partial = if i < self.times.len() { self.before[i] } else { self.total };
        cycles * self.total + partial
    }

    /// Bits the trace can deliver in [t0, t1).
    pub fn capacity_bits(&self, t0: Time, t1: Time) -> f64 {
        (self.opportunities_before(t1) - self.opportunities_before(t0)) as f64 * (OPPORTUNITY_BYTES * 8) as f64
    }
}

/// When packets can leave the bottleneck.
#[derive(Clone, Debug)]
pub enum Service {
    /// Serialisation at a fixed rate.
    Constant(Rate),
    /// Opportunities of one 1500-byte packet as a Poisson process at the given mean rate.
    Poisson(Rate),
    Trace(Arc<Trace>),
}

impl Service {
    pub fn from_link(link: &Link, trace: Option<Arc<Trace>>) -> Service {
        match (trace, link.rate, link.delivery) {
            (Some(t), _, _) => Service::Trace(t),
            (None, Some(r), Delivery::Poisson) => Service::Poisson(r),
            (None, Some(r), Delivery::Constant) => Service::Constant(r),
            (None, None, _) => unreachable!("a validated link has a rate or a trace"),
        }
    }

    pub fn mean_rate(&self) -> Rate {
        match self {
            Service::Constant(r) | Service::Poisson(r) => *r,
            Service::Trace(t) => t.mean_rate(),
        }
    }

    /// Bits the link could deliver in [t0, t1): exact for traces, the mean otherwise.
    pub fn capacity_bits(&self, t0: Time, t1: Time) -> f64 {
        match self {
            Service::Trace(t) => t.capacity_bits(t0, t1),
            _ => self.mean_rate().bits_per_sec() as f64 * (t1.saturating_sub(t0)) as f64 / 1e9,
        }
    }
}

/// The queue limit in the unit it is enforced in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u64),
    Bytes(u64),
    None,
}

impl Limit {
    /// Resolves a scenario queue size; a BDP multiple becomes whole packets of 1500 bytes
    /// (as Mininet's `max_queue_size`: 46 Mbit/s × 20 ms = 115 KB → 77 packets).
    pub fn resolve(q: QueueSize, rate: Rate, base_rtt: Time) -> Limit {
        match q {
            QueueSize::Packets(n) => Limit::Packets(n),
            QueueSize::Bytes(b) => Limit::Bytes(b),
            QueueSize::Infinite => Limit::None,
            QueueSize::Bdp(x) => {
                let bdp_bytes = rate.bytes_per_sec() * base_rtt as f64 / 1e9 * x;
                Limit::Packets(((bdp_bytes / PACKET_BYTES as f64).round() as u64).max(1))
            }
        }
    }
}

/// What crosses the bottleneck: anything with a size on the wire.
pub trait WirePacket {
    fn wire_size(&self) -> u64;
}

/// The result of offering a packet to the queue.
pub enum Enqueued<P> {
    Accepted,
    /// The arriving packet (droptail) or one from the head (drophead) was dropped.
    Dropped(P, Time),
}

/// A queue and the delivery process that drains it.
pub struct Bottleneck<P> {
    queue: VecDeque<(P, Time)>,
    bytes: u64,
    limit: Limit,
    aqm: Aqm,
    service: Service,
    /// Bytes of the head packet not yet carried by an opportunity (opportunity-based links),
    /// or the completion time of the head's serialisation (constant links).
    head_remaining: u64,
    head_done: Option<Time>,
    next_opportunity: Option<Time>,
    last_opportunity: Option<Time>,
    rng: Rng,
}

impl<P: WirePacket> Bottleneck<P> {
    pub fn new(service: Service, limit: Limit, aqm: Aqm, rng: Rng) -> Self {
        Bottleneck {
            queue: VecDeque::new(),
            bytes: 0,
            limit,
            aqm,
            service,
            head_remaining: 0,
            head_done: None,
            next_opportunity: None,
            last_opportunity: None,
            rng,
        }
    }

    pub fn service(&self) -> &Service {
        &self.service
    }
    pub fn len(&self) -> usize {
        self.queue.len()
    }
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn full_with(&self, extra: u64) -> bool {
        match self.limit {
            Limit::Packets(n) => self.queue.len() as u64 + 1 > n,
            Limit::Bytes(b) => self.bytes + extra > b,
            Limit::None => false,
        }
    }

    /// Offers a packet at `now`. The limit counts the packet in service, as mahimahi does.
    pub fn enqueue(&mut self, now: Time, p: P) -> Enqueued<P> {
        let size = p.wire_size();
        if self.aqm == Aqm::Droptail && self.full_with(size) {
            return Enqueued::Dropped(p, now);
        }
        let was_empty = self.queue.is_empty();
        self.bytes += size;
        self.queue.push_back((p, now));
        if was_empty {
            self.start_head(now);
        }
        if self.aqm == Aqm::Drophead && self.over_limit() && self.queue.len() > 1 {
            // The packet in service has partly left; drop the oldest one still waiting.
            let (victim, _) = self.queue.remove(1).expect("len > 1");
            self.bytes -= victim.wire_size();
            return Enqueued::Dropped(victim, now);
        }
        Enqueued::Accepted
    }

    fn over_limit(&self) -> bool {
        match self.limit {
            Limit::Packets(n) => self.queue.len() as u64 > n,
            Limit::Bytes(b) => self.bytes > b,
            Limit::None => false,
        }
    }

    fn start_head(&mut self, now: Time) {
        let Some((head, _)) = self.queue.front() else { return };
        let size = head.wire_size();
        match &self.service {
            Service::Constant(rate) => self.head_done = Some(now + rate.serialisation_ns(size)),
            Service::Poisson(rate) => {
                self.head_remaining = size;
                if self.next_opportunity.is_none_or(|t| t < now) {
                    // Memoryless: a fresh draw from now is distributed as the lapsed process.
                    let mean = OPPORTUNITY_BYTES as f64 * 8.0 / rate.bits_per_sec() as f64 * 1e9;
                    self.next_opportunity = Some(now + self.rng.exponential(mean).round() as Time);
                }
            }
            Service::Trace(trace) => {
                self.head_remaining = size;
                let from = self.last_opportunity.map_or(now, |l| now.max(l + 1));
                if self.next_opportunity.is_none_or(|t| t < from) {
                    self.next_opportunity = Some(trace.next_at_or_after(from).0);
                }
            }
        }
    }

    /// When the next packet can leave, if any is queued.
    pub fn next_event(&self) -> Option<Time> {
        if self.queue.is_empty() {
            return None;
        }
        match self.service {
            Service::Constant(_) => self.head_done,
            _ => self.next_opportunity,
        }
    }

    /// Lets out every packet due at `now`; `out(packet, enqueued_at)` receives each.
    pub fn dequeue(&mut self, now: Time, out: &mut impl FnMut(P, Time)) {
        match self.service.clone() {
            Service::Constant(_) => {
                while self.head_done.is_some_and(|t| t <= now) {
                    let (p, enq) = self.queue.pop_front().expect("a packet in service");
                    self.bytes -= p.wire_size();
                    let done = self.head_done.take().expect("checked");
                    out(p, enq);
                    self.start_head(done);
                }
            }
            Service::Poisson(rate) => {
                while self.next_opportunity.is_some_and(|t| t <= now) && !self.queue.is_empty() {
                    let t = self.next_opportunity.expect("checked");
                    self.spend_opportunity(OPPORTUNITY_BYTES, out);
                    let mean = OPPORTUNITY_BYTES as f64 * 8.0 / rate.bits_per_sec() as f64 * 1e9;
                    self.next_opportunity = Some(t + self.rng.exponential(mean).round() as Time);
                }
            }
            Service::Trace(trace) => {
                while self.next_opportunity.is_some_and(|t| t <= now) && !self.queue.is_empty() {
                    let t = self.next_opportunity.expect("checked");
                    let (_, count) = trace.next_at_or_after(t);
                    self.spend_opportunity(count as u64 * OPPORTUNITY_BYTES, out);
                    self.last_opportunity = Some(t);
                    self.next_opportunity = Some(trace.next_at_or_after(t + 1).0);
                }
            }
        }
    }

    /// mahimahi's byte accounting: an opportunity's bytes may carry several small packets,
    /// and a large packet may need several opportunities. Unused bytes are lost.
    fn spend_opportunity(&mut self, mut budget: u64, out: &mut impl FnMut(P, Time)) {
        while budget > 0 && !self.queue.is_empty() {
            let take = budget.min(self.head_remaining);
            budget -= take;
            self.head_remaining -= take;
            if self.head_remaining == 0 {
                let (p, enq) = self.queue.pop_front().expect("non-empty");
                self.bytes -= p.wire_size();
                out(p, enq);
                if let Some((next, _)) = self.queue.front() {
                    self.head_remaining = next.wire_size();
                }
            }
        }
    }

    /// Empties the queue (end of run), oldest first.
    pub fn drain(&mut self) -> impl Iterator<Item = (P, Time)> + '_ {
        self.bytes = 0;
        self.queue.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Pkt(u64);
    impl WirePacket for Pkt {
        fn wire_size(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn trace_parsing_and_lookup() {
        let t = Trace::parse("1\n1\n3\n").unwrap();
        assert_eq!(t.mean_rate(), Rate(3 * 1500 * 8 * 1000 / 3));
        assert_eq!(t.next_at_or_after(0), (MS, 2));
        assert_eq!(t.next_at_or_after(MS + 1), (3 * MS, 1));
        // The trace loops with period 3 ms: the next after 3 ms is 3 + 1 ms.
        assert_eq!(t.next_at_or_after(3 * MS + 1), (4 * MS, 2));
        assert_eq!(t.capacity_bits(0, 6 * MS + 1), 6.0 * 12000.0);
        assert!(Trace::parse("3\n2\n").unwrap_err().contains("must not decrease"));
        assert!(Trace::parse("0\n").is_err());
        assert!(Trace::parse("1\nx\n").unwrap_err().contains("line 2"));
    }

    #[test]
    fn constant_link_serialises_back_to_back() {
        let mut b = Bottleneck::new(Service::Constant(Rate(12_000_000)), Limit::Packets(2), Aqm::Droptail, Rng::new(1));
        assert!(matches!(b.enqueue(0, Pkt(1500)), Enqueued::Accepted));
        assert!(matches!(b.enqueue(0, Pkt(1500)), Enqueued::Accepted));
        assert!(matches!(b.enqueue(0, Pkt(1500)), Enqueued::Dropped(..)), "limit counts the packet in service");
        let mut out = vec![];
        b.dequeue(2 * MS, &mut |p: Pkt, enq| out.push((p.0, enq)));
        assert_eq!(out.len(), 2);
        assert_eq!(b.next_event(), None);
    }

    #[test]
    fn opportunities_carry_bytes_across_packets() {
        let trace = Arc::new(Trace::parse("1\n").unwrap());
        let mut b = Bottleneck::new(Service::Trace(trace), Limit::None, Aqm::Droptail, Rng::new(1));
        for _ in 0..3 {
            let _ = b.enqueue(0, Pkt(1000));
        }
        let mut n = 0;
        b.dequeue(MS, &mut |_, _| n += 1);
        assert_eq!(n, 1, "1500 bytes carry one 1000-byte packet and half of the next");
        b.dequeue(2 * MS, &mut |_, _| n += 1);
        assert_eq!(n, 3);
    }

    #[test]
    fn drophead_drops_oldest_waiting() {
        let mut b = Bottleneck::new(Service::Constant(Rate(12_000_000)), Limit::Packets(2), Aqm::Drophead, Rng::new(1));
        let _ = b.enqueue(0, Pkt(100));
        let _ = b.enqueue(0, Pkt(200));
        match b.enqueue(0, Pkt(300)) {
            Enqueued::Dropped(p, _) => assert_eq!(p.0, 200),
            Enqueued::Accepted => panic!("over the limit"),
        }
    }
}
