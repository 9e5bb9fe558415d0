//! When Linux's receiver acknowledges out-of-order data: SACK compression (since 4.18, commit
//! 5d9f4262b7ea, "tcp: add SACK compression"; after three dup-ACKs since 86de5921a3d5, "tcp:
//! defer SACK compression after DupThresh"; the two-block flush since 5.8;
//! net/ipv4/tcp_input.c, __tcp_ack_snd_check and tcp_sack_new_ofo_skb).
//!
//! While the out-of-order queue holds data, the first three ACKs for each rcv_nxt go at once
//! (what a sender counting dup-ACKs needs); after that each out-of-order arrival is only
//! counted, and one ACK carries them all when the compression timer fires — min(1 ms, rtt/20)
//! after the first — or when 44 have waited (net.ipv4.tcp_comp_sack_nr), or when a segment
//! lands in a SACK block beyond the two most recently changed (the sender would not see it for
//! a while: an ACK holds three or four blocks, most recent first).

use cclab_cc::Time;
use cclab_core::time::MS;

/// net.ipv4.tcp_comp_sack_nr: out-of-order arrivals that may wait for one ACK.
const COMP_SACK_NR: u32 = 44;
/// net.ipv4.tcp_comp_sack_delay_ns: the compression timer's ceiling.
const COMP_SACK_DELAY: Time = MS;
/// TCP_FASTRETRANS_THRESH: ACKs per rcv_nxt sent at once before compression starts.
const FASTRETRANS_THRESH: u32 = 3;
/// TCP_NUM_SACKS: the blocks the receiver remembers (tp->selective_acks).
const NUM_SACKS: usize = 4;
/// TCP_SACK_BLOCKS_EXPECTED: the blocks an ACK is sure to carry to the sender.
const SACK_BLOCKS_EXPECTED: usize = 2;

/// Linux's tp->selective_acks: the out-of-order ranges [start, end) of the stream, most
/// recently changed first, at most four.
#[derive(Clone, Copy, Debug, Default)]
struct SackBlocks {
    blocks: [(u64, u64); NUM_SACKS],
    n: usize,
}

impl SackBlocks {
    /// tcp_sack_new_ofo_skb for a segment [start, end) that went to the out-of-order queue;
    /// returns the index it landed at before it moved to the front (the number of blocks when
    /// it starts a new one).
    fn add(&mut self, start: u64, end: u64) -> usize {
        let b = &mut self.blocks;
        // tcp_sack_extend: the first block (most recent first) the segment touches grows.
        if let Some(i) = b[..self.n].iter().position(|&(s, e)| s <= end && start <= e) {
            b[i] = (b[i].0.min(start), b[i].1.max(end));
            b[..=i].rotate_right(1);
            self.coalesce();
            return i;
        }
        // A new block at the front; the oldest is forgotten when all four are in use.
        let index = self.n;
        self.n = (self.n + 1).min(NUM_SACKS);
        b[..self.n].rotate_right(1);
        b[0] = (start, end);
        index
    }

    /// tcp_sack_maybe_coalesce: the front block absorbs any other it now touches.
    fn coalesce(&mut self) {
        let mut i = 1;
        while i < self.n {
            let (s, e) = self.blocks[i];
            let front = &mut self.blocks[0];
            if s <= front.1 && front.0 <= e {
                *front = (front.0.min(s), front.1.max(e));
                self.blocks[i..self.n].rotate_left(1);
                self.n -= 1;
            } else {
                i += 1;
            }
        }
    }

    /// tcp_sack_remove: blocks that rcv_nxt has reached are delivered.
    fn remove_below(&mut self, rcv_nxt: u64) {
        let mut kept = 0;
        for i in 0..self.n {
            if self.blocks[i].0 > rcv_nxt {
                self.blocks[kept] = self.blocks[i];
                kept += 1;
            }
        }
        self.n = kept;
    }
}

/// The compression state (tp->compressed_ack, dup_ack_counter, compressed_ack_rcv_nxt and
/// the compressed_ack_timer) with the SACK blocks that can cut it short.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SackCompression {
    /// net.ipv4.tcp_comp_sack_nr > 0 (`[transport] sack_compression`).
    enabled: bool,
    blocks: SackBlocks,
    /// Out-of-order arrivals waiting for the next ACK.
    compressed: u32,
    /// ACKs sent at once for `dup_rcv_nxt`.
    dup_acks: u32,
    dup_rcv_nxt: u64,
    /// When the compression timer fires, if armed.
    pub(crate) deadline: Option<Time>,
}

impl SackCompression {
    pub(crate) fn new(enabled: bool) -> Self {
        SackCompression { enabled, ..Default::default() }
    }

    /// An out-of-order segment [start, end) was queued; `first` when the queue was empty
    /// before it (tcp_data_queue_ofo then starts the list afresh). True when the ACK that is
    /// waiting must go now, before the segment counts (tcp_sack_compress_send_ack).
    pub(crate) fn out_of_order(&mut self, start: u64, end: u64, first: bool) -> bool {
        if !self.enabled {
            return false;
        }
        if first {
            self.blocks = SackBlocks::default();
        }
        self.blocks.add(start, end) >= SACK_BLOCKS_EXPECTED && self.compressed > 0
    }

    /// rcv_nxt advanced to `rcv_nxt` over in-order data.
    pub(crate) fn delivered(&mut self, rcv_nxt: u64) {
        self.blocks.remove_below(rcv_nxt);
    }

    /// __tcp_ack_snd_check with data in the out-of-order queue and no other reason to
    /// acknowledge: true to send now; false counts the arrival and arms the timer. `srtt` is
    /// the receiver's RTT (from its handshake), which scales the timer.
    pub(crate) fn ack_now(&mut self, now: Time, rcv_nxt: u64, srtt: Option<Time>) -> bool {
        if !self.enabled || self.compressed >= COMP_SACK_NR {
            return true;
        }
        if self.dup_rcv_nxt != rcv_nxt {
            self.dup_rcv_nxt = rcv_nxt;
            self.dup_acks = 0;
        }
        if self.dup_acks < FASTRETRANS_THRESH {
            self.dup_acks += 1;
            return true;
        }
        self.compressed += 1;
        if self.deadline.is_none() {
            // "compress ack timer : 5 % of rtt, but no more than tcp_comp_sack_delay_ns".
            // Linux takes the smaller of its receive-side RTT estimate and srtt; a receiver's
            // srtt is its handshake sample, which the receive-side estimate (a data round trip,
            // queueing included) does not undercut. Without a handshake, the ceiling.
            let delay = srtt.map_or(COMP_SACK_DELAY, |rtt| (rtt / 20).min(COMP_SACK_DELAY));
            self.deadline = Some(now + delay);
        }
        false
    }

    /// tcp_event_ack_sent: an ACK left, carrying whatever was waiting.
    pub(crate) fn ack_sent(&mut self) {
        self.compressed = 0;
        self.deadline = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_the_most_recent_first_and_at_most_four() {
        let mut b = SackBlocks::default();
        assert_eq!(b.add(10, 20), 0);
        assert_eq!(b.add(20, 30), 0, "extends the front block");
        assert_eq!(b.add(40, 50), 1, "a new block: one existed");
        assert_eq!(b.add(60, 70), 2);
        assert_eq!(b.add(80, 90), 3);
        assert_eq!(b.add(100, 110), 4, "a fifth: the oldest, [10, 30), is forgotten");
        assert_eq!(&b.blocks[..b.n], &[(100, 110), (80, 90), (60, 70), (40, 50)]);
        // A segment between two blocks joins them; the joined block moves to the front.
        assert_eq!(b.add(70, 80), 1, "touches [80, 90) first, at index 1");
        assert_eq!(&b.blocks[..b.n], &[(60, 90), (100, 110), (40, 50)]);
        b.remove_below(55);
        assert_eq!(&b.blocks[..b.n], &[(60, 90), (100, 110)]);
    }

    #[test]
    fn three_acks_at_once_per_rcv_nxt_then_compressed() {
        let mut c = SackCompression::new(true);
        for _ in 0..3 {
            assert!(c.ack_now(0, 1000, Some(100 * MS)));
        }
        assert!(!c.ack_now(5, 1000, Some(100 * MS)));
        assert_eq!(c.deadline, Some(5 + MS), "min(1 ms, 100 ms / 20)");
        assert!(!c.ack_now(6, 1000, Some(100 * MS)));
        assert_eq!(c.deadline, Some(5 + MS), "the timer is not pushed back");
        c.ack_sent();
        assert_eq!(c.deadline, None);
        assert!(!c.ack_now(7, 1000, Some(10 * MS)), "sending does not restore the three");
        assert_eq!(c.deadline, Some(7 + MS / 2), "10 ms / 20");
        assert!(c.ack_now(8, 2000, None), "a new rcv_nxt: three at once again");
        // At most 44 wait; the 45th goes at once.
        let mut c = SackCompression::new(true);
        let waited = (0..60).take_while(|&t| !c.ack_now(t, 0, None) || t < 3).count();
        assert_eq!(waited, 3 + 44);
        // Disabled: every one at once, no flush ever due.
        let mut c = SackCompression::new(false);
        assert!((0..10).all(|t| c.ack_now(t, 0, None)));
        assert!(!c.out_of_order(0, 10, true));
    }
}
