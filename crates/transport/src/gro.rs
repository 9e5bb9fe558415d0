//! The receiving NIC's generic receive offload (GRO): segments of one TCP flow that reach the
//! host together are handed to its TCP as one skb (net/ipv4/tcp_offload.c, tcp_gro_receive),
//! so the receiver counts one arrival and makes one choice whether to acknowledge them —
//! two or more full segments are "more than one full frame", acknowledged at once by a single
//! ACK, and in quick-ACK mode the run spends one quick ACK, not one per segment.
//!
//! The emulator's path thread merges the segments of a kernel flow that leave its link
//! together into one GSO write to the receiving TUN device under the same rules (crates/emu,
//! packet.rs `can_follow`); on a link whose deliveries come in bunches (a cellular trace, where
//! several packets leave in the same millisecond) the kernel's receiver therefore sees runs.
//! The simulator merges what reaches a receiver at the same instant, as the emulator's turn
//! does at tolerance 0 (crates/sim, engine.rs).

use crate::{DataPacket, DATA_HEADER};
use cclab_cc::Time;
use cclab_core::time::MS;

/// The largest IP packet GRO builds (GRO_LEGACY_MAX_SIZE; the emulator's MAX_MERGED).
const MAX_MERGED: u64 = 65_535;

/// Whether segment `next` joins the run that `head` begins and `last` ends, `payload` bytes so
/// far, as tcp_gro_receive decides: the run is flushed by a PSH, a segment shorter than the
/// head's (its gso_size) ends it, `next` continues the sequence space, the merged packet stays
/// within 64 KiB, and the TCP options are identical — for Linux's segments the timestamp
/// option, whose value is the sender's clock in milliseconds (tcp_time_stamp_ms), so segments
/// sent in different ticks of that clock never merge. `ts_phase`: where the sender's clock
/// ticks against the run's (its ticks at ts_phase + k ms).
pub fn can_follow(head: &DataPacket, last: &DataPacket, payload: u64, next: &DataPacket, ts_phase: Time) -> bool {
    let tsval = |p: &DataPacket| (p.sent + MS - ts_phase) / MS;
    !last.push
        && last.len == head.len
        && next.len <= head.len
        && next.offset == last.offset + last.len as u64
        && DATA_HEADER + payload + next.len as u64 <= MAX_MERGED
        && tsval(next) == tsval(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(i: u64, sent: u64) -> DataPacket {
        DataPacket { id: i, offset: i * 1448, len: 1448, sent, retransmission: false, push: false }
    }

    #[test]
    fn runs_follow_tcp_gro_receive() {
        let (a, b) = (seg(0, 5 * MS), seg(1, 5 * MS + 300_000));
        assert!(can_follow(&a, &a, 1448, &b, 0), "in sequence, same millisecond");
        // A gap in the sequence, a different timestamp, a PSH before it: each flushes.
        assert!(!can_follow(&a, &a, 1448, &seg(2, 5 * MS), 0));
        assert!(!can_follow(&a, &a, 1448, &seg(1, 6 * MS), 0));
        assert!(!can_follow(&a, &DataPacket { push: true, ..a }, 1448, &b, 0));
        // The sender's clock ticks where its phase says: at 5.2 ms the two differ.
        assert!(!can_follow(&a, &a, 1448, &b, 200_000));
        assert!(can_follow(&a, &a, 1448, &b, 400_000));
        // A short segment may end a run but not continue one.
        let short = DataPacket { len: 500, ..b };
        assert!(can_follow(&a, &a, 1448, &short, 0));
        assert!(!can_follow(&a, &short, 1948, &DataPacket { offset: 1948, ..seg(2, 5 * MS) }, 0));
        // 45 full segments fit in 64 KiB with their headers, a 46th does not.
        assert!(can_follow(&a, &seg(43, 5 * MS), 44 * 1448, &seg(44, 5 * MS), 0));
        assert!(!can_follow(&a, &seg(44, 5 * MS), 45 * 1448, &seg(45, 5 * MS), 0));
    }
}
