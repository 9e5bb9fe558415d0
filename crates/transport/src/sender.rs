use crate::handshake::Handshake;
use crate::prr::Prr;
use crate::push::Writes;
use crate::rtt::{AckRtt, RttEstimator};
use crate::{AckFrame, DataPacket};
use cclab_cc::{
    AckEvent, AckedPacket, CaState, CcContext, CcTag, CongestionControl, CongestionEvent, LossCause, LostPacket,
    RateSample, Rng, SentPacket, Time, GSO_MAX_SIZE,
};
use cclab_core::metrics::LossGaps;
use cclab_core::scenario::{FlowSpec, Pacing, RecoveryModel, RtoModel, Transport};
use cclab_core::time::SEC;
use std::collections::VecDeque;

/// RACK / RFC 9002 time threshold: a packet is lost 9/8 RTT after a later one was acked.
const TIME_THRESHOLD_NUM: u64 = 9;
const TIME_THRESHOLD_DEN: u64 = 8;
/// Dupthresh: a packet is lost once three later packets are acked.
const PACKET_THRESHOLD: u64 = 3;
/// Linux's sk_pacing_shift (10) and tcp_tso_rtt_log sysctl (9); the burst's ceiling is
/// [`GSO_MAX_SIZE`].
const PACING_SHIFT: u32 = 10;
const TSO_RTT_LOG: u32 = 9;
/// Linux's TCP_TIMEOUT_MIN (2 jiffies: 8 ms at [`cclab_core::time::LINUX_HZ`]): the PTO's
/// allowance when more than one packet is out, and RACK's timer's beyond the last packet due.
const TCP_TIMEOUT_MIN: Time = 2 * cclab_core::time::JIFFY;
/// Segments Linux sends before it paces (tcp_update_skb_after_send: tp->data_segs_out >= 10).
const LINUX_UNPACED_SEGS: u64 = 10;
/// Linux's initial tp->reordering (net.ipv4.tcp_reordering): SACKed packets after which RACK
/// drops its reordering window.
const RACK_REORDERING: u64 = 3;

#[derive(Clone, Copy, Debug)]
pub struct SenderConfig {
    pub mss: u64,
    pub min_rto: Time,
    /// Pace window-based controllers at `ratio × cwnd / srtt` (Linux's 2.0 in slow start,
    /// 1.2 otherwise) when the controller sets no rate.
    pub pace_windowed: bool,
    /// Ignore the controller's pacing rate entirely.
    pub never_pace: bool,
    /// The receiver's window: bytes in flight never exceed it, whatever the controller allows.
    pub rwnd: u64,
    /// The RTO formula (`[transport] rto`): Linux's by default.
    pub rto: RtoModel,
    /// The backed-off RTO's ceiling (`[transport] rto_max`): Linux's TCP_RTO_MAX, 120 s.
    pub rto_max: Time,
    /// Detect spurious timeouts and undo their reduction (`[transport] undo`, Linux's F-RTO).
    pub undo: bool,
    /// Send a paced flow in Linux's TSO/GSO bursts when its controller models a Linux module
    /// (`[transport] tso`; [`Sender::tso_segs`]).
    pub tso: bool,
    /// Meter the flight down to the controller's reduced window by PRR during fast recovery
    /// when its controller is one Linux runs PRR for (`[transport] prr`; [`crate::prr`]).
    pub prr: bool,
    /// Tail-loss probes (`[transport] tlp`; [`Sender::arm_tlp`]).
    pub tlp: bool,
    /// Linux's RACK loss detection for controllers that model a Linux TCP module
    /// (`[transport] rack`; [`Sender::detect_losses`]); false, and for the other schemes:
    /// RFC 9002's packet and time thresholds.
    pub rack: bool,
    /// Recovery episodes for the same controllers as `rack` (`[transport] recovery`);
    /// RFC 9002's for the other schemes ([`Sender::linux_episodes`]).
    pub recovery: RecoveryModel,
    /// Set PSH where Linux's sender does for the receiver's `push_ack` ([`crate::push`]).
    pub push: bool,
    /// Pace as Linux's TCP does for a controller that models a Linux module (`[transport]
    /// pacing_credit`; [`Sender::pacing_gap`]).
    pub pacing_credit: bool,
    /// The retransmission timer (the RTO, the loss probe and RACK's reordering timer) counts
    /// in Linux's jiffies for a controller that models a Linux module, fired on the timer
    /// wheel's tick ([`cclab_core::time::linux_timer_fires`]); false, and for the other
    /// schemes: exact nanoseconds.
    pub jiffy_timers: bool,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            mss: 1448,
            min_rto: 200_000_000,
            pace_windowed: false,
            never_pace: false,
            rwnd: u64::MAX,
            rto: RtoModel::Linux,
            rto_max: 120 * SEC,
            undo: true,
            tso: true,
            prr: true,
            tlp: true,
            rack: true,
            recovery: RecoveryModel::Linux,
            push: true,
            pacing_credit: true,
            jiffy_timers: true,
        }
    }
}

impl SenderConfig {
    /// A flow's sender as every engine builds it: the flow's keys and the scenario's
    /// `[transport]` section.
    pub fn for_flow(spec: &FlowSpec, transport: &Transport, mss: u64) -> SenderConfig {
        SenderConfig {
            mss,
            min_rto: spec.min_rto.ns(),
            pace_windowed: spec.pacing == Pacing::On,
            never_pace: spec.pacing == Pacing::Off,
            rwnd: spec.rwnd.map_or(transport.default_rwnd(), |b| b.0),
            rto: transport.rto,
            rto_max: transport.rto_max.ns(),
            undo: transport.undo,
            tso: transport.tso,
            prr: transport.prr,
            tlp: transport.tlp,
            rack: transport.rack,
            recovery: transport.recovery,
            push: transport.push_ack && spec.delayed_ack,
            pacing_credit: transport.pacing_credit,
            jiffy_timers: true,
        }
    }
}

/// One pass of loss detection's rule over the packets in flight (`Sender::detect_losses`).
#[derive(Clone, Copy, Debug)]
struct LossRule {
    /// Lost once this many later ids are acknowledged (RFC 9002); None: no such rule (RACK).
    packet_threshold: Option<u64>,
    /// Lost once this long has passed since it was sent, for this cause.
    delay: Time,
    time_cause: LossCause,
    /// The timer waits for the last pending packet (RACK) rather than the first (RFC 9002).
    wait_for_last: bool,
    /// Added to the timer's deadline.
    slack: Time,
}

impl LossRule {
    /// A packet sent at `sent`, `later` ids below the largest acked: lost (why), or the time it
    /// will be.
    fn verdict(&self, later: u64, sent: Time, now: Time) -> Result<LossCause, Time> {
        if self.packet_threshold.is_some_and(|k| later >= k) {
            return Ok(LossCause::PacketThreshold);
        }
        let due = sent + self.delay;
        if due <= now {
            Ok(self.time_cause)
        } else {
            Err(due)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    InFlight,
    Acked,
    Lost,
    /// Declared lost by a retransmission timeout: an ACK of it proves the timeout spurious.
    RtoLost,
}

/// What the sender remembers of one transmission, including the delivery-rate snapshot.
#[derive(Clone, Copy, Debug)]
struct Sent {
    offset: u64,
    len: u32,
    state: State,
    app_limited: bool,
    /// PSH: sent again with it, as Linux's skb keeps its flags.
    push: bool,
    send_time: Time,
    tag: CcTag,
    delivered: u64,
    delivered_time: Time,
    first_send_time: Time,
    tx_in_flight: u64,
    lost: u64,
    /// It repairs data declared lost (sent again from the retransmit queue): while in flight,
    /// that loss is still outstanding (Linux's lost_out).
    repair: bool,
}

/// One segment to send.
#[derive(Clone, Copy, Debug)]
struct Segment {
    offset: u64,
    len: u32,
    retransmission: bool,
    push: bool,
}

/// A tail-loss probe that sent the last segment again, and its original.
#[derive(Clone, Copy, Debug)]
struct Twins {
    orig: u64,
    probe: u64,
    /// Either copy was acked.
    acked: bool,
}

/// Counters for tests and logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub packets_sent: u64,
    pub retransmissions: u64,
    pub packets_lost: u64,
    pub rto_count: u64,
    /// Timeouts found spurious and undone (`[transport] undo`).
    pub spurious_rtos: u64,
    /// Tail-loss probes sent (`[transport] tlp`; Linux's TCPLossProbes).
    pub tlp_probes: u64,
    pub congestion_events: u64,
    /// SYNs sent again after a timeout while connecting ([`Sender::connect`]).
    pub syn_retransmissions: u64,
    /// Gaps between the send times of packets declared lost, for their burstiness: a flow's
    /// packets reach the bottleneck in send order one fixed access delay later, so these are
    /// the gaps between the queue's drops of this flow (IMC'21 logs drops at the queue).
    pub loss_gaps: LossGaps,
}

pub struct Sender {
    cfg: SenderConfig,
    cc: Box<dyn CongestionControl>,
    rng: Rng,
    rtt: RttEstimator,
    /// Sent packets from `base_id` on; resolved ones are popped from the front.
    sent: VecDeque<Sent>,
    base_id: u64,
    next_id: u64,
    /// Lowest id not yet acked or declared lost (the loss-detection scan starts here).
    first_unresolved: u64,
    largest_acked: Option<u64>,
    in_flight: u64,
    /// Stream data declared lost and waiting to be sent again.
    retransmit: VecDeque<(u64, u32, bool)>,
    next_offset: u64,
    /// Bytes the application has written (u64::MAX for a bulk flow).
    app_limit: u64,
    /// The application's writes as Linux's PSH marks see them (`push`); None without.
    writes: Option<Writes>,
    /// Messages written on a persistent connection ([`Sender::write_message`]): the stream
    /// offset one past each one's last byte and its tag, oldest first, until acknowledged.
    messages: VecDeque<(u64, u64)>,
    /// Tags of messages whose last byte the receiver acknowledged, not yet taken.
    completed: Vec<u64>,
    active: bool,
    /// SYN_SENT: the connection is opening ([`Sender::connect`]); no data until the SYN-ACK.
    handshake: Option<Handshake>,
    // Recovery epochs (reference §0.3, QUIC style).
    ca_state: CaState,
    recovery_start: Option<Time>,
    recovery_end_id: u64,
    /// snd_nxt when the episode began (tp->high_seq): a Linux episode ends once the cumulative
    /// ACK reaches it.
    high_seq: u64,
    /// A Linux episode ended with losses still outstanding and the next began on the same
    /// ACK (`end_episode_if_over`): its cut is due once the controller has seen the ACK.
    recut_due: bool,
    /// PRR's window while a fast recovery reduces the controller's (Some only in Recovery).
    prr: Option<Prr>,
    /// The highest cumulative ACK seen (stream bytes), to tell when it advances.
    snd_una: u64,
    // Retransmission timer.
    rto_deadline: Option<Time>,
    loss_time: Option<Time>,
    /// RACK (tcp_rack_advance): the send time and RTT of the most recently sent packet that
    /// was delivered.
    rack_xmit: Time,
    rack_rtt: Time,
    /// While a timeout's reduction may still be undone: the first id sent after the first
    /// timeout of the loss episode. Entries it declared lost are kept until then.
    undo_end: Option<u64>,
    // Tail-loss probes: the probe timer while armed; the probe of the current episode (Linux's
    // tlp_high_seq: no second probe until an ACK reaches it); a probe that re-sent the last
    // segment, with that segment's original (so the copy left over is not sent a third time);
    // and whether the timer fired and a probe waits for the next poll_transmit.
    tlp_deadline: Option<Time>,
    tlp_high: Option<u64>,
    tlp_twins: Option<Twins>,
    probe_due: bool,
    /// Time the receive window alone kept data back (Linux's TCP_CHRONO_RWND_LIMITED,
    /// tcpi_rwnd_limited): the interval open since, and the total of those closed.
    rwnd_blocked_since: Option<Time>,
    rwnd_limited: Time,
    // Delivery-rate sampler (reference §0.4).
    delivered: u64,
    delivered_time: Time,
    first_send_time: Time,
    app_limited_until: u64,
    lost_total: u64,
    /// The last valid rate sample's delivery rate, bytes/s (NaN before one), for traces.
    last_delivery_rate: f64,
    // Round counter (reference §0.5).
    round: u64,
    next_round_delivered: u64,
    // cwnd-limited tracking, per round (Linux tcp_is_cwnd_limited).
    max_in_flight_round: u64,
    max_in_flight_prev: u64,
    cwnd_blocked_round: bool,
    cwnd_blocked_prev: bool,
    // Pacing: earliest departure time of the next packet.
    next_send_time: Time,
    // The TSO burst under way: packets it may still send, all at `burst_at`, and what is left
    // of the pacing credit its late release earned (`pacing_gap`).
    burst_left: u64,
    burst_at: Time,
    burst_credit: Time,
    last_send_time: Time,
    // Scratch buffers reused across ACKs.
    acked_buf: Vec<AckedPacket>,
    lost_buf: Vec<LostPacket>,
    pub stats: SenderStats,
}

impl Sender {
    pub fn new(cfg: SenderConfig, cc: Box<dyn CongestionControl>, rng: Rng) -> Sender {
        Sender {
            cfg,
            cc,
            rng,
            rtt: RttEstimator::new(cfg.rto, cfg.min_rto, cfg.rto_max),
            sent: VecDeque::new(),
            base_id: 0,
            next_id: 0,
            first_unresolved: 0,
            largest_acked: None,
            in_flight: 0,
            retransmit: VecDeque::new(),
            next_offset: 0,
            app_limit: u64::MAX,
            writes: cfg.push.then(|| Writes::new(cfg.mss)),
            messages: VecDeque::new(),
            completed: Vec::new(),
            active: false,
            handshake: None,
            ca_state: CaState::Open,
            recovery_start: None,
            recovery_end_id: 0,
            high_seq: 0,
            recut_due: false,
            prr: None,
            snd_una: 0,
            rto_deadline: None,
            loss_time: None,
            rack_xmit: 0,
            rack_rtt: 0,
            undo_end: None,
            tlp_deadline: None,
            tlp_high: None,
            tlp_twins: None,
            probe_due: false,
            rwnd_blocked_since: None,
            rwnd_limited: 0,
            delivered: 0,
            delivered_time: 0,
            first_send_time: 0,
            // The first flight is application-limited: "There's a bubble in the pipe until at
            // least the first ACK" (tcp_init_sock: tp->app_limited = ~0U), and the
            // application's first write finds the socket empty (tcp_sendmsg →
            // tcp_rate_check_app_limited). Cleared by the first delivery, as any mark is; BBR
            // then skips its first round in the full-bandwidth check (bbr_check_full_bw_reached
            // returns on rs->is_app_limited) and leaves Startup a round later.
            app_limited_until: 1,
            lost_total: 0,
            last_delivery_rate: f64::NAN,
            round: 0,
            next_round_delivered: 0,
            max_in_flight_round: 0,
            max_in_flight_prev: 0,
            cwnd_blocked_round: false,
            cwnd_blocked_prev: false,
            next_send_time: 0,
            burst_left: 0,
            burst_at: 0,
            burst_credit: 0,
            last_send_time: 0,
            acked_buf: Vec::new(),
            lost_buf: Vec::new(),
            stats: SenderStats::default(),
        }
    }

    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }
    pub fn rtt(&self) -> &cclab_cc::RttStats {
        &self.rtt.stats
    }
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    /// The receive window the sender is held to, bytes.
    pub fn rwnd(&self) -> u64 {
        self.cfg.rwnd
    }
    /// How long the receive window alone has kept data back, ns, up to `now`.
    pub fn rwnd_limited(&self, now: Time) -> Time {
        self.rwnd_limited + self.rwnd_blocked_since.map_or(0, |t| now.saturating_sub(t))
    }
    /// The last valid delivery-rate sample, bytes/s (Linux's tcpi_delivery_rate); None before one.
    pub fn delivery_rate(&self) -> Option<f64> {
        Some(self.last_delivery_rate).filter(|r| !r.is_nan())
    }
    pub fn is_active(&self) -> bool {
        self.active
    }
    pub fn ca_state(&self) -> CaState {
        self.ca_state
    }

    /// Starts sending on an open connection, with no RTT sample yet (a bulk flow has
    /// unlimited data until [`Sender::stop`]).
    pub fn start(&mut self, now: Time) {
        self.active = true;
        self.next_send_time = now;
        let mss = self.cfg.mss;
        self.cc.on_init(now, &self.rtt.stats, &mut CcContext { mss, rng: &mut self.rng });
    }

    /// Opens the connection as Linux's connect() does (`[transport] handshake`): a SYN now
    /// ([`Sender::poll_syn`]), again after TCP_TIMEOUT_INIT with backoff while unanswered, and
    /// data only once a SYN-ACK arrives ([`Sender::on_syn_ack`]), whose RTT sample seeds srtt,
    /// the RTO and the min-RTT before the controller starts.
    pub fn connect(&mut self, now: Time) {
        self.handshake = Some(Handshake::new(now, self.cfg.rto_max));
    }

    /// Whether the connection is still opening (a SYN sent, no SYN-ACK yet).
    pub fn is_connecting(&self) -> bool {
        self.handshake.is_some()
    }

    /// A SYN due at `now`, if any: returns its send time, which the SYN-ACK must echo back.
    pub fn poll_syn(&mut self, now: Time) -> Option<Time> {
        let h = self.handshake.as_mut()?;
        let syn = h.poll(now)?;
        self.stats.syn_retransmissions = h.retries() as u64;
        Some(syn)
    }

    /// A SYN-ACK echoing the SYN sent at `echo`: the RTT sample now − echo (tcp_ack_update_rtt
    /// via the timestamp echo, so a retransmitted SYN is timed too), then data may flow.
    /// Later SYN-ACKs (answers to retransmitted SYNs) change nothing.
    pub fn on_syn_ack(&mut self, now: Time, echo: Time) {
        if self.handshake.take().is_none() {
            return;
        }
        self.rtt.sample(AckRtt::single(now.saturating_sub(echo)), self.next_id, self.next_id);
        self.start(now);
    }

    /// Limits the data the application has written to `bytes` in total.
    pub fn set_app_limit(&mut self, bytes: u64) {
        self.app_limit = bytes;
        if let (Some(w), true) = (&mut self.writes, bytes != u64::MAX) {
            // The application's data ends here: its last write's end carries PSH.
            w.fill_to(bytes, bytes);
        }
    }

    /// Appends a message of `bytes` to the stream of a persistent, application-limited
    /// connection (one that started with `set_app_limit(0)`); once the receiver acknowledges
    /// its last byte in order, `tag` appears in [`Sender::take_completed`].
    pub fn write_message(&mut self, bytes: u64, tag: u64) {
        assert!(self.app_limit != u64::MAX, "messages need an application-limited sender (set_app_limit(0))");
        self.app_limit += bytes;
        self.messages.push_back((self.app_limit, tag));
        if let Some(w) = &mut self.writes {
            // One write per message (the emulator's request client writes each at once).
            w.fill_to(self.app_limit, self.app_limit);
        }
    }

    /// Tags of the messages completed since the last call, in stream order, into `out`.
    pub fn take_completed(&mut self, out: &mut Vec<u64>) {
        out.append(&mut self.completed);
    }

    /// Messages written and not yet acknowledged in full.
    pub fn pending_messages(&self) -> usize {
        self.messages.len()
    }

    /// Stops all sending: no new data, no retransmissions, no timers.
    pub fn stop(&mut self) {
        self.active = false;
        self.handshake = None;
        self.rto_deadline = None;
        self.loss_time = None;
        self.undo_end = None;
        self.prr = None;
        self.tlp_deadline = None;
        self.probe_due = false;
    }

    fn has_data(&self) -> bool {
        !self.retransmit.is_empty() || self.next_offset < self.app_limit
    }

    /// The rate the sender paces at, bytes/s (the controller's, or for a windowed controller
    /// with pacing on Linux's 2×/1.2× cwnd/srtt); None when it does not pace.
    pub fn pacing_rate(&self) -> Option<f64> {
        if self.cfg.never_pace {
            return None;
        }
        if let Some(r) = self.cc.pacing_rate() {
            return Some(r);
        }
        if self.cfg.pace_windowed && self.rtt.stats.has_sample {
            let cwnd = self.cc.cwnd();
            if cwnd == u64::MAX {
                return None;
            }
            let ratio = if self.cc.in_slow_start() { 2.0 } else { 1.2 };
            return Some(ratio * cwnd as f64 / (self.rtt.stats.smoothed as f64 / 1e9));
        }
        None
    }

    /// Whether the congestion window allows another packet: the controller's, or during a
    /// PRR reduction PRR's (Linux's tcp_cwnd_test: packets in flight below snd_cwnd).
    fn window_open(&self) -> bool {
        match &self.prr {
            Some(p) => self.in_flight.div_ceil(self.cfg.mss) < p.cwnd(),
            None => self.cc.can_send(self.in_flight, self.cfg.mss),
        }
    }

    /// The next packet to send at `now`, if the window, the pacer and the data allow one.
    pub fn poll_transmit(&mut self, now: Time) -> Option<DataPacket> {
        if std::mem::take(&mut self.probe_due) {
            if let Some(p) = self.send_probe(now) {
                return Some(p);
            }
        }
        if !self.active || !self.has_data() {
            self.rwnd_unblocked(now);
            return None;
        }
        if !self.window_open() {
            self.cwnd_blocked_round = true;
            self.rwnd_unblocked(now);
            return None;
        }
        if self.in_flight + self.cfg.mss > self.cfg.rwnd {
            self.rwnd_blocked_since.get_or_insert(now);
            return None;
        }
        self.rwnd_unblocked(now);
        let pacing = self.pacing_rate();
        let in_burst = self.burst_left > 0 && now == self.burst_at;
        if pacing.is_some() && now < self.next_send_time && !in_burst {
            return None;
        }
        let (offset, len, retransmission, push) = match self.retransmit.pop_front() {
            Some((off, len, push)) => (off, len, true, push),
            None => {
                let len = self.cfg.mss.min(self.app_limit - self.next_offset) as u32;
                let off = self.next_offset;
                self.next_offset += len as u64;
                (off, len, false, self.take_push(off, len))
            }
        };
        if self.in_flight == 0
            && self.app_limit != u64::MAX
            && self.retransmit.is_empty()
            && self.stats.packets_sent > 0
        {
            // A persistent connection sends again after an idle period: the controller decides
            // whether its window survived (Linux tcp_cwnd_restart when the silence exceeded
            // icsk_rto, the current timeout, and CA_EVENT_TX_START). Only message-mode senders
            // go idle this way; a bulk sender's empty flight after an RTO is a loss, not idleness.
            let idle_for = now.saturating_sub(self.last_send_time);
            let rto = self.rtt.rto();
            let mss = self.cfg.mss;
            self.cc.on_idle_restart(now, idle_for, rto, &mut CcContext { mss, rng: &mut self.rng });
            if !self.cc.can_send(0, mss) {
                return None;
            }
        }
        Some(self.emit(now, Segment { offset, len, retransmission, push }, pacing, in_burst))
    }

    /// Whether new data at `offset` carries PSH ([`crate::push`]).
    #[inline]
    fn take_push(&mut self, offset: u64, len: u32) -> bool {
        self.writes.as_mut().is_some_and(|w| w.take(offset, len as u64))
    }

    /// Sends one packet: the sampler's and the controller's bookkeeping, the pacer, the timers.
    fn emit(&mut self, now: Time, seg: Segment, pacing: Option<f64>, in_burst: bool) -> DataPacket {
        let Segment { offset, len, retransmission, push } = seg;
        if self.in_flight == 0 {
            // Reference §0.4: restart the sampler's clocks after idle.
            self.first_send_time = now;
            self.delivered_time = now;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.in_flight += len as u64;
        self.max_in_flight_round = self.max_in_flight_round.max(self.in_flight);
        let app_limited = self.app_limited_until > 0;
        let info = SentPacket {
            id,
            bytes: len as u64,
            send_time: now,
            is_retransmission: retransmission,
            in_flight: self.in_flight,
            app_limited,
        };
        let mss = self.cfg.mss;
        let tag = self.cc.on_packet_sent(&info, &mut CcContext { mss, rng: &mut self.rng });
        self.sent.push_back(Sent {
            offset,
            len,
            state: State::InFlight,
            app_limited,
            push,
            send_time: now,
            tag,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_send_time: self.first_send_time,
            tx_in_flight: self.in_flight,
            lost: self.lost_total,
            repair: retransmission,
        });
        if let Some(rate) = pacing {
            if !in_burst {
                // A pacing release: one skb of this many segments leaves back to back, and the
                // next waits for all of them at the rate (tcp_update_skb_after_send). A window
                // that closes mid-burst ends it, as Linux sizes the skb to the cwnd quota.
                self.burst_left = self.tso_segs(rate);
                self.burst_at = now;
                self.burst_credit = now.saturating_sub(self.next_send_time);
            }
            self.burst_left -= 1;
            let gap = self.pacing_gap(len, rate);
            self.next_send_time = self.next_send_time.max(now) + gap;
        }
        self.last_send_time = now;
        if let Some(p) = &mut self.prr {
            p.on_sent();
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(self.timer_at(now, self.rtt.rto()));
        }
        self.stats.packets_sent += 1;
        self.stats.retransmissions += u64::from(retransmission);
        self.mark_app_limited();
        // tcp_write_xmit: "Send one loss probe per tail loss episode" (tcp_schedule_loss_probe).
        self.arm_tlp(now);
        DataPacket { id, offset, len, sent: now, retransmission, push }
    }

    /// Arms the tail-loss probe (RFC 8985 §7.2; Linux tcp_schedule_loss_probe) after a send or
    /// an ACK: in the Open state with data in flight and no probe of this episode out yet, at
    /// PTO = 2·srtt, plus min_rto when a single packet is out (a delayed ACK's worth) or
    /// TCP_TIMEOUT_MIN otherwise (1 s before any RTT sample), and never later than the RTO.
    fn arm_tlp(&mut self, now: Time) {
        self.tlp_deadline = None;
        if !self.cfg.tlp || self.ca_state != CaState::Open || self.in_flight == 0 || self.tlp_high.is_some() {
            return;
        }
        let Some(rto_at) = self.rto_deadline else { return };
        let s = &self.rtt.stats;
        let pto = if !s.has_sample {
            SEC
        } else if self.in_flight <= self.cfg.mss {
            2 * s.smoothed + self.cfg.min_rto
        } else {
            2 * s.smoothed + TCP_TIMEOUT_MIN
        };
        self.tlp_deadline = Some(self.timer_at(now, pto).min(rto_at));
    }

    /// When a timer armed at `now` for `delay` fires: on Linux's timer wheel for a Linux
    /// module, else exactly.
    fn timer_at(&self, now: Time, delay: Time) -> Time {
        if self.cfg.jiffy_timers && self.cc.uses_rack() {
            cclab_core::time::linux_timer_fires(now, delay)
        } else {
            now + delay
        }
    }

    /// Closes the receive window's blocked interval, if one is open: something else (the
    /// congestion window, the data) now decides, or the window opened.
    #[inline]
    fn rwnd_unblocked(&mut self, now: Time) {
        if let Some(t) = self.rwnd_blocked_since.take() {
            self.rwnd_limited += now - t;
        }
    }

    /// The probe timer fired (Linux tcp_send_loss_probe): one packet outside the congestion
    /// window, new data if the application has some and the receive window allows it, else
    /// the last segment sent again; then the RTO is armed afresh from now (tcp_rearm_rto).
    #[cold]
    #[inline(never)]
    fn send_probe(&mut self, now: Time) -> Option<DataPacket> {
        if !self.active || self.ca_state != CaState::Open || self.in_flight == 0 || self.tlp_high.is_some() {
            return None;
        }
        let mss = self.cfg.mss;
        let new_data = self.retransmit.is_empty() && self.next_offset < self.app_limit;
        let p = if new_data && self.in_flight + mss <= self.cfg.rwnd {
            // tcp_write_xmit(push_one = 2): "Force out a loss probe pkt."
            let len = mss.min(self.app_limit - self.next_offset) as u32;
            let off = self.next_offset;
            self.next_offset += len as u64;
            let push = self.take_push(off, len);
            self.emit(now, Segment { offset: off, len, retransmission: false, push }, None, false)
        } else {
            // skb_rb_last(&sk->tcp_rtx_queue), __tcp_retransmit_skb. The original stays in
            // flight: whichever copy is acked first delivers the data (`tlp_twins`).
            let (i, last) = self.sent.iter().enumerate().rev().find(|(_, p)| p.state == State::InFlight)?;
            let (orig, off, len, push) = (self.base_id + i as u64, last.offset, last.len, last.push);
            if self.in_flight + len as u64 > self.cfg.rwnd {
                return None;
            }
            let p = self.emit(now, Segment { offset: off, len, retransmission: true, push }, None, false);
            if let Some(probe) = self.sent.back_mut() {
                probe.repair = false; // a probe repeats data no one declared lost
            }
            self.tlp_twins = Some(Twins { orig, probe: p.id, acked: false });
            p
        };
        self.tlp_high = Some(p.id);
        self.tlp_deadline = None;
        self.rto_deadline = Some(self.timer_at(now, self.rtt.rto()));
        self.stats.tlp_probes += 1;
        Some(p)
    }

    /// How long a packet of `len` bytes holds the pacer at `rate`: its time at the rate. With
    /// `[transport] pacing_credit` and a controller that models a Linux module, as Linux's
    /// tcp_update_skb_after_send (net/ipv4/tcp_output.c) computes it: nothing for the first 10
    /// segments ("Original sch_fq does not pace first 10 MSS"), and when the skb left later
    /// than the pacer allowed, that lateness (its credit) shortens the wait after it by up to
    /// half ("take into account OS jitter"). So an ACK-clocked flow whose ACKs come a little
    /// later than its pacing rate would send keeps the ACKs' pace, not the pacer's.
    fn pacing_gap(&mut self, len: u32, rate: f64) -> Time {
        let gap = (len as f64 / rate * 1e9) as Time;
        if !self.cfg.pacing_credit || self.cc.min_tso_segs().is_none() {
            return gap;
        }
        if self.stats.packets_sent < LINUX_UNPACED_SEGS {
            return 0;
        }
        let used = self.burst_credit.min(gap / 2);
        self.burst_credit -= used;
        gap - used
    }

    /// Segments per pacing release. With `[transport] tso` and a controller that models a Linux
    /// module, Linux's tcp_tso_autosize (net/ipv4/tcp_output.c, 6.0 and later): the pacing
    /// rate shifted right by sk_pacing_shift (10: about 1 ms of data), plus gso_max_size shifted
    /// right by min_rtt in µs / 2^tcp_tso_rtt_log (9) for close peers ("smaller min_rtt
    /// resulting in bigger TSO bursts"), at most gso_max_size, in MSS segments, at least the
    /// module's min_tso_segs. Otherwise one.
    pub fn tso_segs(&self, rate: f64) -> u64 {
        let Some(min_segs) = self.cc.min_tso_segs().filter(|_| self.cfg.tso) else {
            return 1;
        };
        let mut bytes = rate as u64 >> PACING_SHIFT;
        if self.rtt.stats.has_sample {
            let r = (self.rtt.stats.min / 1_000) >> TSO_RTT_LOG;
            if r < u32::BITS as u64 {
                bytes += GSO_MAX_SIZE >> r;
            }
        }
        (bytes.min(GSO_MAX_SIZE) / self.cfg.mss).max(min_segs)
    }

    /// Reference §0.4: a sender with nothing left to send and room in the window is
    /// application-limited; rate samples taken until that data is delivered say so.
    fn mark_app_limited(&mut self) {
        if !self.has_data() && self.in_flight < self.cc.cwnd() {
            self.app_limited_until = (self.delivered + self.in_flight).max(1);
        }
    }

    fn entry(&mut self, id: u64) -> Option<&mut Sent> {
        id.checked_sub(self.base_id).and_then(|i| self.sent.get_mut(i as usize))
    }

    /// Cache hint: the sender's first line, which an ACK touches first. Only lines whose
    /// address needs no load: following its pointers (the controller, the oldest packet in
    /// flight) waited on the sender's own miss before the event that wanted it had begun
    /// (CoreScale, pairs: 0.73–1.01×, median 0.93× the CPU time without them).
    #[inline]
    pub fn prefetch(&self) {
        cclab_core::hint::prefetch(self);
    }

    /// Gives back memory a past peak of packets in flight took ([`cclab_core::trim`]).
    pub fn trim(&mut self) {
        cclab_core::trim::trim(&mut self.sent);
    }

    /// Processes an acknowledgement.
    pub fn on_ack(&mut self, now: Time, ack: &AckFrame) {
        if !self.active {
            return;
        }
        if let Some(payload) = ack.feedback.get() {
            // Receiver feedback first: it may come on an ACK that acknowledges nothing new.
            self.deliver_feedback(now, cclab_cc::Feedback { payload, largest_received: ack.largest });
        }
        // A message is complete when the in-order (cumulative) acknowledgement covers its last
        // byte: SACKed bytes above a hole do not count, as a TCP application sees them.
        while let Some(&(end, tag)) = self.messages.front() {
            if end > ack.stream_cum {
                break;
            }
            self.messages.pop_front();
            self.completed.push(tag);
        }
        let prior_in_flight = self.in_flight;
        let una_advanced = ack.stream_cum > self.snd_una;
        let una_advance = ack.stream_cum.saturating_sub(self.snd_una);
        self.snd_una = self.snd_una.max(ack.stream_cum);
        let prior_largest = self.largest_acked;
        let floor = prior_largest.map_or(0, |l| l + 1);
        self.acked_buf.clear();
        self.lost_buf.clear();
        let mut newest: Option<(u64, Sent)> = None;
        // Linux's first_ackt / first_sackt: when the oldest of them was sent.
        let mut oldest_sent = Time::MAX;
        let mut newly_acked_bytes = 0;
        // Packets newly delivered, acked or SACKed (Linux's newly_acked_sacked).
        let mut newly_delivered = 0;
        let mut spurious_rto = false;
        // Ids at or below the largest already acked were handled by earlier ACKs: paths are
        // FIFO, so anything below it that is still missing is lost or about to be.
        for &(start, end) in ack.ranges() {
            for id in start.max(floor)..end.min(self.next_id) {
                let Some(p) = self.entry(id) else { continue };
                let was = p.state;
                if was == State::Acked {
                    continue;
                }
                p.state = State::Acked;
                let p = *p;
                if let Some(t) = &mut self.tlp_twins {
                    t.acked |= id == t.orig || id == t.probe;
                }
                if was == State::RtoLost && self.undo_end.is_some_and(|end| id < end) {
                    spurious_rto = true;
                }
                if was == State::InFlight {
                    self.in_flight -= p.len as u64;
                    newly_acked_bytes += p.len as u64;
                    self.acked_buf.push(AckedPacket {
                        id,
                        bytes: p.len as u64,
                        send_time: p.send_time,
                        tag: p.tag,
                        rtt: now - p.send_time,
                    });
                }
                // Reference §0.4: every delivered packet counts, even one declared lost too early.
                self.delivered += p.len as u64;
                newly_delivered += 1;
                self.delivered_time = now;
                oldest_sent = oldest_sent.min(p.send_time);
                if newest.is_none_or(|(nid, n)| (p.send_time, id) > (n.send_time, nid)) {
                    newest = Some((id, p));
                }
            }
        }
        let Some((newest_id, newest_pkt)) = newest else {
            // Only the cumulative point moved (data resent below the largest id acked): that
            // alone may end a Linux episode.
            if una_advanced && self.linux_episodes() {
                self.end_episode_if_over(now, 0);
                // The next episode's cut, if it began on this ACK.
                self.report_congestion(now, &[], prior_in_flight);
            }
            return;
        };
        self.largest_acked = Some(prior_largest.map_or(newest_id, |l| l.max(newest_id)));
        if self.tlp_high.is_some_and(|p| newest_id >= p) {
            // tcp_process_tlp_ack: the probe's episode is over.
            self.tlp_high = None;
        }
        if Some(newest_id) == self.largest_acked {
            let rtt = AckRtt { first: now - oldest_sent, last: now - newest_pkt.send_time };
            self.rtt.sample(rtt, newest_id, self.next_id);
        }
        if spurious_rto && self.ca_state == CaState::Loss {
            self.undo_rto(now);
        }
        self.first_send_time = newest_pkt.send_time;
        if newest_pkt.send_time >= self.rack_xmit {
            // tcp_rack_advance. (Linux skips a retransmission's sample shorter than min_rtt, as
            // the ACK may be the original's; a transmission's own id here leaves no doubt.)
            (self.rack_xmit, self.rack_rtt) = (newest_pkt.send_time, now - newest_pkt.send_time);
        }

        // Rate sample, reference §0.4.
        if self.app_limited_until > 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let send_elapsed = newest_pkt.send_time - newest_pkt.first_send_time;
        let ack_elapsed = self.delivered_time - newest_pkt.delivered_time;
        let interval = send_elapsed.max(ack_elapsed);
        let sample_delivered = self.delivered - newest_pkt.delivered;
        let rate = (interval > 0 && interval >= self.rtt.stats.min).then(|| RateSample {
            delivery_rate: sample_delivered as f64 / (interval as f64 / 1e9),
            interval,
            delivered: sample_delivered,
            prior_delivered: newest_pkt.delivered,
            prior_time: newest_pkt.delivered_time,
            tx_in_flight: newest_pkt.tx_in_flight,
            lost: self.lost_total - newest_pkt.lost,
            is_app_limited: newest_pkt.app_limited,
            rtt: now - newest_pkt.send_time,
        });

        if let Some(r) = &rate {
            self.last_delivery_rate = r.delivery_rate;
        }

        // Round counter, reference §0.5.
        let round_start = newest_pkt.delivered >= self.next_round_delivered;
        if round_start {
            self.next_round_delivered = self.delivered;
            self.round += 1;
            self.max_in_flight_prev = self.max_in_flight_round;
            self.cwnd_blocked_prev = self.cwnd_blocked_round;
            self.max_in_flight_round = self.in_flight;
            self.cwnd_blocked_round = false;
        }

        self.detect_losses(now);

        self.end_episode_if_over(now, newest_id);

        let cwnd_limited = self.cwnd_limited();
        let newly_lost_bytes = self.lost_buf.iter().map(|l| l.bytes).sum();
        let acked = std::mem::take(&mut self.acked_buf);
        let lost = std::mem::take(&mut self.lost_buf);
        let rtt = self.rtt.stats;
        let ev = AckEvent {
            now,
            acked: &acked,
            lost: &lost,
            newly_acked_bytes,
            newly_lost_bytes,
            prior_in_flight,
            in_flight: self.in_flight,
            rtt: &rtt,
            rate,
            delivered: self.delivered,
            round: self.round,
            round_start,
            ca_state: self.ca_state,
            app_limited: !cwnd_limited,
            one_way_delay: Some(ack.one_way_delay),
        };
        let mss = self.cfg.mss;
        self.cc.on_ack(&ev, &mut CcContext { mss, rng: &mut self.rng });
        self.report_congestion(now, &lost, prior_in_flight);
        if let Some(p) = &mut self.prr {
            // tcp_cong_control → tcp_cwnd_reduction, after tcp_fastretrans_alert entered recovery.
            let mss = self.cfg.mss;
            p.on_ack(
                newly_delivered,
                !lost.is_empty(),
                una_advanced,
                self.in_flight.div_ceil(mss),
                self.cc.cwnd() / mss,
            );
        }
        self.acked_buf = acked;
        self.lost_buf = lost;

        self.pop_resolved();
        if let Some(w) = &mut self.writes {
            if self.app_limit == u64::MAX {
                // A bulk application writes what the ACK freed, and keeps its send buffer
                // (Linux's, autotuned to about twice the window's memory) a flight ahead of
                // what was sent.
                w.write(una_advance, u64::MAX);
                w.fill_to(self.next_offset + self.in_flight, u64::MAX);
            }
        }
        self.rto_deadline = (self.in_flight > 0).then(|| self.timer_at(now, self.rtt.rto()));
        // tcp_set_xmit_timer: the probe timer when tcp_schedule_loss_probe allows one.
        self.arm_tlp(now);
        self.mark_app_limited();
    }

    /// The timeout was spurious: an ACK acknowledged a transmission sent before it (Eifel
    /// detection, RFC 3522, which per-transmission ids make exact; Linux's F-RTO undoes on
    /// FLAG_ORIG_SACK_ACKED in tcp_process_loss → tcp_try_undo_loss). As
    /// tcp_undo_cwnd_reduction with unmark_loss: the packets the timeout marked lost and not
    /// yet sent again are in flight once more (loss detection re-marks any that really were
    /// lost), the data acked meanwhile is not sent again, the state returns to Open and the
    /// controller restores its window (undo_cwnd).
    #[cold]
    #[inline(never)]
    fn undo_rto(&mut self, now: Time) {
        let Some(end) = self.undo_end.take() else { return };
        self.stats.spurious_rtos += 1;
        let mut offsets: Vec<u64> = Vec::new();
        for (i, p) in self.sent.iter().enumerate() {
            if self.base_id + i as u64 >= end {
                break;
            }
            if matches!(p.state, State::RtoLost | State::Acked) {
                offsets.push(p.offset);
            }
        }
        offsets.sort_unstable();
        // Queued retransmissions of that data: drop them, remembering which were dropped.
        let mut unsent: Vec<u64> = Vec::new();
        self.retransmit.retain(|&(off, _, _)| {
            let hit = offsets.binary_search(&off).is_ok();
            if hit {
                unsent.push(off);
            }
            !hit
        });
        unsent.sort_unstable();
        let mut restored = std::mem::take(&mut self.lost_buf);
        restored.clear();
        for i in 0..self.sent.len() {
            let id = self.base_id + i as u64;
            if id >= end {
                break;
            }
            let p = &mut self.sent[i];
            if p.state == State::RtoLost && unsent.binary_search(&p.offset).is_ok() {
                p.state = State::InFlight;
                self.in_flight += p.len as u64;
                let (bytes, send_time, tag, cause) = (p.len as u64, p.send_time, p.tag, LossCause::Rto);
                restored.push(LostPacket { id, bytes, send_time, tag, cause });
            }
        }
        self.first_unresolved = self.base_id;
        self.ca_state = CaState::Open;
        self.prr = None;
        self.recovery_start = None;
        let mss = self.cfg.mss;
        self.cc.undo_cwnd(now, &restored, &mut CcContext { mss, rng: &mut self.rng });
        restored.clear();
        self.lost_buf = restored;
    }

    /// Out of line and cold: only two-sided schemes (Sprout) get feedback.
    #[cold]
    #[inline(never)]
    fn deliver_feedback(&mut self, now: Time, fb: cclab_cc::Feedback) {
        let mss = self.cfg.mss;
        self.cc.on_feedback(now, &fb, &mut CcContext { mss, rng: &mut self.rng });
    }

    /// Linux's tcp_is_cwnd_limited: in slow start, the window is used if it is less than twice
    /// the most in flight over the last round; otherwise, if sending stopped on the window.
    fn cwnd_limited(&self) -> bool {
        let cwnd = self.cc.cwnd();
        if cwnd == u64::MAX {
            return true;
        }
        let max_in_flight = self.max_in_flight_round.max(self.max_in_flight_prev);
        if self.cc.in_slow_start() {
            cwnd < 2 * max_in_flight
        } else {
            self.cwnd_blocked_round || self.cwnd_blocked_prev || max_in_flight + self.cfg.mss >= cwnd
        }
    }

    /// Declares lost the unacked packets the loss-detection rule finds lost (Linux's RACK, or
    /// RFC 9002's thresholds: `SenderConfig::rack`) and arms the loss timer for those that are
    /// not yet.
    fn detect_losses(&mut self, now: Time) {
        let Some(largest) = self.largest_acked else { return };
        self.loss_time = None;
        let start = self.first_unresolved.max(self.base_id);
        // Per in-flight packet below the largest acked: the time it is due as lost and the
        // cause; the rule's timer deadline from the pending ones.
        let rack = self.cfg.rack && self.cc.uses_rack();
        let rule = if rack { self.rack_rule(start, largest) } else { self.rfc9002_rule() };
        let mut id = start;
        let mut all_resolved_so_far = true;
        let mut pending: Option<Time> = None;
        while id < largest {
            let idx = (id - self.base_id) as usize;
            let p = self.sent[idx];
            if p.state == State::InFlight {
                match rule.verdict(largest - id, p.send_time, now) {
                    Ok(cause) => self.declare_lost(id, cause),
                    Err(due) => {
                        let later = |a: Time| if rule.wait_for_last { a.max(due) } else { a.min(due) };
                        pending = Some(pending.map_or(due, later));
                        all_resolved_so_far = false;
                    }
                }
            }
            if all_resolved_so_far {
                self.first_unresolved = id + 1;
            }
            id += 1;
        }
        // tcp_rack_mark_lost arms the reordering timer on the wheel ("usecs_to_jiffies(timeout)
        // + TCP_TIMEOUT_MIN"); RFC 9002's timer is exact.
        self.loss_time =
            pending.map(
                |due| {
                    if rack {
                        self.timer_at(now, due.saturating_sub(now) + rule.slack)
                    } else {
                        due + rule.slack
                    }
                },
            );
    }

    /// RFC 9002 §6.1: three later packets acknowledged, or 9/8·max(srtt, latest RTT), at
    /// least 1 ms, since it was sent.
    fn rfc9002_rule(&self) -> LossRule {
        let rtt = self.rtt.stats.latest.max(self.rtt.stats.smoothed);
        let delay = (rtt * TIME_THRESHOLD_NUM / TIME_THRESHOLD_DEN).max(1_000_000);
        LossRule {
            packet_threshold: Some(PACKET_THRESHOLD),
            delay,
            time_cause: LossCause::TimeThreshold,
            wait_for_last: false,
            slack: 0,
        }
    }

    /// Linux's RACK (tcp_rack_detect_loss, tcp_rack_reo_wnd): a packet sent before the most
    /// recently sent delivered one (every id below the largest acked is) is lost
    /// `rack_rtt + reo_wnd` after it left. reo_wnd is min_rtt/4, at most srtt, and 0 in
    /// recovery or once `RACK_REORDERING` packets are SACKed ("be aggressive during the
    /// recovery or starting the recovery by DUPACK threshold"; the simulator's paths never
    /// reorder a flow's packets, so Linux's reord_seen stays 0). The reordering timer waits for
    /// the last packet pending, plus TCP_TIMEOUT_MIN (tcp_rack_mark_lost).
    fn rack_rule(&self, start: u64, largest: u64) -> LossRule {
        let sacked = || {
            (start..largest)
                .filter(|&id| self.sent[(id - self.base_id) as usize].state == State::Acked)
                .take(RACK_REORDERING as usize - 1)
                .count() as u64
                + 1 // the largest acked is SACKed too while anything below it is unresolved
        };
        let s = self.rtt.stats;
        let (reo_wnd, time_cause) = if self.ca_state != CaState::Open {
            (0, LossCause::TimeThreshold)
        } else if sacked() >= RACK_REORDERING {
            (0, LossCause::PacketThreshold)
        } else {
            ((s.min / 4).min(s.smoothed), LossCause::TimeThreshold)
        };
        LossRule {
            packet_threshold: None,
            delay: self.rack_rtt + reo_wnd,
            time_cause,
            wait_for_last: true,
            slack: TCP_TIMEOUT_MIN,
        }
    }

    fn declare_lost(&mut self, id: u64, cause: LossCause) {
        let idx = (id - self.base_id) as usize;
        let p = &mut self.sent[idx];
        p.state = State::Lost;
        let p = *p;
        self.in_flight -= p.len as u64;
        // Linux never learns of a superseded probe (see `superseded_probe`): the controller sees
        // its bytes leave the flight, but it counts as no loss (and starts no congestion event).
        if !self.superseded_probe(id) {
            self.lost_total += p.len as u64;
            self.stats.packets_lost += 1;
            self.stats.loss_gaps.record(p.send_time);
            if !self.twin_acked(id) {
                self.retransmit.push_back((p.offset, p.len, p.push));
            }
        }
        self.lost_buf.push(LostPacket { id, bytes: p.len as u64, send_time: p.send_time, tag: p.tag, cause });
    }

    /// Whether `id` is one of a tail-loss probe's two copies of the last segment and a copy was
    /// acked: its data arrived, so losing the other needs no retransmission. (An original lost
    /// while its probe arrived is still reported: the probe repaired a loss, and Linux's
    /// tcp_process_tlp_ack reduces the window for it; a probe lost after its original was acked
    /// is not, see `declare_lost`.)
    fn twin_acked(&self, id: u64) -> bool {
        self.tlp_twins.is_some_and(|t| t.acked && (id == t.orig || id == t.probe))
    }

    /// Whether `id` is a tail-loss probe's copy of the last segment after its original was
    /// acked (a copy still in flight can only be the probe then). Lost, it is no loss to Linux:
    /// Linux counts in sequence space, which the original already covered, so such
    /// a copy is invisible to it: no SACK of it, nothing to mark, no reduction.
    fn superseded_probe(&self, id: u64) -> bool {
        self.tlp_twins.is_some_and(|t| t.acked && id == t.probe)
    }

    /// Linux's episodes (tcp_fastretrans_alert) for the schemes that model a Linux module:
    /// one lasts until the cumulative ACK reaches snd_nxt as it was when it began, and no
    /// loss starts another before that.
    fn linux_episodes(&self) -> bool {
        self.cfg.recovery == RecoveryModel::Linux && self.cc.uses_rack()
    }

    /// Ends the recovery episode if this ACK ends it: RFC 9002's rule, a packet sent after it
    /// began acknowledged (`newest_id` the newest this ACK acknowledged); Linux's,
    /// "!before(tp->snd_una, tp->high_seq)".
    fn end_episode_if_over(&mut self, now: Time, newest_id: u64) {
        let over =
            if self.linux_episodes() { self.snd_una >= self.high_seq } else { newest_id >= self.recovery_end_id };
        if self.ca_state == CaState::Open || !over {
            return;
        }
        if self.ca_state == CaState::Recovery && self.linux_episodes() && self.loss_outstanding() {
            // tcp_fastretrans_alert: tcp_try_undo_recovery returns the state to Open, then
            // "if (!tcp_time_to_recover(sk, flag)) ... tcp_enter_recovery" — and
            // tcp_time_to_recover's "Trick#1: The loss is proven" (tp->lost_out) holds while
            // data declared lost during the episode (sent after it began) is unacknowledged:
            // the next episode begins on the same ACK, high_seq at snd_nxt again, and a module
            // without its own cong_control cuts again (tcp_init_cwnd_reduction). BBR, which
            // only reads the state at its next ACK, sees one Recovery go on.
            self.high_seq = self.next_offset;
            self.recovery_end_id = self.next_id;
            self.recovery_start = Some(now);
            self.prr = None;
            self.recut_due = self.cc.uses_prr();
            return;
        }
        self.ca_state = CaState::Open;
        self.undo_end = None;
        // tcp_end_cwnd_reduction: the controller's window (its ssthresh) governs again.
        self.prr = None;
        let mss = self.cfg.mss;
        self.cc.on_recovery_exit(now, &mut CcContext { mss, rng: &mut self.rng });
    }

    /// One congestion event per recovery epoch: only a loss of a packet sent after the
    /// current epoch began starts a new one (reference §0.3) — or, Linux's, the episode that
    /// began on this ACK with losses outstanding (`recut_due`).
    fn report_congestion(&mut self, now: Time, lost: &[LostPacket], prior_in_flight: u64) {
        let lost_bytes = lost.iter().map(|l| l.bytes).sum();
        if std::mem::take(&mut self.recut_due) {
            let newest_lost = lost.iter().map(|l| l.send_time).max().unwrap_or(0);
            return self.congestion_event(now, newest_lost, lost_bytes, prior_in_flight);
        }
        let signals = lost.iter().filter(|l| !self.superseded_probe(l.id));
        let Some(newest_lost) = signals.map(|l| l.send_time).max() else { return };
        if self.recovery_start.is_some_and(|s| newest_lost <= s) {
            return;
        }
        if self.linux_episodes() && self.ca_state != CaState::Open {
            return;
        }
        self.congestion_event(now, newest_lost, lost_bytes, prior_in_flight);
    }

    /// Whether data declared lost is still unacknowledged (Linux's lost_out > 0): waiting to
    /// be sent again, or sent again and in flight — above the cumulative ACK (below it the
    /// original arrived after all, and Linux's tcp_clean_rtx_queue has dropped it).
    fn loss_outstanding(&self) -> bool {
        let unacked = |off: u64, len: u32| off + len as u64 > self.snd_una;
        self.retransmit.iter().any(|&(off, len, _)| unacked(off, len))
            || self.sent.iter().any(|p| p.repair && p.state == State::InFlight && unacked(p.offset, p.len))
    }

    /// A new recovery episode and the controller's cut.
    fn congestion_event(&mut self, now: Time, newest_lost: Time, lost_bytes: u64, prior_in_flight: u64) {
        self.recovery_start = Some(now);
        self.recovery_end_id = self.next_id;
        self.high_seq = self.next_offset;
        if self.ca_state == CaState::Open {
            self.ca_state = CaState::Recovery;
        }
        // tcp_init_cwnd_reduction: "tp->tlp_high_seq = 0"; no probes outside Open.
        self.tlp_high = None;
        self.tlp_deadline = None;
        self.stats.congestion_events += 1;
        let prior_cwnd = self.cc.cwnd();
        let ev = CongestionEvent {
            now,
            largest_lost_send_time: newest_lost,
            lost_bytes,
            in_flight: self.in_flight,
            prior_in_flight,
        };
        let mss = self.cfg.mss;
        self.cc.on_congestion_event(&ev, &mut CcContext { mss, rng: &mut self.rng });
        // tcp_init_cwnd_reduction (tcp_enter_recovery): prior_cwnd is the window before the cut.
        if self.cfg.prr && self.ca_state == CaState::Recovery && self.cc.uses_prr() && prior_cwnd != u64::MAX {
            self.prr = Some(Prr::new(prior_cwnd / mss));
        }
    }

    fn pop_resolved(&mut self) {
        while let Some(p) = self.sent.front() {
            if p.state == State::InFlight || (p.state == State::RtoLost && self.undo_end.is_some()) {
                break;
            }
            self.sent.pop_front();
            self.base_id += 1;
        }
        self.first_unresolved = self.first_unresolved.max(self.base_id);
    }

    /// The earliest time the sender needs [`Sender::on_timeout`] or can send again.
    pub fn next_timeout(&self) -> Option<Time> {
        if let Some(h) = &self.handshake {
            return h.next_timeout();
        }
        if !self.active {
            return None;
        }
        let mut t = self.rto_deadline;
        let mut earliest = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        earliest(self.loss_time);
        earliest(self.tlp_deadline);
        earliest(self.cc.next_timer());
        if self.has_data()
            && self.window_open()
            && self.in_flight + self.cfg.mss <= self.cfg.rwnd
            && self.pacing_rate().is_some()
        {
            earliest(Some(self.next_send_time));
        }
        t
    }

    /// Fires whatever timers are due at `now`.
    pub fn on_timeout(&mut self, now: Time) {
        if let Some(h) = &mut self.handshake {
            h.on_timeout(now);
            return;
        }
        if !self.active {
            return;
        }
        if self.cc.next_timer().is_some_and(|t| t <= now) {
            let mss = self.cfg.mss;
            self.cc.on_timer(now, &mut CcContext { mss, rng: &mut self.rng });
        }
        if self.loss_time.is_some_and(|t| t <= now) {
            let prior = self.in_flight;
            let was_open = self.ca_state == CaState::Open;
            self.lost_buf.clear();
            self.detect_losses(now);
            let lost = std::mem::take(&mut self.lost_buf);
            if !lost.is_empty() {
                let mss = self.cfg.mss;
                self.cc.on_packets_lost(now, &lost, &mut CcContext { mss, rng: &mut self.rng });
            }
            self.report_congestion(now, &lost, prior);
            if let (true, Some(p)) = (was_open, &mut self.prr) {
                // tcp_rack_reo_timeout: "tcp_enter_recovery(sk, false); ... tcp_cwnd_reduction(sk, 1, 0, 0)".
                let mss = self.cfg.mss;
                p.on_ack(1, false, false, self.in_flight.div_ceil(mss), self.cc.cwnd() / mss);
            }
            self.lost_buf = lost;
            self.pop_resolved();
        }
        if self.tlp_deadline.is_some_and(|t| t <= now) {
            // The probe leaves on the poll_transmit that follows; the RTO waits a full RTO more.
            self.tlp_deadline = None;
            self.probe_due = true;
            self.rto_deadline = Some(self.timer_at(now, self.rtt.rto()));
        }
        if self.rto_deadline.is_some_and(|t| t <= now) {
            self.fire_rto(now);
        }
    }

    /// RFC 6298 §5: every outstanding packet is presumed lost, the timer backs off, and the
    /// controller collapses its window.
    fn fire_rto(&mut self, now: Time) {
        self.stats.rto_count += 1;
        self.lost_buf.clear();
        let start = self.first_unresolved.max(self.base_id);
        for id in start..self.next_id {
            if self.sent[(id - self.base_id) as usize].state == State::InFlight {
                self.declare_lost(id, LossCause::Rto);
                self.sent[(id - self.base_id) as usize].state = State::RtoLost;
            }
        }
        // Controllers that account per packet hear of these losses before the timeout itself.
        let lost = std::mem::take(&mut self.lost_buf);
        if !lost.is_empty() {
            let mss = self.cfg.mss;
            self.cc.on_packets_lost(now, &lost, &mut CcContext { mss, rng: &mut self.rng });
        }
        self.lost_buf = lost;
        self.lost_buf.clear();
        // Linux tcp_enter_loss keeps one undo marker per loss episode: the first timeout's.
        if self.cfg.undo && self.undo_end.is_none() {
            self.undo_end = Some(self.next_id);
        }
        self.pop_resolved();
        self.first_unresolved = self.next_id;
        self.loss_time = None;
        self.rtt.back_off();
        self.ca_state = CaState::Loss;
        self.prr = None;
        self.tlp_high = None;
        self.tlp_deadline = None;
        self.probe_due = false;
        self.recovery_start = Some(now);
        self.recovery_end_id = self.next_id;
        self.high_seq = self.next_offset;
        let ctx_mss = self.cfg.mss;
        self.cc.on_rto(now, &mut CcContext { mss: ctx_mss, rng: &mut self.rng });
        self.next_send_time = now;
        self.rto_deadline = Some(self.timer_at(now, self.rtt.rto()));
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
