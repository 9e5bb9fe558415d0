use crate::{AckFrame, DataPacket, FeedbackSlot, IdRange, ACK_RANGES};
use cclab_cc::agent::{ReceivedPacket, ReceiverAgent};
use cclab_cc::Time;

#[derive(Clone, Copy, Debug)]
pub struct ReceiverConfig {
    /// ACK every second packet, or when `delayed_ack_timeout` passes (RFC 1122/5681).
    pub delayed_ack: bool,
    pub delayed_ack_timeout: Time,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        // Linux's minimum delayed-ACK timer.
        ReceiverConfig { delayed_ack: false, delayed_ack_timeout: 40_000_000 }
    }
}

/// The receiving end: tracks which packets and stream bytes arrived and produces ACKs.
#[derive(Debug)]
pub struct Receiver {
    cfg: ReceiverConfig,
    /// Received packet-id ranges, oldest first, at most `ACK_RANGES` kept.
    ids: Vec<IdRange>,
    /// Stream bytes received in order, and the out-of-order stream ranges above it.
    stream_cum: u64,
    holes_above: Vec<(u64, u64)>,
    unacked: u32,
    /// When `on_timeout` must run: the delayed-ACK deadline or, with an agent, the earlier of
    /// that and the agent's timer.
    ack_deadline: Option<Time>,
    last_owd: Time,
    /// The scheme's receiver-side agent (Sprout), if it has one. Everything about it runs on
    /// separate, cold paths, so a receiver without one runs exactly the code it ran before the
    /// hook existed (measured: merging the agent's timer into `next_timeout` alone kept the
    /// simulator's per-event timer code from being inlined, costing ~7% of its speed).
    agent: Option<Box<dyn ReceiverAgent>>,
    /// The delayed-ACK deadline, kept apart from the agent's timer (agent receivers only).
    delack_deadline: Option<Time>,
    pub packets_received: u64,
    pub bytes_received: u64,
}

impl Receiver {
    pub fn new(cfg: ReceiverConfig) -> Self {
        Receiver {
            cfg,
            ids: Vec::with_capacity(ACK_RANGES + 1),
            stream_cum: 0,
            holes_above: Vec::new(),
            unacked: 0,
            ack_deadline: None,
            last_owd: 0,
            agent: None,
            delack_deadline: None,
            packets_received: 0,
            bytes_received: 0,
        }
    }

    /// Attaches the scheme's receiver agent (reference §16.3): it sees every data packet, may
    /// keep a timer, and its feedback rides on every ACK this receiver sends.
    pub fn with_agent(mut self, agent: Option<Box<dyn ReceiverAgent>>) -> Self {
        self.agent = agent;
        if self.agent.is_some() {
            self.merge_deadlines();
        }
        self
    }

    /// Stream bytes delivered in order to the application.
    pub fn stream_cum(&self) -> u64 {
        self.stream_cum
    }

    /// Takes a data packet; returns an ACK to send now, if one is due.
    pub fn on_data(&mut self, now: Time, pkt: &DataPacket) -> Option<AckFrame> {
        self.packets_received += 1;
        self.bytes_received += pkt.len as u64;
        self.last_owd = now.saturating_sub(pkt.sent);
        let gap = self.record_id(pkt.id);
        let filled_hole = self.record_stream(pkt.offset, pkt.offset + pkt.len as u64);
        self.unacked += 1;
        if self.agent.is_some() {
            return self.on_data_with_agent(now, pkt, gap || filled_hole);
        }
        // Out-of-order arrivals and hole fills are acknowledged at once so the sender sees
        // the loss (or the repair) without waiting for the delayed-ACK timer.
        if !self.cfg.delayed_ack || gap || filled_hole || self.unacked >= 2 {
            return Some(self.make_ack());
        }
        self.ack_deadline.get_or_insert(now + self.cfg.delayed_ack_timeout);
        None
    }

    pub fn next_timeout(&self) -> Option<Time> {
        self.ack_deadline
    }

    /// Fires the delayed-ACK timer (and the agent's); returns an ACK to send now, if any.
    pub fn on_timeout(&mut self, now: Time) -> Option<AckFrame> {
        if self.agent.is_some() {
            return self.on_timeout_with_agent(now);
        }
        match self.ack_deadline {
            Some(t) if t <= now && self.unacked > 0 => Some(self.make_ack()),
            _ => None,
        }
    }

    fn make_ack(&mut self) -> AckFrame {
        self.unacked = 0;
        self.ack_deadline = None;
        let mut ack = AckFrame { stream_cum: self.stream_cum, one_way_delay: self.last_owd, ..Default::default() };
        for (i, r) in self.ids.iter().rev().take(ACK_RANGES).enumerate() {
            ack.ranges[i] = *r;
            ack.n_ranges += 1;
        }
        ack.largest = self.ids.last().map_or(0, |r| r.1 - 1);
        ack
    }

    /// `on_data`'s tail for a receiver with an agent: the same ACK policy, the agent told of the
    /// packet first.
    #[cold]
    #[inline(never)]
    fn on_data_with_agent(&mut self, now: Time, pkt: &DataPacket, urgent: bool) -> Option<AckFrame> {
        if let Some(agent) = self.agent.as_mut() {
            agent.on_data(now, &ReceivedPacket { id: pkt.id, bytes: pkt.len as u64, sent: pkt.sent });
        }
        let ack = if !self.cfg.delayed_ack || urgent || self.unacked >= 2 {
            Some(self.agent_ack(now))
        } else {
            self.delack_deadline.get_or_insert(now + self.cfg.delayed_ack_timeout);
            None
        };
        self.merge_deadlines();
        ack
    }

    /// `on_timeout` for a receiver with an agent: a due delayed ACK, or an ACK the agent asks
    /// for to carry fresh feedback even though no data is unacknowledged (Sprout's heartbeat).
    #[cold]
    #[inline(never)]
    fn on_timeout_with_agent(&mut self, now: Time) -> Option<AckFrame> {
        let agent_wants_ack = match self.agent.as_mut() {
            Some(agent) if agent.next_timer().is_some_and(|t| t <= now) => agent.on_timer(now),
            _ => false,
        };
        let delack_due = self.delack_deadline.is_some_and(|t| t <= now) && self.unacked > 0;
        let ack = (delack_due || agent_wants_ack).then(|| self.agent_ack(now));
        self.merge_deadlines();
        ack
    }

    /// An ACK carrying the agent's feedback.
    fn agent_ack(&mut self, now: Time) -> AckFrame {
        let mut ack = self.make_ack();
        self.delack_deadline = None;
        ack.feedback = FeedbackSlot::new(self.agent.as_mut().and_then(|agent| agent.feedback(now)));
        ack
    }

    /// `ack_deadline` = the earlier of the delayed-ACK deadline and the agent's timer.
    fn merge_deadlines(&mut self) {
        let agent_timer = self.agent.as_ref().and_then(|agent| agent.next_timer());
        self.ack_deadline = match (self.delack_deadline, agent_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// Returns true when the id leaves a gap (a packet was lost or reordered before it).
    fn record_id(&mut self, id: u64) -> bool {
        match self.ids.last_mut() {
            Some(r) if r.1 == id => {
                r.1 += 1;
                false
            }
            Some(r) if id < r.1 => {
                // Reordered: rare on FIFO paths; merge into an older range if adjacent.
                for r in self.ids.iter_mut() {
                    if r.0 == id + 1 {
                        r.0 = id;
                        return true;
                    }
                    if r.1 == id {
                        r.1 += 1;
                        return true;
                    }
                }
                true
            }
            last => {
                let gap = last.is_some() || id > 0;
                self.ids.push((id, id + 1));
                if self.ids.len() > ACK_RANGES {
                    self.ids.remove(0);
                }
                gap
            }
        }
    }

    /// Returns true when the bytes filled (part of) a hole below the highest byte received.
    fn record_stream(&mut self, start: u64, end: u64) -> bool {
        if end <= self.stream_cum {
            return true;
        }
        if start <= self.stream_cum && self.holes_above.is_empty() {
            self.stream_cum = end;
            return false;
        }
        let highest = self.holes_above.last().map_or(self.stream_cum, |r| r.1);
        let filled = start < highest;
        // Insert [start, end) into the sorted, disjoint out-of-order ranges, then advance the
        // cumulative point over whatever became contiguous.
        let pos = self.holes_above.partition_point(|r| r.1 < start);
        let mut new = (start.max(self.stream_cum), end);
        while pos < self.holes_above.len() && self.holes_above[pos].0 <= new.1 {
            let r = self.holes_above.remove(pos);
            new = (new.0.min(r.0), new.1.max(r.1));
        }
        self.holes_above.insert(pos, new);
        while let Some(&(s, e)) = self.holes_above.first() {
            if s > self.stream_cum {
                break;
            }
            self.stream_cum = self.stream_cum.max(e);
            self.holes_above.remove(0);
        }
        filled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u64, offset: u64) -> DataPacket {
        DataPacket { id, offset, len: 1000, sent: 0, retransmission: false }
    }

    #[test]
    fn acks_ranges_and_stream_with_a_loss_and_repair() {
        let mut r = Receiver::new(ReceiverConfig::default());
        r.on_data(1, &pkt(0, 0)).unwrap();
        r.on_data(2, &pkt(1, 1000)).unwrap();
        // id 2 (offset 2000) lost; ids 3, 4 carry offsets 3000, 4000.
        let a = r.on_data(3, &pkt(3, 3000)).unwrap();
        assert_eq!(a.ranges(), &[(3, 4), (0, 2)]);
        assert_eq!(a.stream_cum, 2000);
        let a = r.on_data(4, &pkt(4, 4000)).unwrap();
        assert_eq!((a.largest, a.ranges()[0]), (4, (3, 5)));
        // The retransmission of offset 2000 arrives with a fresh id 5.
        let a = r.on_data(5, &pkt(5, 2000)).unwrap();
        assert_eq!(a.stream_cum, 5000);
        assert_eq!(a.ranges(), &[(3, 6), (0, 2)]);
    }

    #[test]
    fn delayed_ack_every_second_packet_or_timer() {
        let mut r = Receiver::new(ReceiverConfig { delayed_ack: true, ..Default::default() });
        assert!(r.on_data(10, &pkt(0, 0)).is_none());
        assert_eq!(r.next_timeout(), Some(10 + 40_000_000));
        assert!(r.on_data(20, &pkt(1, 1000)).is_some(), "every second packet is acked");
        assert!(r.on_data(30, &pkt(2, 2000)).is_none());
        assert!(r.on_data(40, &pkt(3, 3000)).is_some());
        assert!(r.on_data(50, &pkt(5, 4000)).is_some(), "a gap in ids is acked at once");
        assert!(r.on_data(60, &pkt(6, 5000)).is_none());
        assert!(r.on_timeout(39_000_000).is_none());
        let a = r.on_timeout(60 + 40_000_000).unwrap();
        assert_eq!(a.largest, 6);
    }
}

#[cfg(test)]
mod agent_tests {
    use super::*;
    use cclab_cc::FEEDBACK_BYTES;

    /// Counts packets, feeds the count back, and wants a heartbeat ACK every 100 ns.
    #[derive(Debug, Default)]
    struct Counter {
        packets: u8,
        next: Time,
    }

    impl ReceiverAgent for Counter {
        fn name(&self) -> &'static str {
            "counter"
        }
        fn on_data(&mut self, _now: Time, _pkt: &ReceivedPacket) {
            self.packets += 1;
        }
        fn next_timer(&self) -> Option<Time> {
            Some(self.next)
        }
        fn on_timer(&mut self, now: Time) -> bool {
            self.next = now + 100;
            true
        }
        fn feedback(&mut self, now: Time) -> Option<[u8; FEEDBACK_BYTES]> {
            self.next = now + 100;
            Some([self.packets, 0, 0, 0, 0, 0])
        }
    }

    fn pkt(id: u64) -> DataPacket {
        DataPacket { id, offset: id * 1000, len: 1000, sent: 0, retransmission: false }
    }

    #[test]
    fn feedback_rides_on_acks_and_the_agent_timer_sends_a_heartbeat() {
        let agent: Box<dyn ReceiverAgent> = Box::new(Counter { packets: 0, next: 100 });
        let mut r = Receiver::new(ReceiverConfig::default()).with_agent(Some(agent));
        assert_eq!(r.next_timeout(), Some(100));
        let a = r.on_data(10, &pkt(0)).unwrap();
        assert_eq!(a.feedback.get(), Some([1, 0, 0, 0, 0, 0]));
        assert_eq!(r.next_timeout(), Some(110), "each ACK pushes the heartbeat back");
        assert!(r.on_timeout(50).is_none());
        let hb = r.on_timeout(110).expect("a feedback-only ACK");
        assert_eq!((hb.largest, hb.feedback.get()), (0, Some([1, 0, 0, 0, 0, 0])));
        assert_eq!(r.next_timeout(), Some(210));
        // Without an agent, ACKs carry nothing.
        let mut plain = Receiver::new(ReceiverConfig::default());
        assert_eq!(plain.on_data(10, &pkt(0)).unwrap().feedback.get(), None);
    }

    #[test]
    fn delayed_acks_and_the_agent_timer_share_one_deadline() {
        let agent: Box<dyn ReceiverAgent> = Box::new(Counter { packets: 0, next: 1_000_000_000 });
        let cfg = ReceiverConfig { delayed_ack: true, delayed_ack_timeout: 40 };
        let mut r = Receiver::new(cfg).with_agent(Some(agent));
        assert!(r.on_data(10, &pkt(0)).is_none(), "the first packet waits for a second");
        assert_eq!(r.next_timeout(), Some(50), "the delayed-ACK deadline comes before the agent's");
        let a = r.on_timeout(50).expect("the delayed ACK");
        assert_eq!(a.feedback.get(), Some([1, 0, 0, 0, 0, 0]));
        assert_eq!(r.next_timeout(), Some(150), "then only the agent's timer");
    }
}
