//! Proportional Rate Reduction (RFC 6937) as Linux runs it during fast recovery for modules
//! without their own cong_control (net/ipv4/tcp_input.c: tcp_init_cwnd_reduction at the start of
//! recovery, tcp_cwnd_reduction on every ACK, tcp_end_cwnd_reduction at its end).
//!
//! Instead of stopping until the flight drains below the reduced window and then sending one
//! packet per ACK (or bursting up to it after heavy losses), the sender sends in proportion to
//! what is delivered: while the flight is above ssthresh, ⌈prr_delivered·ssthresh/prior_cwnd⌉
//! − prr_out packets; below it, PRR-SSRB's slow start back toward ssthresh, at most one more
//! than was delivered. All counts are in packets, as Linux's.

/// One recovery's reduction state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prr {
    /// The window when recovery began, packets (tp->prior_cwnd).
    prior_cwnd: u64,
    /// Packets delivered (acked or SACKed) since recovery began (tp->prr_delivered).
    delivered: u64,
    /// Packets sent since recovery began (tp->prr_out).
    out: u64,
    /// The window PRR last set, packets in flight plus sndcnt (tp->snd_cwnd).
    cwnd: u64,
}

impl Prr {
    /// tcp_init_cwnd_reduction: the window stays at `prior_cwnd` until the first update.
    pub(crate) fn new(prior_cwnd: u64) -> Prr {
        let prior_cwnd = prior_cwnd.max(1);
        Prr { prior_cwnd, delivered: 0, out: 0, cwnd: prior_cwnd }
    }

    /// The window in packets: sending is allowed while the packets in flight are below it.
    pub(crate) fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// A packet left during recovery (tcp_write_xmit and tcp_xmit_retransmit_queue count them).
    pub(crate) fn on_sent(&mut self) {
        self.out += 1;
    }

    /// tcp_cwnd_reduction: `delivered` packets newly acked or SACKed by this ACK, whether it
    /// also found packets lost, whether the cumulative ACK advanced, the packets now in flight
    /// and the reduced window (ssthresh) in packets.
    pub(crate) fn on_ack(
        &mut self,
        delivered: u64,
        newly_lost: bool,
        una_advanced: bool,
        in_flight: u64,
        ssthresh: u64,
    ) {
        if delivered == 0 {
            return;
        }
        self.delivered += delivered;
        let sndcnt = if in_flight > ssthresh {
            // Proportional part: ceil(ssthresh · prr_delivered / prior_cwnd) − prr_out.
            (ssthresh * self.delivered).div_ceil(self.prior_cwnd) as i64 - self.out as i64
        } else {
            // Slow-start reduction bound (PRR-SSRB): catch up what was delivered and not yet
            // sent, one more on a cumulative ACK that found no new loss, never past ssthresh.
            let delta = (ssthresh - in_flight) as i64;
            let mut n = (self.delivered as i64 - self.out as i64).max(delivered as i64);
            if una_advanced && !newly_lost {
                n += 1;
            }
            n.min(delta)
        };
        // "Force a fast retransmit upon entering fast recovery".
        let sndcnt = sndcnt.max(if self.out > 0 { 0 } else { 1 });
        self.cwnd = in_flight + sndcnt as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::Prr;

    #[test]
    fn above_ssthresh_it_sends_ssthresh_over_prior_cwnd_per_packet_delivered() {
        // RFC 6937 §3: "sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out" while
        // pipe > ssthresh; its example: a window of 20 halved to 10 with one loss sends one
        // segment per two ACKs (the first at once, the fast retransmit) until pipe reaches
        // ssthresh, then one per ACK, instead of a cut's silence for the first half window.
        let mut p = Prr::new(20);
        let mut in_flight = 19;
        let mut sent = Vec::new();
        for _ in 0..20 {
            in_flight -= 1;
            p.on_ack(1, false, true, in_flight, 10);
            let mut n = 0;
            while in_flight < p.cwnd() {
                p.on_sent();
                in_flight += 1;
                n += 1;
            }
            sent.push(n);
        }
        let mut want = [1, 0].repeat(8);
        // At the 17th ACK the flight is at ssthresh (delta 0); from then on one per ACK.
        want.extend([0, 1, 1, 1]);
        assert_eq!(sent, want);
        assert_eq!(in_flight, 10, "the flight ends at ssthresh");
    }

    #[test]
    fn below_ssthresh_it_slow_starts_back_without_a_burst() {
        // RFC 6937 §3 (SSRB): "sndcnt = MIN(ssthresh - pipe, limit)" with limit =
        // MAX(prr_delivered - prr_out, DeliveredData) + MSS; Linux adds the one only when the
        // cumulative ACK advanced and no new loss was found (tcp_cwnd_reduction).
        let mut p = Prr::new(20);
        // Heavy losses: 3 in flight, ssthresh 14. One packet delivered by a SACK: 1 may leave
        // (the forced fast retransmit), not the 11 a plain cut to 14 would burst.
        p.on_ack(1, true, false, 3, 14);
        assert_eq!(p.cwnd(), 4);
        p.on_sent();
        // A cumulative ACK of 2 more with no new loss: max(3 − 1, 2) + 1 = 3.
        p.on_ack(2, false, true, 2, 14);
        assert_eq!(p.cwnd(), 5);
        // Never past ssthresh.
        p.on_ack(10, false, true, 12, 14);
        assert_eq!(p.cwnd(), 14);
    }

    #[test]
    fn an_ack_that_delivers_nothing_changes_nothing() {
        // tcp_cwnd_reduction: "if (newly_acked_sacked <= 0 ...) return;".
        let mut p = Prr::new(10);
        assert_eq!(p.cwnd(), 10, "tcp_init_cwnd_reduction leaves snd_cwnd as it was");
        p.on_ack(0, false, false, 5, 7);
        assert_eq!(p.cwnd(), 10);
    }
}
