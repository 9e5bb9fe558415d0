//! The connection's opening exchange, as the active opener (the data sender) sees it: a SYN
//! goes out, the SYN-ACK that answers it is the connection's first RTT sample.
//!
//! Linux: tcp_rcv_synsent_state_process hands the SYN-ACK to tcp_ack, whose tcp_clean_rtx_queue
//! acknowledges the SYN (FLAG_SYN_ACKED) and tcp_ack_update_rtt takes the sample into
//! tcp_update_rtt_min, tcp_rtt_estimator and tcp_set_rto (net/ipv4/tcp_input.c); only then
//! does tcp_finish_connect → tcp_init_transfer run the congestion control's init, which for BBR
//! reads that min-RTT and srtt. A retransmitted SYN is still timed: with timestamps (on by
//! default) tcp_ack_update_rtt falls back to "seq_rtt_us = ca_rtt_us = tcp_rtt_tsopt_us(tp)",
//! the echo of the SYN the SYN-ACK answered, which is what the engines carry back here.
//!
//! The engines carry the two packets through the same queues as data and ACKs, so the sample
//! includes the queueing a flow meets when it starts.

use cclab_cc::Time;
use cclab_core::time::SEC;

/// Wire bytes of a SYN and of a SYN-ACK: 20 (IP) + 20 (TCP) + 20 bytes of options (MSS 4,
/// SACK-permitted and timestamps 12, NOP + window scale 4), as Linux sends them.
pub const SYN_BYTES: u64 = 60;

/// TCP_TIMEOUT_INIT (include/net/tcp.h): the SYN's first retransmission timeout.
const SYN_RTO_INIT: Time = SEC;

/// net.ipv4.tcp_syn_retries' default (include/net/tcp.h TCP_SYN_RETRIES): SYNs retransmitted
/// before connect() fails (after 1+2+…+64 = 127 s).
const SYN_RETRIES: u32 = 6;

/// The SYN_SENT state: when the next SYN leaves and when the one in flight times out.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Handshake {
    /// When a SYN is due to be sent; None while one is in flight.
    due: Option<Time>,
    /// When the SYN in flight times out.
    deadline: Time,
    /// SYNs retransmitted so far (icsk_retransmits).
    retries: u32,
    rto_max: Time,
    /// Out of retries: the connection failed and sends nothing (connect() returns ETIMEDOUT).
    failed: bool,
}

impl Handshake {
    pub(crate) fn new(now: Time, rto_max: Time) -> Self {
        Handshake { due: Some(now), deadline: Time::MAX, retries: 0, rto_max, failed: false }
    }

    /// A SYN to send at `now`, if one is due: its send time, which the SYN-ACK echoes.
    pub(crate) fn poll(&mut self, now: Time) -> Option<Time> {
        if self.failed || self.due.is_none_or(|t| t > now) {
            return None;
        }
        self.due = None;
        // tcp_retransmit_timer in SYN_SENT doubles icsk_rto per retry, capped at TCP_RTO_MAX.
        let rto = SYN_RTO_INIT.saturating_mul(1 << self.retries.min(32)).min(self.rto_max);
        self.deadline = now + rto;
        Some(now)
    }

    pub(crate) fn next_timeout(&self) -> Option<Time> {
        if self.failed {
            return None;
        }
        Some(self.due.unwrap_or(self.deadline))
    }

    pub(crate) fn on_timeout(&mut self, now: Time) {
        if self.failed || self.due.is_some() || self.deadline > now {
            return;
        }
        if self.retries == SYN_RETRIES {
            self.failed = true;
            return;
        }
        self.retries += 1;
        self.due = Some(now);
    }

    pub(crate) fn retries(&self) -> u32 {
        self.retries
    }
}
