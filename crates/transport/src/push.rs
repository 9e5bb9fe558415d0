//! Where a Linux sender sets PSH (`[transport] push_ack`): the segments its receiver may
//! acknowledge alone once the application has read them (the receiver's half is in
//! `receiver.rs`).
//!
//! Linux marks PSH on the tail skb of the write queue at the end of every sendmsg (tcp_push
//! → tcp_mark_push, net/ipv4/tcp.c, unless MSG_MORE), and GSO/TSO puts it on that skb's last
//! segment. A bulk application that writes whatever the send buffer takes (the emulator's
//! sender, crates/emu/src/kernel_tcp.rs; iperf blocked in write() alike) writes each time an
//! ACK frees space, so its writes are the sizes of the cumulative ACK's advances, appended
//! at the send buffer's tail. sendmsg fills the tail skb before it starts another, and the
//! PSH of an earlier write stays on the skb as it fills, so a mark lands on the end of the
//! skb that holds a write's last byte. The skbs here are two segments: the spacing measured
//! on the wire at a few Mbit/s (below). Linux's sendmsg sizes an skb by tcp_xmit_size_goal
//! (the device's GSO size bounded by half the peer's largest window) and tcp_tso_autosize
//! splits it at transmission (1 ms of the pacing rate, two segments at least), so what keeps
//! the kernel's marks two segments apart at these rates, and three apart in 13 % of cases in
//! the 8-BDP mix (FIDELITY.md), is not pinned down here. Faster flows' marks are rarer, and
//! that is not modelled yet: one kernel
//! Cubic flow through 100 Mbit/s × 20 ms (`--engine emu --pcap`, 6 s) sends 9-segment skbs
//! (TSO deferral holds a partial one back), PSH on every ninth segment, and 18 % of its
//! receiver's advancing ACKs acknowledge one segment (the PSH one, after a pair), where the
//! simulator's flow sends ACK-clocked pairs and 4 of 37,044 ACKs acknowledge one.
//!
//! Measured (kernel Reno, Nepal path, 30 s, `--pcap`): PSH on 27 % of the segments,
//! 2 to 3 segments apart (163 and 97 of 338 gaps), never 1.
use std::collections::VecDeque;

/// Segments per skb: tcp_tso_autosize's floor (tcp_min_tso_segs, 2).
const SKB_SEGS: u64 = 2;

/// The application's writes and the PSH marks they leave.
#[derive(Debug, Default)]
pub(crate) struct Writes {
    /// Bytes per skb (size_goal).
    skb: u64,
    /// Stream offset one past the application's last write (the write queue's tail).
    written: u64,
    /// Stream offsets that end a PSH-marked skb, ascending, from the first one not sent yet
    /// (a segment sent again carries the flag it was first sent with): the first in `next`
    /// (NONE when there is none), the rest in `later`. Kept apart because every segment sent
    /// asks for the first and every write for the last: at thousands of flows a look into the
    /// queue's buffer is a cache miss (CoreScale).
    next: u64,
    later: VecDeque<u64>,
    /// The newest mark (0 before the first: every mark is past offset 0).
    last: u64,
}

const NONE: u64 = u64::MAX;

impl Writes {
    pub(crate) fn new(mss: u64) -> Writes {
        Writes { skb: SKB_SEGS * mss, next: NONE, ..Default::default() }
    }

    /// The application writes `bytes` more at the tail; `limit` is the end of the data it
    /// has (a message's last byte; u64::MAX for a bulk flow), where a mark stays exact.
    pub(crate) fn write(&mut self, bytes: u64, limit: u64) {
        if bytes == 0 {
            return;
        }
        self.written += bytes;
        let mark = self.written.div_ceil(self.skb).saturating_mul(self.skb).min(limit);
        if self.last < mark {
            self.last = mark;
            if self.next == NONE {
                self.next = mark;
            } else {
                self.later.push_back(mark);
            }
        }
    }

    /// The application keeps at least this much written (a bulk writer filling its send
    /// buffer, which Linux autotunes to a few windows: tcp_sndbuf_expand).
    pub(crate) fn fill_to(&mut self, offset: u64, limit: u64) {
        if offset > self.written {
            self.write(offset - self.written, limit);
        }
    }

    /// Whether new data `[offset, offset + len)`, sent in stream order, carries PSH: it ends
    /// a marked skb. Marks it has passed are forgotten.
    pub(crate) fn take(&mut self, offset: u64, len: u64) -> bool {
        while self.next <= offset {
            self.next = self.later.pop_front().unwrap_or(NONE);
        }
        self.next <= offset + len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn pushed(w: &mut Writes, segs: u64) -> Vec<u64> {
        (0..segs).filter(|&i| w.take(i * MSS, MSS)).collect()
    }

    #[test]
    fn a_mark_ends_the_skb_holding_the_writes_last_byte() {
        let mut w = Writes::new(MSS);
        w.write(2 * MSS, u64::MAX); // one full skb: PSH on its second segment
        w.write(MSS, u64::MAX); // half an skb: PSH where the skb will end
        w.write(MSS, u64::MAX); // fills it: the same mark
        w.write(3 * MSS, u64::MAX); // ends mid-skb: PSH on the skb's end, segment 7, which the
                                    // next write fills
        assert_eq!(pushed(&mut w, 10), vec![1, 3, 7]);
        assert_eq!(w.written, 7 * MSS);
        assert!(w.next == NONE && w.later.is_empty(), "every mark sent is forgotten");
    }

    #[test]
    fn a_message_end_is_marked_exactly() {
        let mut w = Writes::new(MSS);
        w.write(2500, 2500);
        assert!(!w.take(0, 1000));
        assert!(!w.take(1000, 1000));
        assert!(w.take(2000, 500), "the message's last, short segment");
        w.fill_to(2 * MSS, u64::MAX); // nothing: already written
        assert_eq!(w.written, 2500);
        w.write(500, u64::MAX); // fills the skb the message ended in: its mark is at the skb's end
        assert!(!w.take(2500, 500));
    }
}
