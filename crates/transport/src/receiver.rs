use crate::rcv_space::RcvSpace;
use crate::sack::SackCompression;
use crate::{AckFrame, DataPacket, FeedbackSlot, IdRange, ACK_RANGES};
use cclab_cc::agent::{ReceivedPacket, ReceiverAgent};
use cclab_cc::Time;
use cclab_core::scenario::{FlowSpec, Transport};
use cclab_core::time::{earlier, wheel_fire_tick, JIFFY, MS, SEC};
use std::collections::VecDeque;

/// TCP_ATO_MIN and TCP_DELACK_MIN (include/net/tcp.h, HZ/25): the delayed-ACK timeout's floor.
const ATO_MIN: Time = 40 * MS;
/// HZ/2: the delayed-ACK timeout's ceiling in tcp_send_delayed_ack (outside ping-pong mode).
const ATO_MAX: Time = 500 * MS;
/// TCP_DELACK_MAX (HZ/5), icsk_delack_max's default: the last bound on the timeout.
const DELACK_MAX: Time = 200 * MS;
/// TCP_MAX_QUICKACKS: the quick ACKs granted at the start and after a long silence.
const MAX_QUICKACKS: u32 = 16;
/// TCP_MSS_DEFAULT: rcv_mss before the first full segment (tcp_initialize_rcv_mss).
const MSS_DEFAULT: u64 = 536;
/// TCP_MIN_MSS: the shortest segment without PSH that tcp_measure_rcv_mss takes for an MSS.
const MIN_MSS: u64 = 88;
/// sizeof(struct tcphdr): the TCP header without options.
const TCP_BASE_HEADER: u64 = 20;
/// The TCP header of a data segment, options included (its IPv4 header is 20 bytes).
const TCP_HEADER: u64 = crate::DATA_HEADER - 20;
/// The receiver's own RTO before it has an RTT (TCP_TIMEOUT_INIT), and its floor (TCP_RTO_MIN).
const RTO_INIT: Time = SEC;
const RTO_MIN: Time = 200 * MS;

#[derive(Clone, Copy, Debug)]
pub struct ReceiverConfig {
    /// Delay ACKs as Linux does (per-flow `delayed_ack`, default true): quick ACKs for every
    /// packet at the start, then one ACK per two full-sized segments or when the delayed-ACK
    /// timer (ATO, from 40 ms) fires; out-of-order data and hole fills at once, compressed
    /// as `sack_compression` says. False: every data packet is acknowledged at once (for
    /// analytic tests).
    pub delayed_ack: bool,
    /// TCP_ATO_MIN; only tests change it.
    pub ato_min: Time,
    /// The delayed-ACK engine counts in Linux's jiffies ([`JIFFY`]): its ATO, its arrival
    /// times and its timer, which the timer wheel fires on the tick after its expiry
    /// ([`wheel_fire_tick`]). False: exact nanoseconds, for tests of the engine's arithmetic.
    pub jiffy_timers: bool,
    /// Acknowledge a full-sized segment with PSH once the application has read it
    /// (`[transport] push_ack`; [`Receiver::on_read`]).
    pub push_ack: bool,
    /// The application reads at every multiple of this on the run's clock; 0: at each
    /// arrival (`[transport] read_interval`).
    pub read_interval: Time,
    /// Compress the ACKs of out-of-order data as Linux does (`[transport] sack_compression`;
    /// crate::sack). Only with `delayed_ack`.
    pub sack_compression: bool,
    /// Grow the receive window as Linux does, each growing segment acknowledged at once
    /// (`[transport] window_growth`; crate::rcv_space). Only with `delayed_ack`.
    pub window_growth: bool,
    /// The receive buffer's autotuned ceiling, as a window (`[transport] rmem_max` at the
    /// scaling ratio).
    pub window_max: u64,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        let transport = Transport::default();
        ReceiverConfig {
            delayed_ack: true,
            ato_min: ATO_MIN,
            jiffy_timers: true,
            push_ack: true,
            read_interval: 0,
            sack_compression: true,
            window_growth: transport.window_growth,
            window_max: transport.default_rwnd(),
        }
    }
}

impl ReceiverConfig {
    /// A flow's receiver as every engine builds it: the flow's keys and the scenario's
    /// `[transport]` section.
    pub fn for_flow(spec: &FlowSpec, transport: &Transport) -> ReceiverConfig {
        ReceiverConfig {
            delayed_ack: spec.delayed_ack,
            push_ack: transport.push_ack,
            read_interval: transport.read_interval.ns(),
            sack_compression: transport.sack_compression,
            window_growth: transport.window_growth,
            window_max: transport.default_rwnd(),
            ..Default::default()
        }
    }
}

/// What the receiving TCP handles as one: a segment, or a run the NIC merged (crate::gro).
#[derive(Clone, Copy, Debug)]
struct Skb {
    /// The stream bytes [offset, end) it carries.
    offset: u64,
    end: u64,
    /// Its segments' size (skb_shinfo(skb)->gso_size; a lone segment's length).
    gso: u64,
    /// PSH, which only a run's last segment may carry.
    push: bool,
}

/// Linux's delayed-ACK engine (struct inet_connection_sock's icsk_ack and the code around
/// tcp_event_data_recv, __tcp_ack_snd_check and tcp_send_delayed_ack in net/ipv4/tcp_input.c
/// and net/ipv4/tcp_output.c).
#[derive(Clone, Copy, Debug, Default)]
struct DelAck {
    /// Quick ACKs left (icsk_ack.quick): each ACK sent uses one (tcp_dec_quickack_mode).
    quick: u32,
    /// The delayed-ACK timeout (icsk_ack.ato); 0 before the first data.
    ato: Time,
    /// When the last data arrived (icsk_ack.lrcvtime).
    lrcvtime: Time,
    /// The estimated sender MSS (icsk_ack.rcv_mss, tcp_measure_rcv_mss).
    rcv_mss: u64,
    /// Stream bytes acknowledged by the last ACK sent (tp->rcv_wup).
    rcv_wup: u64,
    /// The receiver's RTT, from the handshake (tcp_synack_rtt_meas), which bounds the ATO.
    srtt: Option<Time>,
    /// The delayed-ACK timer's expiry (icsk_ack.timeout) and when the timer wheel fires it,
    /// if armed.
    expires: Option<Time>,
    deadline: Option<Time>,
    /// ICSK_ACK_PUSHED: a segment that looks like the end of a write arrived since the last
    /// ACK (`measure_rcv_mss`).
    pushed: bool,
    /// The last short segment's length, if it could be the sender's MSS
    /// (icsk_ack.last_seg_size); 0 after any other segment.
    last_seg_size: u64,
    /// The application's next read while a pushed segment waits for its ACK.
    read_at: Option<Time>,
    /// The clock it counts in (`ReceiverConfig::jiffy_timers`).
    tick: Ticks,
}

/// Times on the delayed-ACK engine's clock: tcp_jiffies32 and jiffies arithmetic (true), or
/// exact nanoseconds. (Dividing by the constant [`JIFFY`] keeps it a multiplication on the
/// per-packet path.)
#[derive(Clone, Copy, Debug, Default)]
struct Ticks(bool);

impl Ticks {
    /// The start of the tick `t` falls in (tcp_jiffies32 at `t`).
    fn floor(self, t: Time) -> Time {
        if self.0 {
            t / JIFFY * JIFFY
        } else {
            t
        }
    }

    /// `t` rounded up to whole ticks (usecs_to_jiffies).
    fn ceil(self, t: Time) -> Time {
        if self.0 {
            t.div_ceil(JIFFY) * JIFFY
        } else {
            t
        }
    }

    /// `t >> shift` in whole ticks, as Linux shifts a count of jiffies.
    fn shr(self, t: Time, shift: u32) -> Time {
        if self.0 {
            ((t / JIFFY) >> shift) * JIFFY
        } else {
            t >> shift
        }
    }

    /// When a timer armed at `now` (a tick) that expires at `expires` (a tick) fires: on the
    /// timer wheel's tick ([`wheel_fire_tick`]; the next one for the delayed ACK's range).
    fn fire(self, now: Time, expires: Time) -> Time {
        if self.0 {
            wheel_fire_tick(expires / JIFFY, (expires - now) / JIFFY) * JIFFY
        } else {
            expires
        }
    }
}

impl DelAck {
    /// The receiver's own RTO, as tcp_set_rto computes it from its one sample (in jiffies,
    /// rounded up).
    fn rto(&self) -> Time {
        self.tick.ceil(self.srtt.map_or(RTO_INIT, |r| r + (2 * r).max(RTO_MIN)))
    }

    /// tcp_incr_quickack: quick = min(rcv_wnd / (2·rcv_mss), TCP_MAX_QUICKACKS); Linux's initial
    /// receive window (64 KiB and more) allows the full 16.
    fn incr_quickack(&mut self) {
        self.quick = self.quick.max(MAX_QUICKACKS);
    }

    /// tcp_enter_quickack_mode(sk, TCP_MAX_QUICKACKS): quick ACKs again, the ATO back to its
    /// minimum (the sender retransmitted data that had arrived: its ACKs were late or lost).
    fn enter_quickack(&mut self, ato_min: Time) {
        self.incr_quickack();
        self.ato = ato_min;
    }

    /// tcp_measure_rcv_mss (net/ipv4/tcp_input.c): the sender's MSS, and ICSK_ACK_PUSHED for a
    /// segment that looks like the end of an application write, so that the application's
    /// read sends the ACK (tcp_cleanup_rbuf).
    fn measure_rcv_mss(&mut self, len: u64, push: bool, push_ack: bool) {
        let lss = std::mem::take(&mut self.last_seg_size);
        if len >= self.rcv_mss {
            self.rcv_mss = len;
            // Since 6.6 (commit 4720852ed9af): "If the skb has a len of exactly 1*MSS and has
            // the PSH bit set then it is likely the end of an application write. [...] So we
            // set ICSK_ACK_PUSHED here so that tcp_cleanup_rbuf() will send an ACK immediately
            // if the app reads all of the data".
            if push_ack && push {
                self.pushed = true;
            }
            return;
        }
        // A short segment ends a write, unless it is the second in a row of one length that
        // could be an MSS (at least TCP_MSS_DEFAULT with its header, or TCP_MIN_MSS without
        // PSH): then that is the sender's MSS after all.
        let with_header = len + TCP_HEADER;
        if with_header >= MSS_DEFAULT + TCP_BASE_HEADER || (with_header >= MIN_MSS + TCP_BASE_HEADER && !push) {
            self.last_seg_size = len;
            if len == lss {
                self.rcv_mss = len;
                return;
            }
        }
        self.pushed = true;
    }

    /// tcp_event_data_recv's ATO update, for in-order data arriving at `now` (its clock
    /// tcp_jiffies32: the gap since the last arrival in whole ticks).
    fn data_recv(&mut self, now: Time, ato_min: Time) {
        let now = self.tick.floor(now);
        if self.ato == 0 {
            // "The _first_ data packet received, initialize delayed ACK engine."
            self.incr_quickack();
            self.ato = ato_min;
        } else {
            let m = now.saturating_sub(self.lrcvtime);
            let half = |t| self.tick.shr(t, 1);
            if m <= half(ato_min) {
                self.ato = half(self.ato) + half(ato_min);
            } else if m < self.ato {
                self.ato = (half(self.ato) + m).min(self.rto());
            } else if m > self.rto() {
                // "Too long gap. Apparently sender failed to restart window."
                self.incr_quickack();
            }
        }
        self.lrcvtime = now;
    }

    /// The earlier of the timer and the application's read: when the ACK may go.
    fn next(&self) -> Option<Time> {
        earlier(self.deadline, self.read_at)
    }

    /// tcp_send_delayed_ack's timeout: the ATO, above TCP_DELACK_MIN bounded by HZ/2 and by
    /// the RTT (at least TCP_DELACK_MIN), then by icsk_delack_max.
    fn timeout(&self, ato_min: Time) -> Time {
        let mut ato = self.ato;
        if ato > ato_min {
            let max_ato = self.srtt.map_or(ATO_MAX, |r| self.tick.ceil(r).max(ato_min).min(ATO_MAX));
            ato = ato.min(max_ato);
        }
        ato.min(DELACK_MAX)
    }

    /// tcp_send_delayed_ack's timer for data that arrived at `now`: true to send the ACK now,
    /// a timer already due within a quarter of the ATO; otherwise the timer is armed for the
    /// earlier of its old and its new expiry ("Stay within the limit we were given"), and
    /// fires on the tick after it.
    fn arm(&mut self, now: Time, ato_min: Time) -> bool {
        let ato = self.timeout(ato_min);
        let now = self.tick.floor(now);
        if self.expires.is_some_and(|expires| expires <= now + self.tick.shr(ato, 2)) {
            return true;
        }
        let expires = self.expires.map_or(now + ato, |old| old.min(now + ato));
        self.expires = Some(expires);
        self.deadline = Some(self.tick.fire(now, expires));
        false
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
    holes_above: VecDeque<(u64, u64)>,
    unacked: u32,
    delack: DelAck,
    /// When out-of-order data is acknowledged (SACK compression).
    sack: SackCompression,
    /// The receive window's growth, whose growing segments are acknowledged at once.
    space: RcvSpace,
    /// When `on_timeout` must run: the earliest of the delayed-ACK deadline, the application's
    /// read and the compression timer ([`Receiver::ack_timer`]) or, with an agent, the earlier
    /// of that and the agent's timer.
    ack_deadline: Option<Time>,
    last_owd: Time,
    /// The scheme's receiver-side agent (Sprout), if it has one. Everything about it runs on
    /// separate, cold paths, so a receiver without one runs exactly the code it ran before the
    /// hook existed (measured: merging the agent's timer into `next_timeout` alone kept the
    /// simulator's per-event timer code from being inlined, costing ~7% of its speed).
    agent: Option<Box<dyn ReceiverAgent>>,
    pub packets_received: u64,
    pub bytes_received: u64,
}

impl Receiver {
    pub fn new(cfg: ReceiverConfig) -> Self {
        Receiver {
            cfg,
            ids: Vec::with_capacity(ACK_RANGES + 1),
            stream_cum: 0,
            holes_above: VecDeque::new(),
            unacked: 0,
            delack: DelAck { rcv_mss: MSS_DEFAULT, tick: Ticks(cfg.jiffy_timers), ..Default::default() },
            sack: SackCompression::new(cfg.delayed_ack && cfg.sack_compression),
            space: RcvSpace::new(cfg.window_max),
            ack_deadline: None,
            last_owd: 0,
            agent: None,
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

    /// The connection's RTT as the receiving host measured it in the handshake (Linux's
    /// tcp_synack_rtt_meas), which bounds its delayed-ACK timeout and sets its RTO.
    pub fn set_handshake_rtt(&mut self, rtt: Time) {
        self.delack.srtt = Some(rtt);
    }

    /// Stream bytes delivered in order to the application.
    pub fn stream_cum(&self) -> u64 {
        self.stream_cum
    }

    /// Cache hint: the receiver's state, which the next data packet updates.
    #[inline]
    pub fn prefetch(&self) {
        cclab_core::hint::prefetch(self);
    }

    /// Takes a data packet; returns an ACK to send now, if one is due.
    pub fn on_data(&mut self, now: Time, pkt: &DataPacket) -> Option<AckFrame> {
        self.on_skb(now, std::slice::from_ref(pkt))
    }

    /// Takes segments that the receiving NIC merged into one (crate::gro: in sequence, each
    /// `gro::can_follow` the ones before it). Linux's TCP sees one skb: one arrival for the
    /// delayed-ACK engine and one choice whether to acknowledge, so the run is acknowledged
    /// by one ACK. Not for a receiver with an agent (its schemes are not kernel TCP).
    pub fn on_merged(&mut self, now: Time, run: &[DataPacket]) -> Option<AckFrame> {
        debug_assert!(self.agent.is_none() && !run.is_empty());
        self.on_skb(now, run)
    }

    /// One skb of in-sequence segments (usually one) reaches the receiver.
    #[inline]
    fn on_skb(&mut self, now: Time, run: &[DataPacket]) -> Option<AckFrame> {
        let (first, last) = (&run[0], &run[run.len() - 1]);
        let skb =
            Skb { offset: first.offset, end: last.offset + last.len as u64, gso: first.len as u64, push: last.push };
        self.packets_received += run.len() as u64;
        self.bytes_received += skb.end - skb.offset;
        self.last_owd = now.saturating_sub(first.sent);
        // Data starting below the cumulative point: a retransmission of what arrived already,
        // in whole or in part (tcp_data_queue: "A retransmit, 2nd most common case. Force an
        // immediate ack." and "Partial packet", both tcp_enter_quickack_mode).
        let old_data = skb.offset < self.stream_cum;
        // Data that advances the cumulative point (rcv_nxt): the only data Linux's
        // tcp_data_queue hands to tcp_event_data_recv (its queue_and_out path, hole fills
        // included); out-of-order segments go to tcp_data_queue_ofo, duplicates to
        // out_of_window, and neither touches the delayed-ACK engine's clock (lrcvtime) or ATO.
        let in_order = skb.offset <= self.stream_cum && skb.end > self.stream_cum;
        let had_holes = !self.holes_above.is_empty();
        // tcp_data_queue_ofo → tcp_sack_new_ofo_skb: a segment in an older SACK block sends
        // the compressed ACK first, without this segment in it.
        let flushed = (skb.offset > self.stream_cum && self.sack.out_of_order(skb.offset, skb.end, !had_holes))
            .then(|| self.any_ack(now));
        for p in run {
            self.record_id(p.id);
        }
        self.record_stream(skb.offset, skb.end);
        if in_order && had_holes {
            self.sack.delivered(self.stream_cum);
        }
        self.unacked += run.len() as u32;
        if old_data && self.cfg.delayed_ack {
            self.delack.enter_quickack(self.cfg.ato_min);
        }
        // tcp_data_queue: "RFC5681. 4.2. SHOULD send immediate ACK, when gap in queue is
        // filled" — ICSK_ACK_NOW once in-order data empties the out-of-order queue.
        let gap_filled = in_order && had_holes && self.holes_above.is_empty();
        if self.agent.is_some() {
            return self.on_data_with_agent(now, first, &skb, gap_filled, in_order).or(flushed);
        }
        if self.ack_due(now, &skb, gap_filled, in_order) {
            debug_assert!(flushed.is_none(), "a flush leaves the segment compressed");
            return Some(self.make_ack());
        }
        self.ack_deadline = self.ack_timer();
        flushed
    }

    /// Linux's choice for one data packet (tcp_event_data_recv, then __tcp_ack_snd_check):
    /// true to acknowledge now; false arms the delayed-ACK timer (`delack.deadline`) or, with
    /// out-of-order data queued, the compression timer.
    fn ack_due(&mut self, now: Time, skb: &Skb, gap_filled: bool, in_order: bool) -> bool {
        if !self.cfg.delayed_ack {
            return true;
        }
        let grew = self.cfg.window_growth && self.window_grows(now, skb, in_order);
        let d = &mut self.delack;
        if in_order {
            // "len = skb_shinfo(skb)->gso_size ? : skb->len": a merged run's segment size.
            d.measure_rcv_mss(skb.gso, skb.push, self.cfg.push_ack);
            // So a recovery that kept in-order data away for longer than the receiver's RTO
            // ends in quick ACKs when its last hole fills ("Too long gap").
            d.data_recv(now, self.cfg.ato_min);
        }
        if grew {
            // tcp_grow_window: "inet_csk(sk)->icsk_ack.quick |= 1" — after tcp_incr_quickack,
            // so the first segment's ACK leaves all 16 for later.
            d.quick |= 1;
        }
        // "More than one full frame received", "We ACK each frame" (quick-ACK mode), or a
        // one-time immediate ACK.
        if gap_filled || d.quick > 0 || self.stream_cum - d.rcv_wup > d.rcv_mss {
            return true;
        }
        if !self.holes_above.is_empty() {
            return self.sack.ack_now(now, self.stream_cum, d.srtt);
        }
        // A pushed segment (in order: anything out of order was answered above) waits for the
        // application's read.
        if d.pushed {
            let t = self.cfg.read_interval;
            if t == 0 {
                return true;
            }
            // The application's next read after this arrival.
            d.read_at = Some((now / t + 1) * t);
        }
        d.arm(now, self.cfg.ato_min)
    }

    /// The receive window's part of a data packet (crate::rcv_space), in Linux's order: the
    /// receiver's RTT sample (tcp_rcv_rtt_measure_ts, for a segment of at least rcv_mss), the
    /// window's growth with the segment queued (tcp_grow_window), then the application's read
    /// of in-order data (tcp_rcv_space_adjust) or the buffer's room for out-of-order data
    /// (tcp_data_queue_ofo's tcp_rcvbuf_grow), which only later segments feel. True if the
    /// window grew.
    fn window_grows(&mut self, now: Time, skb: &Skb, in_order: bool) -> bool {
        let len = skb.end - skb.offset;
        if len >= self.delack.rcv_mss {
            self.space.measure_rtt(now, self.last_owd, self.delack.srtt);
        }
        // The out-of-order queue (this segment among it, if it is out of order) takes room in
        // the buffer, and the buffer must reach as far as it does.
        let (ooo, span) = self.holes_above.iter().fold((0, 0), |(n, _), &(s, e)| (n + e - s, e - self.stream_cum));
        // Only queued data grows it (tcp_event_data_recv, tcp_data_queue_ofo); a duplicate
        // below the cumulative point is dropped.
        if in_order {
            // What this segment released from the out-of-order queue (`inq`) is still in the
            // buffer as the window grows, and the application reads this segment first.
            let end = skb.end;
            let inq = self.stream_cum - end;
            let grew = self.space.grow(len, len + inq + ooo);
            self.space.on_read(now, end, inq, span);
            grew
        } else if skb.offset > self.stream_cum {
            let grew = self.space.grow(len, ooo);
            self.space.on_out_of_order(span);
            grew
        } else {
            false
        }
    }

    pub fn next_timeout(&self) -> Option<Time> {
        self.ack_deadline
    }

    /// When an ACK is due without further data: the delayed-ACK timer, the application's
    /// read or the compression timer, whichever comes first.
    fn ack_timer(&self) -> Option<Time> {
        earlier(self.delack.next(), self.sack.deadline)
    }

    /// Whether the ATO grows when the ACK due at `now` goes (tcp_delack_timer_handler's
    /// "Delayed ACK missed"): not for a compressed ACK (tcp_compressed_ack_kick) nor for the
    /// application's read.
    fn delack_missed(&self, now: Time) -> bool {
        self.sack.deadline.is_none_or(|t| t > now) && !self.on_read(now)
    }

    /// tcp_delack_timer_handler: "Delayed ACK missed: inflate ATO" (doubled, at most the RTO).
    fn delack_fired(&mut self) {
        let d = &mut self.delack;
        d.ato = (2 * d.ato).min(d.rto());
    }

    /// Fires the delayed-ACK timer (and the agent's); returns an ACK to send now, if any.
    pub fn on_timeout(&mut self, now: Time) -> Option<AckFrame> {
        if self.agent.is_some() {
            return self.on_timeout_with_agent(now);
        }
        match self.ack_deadline {
            Some(t) if t <= now && self.unacked > 0 => {
                if self.delack_missed(now) {
                    self.delack_fired();
                }
                Some(self.make_ack())
            }
            _ => None,
        }
    }

    /// Whether the application's read is what is due at `now` (rather than the delayed-ACK
    /// timer): tcp_recvmsg → tcp_cleanup_rbuf (net/ipv4/tcp.c) sends the scheduled ACK when
    /// the read copied data, ICSK_ACK_PUSHED is set (outside ping-pong mode: this receiver
    /// sends no data) and the receive memory is empty, out-of-order queue included
    /// (`!atomic_read(&sk->sk_rmem_alloc)`). The read is only scheduled with the queue empty,
    /// and any later arrival either keeps it so or is acknowledged at once, clearing it.
    fn on_read(&self, now: Time) -> bool {
        self.delack.read_at.is_some_and(|r| r <= now) && self.holes_above.is_empty()
    }

    fn make_ack(&mut self) -> AckFrame {
        self.unacked = 0;
        self.ack_deadline = None;
        let d = &mut self.delack;
        // tcp_event_ack_sent → inet_csk_clear_xmit_timer(ICSK_TIME_DACK): pending, PUSHED
        // with it, is cleared, and the timer stopped.
        d.deadline = None;
        d.expires = None;
        d.pushed = false;
        d.read_at = None;
        d.rcv_wup = self.stream_cum;
        self.sack.ack_sent();
        // tcp_dec_quickack_mode: each ACK uses a quick ACK; the last one resets the ATO.
        if d.quick > 0 {
            d.quick -= 1;
            if d.quick == 0 {
                d.ato = self.cfg.ato_min;
            }
        }
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
    fn on_data_with_agent(
        &mut self,
        now: Time,
        pkt: &DataPacket,
        skb: &Skb,
        gap_filled: bool,
        in_order: bool,
    ) -> Option<AckFrame> {
        if let Some(agent) = self.agent.as_mut() {
            agent.on_data(now, &ReceivedPacket { id: pkt.id, bytes: pkt.len as u64, sent: pkt.sent });
        }
        let ack = if self.ack_due(now, skb, gap_filled, in_order) { Some(self.agent_ack(now)) } else { None };
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
        let delack_due = self.ack_timer().is_some_and(|t| t <= now) && self.unacked > 0;
        if delack_due && self.delack_missed(now) {
            self.delack_fired();
        }
        let ack = (delack_due || agent_wants_ack).then(|| self.agent_ack(now));
        self.merge_deadlines();
        ack
    }

    /// An ACK to send now, with the agent's feedback when there is an agent.
    fn any_ack(&mut self, now: Time) -> AckFrame {
        if self.agent.is_some() {
            self.agent_ack(now)
        } else {
            self.make_ack()
        }
    }

    /// An ACK carrying the agent's feedback.
    fn agent_ack(&mut self, now: Time) -> AckFrame {
        let mut ack = self.make_ack();
        ack.feedback = FeedbackSlot::new(self.agent.as_mut().and_then(|agent| agent.feedback(now)));
        ack
    }

    /// `ack_deadline` = the earlier of the delayed-ACK deadline and the agent's timer.
    fn merge_deadlines(&mut self) {
        let agent_timer = self.agent.as_ref().and_then(|agent| agent.next_timer());
        self.ack_deadline = earlier(self.ack_timer(), agent_timer);
    }

    /// Adds a packet id to the ranges the ACKs report.
    fn record_id(&mut self, id: u64) {
        match self.ids.last_mut() {
            Some(r) if r.1 == id => r.1 += 1,
            Some(r) if id < r.1 => {
                // Reordered: rare on FIFO paths; merge into an older range if adjacent.
                if let Some(r) = self.ids.iter_mut().find(|r| r.0 == id + 1 || r.1 == id) {
                    if r.0 == id + 1 {
                        r.0 = id;
                    } else {
                        r.1 += 1;
                    }
                }
            }
            _ => {
                self.ids.push((id, id + 1));
                if self.ids.len() > ACK_RANGES {
                    self.ids.remove(0);
                }
            }
        }
    }

    /// Adds the stream bytes [start, end): the cumulative point, or the out-of-order ranges.
    fn record_stream(&mut self, start: u64, end: u64) {
        if end <= self.stream_cum {
            return;
        }
        if start <= self.stream_cum && self.holes_above.is_empty() {
            self.stream_cum = end;
            return;
        }
        // Insert [start, end) into the sorted, disjoint out-of-order ranges, then advance the
        // cumulative point over whatever became contiguous.
        // A deque, merged in place: after a burst of losses a flow holds many ranges, and the
        // cumulative point advancing over the first one must not shift all the others (that
        // shifting was ~5% of CoreScale's time).
        let h = &mut self.holes_above;
        let pos = h.partition_point(|r| r.1 < start);
        let mut new = (start.max(self.stream_cum), end);
        let mut merged_to = pos;
        while merged_to < h.len() && h[merged_to].0 <= new.1 {
            let r = h[merged_to];
            new = (new.0.min(r.0), new.1.max(r.1));
            merged_to += 1;
        }
        if merged_to == pos {
            h.insert(pos, new);
        } else {
            h[pos] = new;
            h.drain(pos + 1..merged_to);
        }
        while let Some(&(s, e)) = h.front() {
            if s > self.stream_cum {
                break;
            }
            self.stream_cum = self.stream_cum.max(e);
            h.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_core::scenario::MSS;

    fn pkt(id: u64, offset: u64) -> DataPacket {
        DataPacket { id, offset, len: 1000, sent: 0, retransmission: false, push: false }
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

    const MS: Time = 1_000_000;

    /// The delayed-ACK engine on its own: these tests send packets nanoseconds apart with no
    /// RTT, which would have the buffer autotune at every packet, so their receivers keep the
    /// window at its ceiling (`window_growth` false; the growth has tests of its own below),
    /// and count on an exact clock (`jiffy_timers` false; the ticks have a test of their own).
    fn engine() -> ReceiverConfig {
        ReceiverConfig { window_growth: false, jiffy_timers: false, ..Default::default() }
    }

    /// The packets a fresh receiver acknowledges one by one: the 16 quick ACKs, and with the
    /// window's growth the six segments that grow it first (they keep quick-ACK mode on
    /// without spending one).
    fn quick_at_start(cfg: &ReceiverConfig) -> u64 {
        if cfg.window_growth {
            22
        } else {
            16
        }
    }

    /// A receiver that has used up its quick ACKs: its first packets acked one by one at `t0`.
    fn past_quickack(t0: Time) -> (Receiver, u64) {
        past_quickack_with(t0, engine())
    }

    fn past_quickack_with(t0: Time, cfg: ReceiverConfig) -> (Receiver, u64) {
        let mut r = Receiver::new(cfg);
        let n = quick_at_start(&cfg);
        for i in 0..n {
            assert!(r.on_data(t0 + i, &pkt(i, i * 1000)).is_some(), "quick ACK {i}");
        }
        (r, n)
    }

    #[test]
    fn a_run_the_nic_merged_is_one_arrival_and_one_ack() {
        // GRO (net/ipv4/tcp_offload.c) hands tcp_rcv_established one skb for the run, so
        // __tcp_ack_snd_check runs once: in quick-ACK mode one ACK covers the run and
        // tcp_dec_quickack_mode spends one quick ACK for it, not one per segment.
        let mut r = Receiver::new(engine());
        let a = r.on_merged(MS, &[pkt(0, 0), pkt(1, 1000)]).expect("quick-ACK mode");
        assert_eq!((a.stream_cum, a.ranges()), (2000, &[(0, 2)][..]));
        assert_eq!(r.delack.quick, MAX_QUICKACKS - 1);
        let mut singles = Receiver::new(engine());
        assert!(singles.on_data(MS, &pkt(0, 0)).is_some() && singles.on_data(MS, &pkt(1, 1000)).is_some());
        assert_eq!(singles.delack.quick, MAX_QUICKACKS - 2);
        // Past quick-ACK mode a run of three is "more than one full frame", acknowledged at
        // once, where three segments one by one leave the third for the timer.
        let (mut r, n) = past_quickack(0);
        let run: Vec<DataPacket> = (n..n + 3).map(|i| pkt(i, i * 1000)).collect();
        assert_eq!(r.on_merged(SEC, &run).map(|a| a.stream_cum), Some((n + 3) * 1000));
        assert!(r.next_timeout().is_none(), "nothing left waiting");
        let (mut singles, _) = past_quickack(0);
        let acks: Vec<bool> = run.iter().map(|p| singles.on_data(SEC, p).is_some()).collect();
        assert_eq!(acks, [false, true, false]);
        assert!(singles.next_timeout().is_some(), "the third waits for the delayed-ACK timer");
    }

    #[test]
    fn the_first_packets_are_acked_one_by_one() {
        // tcp_event_data_recv: "The _first_ data packet received, initialize delayed ACK
        // engine": tcp_incr_quickack(sk, TCP_MAX_QUICKACKS), and tcp_in_quickack_mode makes
        // __tcp_ack_snd_check send at once ("We ACK each frame"); tcp_dec_quickack_mode spends
        // one per ACK. Each of the first six segments also grows the receive window
        // (tcp_grow_window: "icsk_ack.quick |= 1"), so 22 go one by one, as Linux 6.18's
        // receivers do in the emulator; without the growth, 16.
        let (mut r, n) = past_quickack_with(0, ReceiverConfig::default());
        assert!(r.on_data(100, &pkt(n, n * 1000)).is_none(), "the 23rd waits");
        let (mut r, n) = past_quickack(0);
        assert!(r.on_data(100, &pkt(n, n * 1000)).is_none(), "the 17th waits");
        assert_eq!(r.next_timeout(), Some(100 + 40 * MS), "for the ATO, TCP_ATO_MIN = 40 ms");
        let a = r.on_data(200, &pkt(n + 1, (n + 1) * 1000)).expect("more than one rcv_mss unacked");
        assert_eq!(a.largest, n + 1);
        assert_eq!(r.next_timeout(), None, "an ACK sent cancels the timer");
        assert!(r.on_data(300, &pkt(n + 2, (n + 2) * 1000)).is_none());
        assert!(r.on_timeout(300 + 40 * MS - 1).is_none());
        assert_eq!(r.on_timeout(300 + 40 * MS).expect("the delayed ACK").largest, n + 2);
    }

    #[test]
    fn the_delayed_ack_engine_counts_in_jiffies() {
        // Linux keeps icsk_ack.ato and lrcvtime in jiffies (4 ms at HZ = 250) and arms the
        // timer for jiffies + ato, which the timer wheel fires on the tick after (calc_index:
        // "Round up with level granularity"): a segment at 1001 ms waits until 1044 ms.
        let cfg = ReceiverConfig { window_growth: false, ..Default::default() };
        let (mut r, n) = past_quickack_with(SEC, cfg);
        assert!(r.on_data(SEC + MS, &pkt(n, n * 1000)).is_none());
        assert_eq!(r.next_timeout(), Some(SEC + 44 * MS), "expires at 1040 ms, fires a tick later");
        // tcp_event_data_recv measures the gap in whole jiffies: 22 ms from 1001 ms is five
        // (1000 → 1020 ms), at most TCP_ATO_MIN / 2, so the ATO stays 40 ms; another 22 ms is
        // six (1020 → 1044 ms), so the ATO becomes 20 + 24 = 44 ms (exact nanoseconds: 20 +
        // 22). The segment at 1045 ms then waits for 1044 + 44 ms, firing at 1092.
        assert!(r.on_data(SEC + 23 * MS, &pkt(n + 1, (n + 1) * 1000)).is_some(), "two segments");
        assert!(r.on_data(SEC + 45 * MS, &pkt(n + 2, (n + 2) * 1000)).is_none());
        assert_eq!(r.delack.ato, 44 * MS);
        assert_eq!(r.next_timeout(), Some(SEC + 92 * MS));
    }

    /// Slow start seen by a receiver on a 20 ms path (10 ms each way): round k brings
    /// 10·2^k full segments 0.1 ms apart, each acknowledged at once or at the next; returns
    /// per round the segments and the ACKs that covered one segment alone.
    fn slow_start_rounds(cfg: ReceiverConfig, rounds: u32) -> Vec<(u64, u64)> {
        let mut r = Receiver::new(cfg);
        r.set_handshake_rtt(20 * MS);
        let (mut id, mut out) = (0, vec![]);
        for k in 0..rounds {
            let n = 10u64 << k;
            let (mut singles, mut acked) = (0, r.stream_cum);
            for j in 0..n {
                let t = 10 * MS + k as u64 * 20 * MS + j * MS / 10;
                let p = DataPacket {
                    id,
                    offset: id * MSS,
                    len: MSS as u32,
                    sent: t - 10 * MS,
                    retransmission: false,
                    push: false,
                };
                id += 1;
                let ack = r.on_data(t, &p).or_else(|| r.on_timeout(t + MS / 10 - 1));
                if let Some(a) = ack {
                    singles += u64::from(a.stream_cum - acked == MSS);
                    acked = a.stream_cum;
                }
            }
            out.push((n, singles));
        }
        out
    }

    #[test]
    fn segments_that_grow_the_window_are_acked_one_by_one() {
        // tcp_grow_window ends in "inet_csk(sk)->icsk_ack.quick |= 1": while the receive
        // window grows the receiver stays in quick-ACK mode. Linux 6.18 in the emulator
        // (kernel Cubic, 46 Mbit/s × 20 ms): the first 22 segments ACKed one by one (16 quick
        // ACKs and 6 that grew the window to the 128 KiB buffer's clamp), then at every round
        // of slow start the buffer autotunes (tcp_rcv_space_adjust) and the window grows again
        // into it, segment by segment: 40–64 % of the ACKs of the first half second covered
        // one segment. With the window at its ceiling from the start only the 16 quick ACKs
        // do, and every ACK after them covers two segments.
        let grown = slow_start_rounds(ReceiverConfig::default(), 5);
        let fixed = slow_start_rounds(ReceiverConfig { window_growth: false, ..Default::default() }, 5);
        assert_eq!(fixed, [(10, 10), (20, 6), (40, 0), (80, 0), (160, 0)]);
        assert_eq!(grown[..2], [(10, 10), (20, 12)], "22 at the start: 10, then 12 more");
        for (k, &(n, singles)) in grown.iter().enumerate().skip(2) {
            // Each later round opens with the window growing two segments per segment into a
            // clamp set at about six times the last round's read: at least a third of it.
            assert!(3 * singles >= n, "round {k}: {singles} of {n} alone");
            assert!(singles < n, "round {k}: the window stops growing before the round ends");
        }
    }

    #[test]
    fn a_pushed_segment_is_acked_alone_at_the_applications_read() {
        // net/ipv4/tcp_input.c, tcp_measure_rcv_mss (6.6+, commit 4720852ed9af): "If the skb
        // has a len of exactly 1*MSS and has the PSH bit set [...] we set ICSK_ACK_PUSHED here
        // so that tcp_cleanup_rbuf() will send an ACK immediately if the app reads all of the
        // data and is not ping-pong"; net/ipv4/tcp.c, __tcp_cleanup_rbuf: with an ACK
        // scheduled, `copied > 0 && (pending & ICSK_ACK_PUSHED) && !pingpong &&
        // !atomic_read(&sk->sk_rmem_alloc)` → tcp_send_ack. An application reading every 20
        // ms here (the default reads at each arrival: `push_ack_off_or_reads_at_arrival`).
        let every_20ms = ReceiverConfig { read_interval: 20 * MS, ..engine() };
        let pushed = |id: u64| DataPacket { push: true, ..pkt(id, id * 1000) };
        let (mut r, n) = past_quickack_with(0, every_20ms);
        assert!(r.on_data(5 * MS, &pushed(n)).is_none(), "not at arrival: at the next read");
        assert_eq!(r.next_timeout(), Some(20 * MS), "the read at 20 ms comes before the ATO (45 ms)");
        let a = r.on_timeout(20 * MS).expect("the read's ACK");
        assert_eq!(a.largest, n);
        assert_eq!(r.next_timeout(), None, "the delayed-ACK timer went with it");
        // The read did not inflate the ATO (tcp_delack_timer_handler's "Delayed ACK missed"):
        // the next lone segment without PSH waits the 40 ms floor again.
        assert!(r.on_data(21 * MS, &pkt(n + 1, (n + 1) * 1000)).is_none());
        assert_eq!(r.next_timeout(), Some(61 * MS), "no PSH: the timer, not the read at 40 ms");
        // A second segment before the read is the usual pair's ACK, PSH or not.
        let a = r.on_data(30 * MS, &pushed(n + 2)).expect("two segments unacked");
        assert_eq!(a.stream_cum, (n + 3) * 1000);
        // PSH on a segment that arrives above a hole: acknowledged at once as out of order; the
        // hole's fill then at once as well, so no read is ever pending over a hole.
        assert!(r.on_data(31 * MS, &pushed(n + 4)).is_some());
        assert_eq!(r.next_timeout(), None);
        // A short segment (below rcv_mss), PSH or not, ends a write too: tcp_measure_rcv_mss's
        // other branch sets ICSK_ACK_PUSHED (before 6.6 as well), so it goes at the read.
        for push in [true, false] {
            let (mut r, n) = past_quickack_with(0, every_20ms);
            let short = DataPacket { len: 500, push, ..pkt(n, n * 1000) };
            assert!(r.on_data(5 * MS, &short).is_none());
            assert_eq!(r.next_timeout(), Some(20 * MS), "push {push}");
        }
    }

    #[test]
    fn push_ack_off_or_reads_at_arrival() {
        let pushed = |id: u64| DataPacket { push: true, ..pkt(id, id * 1000) };
        let (mut r, n) = past_quickack_with(0, ReceiverConfig { push_ack: false, ..engine() });
        assert!(r.on_data(5 * MS, &pushed(n)).is_none());
        assert_eq!(r.next_timeout(), Some(45 * MS), "PSH ignored: the delayed-ACK timer");
        let (mut r, n) = past_quickack(0);
        assert!(r.on_data(5 * MS, &pushed(n)).is_some(), "an application blocked in read()");
        assert!(r.on_data(6 * MS, &pkt(n + 1, (n + 1) * 1000)).is_none(), "PUSHED went with that ACK");
    }

    #[test]
    fn acks_every_second_full_segment_by_bytes_not_packets() {
        // __tcp_ack_snd_check: "(tp->rcv_nxt - tp->rcv_wup) > inet_csk(sk)->icsk_ack.rcv_mss",
        // with rcv_mss the largest segment seen (tcp_measure_rcv_mss). Short segments of
        // changing lengths: two of them are not more than one rcv_mss, so a third is needed ...
        // (an application that reads every 20 ms, so that a short segment, which ends a write,
        // waits for the read rather than being acknowledged as it is read at arrival).
        let every_20ms = ReceiverConfig { read_interval: 20 * MS, ..engine() };
        let (mut r, n) = past_quickack_with(0, every_20ms);
        let seg = |id: u64, off: u64, len: u32| DataPacket { len, ..pkt(id, off) };
        let off = n * 1000;
        assert!(r.on_data(10, &seg(n, off, 500)).is_none());
        assert!(r.on_data(11, &seg(n + 1, off + 500, 400)).is_none(), "900 bytes < one rcv_mss");
        assert!(r.on_data(12, &seg(n + 2, off + 900, 300)).is_some(), "1200 bytes > one rcv_mss");
        // ... unless they repeat one length: "if (len == lss) { icsk->icsk_ack.rcv_mss = len;" —
        // the second 600-byte segment in a row makes 600 the MSS, and 1200 bytes are two.
        let (mut r, n) = past_quickack_with(0, every_20ms);
        assert!(r.on_data(10, &seg(n, off, 600)).is_none());
        assert!(r.on_data(11, &seg(n + 1, off + 600, 600)).is_some(), "1200 > rcv_mss = 600");
        // Below TCP_MSS_DEFAULT with its header, a length that repeats with PSH is still no MSS.
        let (mut r, n) = past_quickack_with(0, every_20ms);
        let pushed = |id: u64, off: u64| DataPacket { push: true, ..seg(id, off, 400) };
        assert!(r.on_data(10, &pushed(n, off)).is_none());
        assert!(r.on_data(11, &pushed(n + 1, off + 400)).is_none(), "800 bytes, rcv_mss still 1000");
        assert_eq!(r.delack.rcv_mss, 1000);
    }

    #[test]
    fn out_of_order_data_and_hole_fills_are_acked_at_once() {
        // RFC 5681 §4.2: "an immediate ACK SHOULD be generated when an out-of-order segment
        // arrives" and "when the incoming segment fills in all or part of a gap"; Linux sends
        // the first three for each rcv_nxt at once (__tcp_ack_snd_check), and ICSK_ACK_NOW when
        // a fill empties its out-of-order queue (tcp_data_queue).
        let (mut r, n) = past_quickack(0);
        // id n lost: ids n+1.. carry the offsets after it.
        let at = |id: u64, off: u64| pkt(id, off * 1000);
        assert!(r.on_data(10, &at(n + 1, n + 1)).is_some(), "a gap");
        assert!(r.on_data(11, &at(n + 2, n + 2)).is_some(), "the hole is still open");
        let a = r.on_data(12, &at(n + 3, n)).expect("the retransmission fills the hole");
        assert_eq!(a.stream_cum, (n + 3) * 1000);
        assert!(r.on_data(13, &at(n + 4, n + 3)).is_none(), "in order again: delayed");
        assert!(r.on_data(14, &at(n + 5, 1)).is_some(), "a duplicate (tcp_enter_quickack_mode)");
    }

    #[test]
    fn a_duplicate_enters_quickack_mode() {
        // tcp_data_queue on a segment wholly below rcv_nxt: "A retransmit, 2nd most common
        // case. Force an immediate ack." → tcp_enter_quickack_mode(sk, TCP_MAX_QUICKACKS): the
        // next 16 ACKs go at once (the duplicate's own ACK spends one), then delayed again.
        let (mut r, n) = past_quickack(0);
        assert!(r.on_data(10, &pkt(n, n * 1000)).is_none(), "in order: delayed");
        assert!(r.on_data(11, &pkt(n + 1, 1000)).is_some(), "the duplicate, at once");
        let quick = (0..16).take_while(|i| r.on_data(12 + i, &pkt(n + 2 + i, (n + 1 + i) * 1000)).is_some()).count();
        assert_eq!(quick, 15, "quick ACKs left after the duplicate's own");
        // A receiver that ACKs every packet anyway has no mode to enter.
        let mut r = Receiver::new(ReceiverConfig { delayed_ack: false, ..Default::default() });
        r.on_data(0, &pkt(0, 0));
        assert!(r.on_data(1, &pkt(1, 0)).is_some());
        assert_eq!(r.delack.quick, 0);
    }

    #[test]
    fn a_missed_delayed_ack_doubles_the_ato_within_the_rtt() {
        // tcp_delack_timer_handler: "Delayed ACK missed: inflate ATO" (ato << 1, at most the
        // RTO); tcp_send_delayed_ack bounds an ATO above TCP_DELACK_MIN by the RTT (at least
        // TCP_DELACK_MIN); tcp_event_data_recv deflates it on closely spaced data
        // ("ato = (ato >> 1) + TCP_ATO_MIN / 2").
        for (srtt, want) in [(None, 81 * MS), (Some(10 * MS), 40 * MS), (Some(60 * MS), 60 * MS)] {
            let (mut r, n) = past_quickack(0);
            if let Some(rtt) = srtt {
                r.set_handshake_rtt(rtt);
            }
            assert!(r.on_data(MS, &pkt(n, n * 1000)).is_none());
            r.on_timeout(41 * MS).expect("the timer fires");
            assert_eq!(r.delack.ato, 80 * MS);
            assert!(r.on_data(42 * MS, &pkt(n + 1, (n + 1) * 1000)).is_none());
            // 41 ms after the last data, within the ATO: ato = 80/2 + 41 = 81 ms, then bounded.
            assert_eq!(r.delack.ato, 81 * MS);
            assert_eq!(r.next_timeout(), Some(42 * MS + want), "srtt {srtt:?}");
            // Back-to-back data deflate it toward TCP_ATO_MIN: 81/2 + 20 = 60.5 ms.
            r.on_data(42 * MS + 1, &pkt(n + 2, (n + 2) * 1000));
            assert_eq!(r.delack.ato, 60 * MS + MS / 2);
        }
    }

    #[test]
    fn a_recovery_longer_than_the_rto_ends_in_quick_acks() {
        // net/ipv4/tcp_input.c, tcp_data_queue: only data at rcv_nxt reaches
        // tcp_event_data_recv (queue_and_out); out-of-order data goes to tcp_data_queue_ofo,
        // which leaves icsk_ack.lrcvtime alone. So when the hole fills after more than the RTO
        // without in-order data, "m > icsk->icsk_rto" grants quick ACKs (tcp_incr_quickack).
        // Seen with kernel Reno on the Nepal path: after each of four recoveries that kept in-order
        // data away for 337-430 ms, the next 10-15 segments were each acknowledged at once.
        let (mut r, n) = past_quickack(0);
        r.set_handshake_rtt(20 * MS); // RTO 220 ms
        assert!(r.on_data(MS, &pkt(n, n * 1000)).is_none());
        r.on_timeout(41 * MS).expect("delayed ACK");
        // n + 1 is lost; four later segments arrive out of order: three acknowledged at once,
        // the fourth after the compression timer (20 ms / 20).
        for (i, t) in [60, 120, 180, 240].into_iter().enumerate() {
            let id = n + 2 + i as u64;
            assert_eq!(r.on_data(t * MS, &pkt(id, id * 1000)).is_some(), i < 3, "out of order at {t} ms");
        }
        assert_eq!(r.on_timeout(241 * MS).expect("the compressed ACK").largest, n + 5);
        let fill = r.on_data(300 * MS, &DataPacket { id: n + 6, ..pkt(n + 6, (n + 1) * 1000) });
        assert_eq!(fill.expect("the hole fill, at once").stream_cum, (n + 6) * 1000);
        // 299 ms since the last in-order data (not 60 since the last arrival): quick ACKs.
        assert!(r.on_data(310 * MS, &pkt(n + 7, (n + 6) * 1000)).is_some(), "a quick ACK");
        assert!(r.on_data(330 * MS, &pkt(n + 8, (n + 7) * 1000)).is_some(), "and another");
    }

    #[test]
    fn a_silence_longer_than_the_rto_brings_quick_acks_back() {
        // tcp_event_data_recv: "} else if (m > icsk->icsk_rto) { /* Too long gap. Apparently
        // sender failed to restart window, so that we send ACKs quickly. */
        // tcp_incr_quickack(sk, TCP_MAX_QUICKACKS);" — the receiver's RTO from its handshake
        // sample: 20 ms + max(40 ms, 200 ms) = 220 ms.
        let (mut r, n) = past_quickack(0);
        r.set_handshake_rtt(20 * MS);
        assert!(r.on_data(MS, &pkt(n, n * 1000)).is_none());
        r.on_timeout(41 * MS).expect("delayed ACK");
        assert!(r.on_data(201 * MS, &pkt(n + 1, (n + 1) * 1000)).is_none(), "200 ms of silence: no");
        r.on_timeout(300 * MS).expect("delayed ACK");
        let t = 201 * MS + 221 * MS;
        assert!(r.on_data(t, &pkt(n + 2, (n + 2) * 1000)).is_some(), "221 ms > RTO: quick again");
        assert!(r.on_data(t + 1, &pkt(n + 3, (n + 3) * 1000)).is_some());
    }

    /// `past_quickack`, then id `n` lost: ids n+1.. carry the offsets after it, three
    /// acknowledged at once; returns the receiver and the next id.
    fn three_dupacks(srtt: Time) -> (Receiver, u64) {
        let (mut r, n) = past_quickack(0);
        r.set_handshake_rtt(srtt);
        for id in n + 1..n + 4 {
            assert!(r.on_data(10 * MS, &pkt(id, id * 1000)).is_some(), "dup-ACK for id {id}");
        }
        (r, n + 4)
    }

    #[test]
    fn out_of_order_acks_are_compressed_after_three() {
        // __tcp_ack_snd_check with the out-of-order queue non-empty: "if (tp->dup_ack_counter
        // < TCP_FASTRETRANS_THRESH) { tp->dup_ack_counter++; goto send_now; }", then
        // compressed_ack++ and the hrtimer at min(tcp_comp_sack_delay_ns, rtt/20).
        let (mut r, id) = three_dupacks(100 * MS);
        for i in 0..5 {
            assert!(r.on_data(11 * MS + i, &pkt(id + i, (id + i) * 1000)).is_none(), "compressed {i}");
        }
        assert_eq!(r.next_timeout(), Some(12 * MS), "1 ms after the first: min(1 ms, 100 ms / 20)");
        let a = r.on_timeout(12 * MS).expect("one ACK for all five");
        assert_eq!((a.largest, a.stream_cum), (id + 4, 16_000));
        assert_eq!(r.delack.ato, 40 * MS, "tcp_compressed_ack_kick leaves the ATO alone");
        // Short RTTs shorten the timer: 10 ms / 20.
        let (mut r, id) = three_dupacks(10 * MS);
        assert!(r.on_data(11 * MS, &pkt(id, id * 1000)).is_none());
        assert_eq!(r.next_timeout(), Some(11 * MS + MS / 2));
        // The hole's fill empties the out-of-order queue: at once (ICSK_ACK_NOW), and the
        // compressed arrival goes with it.
        let a = r.on_data(11 * MS + 1, &pkt(id + 1, 16_000)).expect("the fill");
        assert_eq!((a.largest, a.stream_cum), (id + 1, (id + 1) * 1000));
        assert_eq!(r.next_timeout(), None);
    }

    #[test]
    fn at_most_44_wait_for_one_ack() {
        // "tp->compressed_ack >= READ_ONCE(sock_net(sk)->ipv4.sysctl_tcp_comp_sack_nr)" (44).
        let (mut r, id) = three_dupacks(100 * MS);
        let waited = (id..id + 60).take_while(|&i| r.on_data(11 * MS, &pkt(i, i * 1000)).is_none()).count();
        assert_eq!(waited, 44);
    }

    #[test]
    fn a_segment_beyond_the_two_newest_sack_blocks_sends_what_waits() {
        // tcp_sack_new_ofo_skb: "if (this_sack >= TCP_SACK_BLOCKS_EXPECTED)
        // tcp_sack_compress_send_ack(sk)" before the segment enters the list: the ACK that
        // goes holds what waited, not this segment, which then waits in turn.
        let (mut r, id) = three_dupacks(100 * MS);
        // A second hole at id: a new block next to one (index 1): compressed, no flush.
        assert!(r.on_data(11 * MS, &pkt(id + 1, (id + 1) * 1000)).is_none());
        // A third hole: the new block would be the third (index 2): what waited goes now.
        let a = r.on_data(11 * MS + 1, &pkt(id + 3, (id + 3) * 1000)).expect("the flush");
        assert_eq!(a.largest, id + 1, "without the segment that caused it");
        assert_eq!(r.next_timeout(), Some(12 * MS + 1), "that segment waits for its own timer");
        // Extending the newest block again: no flush.
        assert!(r.on_data(11 * MS + 2, &pkt(id + 4, (id + 4) * 1000)).is_none());
        assert_eq!(r.on_timeout(12 * MS + 1).expect("the timer").largest, id + 4);
    }

    #[test]
    fn sack_compression_off_acks_each_out_of_order_arrival() {
        let cfg = ReceiverConfig { sack_compression: false, ..engine() };
        let mut r = Receiver::new(cfg);
        for i in 0..16 {
            r.on_data(i, &pkt(i, i * 1000)).expect("quick ACK");
        }
        assert!((17..80).all(|i| r.on_data(MS + i, &pkt(i, i * 1000)).is_some()));
    }

    #[test]
    fn delayed_ack_off_acks_every_packet() {
        let mut r = Receiver::new(ReceiverConfig { delayed_ack: false, ..Default::default() });
        for i in 0..40 {
            assert!(r.on_data(i, &pkt(i, i * 1000)).is_some());
        }
        assert_eq!(r.next_timeout(), None);
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
        DataPacket { id, offset: id * 1000, len: 1000, sent: 0, retransmission: false, push: false }
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
        let cfg = ReceiverConfig {
            delayed_ack: true,
            ato_min: 40,
            window_growth: false,
            jiffy_timers: false,
            ..Default::default()
        };
        let mut r = Receiver::new(cfg).with_agent(Some(agent));
        for id in 0..16 {
            assert!(r.on_data(id, &pkt(id)).is_some(), "quick ACK {id}");
        }
        assert!(r.on_data(16, &pkt(16)).is_none(), "past the quick ACKs a packet waits for a second");
        assert_eq!(r.next_timeout(), Some(56), "the delayed-ACK deadline comes before the agent's (115)");
        let a = r.on_timeout(56).expect("the delayed ACK");
        assert_eq!(a.feedback.get(), Some([17, 0, 0, 0, 0, 0]));
        assert_eq!(r.next_timeout(), Some(156), "then only the agent's timer");
    }
}
