//! How a Linux receiver grows its receive window (net/ipv4/tcp_input.c: tcp_grow_window,
//! tcp_rcv_space_adjust and tcp_rcvbuf_grow, tcp_rcv_rtt_measure_ts), and the one thing of it
//! the sender sees in every slow start: **each segment that grows the window is acknowledged
//! at once.** tcp_grow_window ends in `inet_csk(sk)->icsk_ack.quick |= 1`, so while the
//! window grows the receiver stays in quick-ACK mode and ACKs segment by segment, where the 16
//! quick ACKs of the connection's start alone would have it ACK every other segment from the
//! 17th on.
//!
//! The window (tp->rcv_ssthresh, the most it advertises) starts at the handshake's 45
//! segments and grows by two segments per arriving segment up to tp->window_clamp, the window
//! its receive buffer holds. The buffer starts at tcp_rmem[1] (128 KiB: a clamp of 56
//! segments at the scaling ratio) and autotunes (dynamic right-sizing): once per receiver RTT
//! the application's read finds how much it read in the last one, less what still waits
//! unread, and when that grew the buffer is set to hold twice it plus twice the growth again
//! ("slow start: allow the sender to double its rate"), at most tcp_rmem[2]; out-of-order
//! data raises it to hold twice the last read and the queue's reach. So each slow-start
//! round raises the clamp and its first segments grow the window into it, one quick ACK
//! each; in steady state the clamp stops moving and the window with it. Measured in the
//! emulator (kernel Cubic, 46 Mbit/s × 20 ms, `cclab run … --pcap`): the window advertised
//! 45 → 56 segments over the first six segments, then 104, 239, 487 over the next rounds,
//! growing two segments per segment, the ACKs one per segment while it grows and 16 more
//! after the first stop (22 in a row at the start), one per two segments otherwise.
//!
//! What the sender is allowed to send stays the flow's ceiling (`rwnd`, or
//! [`cclab_core::scenario::Transport::default_rwnd`]): the window grown here stays ahead of a
//! slow-starting sender's flight (two segments per segment against one), as the capture shows,
//! so only its ACKs are modelled, not its limit.

use cclab_cc::Time;
use cclab_core::scenario::transport::win_from_space;
#[cfg(test)]
use cclab_core::scenario::Transport;
use cclab_core::scenario::MSS;

/// tcp_rmem[1]: the receive buffer a connection starts with.
const RMEM_DEFAULT: u64 = 131_072;
/// TCP_DEFAULT_SCALING_RATIO (half the buffer), which the initial window is computed at
/// before any segment has shown the real ratio.
const INITIAL_SCALING_RATIO: u64 = 128;
/// TCP_INIT_CWND: rcvq_space.space starts at ten segments (tcp_init_buffer_space).
const INIT_SPACE_SEGMENTS: u64 = 10;
/// tcp_grow_window runs for segments of at least 128 bytes (tcp_event_data_recv).
const MIN_GROW_LEN: u64 = 128;

/// The receive window's growth and the buffer's autotuning, for one connection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RcvSpace {
    /// tp->rcv_ssthresh: the most the receiver advertises now.
    ssthresh: u64,
    /// tp->window_clamp: what the receive buffer holds (win_from_space(sk_rcvbuf)).
    clamp: u64,
    /// The clamp's ceiling: win_from_space(tcp_rmem[2]).
    clamp_max: u64,
    /// rcvq_space.space: the bytes read in the last measured RTT (their largest so far).
    space: u64,
    /// rcvq_space.seq and .time: where and when the current measurement began; `None` before
    /// the first segment (tcp_init_buffer_space runs as the connection is established).
    since: Option<(u64, Time)>,
    /// rcv_rtt_est: the receiver's RTT estimate, 0 before a sample.
    rtt: Time,
    /// When the last RTT sample was taken (one per distinct timestamp echo, 1 ms apart).
    sampled_at: Time,
    /// The smallest one-way delay seen: the forward path without its queue.
    min_owd: Time,
}

impl RcvSpace {
    pub(crate) fn new(clamp_max: u64) -> RcvSpace {
        // tcp_select_initial_window: the buffer's window at the default ratio, in whole
        // segments (65160 bytes, the SYN-ACK's window).
        let initial = RMEM_DEFAULT * INITIAL_SCALING_RATIO / 256 / MSS * MSS;
        RcvSpace {
            ssthresh: initial,
            clamp: win_from_space(RMEM_DEFAULT),
            clamp_max,
            space: INIT_SPACE_SEGMENTS * MSS,
            since: None,
            rtt: 0,
            sampled_at: 0,
            min_owd: Time::MAX,
        }
    }

    /// tcp_grow_window for a segment of `len` bytes just queued with `queued` bytes of
    /// received data not yet read (this segment and the out-of-order queue: tcp_space counts
    /// them off the buffer): true if the window grew, which puts the receiver in quick-ACK
    /// mode for its next ACK.
    pub(crate) fn grow(&mut self, len: u64, queued: u64) -> bool {
        if len < MIN_GROW_LEN {
            return false;
        }
        // room = min(window_clamp, tcp_space) − rcv_ssthresh, and tcp_space is the clamp less
        // what waits in the buffer (a segment's truesize holds its length at the ratio).
        let room = self.clamp.saturating_sub(queued).saturating_sub(self.ssthresh);
        if room == 0 {
            return false;
        }
        // "incr = max_t(int, incr, 2 * skb->len); tp->rcv_ssthresh += min(room, incr);" — a
        // full segment in its 2304-byte truesize fits the ratio, so incr is 2·advmss.
        self.ssthresh += room.min((2 * MSS).max(2 * len));
        true
    }

    /// tcp_rcv_rtt_measure_ts for a segment that arrived `owd` after it was sent: the sample
    /// is the time since the receiver sent the ACK the segment echoes, which is the return
    /// path (the handshake's RTT less the forward path's least delay) plus this segment's way
    /// forward, queue included; smoothed by 1/8 (tcp_rcv_rtt_update without win_dep).
    pub(crate) fn measure_rtt(&mut self, now: Time, owd: Time, handshake_rtt: Option<Time>) {
        self.min_owd = self.min_owd.min(owd);
        if self.rtt != 0 && now < self.sampled_at + cclab_core::time::MS {
            return;
        }
        let back = handshake_rtt.map_or(self.min_owd, |r| r.saturating_sub(self.min_owd));
        let sample = (back + owd).max(1);
        self.rtt = if self.rtt == 0 { sample } else { self.rtt - self.rtt / 8 + sample / 8 };
        self.sampled_at = now;
    }

    /// tcp_rcv_space_adjust, as the application's read reaches stream offset `read` at `now`
    /// with `inq` bytes behind it already in order and not read yet: once per receiver RTT, a
    /// read that grew over the last one's raises the buffer and the clamp (tcp_rcvbuf_grow);
    /// `ooo_span` is how far the out-of-order queue reaches beyond the cumulative point, which
    /// the buffer must also hold.
    ///
    /// The application reads skb by skb and Linux measures after each one, counting what
    /// still waits in the queue against what was read ("copied -= inq", since 6.16). When a
    /// retransmission fills a hole, the segment itself is one skb and what it releases from
    /// the out-of-order queue others: the measure that finds an RTT passed runs after the
    /// first, so the released data counts against this measure and towards the next.
    /// Traced on the kernel here (tcp:tcp_rcvbuf_grow, Nepal's path, seed 2): the fill of
    /// segment 41 released 42–54 and the tracepoint read copied = 26 segments, inq = 13.
    pub(crate) fn on_read(&mut self, now: Time, read: u64, inq: u64, ooo_span: u64) {
        let Some((seq, time)) = self.since else {
            self.since = Some((read, now));
            return;
        };
        if self.rtt == 0 || now < time + self.rtt {
            return;
        }
        let copied = (read - seq).saturating_sub(inq);
        if copied > self.space {
            let old = self.space;
            self.space = copied;
            // "DRS is always one RTT late": twice what was read, plus twice its growth scaled
            // up the same way ("slow start: allow the sender to double its rate").
            let base = 2 * copied as u128;
            let grow = base * (copied - old) as u128 / old as u128;
            let win = u64::try_from(base + 2 * grow).unwrap_or(u64::MAX).saturating_add(ooo_span);
            self.raise_clamp(win);
        }
        self.since = Some((read, now));
    }

    /// tcp_data_queue_ofo's tcp_rcvbuf_grow (since 6.16, "tcp: adjust rcvbuf in presence of
    /// reorders"): after an out-of-order segment the buffer holds twice the last RTT's read
    /// and the out-of-order queue's reach, `ooo_span` bytes beyond the cumulative point.
    pub(crate) fn on_out_of_order(&mut self, ooo_span: u64) {
        self.raise_clamp((2 * self.space).saturating_add(ooo_span));
    }

    /// tcp_space_from_win then tcp_win_from_space: the clamp is the window itself, at most
    /// tcp_rmem[2]'s, and the buffer never shrinks here.
    fn raise_clamp(&mut self, win: u64) {
        self.clamp = self.clamp.max(win.min(self.clamp_max));
    }

    /// The window the receiver may advertise now (tp->rcv_ssthresh), for tests and traces.
    #[cfg(test)]
    pub(crate) fn window(&self) -> u64 {
        self.ssthresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_core::time::{MS, SEC};

    fn fresh() -> RcvSpace {
        RcvSpace::new(Transport::default().default_rwnd())
    }

    #[test]
    fn the_first_segments_grow_the_handshake_window_to_the_buffers_clamp() {
        // tcp_select_initial_window: 65536 bytes at the default ratio, rounded down to whole
        // segments — the 65160 of every Linux SYN-ACK for a 1448-byte MSS. The clamp is the
        // 128 KiB buffer at ratio 160 (81920); each segment adds two segments' worth
        // (tcp_grow_window) with itself counted off the buffer: six segments grow it (the
        // kernel's 22 quick ACKs are these six and the 16 of tcp_incr_quickack).
        let mut s = fresh();
        assert_eq!(s.window(), 65_160);
        let grew = (0..10).take_while(|_| s.grow(MSS, MSS)).count();
        assert_eq!(grew, 6);
        assert_eq!(s.window(), 81_920 - MSS);
        assert!(!s.grow(MSS, MSS), "the clamp reached: no growth, no quick ACK");
        assert!(!fresh().grow(100, 100), "segments under 128 bytes do not grow it");
    }

    #[test]
    fn out_of_order_data_in_the_buffer_holds_the_window_back() {
        let mut s = fresh();
        assert!(!s.grow(MSS, 81_920 - 65_160), "tcp_space: the buffer's free part is the limit");
    }

    #[test]
    fn each_round_of_slow_start_raises_the_clamp_twice_the_read_plus_its_growth() {
        // A 20 ms path, data doubling every round: 10, 20, 40 segments. The first read starts
        // the measure; a round later 20 segments were read against the initial 10:
        // 2·20 + 2·(2·20·(20−10)/10) = 120 segments of window.
        let mut s = fresh();
        let rtt = 20 * MS;
        s.measure_rtt(0, rtt / 2, Some(rtt));
        s.on_read(0, 0, 0, 0);
        s.on_read(rtt - 1, 20 * MSS, 0, 0);
        assert_eq!(s.clamp, 81_920, "not before a receiver RTT has passed");
        s.on_read(rtt, 20 * MSS, 0, 0);
        assert_eq!(s.clamp, 120 * MSS);
        // Steady state: the same read per round leaves the clamp where it is.
        s.on_read(2 * rtt, 40 * MSS, 0, 0);
        assert_eq!(s.clamp, 120 * MSS, "20 read against 20: no growth");
        // And the ceiling holds: win_from_space(tcp_rmem[2]).
        s.on_read(3 * rtt, 40 * MSS + 100_000_000, 0, 0);
        assert_eq!(s.clamp, Transport::default().default_rwnd());
    }

    /// A measure that has waited a receiver RTT: the next read decides it.
    fn measured(space: u64) -> RcvSpace {
        let mut s = fresh();
        s.space = space;
        s.rtt = 200 * MS;
        s.since = Some((0, 0));
        s
    }

    #[test]
    fn the_kernels_traced_measures_give_its_clamps() {
        // Figures of tcp:tcp_rcvbuf_grow on the kernel here (Nepal's path, kernel Cubic), each
        // the state before one measure: `copied` bytes read since it began, `inq` in order
        // and unread, `space` the last one's, `ooo` the out-of-order queue's reach.
        //   seed 3: copied=23168 inq=0 space=14480 ooo=23168; the next one showed
        //   window_clamp=125105 (2·23168 + 4·23168·8688/14480 + 23168 = 125106, less a byte
        //   of rounding through the buffer's size).
        let mut s = measured(14_480);
        s.on_read(SEC, 23_168, 0, 23_168);
        assert_eq!((s.space, s.clamp), (23_168, 125_106));
        //   seed 2: copied=37648 inq=18824 space=14480 ooo=15928 — a hole filled, 13
        //   segments released behind the filling one: 18824 counts, below the clamp's
        //   reach (76165); then copied=53576 inq=0 space=18824, and the window advertised
        //   since was 503808 (2048-byte units): 2·53576 + 4·53576·34752/18824 = 502790.
        let mut s = measured(14_480);
        s.on_read(SEC, 37_648, 18_824, 15_928);
        assert_eq!((s.space, s.clamp), (18_824, 81_920));
        s.on_read(2 * SEC, 37_648 + 53_576, 0, 0);
        assert_eq!((s.space, s.clamp), (53_576, 502_790));
        // Had the released segments counted as read (the whole 37648 against 14480), the
        // clamp would have been 2·37648 + 4·37648·23168/14480 + 15928 = 332.2 kB.
        let mut s = measured(14_480);
        s.on_read(SEC, 37_648, 0, 15_928);
        assert_eq!(s.clamp, 332_170);
    }

    #[test]
    fn out_of_order_data_raises_the_buffer_to_hold_it() {
        // tcp_data_queue_ofo's tcp_rcvbuf_grow: twice the last measure's read and the queue's
        // reach. Seed 1 of the same trace: space=18824 and rcvbuf=139008 (a clamp of 86880 at
        // ratio 160) before its measure, set while 34 segments (49232 bytes) waited out of
        // order: 2·18824 + 49232 = 86880.
        let mut s = measured(18_824);
        s.on_out_of_order(20 * MSS);
        assert_eq!(s.clamp, 81_920, "a clamp only grows");
        s.on_out_of_order(49_232);
        assert_eq!(s.clamp, 86_880);
    }

    #[test]
    fn the_receivers_rtt_counts_the_forward_queue_and_the_return_path() {
        // Handshake 20 ms on a path 10 ms each way: a segment 30 ms on its way forward (20 ms
        // queued) samples 40 ms; samples come at most once a millisecond and are smoothed by
        // 1/8.
        let mut s = fresh();
        s.measure_rtt(0, 10 * MS, Some(20 * MS));
        assert_eq!(s.rtt, 20 * MS);
        s.measure_rtt(MS / 2, 30 * MS, Some(20 * MS));
        assert_eq!(s.rtt, 20 * MS, "within a millisecond of the last sample");
        s.measure_rtt(MS, 30 * MS, Some(20 * MS));
        assert_eq!(s.rtt, 20 * MS + 20 * MS / 8);
    }
}
