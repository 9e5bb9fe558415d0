//! The sender's promises, each driven by hand-built ACK frames against a controller that only
//! records what it is told. Every test names the rule it checks.

use super::*;
use cclab_cc::{CcSnapshot, RttStats};
use cclab_core::time::{MS, SEC, US};
use std::sync::{Arc, Mutex};

const MSS: u64 = 1448;

/// What the recording controller heard, in order.
#[derive(Clone, Debug)]
enum Heard {
    Ack {
        now: Time,
        acked: Vec<u64>,
        lost: Vec<(u64, LossCause)>,
        rate: Option<RateSample>,
        round: u64,
        round_start: bool,
        ca_state: CaState,
        app_limited: bool,
    },
    Congestion(CongestionEvent),
    Rto(Time),
    RecoveryExit(Time),
    Lost(Vec<(u64, LossCause)>),
    Undo(Vec<u64>),
    Idle {
        idle_for: Time,
        rto: Time,
    },
}

/// The recording controller's settings and log, shared with the test (the sender owns the box).
#[derive(Debug)]
struct Shared {
    cwnd: u64,
    pacing: Option<f64>,
    slow_start: bool,
    /// What `min_tso_segs` answers: Some for a controller that models a Linux module.
    min_tso_segs: Option<u64>,
    /// What `uses_prr` answers, and the window a congestion event cuts to (None: no cut).
    uses_prr: bool,
    cut_to: Option<u64>,
    heard: Vec<Heard>,
    /// When `on_init` ran and the RTT state it was given.
    init: Option<(Time, RttStats)>,
}

struct Recorder(Arc<Mutex<Shared>>);

impl CongestionControl for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn on_init(&mut self, now: Time, rtt: &RttStats, _ctx: &mut CcContext) {
        self.0.lock().unwrap().init = Some((now, *rtt));
    }
    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        self.0.lock().unwrap().heard.push(Heard::Ack {
            now: ev.now,
            acked: ev.acked.iter().map(|p| p.id).collect(),
            lost: ev.lost.iter().map(|p| (p.id, p.cause)).collect(),
            rate: ev.rate,
            round: ev.round,
            round_start: ev.round_start,
            ca_state: ev.ca_state,
            app_limited: ev.app_limited,
        });
    }
    fn on_congestion_event(&mut self, ev: &CongestionEvent, _ctx: &mut CcContext) {
        let mut sh = self.0.lock().unwrap();
        sh.heard.push(Heard::Congestion(*ev));
        if let Some(w) = sh.cut_to {
            sh.cwnd = w;
        }
    }
    fn on_rto(&mut self, now: Time, _ctx: &mut CcContext) {
        self.0.lock().unwrap().heard.push(Heard::Rto(now));
    }
    fn on_recovery_exit(&mut self, now: Time, _ctx: &mut CcContext) {
        self.0.lock().unwrap().heard.push(Heard::RecoveryExit(now));
    }
    fn on_idle_restart(&mut self, _now: Time, idle_for: Time, rto: Time, _ctx: &mut CcContext) {
        self.0.lock().unwrap().heard.push(Heard::Idle { idle_for, rto });
    }
    fn on_packets_lost(&mut self, _now: Time, lost: &[LostPacket], _ctx: &mut CcContext) {
        self.0.lock().unwrap().heard.push(Heard::Lost(lost.iter().map(|p| (p.id, p.cause)).collect()));
    }
    fn undo_cwnd(&mut self, _now: Time, restored: &[LostPacket], _ctx: &mut CcContext) {
        self.0.lock().unwrap().heard.push(Heard::Undo(restored.iter().map(|p| p.id).collect()));
    }
    fn cwnd(&self) -> u64 {
        self.0.lock().unwrap().cwnd
    }
    fn pacing_rate(&self) -> Option<f64> {
        self.0.lock().unwrap().pacing
    }
    fn in_slow_start(&self) -> bool {
        self.0.lock().unwrap().slow_start
    }
    fn min_tso_segs(&self) -> Option<u64> {
        self.0.lock().unwrap().min_tso_segs
    }
    fn uses_prr(&self) -> bool {
        self.0.lock().unwrap().uses_prr
    }
    fn snapshot(&self) -> CcSnapshot {
        CcSnapshot::default()
    }
}

struct Harness {
    s: Sender,
    cc: Arc<Mutex<Shared>>,
}

impl Harness {
    /// A started sender with a `cwnd_pkts`-packet window, no pacing, default config otherwise.
    fn new(cwnd_pkts: u64) -> Harness {
        Harness::with(cwnd_pkts, SenderConfig::default())
    }

    /// As `new`, with RFC 9002's loss detection instead of Linux's RACK (`[transport] rack`).
    fn rfc9002(cwnd_pkts: u64) -> Harness {
        Harness::with(cwnd_pkts, SenderConfig { rack: false, ..SenderConfig::default() })
    }

    /// As `new`, for a controller that models a Linux TCP module: loss detection by RACK.
    fn linux(cwnd_pkts: u64) -> Harness {
        let h = Harness::new(cwnd_pkts);
        h.cc.lock().unwrap().min_tso_segs = Some(2);
        h
    }

    /// The same controller behind a fresh sender with the default, jiffy-counted timers (the
    /// harness keeps them exact otherwise).
    fn on_linux_ticks(mut self) -> Harness {
        let cfg = SenderConfig { mss: MSS, ..SenderConfig::default() };
        self.s = Sender::new(cfg, Box::new(Recorder(self.cc.clone())), Rng::new(1));
        self.s.start(0);
        self
    }

    fn with(cwnd_pkts: u64, cfg: SenderConfig) -> Harness {
        let cc = Arc::new(Mutex::new(Shared {
            cwnd: cwnd_pkts.saturating_mul(MSS),
            pacing: None,
            slow_start: false,
            min_tso_segs: None,
            uses_prr: false,
            cut_to: None,
            heard: Vec::new(),
            init: None,
        }));
        // The timers on an exact clock: these tests check the sender's arithmetic, and
        // `timers_fire_on_linuxs_ticks` the wheel.
        let cfg = SenderConfig { mss: MSS, jiffy_timers: false, ..cfg };
        let mut s = Sender::new(cfg, Box::new(Recorder(cc.clone())), Rng::new(1));
        s.start(0);
        Harness { s, cc }
    }

    /// Sends `n` packets at `now`; returns their ids.
    fn send(&mut self, now: Time, n: usize) -> Vec<u64> {
        (0..n).map(|_| self.s.poll_transmit(now).expect("window, pacer and data allow a packet").id).collect()
    }

    /// An ACK of the given id ranges `[start, end)`, newest first, as the receiver builds them.
    fn ack(&mut self, now: Time, ranges: &[(u64, u64)]) {
        self.ack_cum(now, 0, ranges);
    }

    /// As `ack`, with the cumulative ACK at `cum` segments.
    fn ack_cum(&mut self, now: Time, cum: u64, ranges: &[(u64, u64)]) {
        let mut f = AckFrame { largest: ranges[0].1 - 1, stream_cum: cum * MSS, ..Default::default() };
        for (i, r) in ranges.iter().enumerate() {
            f.ranges[i] = *r;
        }
        f.n_ranges = ranges.len() as u8;
        self.s.on_ack(now, &f);
    }

    fn heard(&self) -> Vec<Heard> {
        self.cc.lock().unwrap().heard.clone()
    }

    fn congestion_events(&self) -> Vec<CongestionEvent> {
        self.heard()
            .into_iter()
            .filter_map(|h| match h {
                Heard::Congestion(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    /// Every loss the controller heard of, on ACKs or outside them.
    fn losses(&self) -> Vec<(u64, LossCause)> {
        let mut out = Vec::new();
        for h in self.heard() {
            match h {
                Heard::Ack { lost, .. } | Heard::Lost(lost) => out.extend(lost),
                _ => {}
            }
        }
        out
    }

    fn acks(&self) -> Vec<Heard> {
        self.heard().into_iter().filter(|h| matches!(h, Heard::Ack { .. })).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Loss detection.

#[test]
fn packet_threshold_loss_after_three_later_packets_are_acked() {
    // RFC 9002 §6.1.1 (kPacketThreshold = 3; RFC 6675's DupThresh): a packet is lost once
    // three packets sent after it are acknowledged.
    let mut h = Harness::rfc9002(100);
    h.send(0, 6);
    h.ack(10 * MS, &[(1, 3)]); // two later packets: not yet
    assert!(h.losses().is_empty());
    assert_eq!(h.s.in_flight(), 4 * MSS);
    h.ack(10 * MS + 1, &[(1, 4)]); // the third
    assert_eq!(h.losses(), vec![(0, LossCause::PacketThreshold)]);
    assert_eq!(h.s.stats.packets_lost, 1);
    // Ids 4 and 5 are in flight; id 0 left the flight as lost, not as acked.
    assert_eq!(h.s.in_flight(), 2 * MSS);
    // The lost data goes out again, as a retransmission under a fresh id.
    let p = h.s.poll_transmit(11 * MS).unwrap();
    assert_eq!((p.id, p.offset, p.retransmission), (6, 0, true));
}

#[test]
fn rfc9002_time_threshold_is_nine_eighths_of_the_rtt() {
    // RFC 9002 §6.1.2 (RACK, RFC 8985 §6.2): a packet is lost once 9/8·max(srtt, latest_rtt)
    // has passed since it was sent, if a later one was acknowledged. The loss timer fires then.
    let mut h = Harness::rfc9002(100);
    h.send(0, 1);
    h.send(2 * MS, 1);
    h.ack(80 * MS + 2 * MS, &[(1, 2)]); // rtt 80 ms; id 0 has one later packet acked
    assert!(h.losses().is_empty(), "one later packet is below the packet threshold");
    let deadline = 80 * MS * 9 / 8; // 90 ms after id 0 left at 0
    assert_eq!(h.s.next_timeout(), Some(deadline), "the loss timer is armed for id 0");
    h.s.on_timeout(deadline - 1);
    assert!(h.losses().is_empty(), "not a nanosecond early");
    h.s.on_timeout(deadline);
    assert_eq!(h.losses(), vec![(0, LossCause::TimeThreshold)]);
    assert_eq!(h.s.in_flight(), 0);
    // A loss found by the timer is a congestion event like one found on an ACK.
    assert_eq!(h.congestion_events().len(), 1);
}

#[test]
fn rfc9002_time_threshold_uses_the_larger_of_srtt_and_latest_rtt_and_a_1ms_floor() {
    // RFC 9002 §6.1.2: max(smoothed_rtt, latest_rtt), and never below kGranularity (1 ms).
    let mut h = Harness::rfc9002(100);
    h.send(0, 1);
    h.ack(40 * MS, &[(0, 1)]); // srtt 40 ms
    h.send(40 * MS, 2);
    h.ack(40 * MS + 80 * MS, &[(2, 3)]); // latest 80 ms, srtt 45 ms: 9/8·80 = 90 ms counts
    assert_eq!(h.s.next_timeout(), Some(40 * MS + 90 * MS));

    let mut h = Harness::rfc9002(100);
    h.send(0, 2);
    h.ack(10 * US, &[(1, 2)]); // rtt 10 µs: 9/8 of it would be 11.25 µs
    assert_eq!(h.s.next_timeout(), Some(MS), "kGranularity floor");
}

#[test]
fn a_later_ack_past_the_time_threshold_declares_the_loss_itself() {
    // RFC 8985 §6.2: the check runs on every ACK, not only on the timer.
    let mut h = Harness::rfc9002(100);
    h.send(0, 2);
    h.send(50 * MS, 1);
    h.ack(100 * MS, &[(1, 2)]); // rtt 100 ms: id 0 is due at 112.5 ms
    h.ack(150 * MS, &[(1, 3)]); // rtt 100 ms, id 0 sent 150 ms ago
    assert_eq!(h.losses(), vec![(0, LossCause::TimeThreshold)]);
}

#[test]
fn rack_marks_a_packet_lost_its_successors_rtt_plus_a_quarter_min_rtt_after_it_left() {
    // Linux tcp_rack_detect_loss: "remaining = tcp_rack_skb_timeout(tp, skb, reo_wnd)", i.e.
    // rack.rtt_us + reo_wnd − (now − skb's send time); lost when it is ≤ 0. tcp_rack_reo_wnd:
    // min(min_rtt/4, srtt) in the Open state with fewer than tp->reordering (3) SACKed.
    let mut h = Harness::linux(100);
    h.send(0, 1); // id 0, to be lost
    h.send(5 * MS, 1); // id 1
    h.ack(5 * MS + 80 * MS, &[(1, 2)]); // rack.rtt = 80 ms, min_rtt 80 ms: reo_wnd 20 ms
    assert!(h.losses().is_empty(), "one SACKed packet, sent 5 ms after: 5 ms < reo_wnd");
    // Due at 0 + 80 + 20 ms; tcp_rack_mark_lost arms the timer TCP_TIMEOUT_MIN later (2
    // jiffies: 8 ms at CONFIG_HZ = 250).
    assert_eq!(h.s.next_timeout(), Some(100 * MS + 8 * MS));
    h.s.on_timeout(108 * MS);
    assert_eq!(h.losses(), vec![(0, LossCause::TimeThreshold)]);
    assert_eq!(h.congestion_events().len(), 1);

    // reo_wnd follows the path's minimum RTT, RFC 9002's window the current one: behind a
    // queue (RTT 200 ms over a 40 ms minimum) a successor sent 15 ms later shows the loss at
    // once to RACK (15 ms ≥ 10 ms), while RFC 9002 waits for 9/8 · 200 ms after the send.
    // A scheme that is not kernel TCP detects losses as RFC 9002 says, `rack` or not.
    let harnesses = [("linux", Harness::linux(100), true), ("rfc9002", Harness::rfc9002(100), false)];
    for (name, mut h, lost_at_once) in harnesses.into_iter().chain([("not linux", Harness::new(100), false)]) {
        h.send(0, 1);
        h.ack(40 * MS, &[(0, 1)]); // min_rtt 40 ms
        h.send(40 * MS, 1); // id 1, to be lost
        h.send(55 * MS, 1); // id 2
        h.ack(255 * MS, &[(0, 1), (2, 3)]); // rtt 200 ms
        assert_eq!(h.losses() == vec![(1, LossCause::TimeThreshold)], lost_at_once, "{name}");
    }
}

#[test]
fn rack_drops_its_reordering_window_at_three_sacked_and_in_recovery() {
    // tcp_rack_reo_wnd: "If reordering has not been observed, be aggressive during the
    // recovery or starting the recovery by DUPACK threshold": 0 once sacked_out ≥ 3, and 0
    // while in recovery, so every packet sent before the newest delivered one is lost.
    let mut h = Harness::linux(100);
    h.send(0, 4); // ids 0..4 in one burst
    h.ack(50 * MS, &[(1, 3)]); // two SACKed: reo_wnd = 12.5 ms
    assert!(h.losses().is_empty());
    h.ack(50 * MS + 1, &[(1, 4)]); // three SACKed: id 0 is lost at once
    assert_eq!(h.losses(), vec![(0, LossCause::PacketThreshold)]);
    assert_eq!(h.s.ca_state(), CaState::Recovery);

    // In recovery one SACKed successor suffices, however close behind it was sent.
    let ids = h.send(51 * MS, 3); // the retransmission of id 0 and two new packets
    assert_eq!(ids, vec![4, 5, 6]);
    h.ack(51 * MS + 50 * MS, &[(5, 6), (1, 4)]); // id 4 (sent with id 5) not yet acked
    assert_eq!(h.losses(), vec![(0, LossCause::PacketThreshold), (4, LossCause::TimeThreshold)]);
}

#[test]
fn a_late_ack_below_the_largest_acked_changes_nothing() {
    // The transport's FIFO rule (sender.rs, on_ack): ids below the largest acked were settled
    // by earlier ACKs, so a late ACK for a packet already declared lost neither undoes the loss
    // nor takes it out of the flight a second time.
    let mut h = Harness::new(100);
    h.send(0, 5);
    h.ack(10 * MS, &[(1, 5)]);
    assert_eq!(h.losses(), vec![(0, LossCause::PacketThreshold)]);
    assert_eq!((h.s.in_flight(), h.s.delivered()), (0, 4 * MSS));
    h.ack(11 * MS, &[(0, 5)]);
    assert_eq!((h.s.in_flight(), h.s.delivered(), h.s.stats.packets_lost), (0, 4 * MSS, 1));
    assert_eq!(h.acks().len(), 1, "nothing new acked: the controller hears nothing");
}

// ---------------------------------------------------------------------------------------------
// Retransmission timer.

#[test]
fn an_ack_of_two_segments_smooths_the_older_ones_rtt_and_keeps_the_newer_as_the_minimum() {
    // tcp_clean_rtx_queue: "seq_rtt_us = tcp_stamp_us_delta(tp->tcp_mstamp, first_ackt);
    // ca_rtt_us = tcp_stamp_us_delta(tp->tcp_mstamp, last_ackt);" — tcp_ack_update_rtt feeds
    // seq_rtt_us to tcp_rtt_estimator (srtt, the RTO) and ca_rtt_us to tcp_update_rtt_min and
    // rs->rtt_us. A delayed ACK for two segments paced 12 ms apart, 100 ms after the second:
    let mut h = Harness::new(100);
    h.send(0, 1);
    h.send(12 * MS, 1);
    h.ack(112 * MS, &[(0, 2)]);
    let rtt = h.s.rtt();
    assert_eq!((rtt.smoothed, rtt.latest, rtt.min), (112 * MS, 100 * MS, 100 * MS));
    // RFC 6298's estimator times one segment per ACK, the newest.
    let mut h = Harness::with(100, SenderConfig { rto: RtoModel::Rfc6298, ..Default::default() });
    h.send(0, 1);
    h.send(12 * MS, 1);
    h.ack(112 * MS, &[(0, 2)]);
    assert_eq!(h.s.rtt().smoothed, 100 * MS);
}

#[test]
fn rto_is_srtt_plus_four_rttvar_clamped_by_min_rto_and_doubles_on_backoff() {
    // RFC 6298 §2.2–2.4 (RTO = SRTT + max(G, 4·RTTVAR), at least the minimum RTO), §5.5 (back
    // off by doubling), §5.1 (armed when data is sent and the timer is not running), as
    // `[transport] rto = "rfc6298"` computes it.
    let mut h = Harness::with(100, SenderConfig { rto: RtoModel::Rfc6298, tlp: false, ..Default::default() });
    h.send(0, 1);
    assert_eq!(h.s.next_timeout(), Some(SEC), "RFC 6298 §2.1: 1 s before any RTT sample");
    h.ack(100 * MS, &[(0, 1)]); // srtt 100, rttvar 50: RTO 300 ms
    assert_eq!(h.s.next_timeout(), None, "§5.2: nothing outstanding, no timer");
    h.send(100 * MS, 2);
    let first = 100 * MS + 300 * MS;
    assert_eq!(h.s.next_timeout(), Some(first));
    h.s.on_timeout(first - 1);
    assert_eq!(h.s.stats.rto_count, 0);
    h.s.on_timeout(first);
    assert_eq!(h.s.stats.rto_count, 1);
    // §5.4/5.5: every outstanding packet is presumed lost; the controller hears of them before
    // the timeout itself, and the timer is re-armed at twice the timeout.
    let heard = h.heard();
    let n = heard.len();
    assert!(matches!(&heard[n - 2], Heard::Lost(l) if *l == vec![(1, LossCause::Rto), (2, LossCause::Rto)]));
    assert!(matches!(heard[n - 1], Heard::Rto(t) if t == first));
    assert_eq!((h.s.in_flight(), h.s.ca_state()), (0, CaState::Loss));
    let second = first + 600 * MS;
    assert_eq!(h.s.next_timeout(), Some(second));
    h.send(first, 1); // the retransmission
    h.s.on_timeout(second);
    assert_eq!(h.s.next_timeout(), Some(second + 1200 * MS), "doubles again");
    // §2.3 with Karn's rule (§3) made moot by fresh ids: a new RTT sample recomputes the RTO
    // from SRTT and RTTVAR, which ends the backoff.
    let p = h.s.poll_transmit(second).unwrap();
    h.ack(second + 100 * MS, &[(p.id, p.id + 1)]);
    h.send(second + 100 * MS, 1);
    let rtt = h.s.rtt();
    let rto = rtt.smoothed + 4 * rtt.rttvar;
    assert!(rto >= 200 * MS);
    assert_eq!(h.s.next_timeout(), Some(second + 100 * MS + rto));
}

#[test]
fn timers_fire_on_linuxs_ticks() {
    // Linux arms the retransmission timer in jiffies and its timer wheel fires it on a coarser
    // tick the further away it is (cclab_core::time::linux_timer_fires). The first RTO, 1 s
    // from a send at 1 ms: 250 jiffies, level 1 (8-jiffy buckets), fired at 1.024 s.
    let mut h = Harness::linux(100).on_linux_ticks();
    h.send(MS, 1);
    assert_eq!(h.s.next_timeout(), Some(1024 * MS));
    // After a 99 ms sample, two packets out at 100 ms: the probe at 2·srtt + TCP_TIMEOUT_MIN
    // = 206 ms is 52 jiffies (51.5 rounded up) from tick 25, level 0, fired a tick after its
    // expiry: 312 ms (306 exactly).
    h.ack(100 * MS, &[(0, 1)]);
    h.send(100 * MS, 2);
    assert_eq!(h.s.next_timeout(), Some(312 * MS));
    // A scheme that is not a Linux module (Copa, PCC: user-space timers) keeps exact ones.
    let mut h = Harness::new(100).on_linux_ticks();
    h.send(MS, 1);
    assert_eq!(h.s.next_timeout(), Some(MS + SEC));
}

#[test]
fn rto_never_goes_below_the_minimum() {
    // RFC 6298 §2.4 with Linux's 200 ms floor (`min_rto` here): a 10 ms path still waits 200 ms.
    let mut h = Harness::with(100, SenderConfig { rto: RtoModel::Rfc6298, tlp: false, ..Default::default() });
    h.send(0, 1);
    h.ack(10 * MS, &[(0, 1)]); // srtt 10 ms, rttvar 5 ms: 30 ms unclamped
    h.send(10 * MS, 1);
    assert_eq!(h.s.next_timeout(), Some(10 * MS + 200 * MS));
    let mut h = Harness::with(100, SenderConfig { min_rto: 50 * MS, rto: RtoModel::Rfc6298, ..Default::default() });
    h.send(0, 1);
    h.ack(10 * MS, &[(0, 1)]);
    h.send(10 * MS, 1);
    assert_eq!(h.s.next_timeout(), Some(10 * MS + 50 * MS), "the floor is the configured one");
    // Linux (tcp_set_rto: srtt + rttvar_us, rttvar_us ≥ tcp_rto_min) adds the floor to srtt.
    let mut h = Harness::with(100, SenderConfig { min_rto: 50 * MS, ..Default::default() });
    h.send(0, 1);
    h.ack(10 * MS, &[(0, 1)]);
    h.send(10 * MS, 1);
    assert_eq!(h.s.next_timeout(), Some(10 * MS + 10 * MS + 50 * MS), "srtt + rto_min");
}

#[test]
fn backoff_doubles_up_to_the_configured_cap() {
    // RFC 6298 §5.5 (double on every expiry) and §2.5 (a maximum MAY be placed on RTO provided
    // it is at least 60 s); Linux's cap is TCP_RTO_MAX (120 s), here set to 60 s.
    let mut h = Harness::with(
        100,
        SenderConfig { rto: RtoModel::Rfc6298, rto_max: 60 * SEC, tlp: false, ..Default::default() },
    );
    h.send(0, 1);
    h.ack(100 * MS, &[(0, 1)]); // RTO 300 ms
    h.send(100 * MS, 1);
    let mut now = 100 * MS;
    let mut waits = Vec::new();
    for _ in 0..10 {
        let t = h.s.next_timeout().unwrap();
        waits.push((t - now) / MS);
        now = t;
        h.s.on_timeout(now);
        h.send(now, 1); // the retransmission, which does not restart the running timer
    }
    assert_eq!(waits, vec![300, 600, 1200, 2400, 4800, 9600, 19_200, 38_400, 60_000, 60_000]);
    assert_eq!(h.s.stats.rto_count, 10);
}

#[test]
fn an_ack_restarts_the_rto_for_what_remains() {
    // RFC 6298 §5.3: when an ACK acknowledges new data, restart the timer.
    let mut h = Harness::with(100, SenderConfig { tlp: false, ..Default::default() });
    h.send(0, 3);
    h.ack(100 * MS, &[(0, 1)]);
    assert_eq!(h.s.next_timeout(), Some(100 * MS + 300 * MS));
}

// ---------------------------------------------------------------------------------------------
// Recovery epochs.

#[test]
fn one_congestion_event_per_recovery_epoch() {
    // RFC 9002 §7.3.2 (and RFC 6582's NewReno recovery): losses of packets sent before the
    // current recovery period began do not start a new one; recovery ends when a packet sent
    // after it began is acknowledged; a loss of such a packet starts the next epoch.
    let mut h = Harness::rfc9002(100);
    h.send(0, 10); // ids 0..10
    h.ack(10 * MS, &[(3, 6)]); // ids 0, 1, 2 lost: one event
    assert_eq!(h.congestion_events().len(), 1);
    let ev = h.congestion_events()[0];
    assert_eq!((ev.now, ev.lost_bytes, ev.largest_lost_send_time), (10 * MS, 3 * MSS, 0));
    // FlightSize before the losses left it (RFC 5681): 10 sent, 3 acked by this ACK.
    assert_eq!((ev.prior_in_flight, ev.in_flight), (10 * MSS, 4 * MSS));
    assert_eq!(h.s.ca_state(), CaState::Recovery);
    h.ack(11 * MS, &[(7, 10), (3, 6)]); // id 6 lost too (9 − 6 = 3), sent before recovery began
    assert!(h.losses().contains(&(6, LossCause::PacketThreshold)));
    assert_eq!(h.congestion_events().len(), 1, "same epoch");
    assert_eq!(h.s.stats.congestion_events, 1);
    // Packets sent after the epoch began; acking one ends recovery.
    let ids = h.send(12 * MS, 5); // ids 10..15 (4 retransmissions and one new)
    assert_eq!(ids, vec![10, 11, 12, 13, 14]);
    h.ack(20 * MS, &[(10, 11), (3, 10)]);
    assert_eq!(h.s.ca_state(), CaState::Open);
    assert!(h.heard().iter().any(|e| matches!(e, Heard::RecoveryExit(t) if *t == 20 * MS)));
    // A loss of a packet sent after the first epoch began opens a second one.
    h.ack(21 * MS, &[(12, 15), (10, 11)]); // id 11: 14 − 11 = 3
    assert!(h.losses().contains(&(11, LossCause::PacketThreshold)));
    assert_eq!(h.congestion_events().len(), 2);
    assert_eq!(h.s.ca_state(), CaState::Recovery);
    // The per-flow statistics (issue 12): two events; five losses whose send times were
    // 0, 0, 0, 0 (ids 0, 1, 2, 6) and 12 ms (id 11, a retransmission sent then).
    assert_eq!(h.s.stats.congestion_events, 2);
    let mut gaps = cclab_core::metrics::LossGaps::default();
    [0, 0, 0, 0, 12 * MS].into_iter().for_each(|t| gaps.record(t));
    assert_eq!(h.s.stats.loss_gaps, gaps);
    // Gaps 0, 0, 0, 12 ms: μ = 3 ms, σ = √27 ms; B = (√27 − 3)/(√27 + 3).
    let b = (27f64.sqrt() - 3.0) / (27f64.sqrt() + 3.0);
    assert!((h.s.stats.loss_gaps.burstiness() - b).abs() < 1e-12);
}

#[test]
fn a_linux_episode_lasts_until_the_cumulative_ack_reaches_high_seq() {
    // tcp_enter_recovery: "tp->high_seq = tp->snd_nxt"; tcp_fastretrans_alert: Recovery ends
    // only when "!before(tp->snd_una, tp->high_seq)", and while it lasts no further loss
    // enters it again (no second reduction), whenever the lost packet was sent.
    // Segments 0 and 5 lost of ten; the episode records snd_nxt = 10 segments.
    let lose_two = |h: &mut Harness| {
        h.send(0, 10);
        h.ack_cum(10 * MS, 0, &[(6, 10), (1, 5)]);
        assert_eq!((h.congestion_events().len(), h.s.ca_state()), (1, CaState::Recovery));
        // Segment 0 again (id 10), segment 5 again (id 11), new segment 10 (id 12).
        assert_eq!(h.send(11 * MS, 3), vec![10, 11, 12]);
        // Segment 0's repair arrives, segment 5's is lost, the new segment arrives (sent after
        // the episode began): RFC 9002 ends the episode with it and counts id 11's loss as the
        // next; Linux stays in the first, the cumulative ACK (5 segments) short of high_seq.
        h.ack_cum(30 * MS, 5, &[(12, 13), (10, 11), (6, 10)]);
        assert!(h.losses().iter().any(|&(id, _)| id == 11), "id 11 lost");
    };
    let mut h = Harness::linux(100);
    lose_two(&mut h);
    assert_eq!((h.congestion_events().len(), h.s.ca_state()), (1, CaState::Recovery));
    // Segment 5's second repair (id 13) brings the cumulative ACK to 11 segments ≥ high_seq.
    assert_eq!(h.send(31 * MS, 1), vec![13]);
    h.ack_cum(50 * MS, 11, &[(13, 14), (12, 13)]);
    assert_eq!(h.s.ca_state(), CaState::Open);
    assert!(h.heard().iter().any(|e| matches!(e, Heard::RecoveryExit(t) if *t == 50 * MS)));
    // RFC 9002's episodes (`[transport] recovery = "rfc9002"`) for the same ACKs.
    let mut h = Harness::linux(100);
    let cfg =
        SenderConfig { mss: MSS, recovery: RecoveryModel::Rfc9002, jiffy_timers: false, ..SenderConfig::default() };
    h.s = Sender::new(cfg, Box::new(Recorder(h.cc.clone())), Rng::new(1));
    h.s.start(0);
    lose_two(&mut h);
    assert_eq!((h.congestion_events().len(), h.s.ca_state()), (2, CaState::Recovery));
}

#[test]
fn an_episode_that_ends_with_a_loss_unrepaired_begins_the_next_at_once() {
    // tcp_fastretrans_alert at "!before(tp->snd_una, tp->high_seq)": tcp_try_undo_recovery
    // sets the state Open, then "if (!tcp_time_to_recover(sk, flag))" — whose "Trick#1: The
    // loss is proven" is tp->lost_out — so a segment declared lost during the episode and not
    // yet acknowledged starts the next on the same ACK: tcp_enter_recovery, high_seq at
    // snd_nxt, and for a module without its own cong_control tcp_init_cwnd_reduction's cut.
    // (Measured: kernel Cubic on the Nepal path, seed 1, cuts 13 → 9 segments as its second
    // episode ends at 1.87 s, with a segment sent during it still being repaired.)
    let run = |prr: bool| {
        let mut h = Harness::linux(100);
        h.cc.lock().unwrap().uses_prr = prr;
        h.send(0, 10);
        h.ack_cum(10 * MS, 0, &[(1, 10)]); // segment 0 lost; high_seq = 10 segments
                                           // Segment 0 again (id 10), new segments 10 and 11 (ids 11, 12), sent during the episode.
        assert_eq!(h.send(11 * MS, 3), vec![10, 11, 12]);
        // Only id 12 arrives: ids 10 and 11, sent before it, are lost (RACK, no window in
        // recovery); this episode takes no second cut.
        h.ack_cum(40 * MS, 0, &[(12, 13), (1, 10)]);
        assert_eq!(h.congestion_events().len(), 1);
        // Segment 0 (id 13) and segment 10 (id 14) again; segment 0's repair arrives first,
        // bringing the cumulative ACK to high_seq with segment 10 still unrepaired.
        assert_eq!(h.send(41 * MS, 2), vec![13, 14]);
        h.ack_cum(60 * MS, 10, &[(13, 14), (12, 13)]);
        (h, prr)
    };
    let (mut h, _) = run(true);
    assert_eq!((h.congestion_events().len(), h.s.ca_state()), (2, CaState::Recovery), "a second cut");
    assert!(!h.heard().iter().any(|e| matches!(e, Heard::RecoveryExit(_))), "never Open in between");
    // The new episode's high_seq is snd_nxt when it began (12 segments): segment 10's repair
    // brings the cumulative ACK there, nothing is outstanding, and recovery ends.
    h.ack_cum(80 * MS, 12, &[(14, 15), (12, 13)]);
    assert_eq!((h.congestion_events().len(), h.s.ca_state()), (2, CaState::Open));
    // A controller with its own cong_control (BBR) reads the state at its next ACK: one
    // Recovery, no second event.
    let (h, _) = run(false);
    assert_eq!((h.congestion_events().len(), h.s.ca_state()), (1, CaState::Recovery));
}

#[test]
fn the_ack_event_reports_recovery_from_the_ack_after_the_loss() {
    // The controller's interface (cclab_cc::types::CaState, Linux's tcp_ca_state): the ACK
    // that reveals the loss still reports Open; the congestion event follows it.
    let mut h = Harness::rfc9002(100);
    h.send(0, 6);
    h.ack(10 * MS, &[(3, 4)]);
    h.ack(11 * MS, &[(3, 5)]);
    let acks = h.acks();
    assert!(matches!(acks[0], Heard::Ack { ca_state: CaState::Open, .. }));
    assert!(matches!(acks[1], Heard::Ack { ca_state: CaState::Recovery, .. }));
    let heard = h.heard();
    assert!(matches!(heard[1], Heard::Congestion(_)), "the event right after the ACK that found it");
}

// ---------------------------------------------------------------------------------------------
// Delivery-rate sampler and rounds.

/// A path of fixed RTT with no loss, driven in 1 µs-resolution steps: packets leave whenever
/// the sender allows, each is acked alone `rtt` later.
fn run_ack_clock(h: &mut Harness, rtt: Time, until: Time, step: Time) {
    let mut pending: std::collections::VecDeque<(Time, u64)> = Default::default();
    let mut now = 0;
    while now <= until {
        while pending.front().is_some_and(|&(t, _)| t <= now) {
            let (_, id) = pending.pop_front().unwrap();
            h.ack(now, &[(id, id + 1)]);
        }
        while let Some(p) = h.s.poll_transmit(now) {
            pending.push_back((now + rtt, p.id));
        }
        now += step;
    }
}

#[test]
fn a_steady_ack_clock_samples_the_sending_rate() {
    // draft-cheng-iccrg-delivery-rate-estimation ("upon receiving an ACK"): delivery_rate =
    // data delivered over max(send_elapsed, ack_elapsed); paced at one packet per ms over a 50 ms path, every
    // sample after the first round is exactly one MSS per ms.
    let mut h = Harness::new(1000);
    h.cc.lock().unwrap().pacing = Some(MSS as f64 * 1000.0);
    run_ack_clock(&mut h, 50 * MS, 500 * MS, 100 * US);
    let mut samples = 0;
    for a in h.acks() {
        let Heard::Ack { now, rate, .. } = a else { unreachable!() };
        if now < 120 * MS {
            continue;
        }
        let r = rate.expect("a valid sample on every ACK of a steady flow");
        assert_eq!(r.interval, 50 * MS);
        assert_eq!(r.delivered, 50 * MSS);
        assert!((r.delivery_rate - MSS as f64 * 1000.0).abs() < 1e-6, "{}", r.delivery_rate);
        assert!(!r.is_app_limited);
        samples += 1;
    }
    assert!(samples > 300, "{samples}");
}

#[test]
fn one_round_per_window_of_data() {
    // Reference §0.5 (BBR's packet-timed round, draft-cardwell-iccrg-bbr-congestion-control): a round
    // ends when a packet sent after the previous round's end is acknowledged. A 10-packet
    // window over a 100 ms path starts a round on the ACK of ids 0, 10, 20, ...
    let mut h = Harness::new(10);
    run_ack_clock(&mut h, 100 * MS, 1000 * MS, 10 * US);
    let mut starts = Vec::new();
    for a in h.acks() {
        let Heard::Ack { acked, round, round_start, .. } = a else { unreachable!() };
        if round_start {
            starts.push((acked[0], round));
        }
    }
    let want: Vec<(u64, u64)> = (0..10).map(|k| (10 * k, k + 1)).collect();
    assert_eq!(starts, want);
}

// ---------------------------------------------------------------------------------------------
// Pacing, windows.

#[test]
fn pacing_spaces_packets_by_size_over_rate() {
    // Earliest-departure-time pacing (Linux fq, RFC 9002 §7.7): each packet delays the next
    // by its size / rate; idle time earns no credit for a later burst.
    let mut h = Harness::new(100);
    h.cc.lock().unwrap().pacing = Some(MSS as f64 * 1000.0); // one full packet per ms
    h.s.set_app_limit(3 * MSS + MSS / 2);
    h.send(0, 1);
    assert!(h.s.poll_transmit(0).is_none());
    assert_eq!(h.s.next_timeout(), Some(MS));
    assert!(h.s.poll_transmit(MS - 1).is_none());
    h.send(MS, 1);
    // After idling until 10 ms: one packet at once, the next a full gap later, not a burst.
    h.send(10 * MS, 1);
    assert!(h.s.poll_transmit(10 * MS).is_none());
    let p = h.s.poll_transmit(11 * MS).unwrap();
    assert_eq!(p.len as u64, MSS / 2, "the application's last half packet");
    // A half packet takes half the time.
    h.s.set_app_limit(5 * MSS);
    assert!(h.s.poll_transmit(11 * MS + MS / 2 - 1).is_none());
    assert!(h.s.poll_transmit(11 * MS + MS / 2).is_some());
}

#[test]
fn windowed_controllers_are_paced_at_linux_ratios_when_asked() {
    // Linux tcp_update_pacing_rate: 200% of cwnd/srtt in slow start, 120% otherwise
    // (tcp_pacing_ss_ratio, tcp_pacing_ca_ratio), and only once an RTT was measured.
    let mut h = Harness::with(20, SenderConfig { pace_windowed: true, ..Default::default() });
    h.cc.lock().unwrap().slow_start = true;
    assert_eq!(h.send(0, 10).len(), 10, "no RTT yet: no pacing");
    h.ack(100 * MS, &[(0, 1)]);
    let gap = |h: &Harness, ratio: f64| {
        let rate = ratio * (20 * MSS) as f64 / (h.s.rtt().smoothed as f64 / 1e9);
        (MSS as f64 / rate * 1e9) as Time
    };
    assert_eq!(h.s.rtt().smoothed, 100 * MS);
    h.send(100 * MS, 1);
    let ss_gap = gap(&h, 2.0);
    assert_eq!(ss_gap, MSS * SEC / (2 * 20 * MSS * 10), "2·cwnd per 100 ms");
    assert_eq!(h.s.next_timeout(), Some(100 * MS + ss_gap));
    assert!(h.s.poll_transmit(100 * MS + ss_gap - 1).is_none());
    h.cc.lock().unwrap().slow_start = false;
    h.send(100 * MS + ss_gap, 1);
    assert_eq!(h.s.next_timeout(), Some(100 * MS + ss_gap + gap(&h, 1.2)));
}

#[test]
fn a_paced_linux_module_sends_tcp_tso_autosize_bursts() {
    // tcp_tso_autosize (net/ipv4/tcp_output.c): "bytes = sk->sk_pacing_rate >>
    // sk->sk_pacing_shift" (10: ~1 ms), "r = tcp_min_rtt(tcp_sk(sk)) >> tcp_tso_rtt_log" (9),
    // "if (r < BITS_PER_TYPE(sk->sk_gso_max_size)) bytes += sk->sk_gso_max_size >> r", "bytes =
    // min(bytes, sk->sk_gso_max_size)", "return max(bytes / mss_now, min_tso_segs)"; the skb
    // leaves whole at its EDT and the next waits its length at the rate
    // (tcp_update_skb_after_send).
    let rate = (10 * MSS * 1024) as f64; // 10 segments a pacing shift
    let burst = |cfg: SenderConfig, min_tso_segs: Option<u64>| {
        let mut h = Harness::with(1000, cfg);
        (h.cc.lock().unwrap().pacing, h.cc.lock().unwrap().min_tso_segs) = (Some(rate), min_tso_segs);
        let n = std::iter::from_fn(|| h.s.poll_transmit(0)).count() as u64;
        (n, h.s.next_timeout())
    };
    let gap = |n: u64| (n * MSS) as f64 / rate * 1e9;
    // (Without the first 10 segments' exemption from pacing: the next test.)
    let paced = SenderConfig { pacing_credit: false, ..Default::default() };
    let (n, next) = burst(paced, Some(2));
    assert_eq!(n, 10, "one skb of ~1 ms at the pacing rate");
    assert!(next.unwrap().abs_diff(gap(10) as Time) <= 10, "then the burst's time at the rate");
    assert_eq!(burst(SenderConfig { tso: false, ..paced }, Some(2)).0, 1, "tso = false");
    assert_eq!(burst(SenderConfig::default(), None).0, 1, "a scheme that is not kernel TCP");
    let mut h = Harness::new(1000);
    h.cc.lock().unwrap().min_tso_segs = Some(2);
    assert_eq!(h.s.tso_segs(1000.0), 2, "at least min_tso_segs");
    assert_eq!(h.s.tso_segs(1e12), 65_536 / MSS, "at most gso_max_size (64 KiB)");
    // Close peers get bigger bursts: min_rtt 1.5 ms is 1500 >> 9 = 2, so 64 KiB >> 2 more.
    h.send(0, 1);
    h.ack(3 * MS / 2, &[(0, 1)]);
    assert_eq!(h.s.rtt().min, 3 * MS / 2);
    assert_eq!(h.s.tso_segs(rate), (10 * MSS + 16_384) / MSS);
    // From min_rtt ≥ 17 × 512 µs the allowance is 0 (a 20 ms path: tso_segs from the rate alone).
    let mut far = Harness::new(1000);
    far.cc.lock().unwrap().min_tso_segs = Some(2);
    far.send(0, 1);
    far.ack(20 * MS, &[(0, 1)]);
    assert_eq!(far.s.tso_segs(rate), 10);
}

#[test]
fn a_linux_module_is_paced_as_tcp_update_skb_after_send_paces() {
    // net/ipv4/tcp_output.c, tcp_update_skb_after_send: "Original sch_fq does not pace first
    // 10 MSS" (tp->data_segs_out >= 10), and "u64 credit = tp->tcp_wstamp_ns - prior_wstamp;
    // /* take into account OS jitter */ len_ns -= min_t(u64, len_ns / 2, credit);", where
    // __tcp_transmit_skb has just moved tcp_wstamp_ns up to the send's time: an skb sent later
    // than the pacer allowed waits less after it, by its lateness, at most by half.
    let linux = |cfg: SenderConfig| {
        let h = Harness::with(1000, cfg);
        // One segment a millisecond, in one-segment skbs (tcp_tso_autosize: 1 ms of data).
        (h.cc.lock().unwrap().pacing, h.cc.lock().unwrap().min_tso_segs) = (Some(MSS as f64 * 1000.0), Some(1));
        h
    };
    let mut h = linux(SenderConfig::default());
    assert_eq!(h.send(0, 11).len(), 11, "the first 10 unpaced; the 11th is the first paced");
    assert!(h.s.poll_transmit(0).is_none());
    assert_eq!(h.s.next_timeout(), Some(MS));
    h.send(MS, 1);
    assert_eq!(h.s.next_timeout(), Some(2 * MS), "on time: no credit");
    h.send(2 * MS + 400_000, 1);
    assert_eq!(h.s.next_timeout(), Some(3 * MS), "0.4 ms late: the next wait is 0.6 ms");
    h.send(5 * MS, 1);
    assert_eq!(h.s.next_timeout(), Some(5 * MS + MS / 2), "2 ms late: the wait halves, no less");
    // `pacing_credit = false`: every packet from the first waits its size at the rate.
    let mut h = linux(SenderConfig { pacing_credit: false, ..Default::default() });
    h.send(0, 1);
    assert!(h.s.poll_transmit(0).is_none());
    h.send(MS + 400_000, 1);
    assert_eq!(h.s.next_timeout(), Some(2 * MS + 400_000));
    // A scheme that is not kernel TCP is paced strictly whatever the option.
    let mut h = Harness::new(1000);
    h.cc.lock().unwrap().pacing = Some(MSS as f64 * 1000.0);
    h.send(0, 1);
    assert!(h.s.poll_transmit(0).is_none());
}

#[test]
fn never_pace_ignores_the_controllers_rate() {
    let mut h = Harness::with(100, SenderConfig { never_pace: true, ..Default::default() });
    h.cc.lock().unwrap().pacing = Some(1000.0);
    assert_eq!(h.send(0, 20).len(), 20);
}

#[test]
fn the_receive_window_caps_the_flight_whatever_the_cwnd() {
    // RFC 5681 §3: "the minimum of cwnd and rwnd governs data transmission".
    let mut h = Harness::with(100, SenderConfig { rwnd: 5 * MSS, ..Default::default() });
    assert_eq!(h.send(0, 5).len(), 5);
    assert!(h.s.poll_transmit(0).is_none());
    assert_eq!(h.s.in_flight(), 5 * MSS);
    h.ack(10 * MS, &[(0, 1)]);
    assert_eq!(h.send(10 * MS, 1).len(), 1);
    assert!(h.s.poll_transmit(10 * MS).is_none());
    // And the cwnd still binds when it is the smaller.
    let mut h = Harness::with(3, SenderConfig { rwnd: 5 * MSS, ..Default::default() });
    assert_eq!(h.send(0, 3).len(), 3);
    assert!(h.s.poll_transmit(0).is_none());
}

#[test]
fn cwnd_limited_tracking_follows_linux() {
    // Linux tcp_is_cwnd_limited: in slow start the window counts as used while it is below
    // twice the largest flight of the last rounds; otherwise when sending stopped on it.
    let mut h = Harness::new(10);
    h.send(0, 10);
    assert!(h.s.poll_transmit(0).is_none(), "blocked by the window");
    h.ack(100 * MS, &[(0, 1)]);
    let Heard::Ack { app_limited, .. } = h.acks()[0] else { unreachable!() };
    assert!(!app_limited, "window-blocked: cwnd-limited");
    // A sender that only ever has two packets out under a 10-packet window is app-limited.
    let mut h = Harness::new(10);
    h.s.set_app_limit(2 * MSS);
    h.send(0, 2);
    h.ack(100 * MS, &[(0, 1)]);
    let Heard::Ack { app_limited, .. } = h.acks()[0] else { unreachable!() };
    assert!(app_limited);
    // In slow start, 6 of 10 out is enough (10 < 2·6), 4 is not (10 ≥ 2·4).
    for (out, limited) in [(6, true), (4, false)] {
        let mut h = Harness::new(10);
        h.cc.lock().unwrap().slow_start = true;
        h.s.set_app_limit(out * MSS);
        h.send(0, out as usize);
        h.ack(100 * MS, &[(0, 1)]);
        let Heard::Ack { app_limited, .. } = h.acks()[0] else { unreachable!() };
        assert_eq!(!app_limited, limited, "{out} out of 10");
    }
}

/// Whether each rate sample the controller heard was application-limited, in order.
fn app_limited_flags(h: &Harness) -> Vec<bool> {
    h.acks()
        .iter()
        .map(|a| match a {
            Heard::Ack { rate, .. } => rate.expect("valid sample").is_app_limited,
            _ => unreachable!(),
        })
        .collect()
}

#[test]
fn rate_samples_of_app_limited_data_say_so() {
    // Rate-sampler draft ("detecting application-limited phases"; Linux
    // tcp_rate_check_app_limited): once the application runs
    // out of data with room in the window, packets sent before that much data is delivered
    // are marked application-limited, and so are the samples they produce.
    let mut h = Harness::new(10);
    h.s.set_app_limit(2 * MSS);
    h.send(0, 2); // the second one empties the application's data: the bubble ends at 2 MSS
    h.ack(50 * MS, &[(0, 1)]);
    h.s.set_app_limit(u64::MAX);
    let ids = h.send(50 * MS, 9); // sent inside the bubble
    h.ack(60 * MS, &[(0, 2)]);
    h.ack(100 * MS, &[(ids[0], ids[0] + 1)]); // delivered passes 2 MSS: the bubble is over
    let late = h.send(100 * MS, 1)[0];
    h.ack(150 * MS, &[(ids[0], late + 1)]);
    let flags = app_limited_flags(&h);
    // The first two: the connection's opening flight (the test below); the third: the
    // application ran out; the last was sent once the bubble was delivered.
    assert_eq!(flags, vec![true, true, true, false]);
}

#[test]
fn the_first_flight_is_app_limited_as_linux_opens_with_a_bubble() {
    // tcp_init_sock: "There's a bubble in the pipe until at least the first ACK"
    // (tp->app_limited = ~0U), and tcp_rate_gen clears the mark at the first ACK: every packet
    // of the initial window gives an application-limited sample, the next flight does not —
    // with a backlog that never runs out.
    let mut h = Harness::new(10);
    let first = h.send(0, 10);
    h.ack(10 * MS, &[(first[0], first[0] + 1)]);
    let next = h.send(10 * MS, 1);
    h.ack(11 * MS, &[(first[0], first[1] + 1)]);
    h.ack(20 * MS, &[(first[0], next[0] + 1)]);
    let flags = app_limited_flags(&h);
    assert_eq!(flags, vec![true, true, false]);
}

/// Messages on a persistent connection: each completes when the cumulative ACK covers its last
/// byte, in order, and a message waiting behind a hole completes only once the hole is filled.
#[test]
fn messages_complete_when_their_last_byte_is_acknowledged_in_order() {
    let mut h = Harness::new(100);
    h.s.set_app_limit(0);
    assert!(h.s.poll_transmit(0).is_none(), "nothing written yet");
    let mut rx = crate::Receiver::new(crate::ReceiverConfig::default());
    // 2000 B (two packets: 1448 + 552), sent, then 100 B (one packet). Messages written
    // together share packets, as on a TCP stream.
    h.s.write_message(2000, 7);
    let mut pkts: Vec<_> = std::iter::from_fn(|| h.s.poll_transmit(0)).collect();
    h.s.write_message(100, 8);
    pkts.extend(std::iter::from_fn(|| h.s.poll_transmit(0)));
    assert_eq!(pkts.iter().map(|p| p.len).collect::<Vec<_>>(), [1448, 552, 100]);
    let mut done = Vec::new();
    // The first packet arrives; the second is lost for now; the third arrives.
    let a = rx.on_data(10, &pkts[0]).expect("an ACK per packet");
    h.s.on_ack(20, &a);
    let a = rx.on_data(11, &pkts[2]).expect("an ACK per packet");
    h.s.on_ack(21, &a);
    h.s.take_completed(&mut done);
    assert!(done.is_empty(), "the hole holds both messages back");
    assert_eq!(h.s.pending_messages(), 2);
    let a = rx.on_data(12, &pkts[1]).expect("an ACK per packet");
    h.s.on_ack(22, &a);
    h.s.take_completed(&mut done);
    assert_eq!(done, [7, 8]);
    assert_eq!(h.s.pending_messages(), 0);
    assert!(h.s.poll_transmit(30).is_none(), "all written data sent");
    h.s.write_message(1, 9);
    assert_eq!(h.s.poll_transmit(30).map(|p| (p.offset, p.len)), Some((2100, 1)));
}

/// A persistent connection that falls silent tells its controller how long it was idle when it
/// sends again (Linux's tcp_cwnd_restart / CA_EVENT_TX_START), measured from its last send, and
/// its current retransmission timeout (icsk_rto, which decides the restart): after one 20 ms
/// sample, Linux's srtt + max(mdev, tcp_rto_min) = 20 + 200 ms, not RFC 6298's
/// max(srtt + 4·rttvar, 200 ms) = 200 ms.
#[test]
fn a_message_after_idle_reports_the_idle_time_and_the_rto_to_the_controller() {
    let mut h = Harness::new(100);
    h.s.set_app_limit(0);
    let mut rx = crate::Receiver::new(crate::ReceiverConfig::default());
    h.s.write_message(1000, 1);
    let p = h.s.poll_transmit(0).expect("one packet");
    let a = rx.on_data(10 * MS, &p).expect("an ACK");
    h.s.on_ack(20 * MS, &a);
    h.s.write_message(1000, 2);
    let _ = h.s.poll_transmit(900 * MS).expect("one packet");
    assert!(
        h.heard()
            .iter()
            .any(|e| matches!(e, Heard::Idle { idle_for, rto } if *idle_for == 900 * MS && *rto == 220 * MS)),
        "{:?}",
        h.heard()
    );
}

// ---------------------------------------------------------------------------------------------
// Spurious timeouts (`[transport] undo`).

/// A flow with srtt 100 ms (Linux RTO 300 ms) and five packets (ids 1–5) sent at 100 ms whose
/// ACKs are late: the timeout fires at 400 ms and the retransmission of id 1 leaves as id 6.
fn timed_out(cfg: SenderConfig) -> Harness {
    // Without tail-loss probes, which would repair this tail before the timeout.
    let mut h = Harness::with(100, SenderConfig { tlp: false, ..cfg });
    h.send(0, 1);
    h.ack(100 * MS, &[(0, 1)]);
    assert_eq!(h.send(100 * MS, 5), vec![1, 2, 3, 4, 5]);
    h.s.on_timeout(400 * MS);
    assert_eq!((h.s.stats.rto_count, h.s.ca_state()), (1, CaState::Loss));
    let p = h.s.poll_transmit(400 * MS).unwrap();
    assert!(p.retransmission && p.id == 6 && p.offset == MSS);
    h
}

#[test]
fn an_ack_of_a_transmission_sent_before_the_timeout_undoes_it() {
    // RFC 5682 §2.1 (F-RTO) / RFC 3522 (Eifel): if the first ACK after the timeout acknowledges
    // an original transmission, the timeout was spurious. Linux: tcp_process_loss →
    // tcp_try_undo_loss on FLAG_ORIG_SACK_ACKED, then tcp_undo_cwnd_reduction(sk, true):
    // the lost marks are cleared and the state returns to Open.
    let mut h = timed_out(SenderConfig::default());
    h.ack(450 * MS, &[(1, 2)]);
    assert_eq!(h.s.stats.spurious_rtos, 1);
    assert_eq!(h.s.ca_state(), CaState::Open);
    // Ids 2–5 were not sent again, so they are in flight once more, with id 6 (the needless
    // retransmission of id 1's data).
    assert!(h.heard().iter().any(|x| matches!(x, Heard::Undo(ids) if *ids == vec![2, 3, 4, 5])));
    assert_eq!(h.s.in_flight(), 5 * MSS);
    // Nothing of theirs is queued for retransmission: the next packet is new data.
    let p = h.s.poll_transmit(450 * MS).unwrap();
    assert!(!p.retransmission && p.offset == 6 * MSS, "{p:?}");
    // Their ACKs arrive as ordinary ACKs of packets in flight.
    h.ack(460 * MS, &[(1, 6)]);
    let last = h.heard().into_iter().rev().find_map(|x| match x {
        Heard::Ack { acked, ca_state, .. } => Some((acked, ca_state)),
        _ => None,
    });
    assert_eq!(last, Some((vec![2, 3, 4, 5], CaState::Open)));
    assert_eq!(h.s.stats.packets_lost, 5, "the count of declared losses keeps the timeout's five");
}

#[test]
fn a_timeout_whose_retransmission_is_acked_first_is_not_undone() {
    // RFC 5682 §2.1 step 2: an ACK of the retransmission first means the loss was real; the
    // episode ends when data sent after the timeout is acked, and a late original after that
    // no longer undoes anything (Linux's undo_marker is cleared at the end of the episode).
    let mut h = timed_out(SenderConfig::default());
    h.ack(600 * MS, &[(6, 7)]);
    assert_eq!((h.s.stats.spurious_rtos, h.s.ca_state()), (0, CaState::Open));
    h.ack(610 * MS, &[(6, 7), (2, 3)]);
    assert_eq!(h.s.stats.spurious_rtos, 0);
    assert!(!h.heard().iter().any(|x| matches!(x, Heard::Undo(_))));
}

#[test]
fn undo_off_keeps_the_timeouts_reduction() {
    // `[transport] undo = false`: RFC 6298 §5 alone, with no spurious-timeout detection.
    let mut h = timed_out(SenderConfig { undo: false, ..Default::default() });
    h.ack(450 * MS, &[(1, 2)]);
    assert_eq!((h.s.stats.spurious_rtos, h.s.ca_state()), (0, CaState::Loss));
    // The timeout's retransmissions still go out.
    let p = h.s.poll_transmit(450 * MS).unwrap();
    assert!(p.retransmission && p.offset == 2 * MSS, "{p:?}");
}

// ---------------------------------------------------------------------------------------------
// The opening handshake ([transport] handshake).

/// A sender that called connect() at `t0` with a 10-packet window, not yet started.
fn connecting(t0: Time) -> Harness {
    let mut h = Harness::new(10);
    let cc = h.cc.clone();
    cc.lock().unwrap().init = None;
    h.s = Sender::new(
        SenderConfig { mss: MSS, jiffy_timers: false, ..SenderConfig::default() },
        Box::new(Recorder(cc)),
        Rng::new(1),
    );
    h.s.connect(t0);
    h
}

#[test]
fn the_syn_ack_sample_seeds_srtt_the_rto_and_min_rtt_before_the_controller_starts() {
    // tcp_rcv_synsent_state_process → tcp_ack → tcp_ack_update_rtt (tcp_update_rtt_min,
    // tcp_rtt_estimator, tcp_set_rto), then tcp_finish_connect → tcp_init_transfer →
    // tcp_init_congestion_control: the controller's init sees the handshake's sample.
    let mut h = connecting(100 * MS);
    assert_eq!(h.s.poll_syn(100 * MS), Some(100 * MS), "the SYN leaves at connect()");
    assert_eq!(h.s.poll_syn(100 * MS), None, "one SYN, not a burst");
    assert!(h.s.poll_transmit(100 * MS).is_none(), "no data in SYN_SENT");
    assert!(h.cc.lock().unwrap().init.is_none(), "the controller starts on the SYN-ACK, not before");
    assert_eq!(h.s.next_timeout(), Some(1100 * MS), "TCP_TIMEOUT_INIT guards the SYN");
    h.s.on_syn_ack(130 * MS, 100 * MS);
    let (at, rtt) = h.cc.lock().unwrap().init.expect("init ran");
    assert_eq!(at, 130 * MS);
    assert!(rtt.has_sample);
    assert_eq!((rtt.latest, rtt.smoothed, rtt.min), (30 * MS, 30 * MS, 30 * MS));
    // tcp_rtt_estimator's first sample, then tcp_set_rto: srtt + max(2·rtt, rto_min).
    let p = h.s.poll_transmit(130 * MS).expect("data flow once the connection is open");
    assert_eq!((p.id, p.offset), (0, 0));
    assert_eq!(h.s.next_timeout(), Some(130 * MS + 230 * MS), "the first RTO is 230 ms, not 1 s");
    // A second SYN-ACK (the answer to a SYN sent again) is a duplicate: nothing changes.
    h.s.on_syn_ack(140 * MS, 0);
    assert_eq!(h.s.rtt().smoothed, 30 * MS);
}

#[test]
fn an_unanswered_syn_is_sent_again_after_one_second_then_two() {
    // tcp_retransmit_timer in SYN_SENT: icsk_rto starts at TCP_TIMEOUT_INIT (1 s) and doubles.
    // With timestamps the SYN-ACK of the retransmitted SYN is still timed, from its echo
    // (tcp_ack_update_rtt: "seq_rtt_us = ca_rtt_us = tcp_rtt_tsopt_us(tp)").
    let mut h = connecting(0);
    h.s.poll_syn(0).expect("first SYN");
    h.s.on_timeout(SEC - 1);
    assert_eq!(h.s.poll_syn(SEC - 1), None, "not a nanosecond early");
    h.s.on_timeout(SEC);
    assert_eq!(h.s.poll_syn(SEC), Some(SEC));
    assert_eq!(h.s.stats.syn_retransmissions, 1);
    assert_eq!(h.s.next_timeout(), Some(3 * SEC), "the second SYN waits 2 s");
    h.s.on_syn_ack(SEC + 40 * MS, SEC);
    assert_eq!(h.s.rtt().smoothed, 40 * MS, "timed from the SYN the SYN-ACK echoes");
    assert!(h.s.poll_transmit(SEC + 40 * MS).is_some());
}

#[test]
fn connect_gives_up_after_six_syn_retransmissions() {
    // tcp_syn_retries = 6 (TCP_SYN_RETRIES): SYNs at 0, 1, 3, 7, 15, 31 and 63 s; at 127 s
    // connect() fails with ETIMEDOUT and the flow never sends.
    let mut h = connecting(0);
    let mut sent = Vec::new();
    while let Some(t) = h.s.next_timeout() {
        h.s.on_timeout(t);
        if let Some(syn) = h.s.poll_syn(t) {
            sent.push(syn / SEC);
        }
    }
    assert_eq!(sent, vec![0, 1, 3, 7, 15, 31, 63]);
    assert!(h.s.is_connecting() && h.s.poll_transmit(200 * SEC).is_none());
}

#[test]
fn stopping_while_connecting_cancels_the_handshake() {
    let mut h = connecting(0);
    h.s.poll_syn(0);
    h.s.stop();
    assert_eq!(h.s.next_timeout(), None);
    h.s.on_syn_ack(30 * MS, 0);
    assert!(h.s.poll_transmit(30 * MS).is_none(), "a stopped flow does not start on a late SYN-ACK");
}

// ---------------------------------------------------------------------------------------------
// Proportional Rate Reduction ([transport] prr).

/// A 10-packet window of a controller Linux runs PRR for, halved to 5 at a congestion event:
/// ids 0–9 sent, then a SACK of 1–3 finds id 0 lost (dupthresh) and starts recovery.
fn in_recovery(cfg: SenderConfig) -> Harness {
    let mut h = Harness::with(10, cfg);
    {
        let mut sh = h.cc.lock().unwrap();
        (sh.uses_prr, sh.cut_to) = (true, Some(5 * MSS));
    }
    h.send(0, 10);
    h.ack(100 * MS, &[(1, 4)]);
    assert_eq!(h.s.ca_state(), CaState::Recovery);
    assert_eq!(h.s.in_flight(), 6 * MSS, "10 sent, 3 SACKed, 1 lost");
    h
}

#[test]
fn prr_sends_in_proportion_to_delivery_during_recovery() {
    // tcp_cwnd_reduction (net/ipv4/tcp_input.c), RFC 6937 §3 with pipe > ssthresh: sndcnt =
    // ceil(ssthresh · prr_delivered / prior_cwnd) − prr_out = ceil(5·3/10) − 0 = 2: the fast
    // retransmission and one new packet leave on the ACK that starts recovery.
    let mut h = in_recovery(SenderConfig::default());
    let p = h.s.poll_transmit(100 * MS).expect("the fast retransmission");
    assert!(p.retransmission && p.offset == 0);
    let p = h.s.poll_transmit(100 * MS).expect("one new packet");
    assert!(!p.retransmission && p.id == 11);
    assert!(h.s.poll_transmit(100 * MS).is_none(), "PRR's quota is spent");
    // Two more delivered: ceil(5·5/10) − 2 = 1.
    h.ack(110 * MS, &[(1, 6)]);
    assert_eq!(h.send(110 * MS, 1), vec![12]);
    assert!(h.s.poll_transmit(110 * MS).is_none());
    // Recovery ends when a packet sent after it began is acked (tcp_end_cwnd_reduction): the
    // controller's window (5) governs again.
    h.ack(200 * MS, &[(1, 13)]);
    assert_eq!(h.s.ca_state(), CaState::Open);
    assert_eq!(h.s.in_flight(), 0);
    assert_eq!(h.send(200 * MS, 5).len(), 5);
    assert!(h.s.poll_transmit(200 * MS).is_none(), "the controller's window of 5");
}

#[test]
fn without_prr_the_cut_stops_sending_until_the_flight_drains() {
    // `[transport] prr = false`, and every controller Linux does not run PRR for (BBR has its
    // own cong_control): the cut window alone governs, so with 6 in flight over a window of 5
    // not even the retransmission leaves until two more packets are delivered.
    for h in [&mut in_recovery(SenderConfig { prr: false, ..Default::default() }), &mut {
        let mut h = Harness::new(10);
        h.cc.lock().unwrap().cut_to = Some(5 * MSS);
        h.send(0, 10);
        h.ack(100 * MS, &[(1, 4)]);
        h
    }] {
        assert!(h.s.poll_transmit(100 * MS).is_none());
        h.ack(110 * MS, &[(1, 6)]);
        let p = h.s.poll_transmit(110 * MS).expect("4 in flight under 5");
        assert!(p.retransmission && p.offset == 0);
        assert!(h.s.poll_transmit(110 * MS).is_none());
    }
}

// ---------------------------------------------------------------------------------------------
// Tail-loss probes ([transport] tlp).

/// A sender with srtt 20 ms (one packet timed 0 → 20 ms; Linux RTO 20 + max(2·20, 200) = 220
/// ms) that then sends `n` packets at 20 ms and hears nothing more.
fn tail(cfg: SenderConfig, n: usize) -> Harness {
    let mut h = Harness::with(100, cfg);
    h.send(0, 1);
    h.ack(20 * MS, &[(0, 1)]);
    assert_eq!(h.s.rtt().smoothed, 20 * MS);
    h.s.set_app_limit((1 + n as u64) * MSS);
    h.send(20 * MS, n);
    h
}

#[test]
fn a_silent_tail_gets_a_probe_of_new_data_after_two_srtt() {
    // RFC 8985 §7.2 / Linux tcp_schedule_loss_probe: "Probe timeout is 2*rtt. Add minimum RTO
    // to account for delayed ack when there's one outstanding packet" (else TCP_TIMEOUT_MIN,
    // 2 jiffies: 8 ms at CONFIG_HZ = 250); tcp_send_loss_probe sends new data when there is some, outside the window
    // (tcp_write_xmit with push_one = 2: "Force out a loss probe pkt.").
    let mut h = Harness::with(10, SenderConfig::default());
    h.send(0, 1);
    h.ack(20 * MS, &[(0, 1)]);
    assert_eq!(h.send(20 * MS, 10).len(), 10);
    assert!(h.s.poll_transmit(20 * MS).is_none(), "the window is full");
    assert_eq!(h.s.next_timeout(), Some(20 * MS + 2 * 20 * MS + 8 * MS));
    h.s.on_timeout(68 * MS);
    let p = h.s.poll_transmit(68 * MS).expect("the probe");
    assert!(!p.retransmission && p.id == 11 && p.offset == 11 * MSS, "{p:?}");
    assert!(h.s.poll_transmit(68 * MS).is_none(), "one probe, then the window again");
    assert_eq!((h.s.stats.tlp_probes, h.s.stats.rto_count), (1, 0));
    // tcp_rearm_rto after the probe: a full RTO from now, and no second probe this episode.
    assert_eq!(h.s.next_timeout(), Some(68 * MS + 220 * MS));
}

#[test]
fn with_no_new_data_the_probe_resends_the_last_segment_and_its_ack_starts_fast_recovery() {
    // tcp_send_loss_probe: "skb = skb_rb_last(&sk->tcp_rtx_queue)" retransmitted. The probe's
    // ACK lets RACK declare the tail lost (RFC 8985 §7.1: "so that the sender can trigger fast
    // recovery instead of an RTO"): a congestion event, no timeout, and the last segment, which
    // the probe delivered, is not sent a third time.
    let mut h = tail(SenderConfig::default(), 3); // ids 1–3
    h.s.on_timeout(68 * MS);
    let p = h.s.poll_transmit(68 * MS).expect("the probe");
    assert!(p.retransmission && p.id == 4 && p.offset == 3 * MSS, "{p:?}");
    h.ack(90 * MS, &[(4, 5)]);
    assert_eq!(h.s.ca_state(), CaState::Recovery);
    assert_eq!((h.s.stats.rto_count, h.s.stats.packets_lost), (0, 3));
    let again: Vec<u64> = std::iter::from_fn(|| h.s.poll_transmit(90 * MS)).map(|p| p.offset).collect();
    assert_eq!(again, vec![MSS, 2 * MSS], "ids 1 and 2 again; id 3's data arrived with the probe");
}

#[test]
fn a_probe_lost_after_its_original_was_acked_costs_nothing() {
    // Linux counts in sequence space: once the originals' ACK covers the probe's bytes, a probe
    // dropped on the way is invisible to it (no SACK of it, nothing to mark, no reduction;
    // tcp_process_tlp_ack acts only on the ACK that passes tlp_high_seq, here a plain one).
    let mut h = tail(SenderConfig::default(), 3); // ids 1–3
    h.s.on_timeout(68 * MS);
    assert_eq!(h.s.poll_transmit(68 * MS).expect("the probe").id, 4);
    h.ack(70 * MS, &[(1, 4)]); // the originals were only late
    h.s.set_app_limit(7 * MSS);
    assert_eq!(h.send(70 * MS, 3).len(), 3); // ids 5–7
    h.ack(100 * MS, &[(1, 4), (5, 8)]); // the probe never arrives
    assert_eq!(h.s.ca_state(), CaState::Open);
    assert_eq!((h.s.stats.packets_lost, h.s.stats.congestion_events), (0, 0));
    assert_eq!(h.s.in_flight(), 0);
    assert!(h.s.poll_transmit(100 * MS).is_none(), "nothing to send again");
}

#[test]
fn one_packet_out_waits_for_a_delayed_ack_and_never_past_the_rto() {
    // tcp_schedule_loss_probe: 2·srtt + TCP_RTO_MIN with one packet out (40 + 200 ms), but "If
    // the RTO formula yields an earlier time, then use that time": the RTO, 220 ms. The timer
    // then fires as a probe, not a timeout.
    let mut h = tail(SenderConfig::default(), 1);
    assert_eq!(h.s.next_timeout(), Some(20 * MS + 220 * MS));
    h.s.on_timeout(240 * MS);
    assert!(h.s.poll_transmit(240 * MS).expect("the probe").retransmission);
    assert_eq!((h.s.stats.tlp_probes, h.s.stats.rto_count), (1, 0));
}

#[test]
fn tlp_off_leaves_the_tail_to_the_rto() {
    // `[transport] tlp = false` (net.ipv4.tcp_early_retrans < 3): the RTO alone.
    let mut h = tail(SenderConfig { tlp: false, ..Default::default() }, 3);
    assert_eq!(h.s.next_timeout(), Some(20 * MS + 220 * MS));
    h.s.on_timeout(240 * MS);
    assert_eq!((h.s.stats.tlp_probes, h.s.stats.rto_count), (0, 1));
}

#[test]
fn a_flow_without_rwnd_gets_linuxs_autotuned_window_ceiling() {
    // tcp_rmem[2] (32 MiB on 6.16 and later) scaled by tcp_win_from_space's scaling_ratio
    // (160/256 for full-sized segments): 20 MiB; a flow's own `rwnd` replaces it.
    use cclab_core::scenario::Transport;
    let spec: FlowSpec = toml::from_str("scheme = \"cubic\"").unwrap();
    assert_eq!(SenderConfig::for_flow(&spec, &Transport::default(), MSS).rwnd, 20 << 20);
    let spec: FlowSpec = toml::from_str("scheme = \"cubic\"\nrwnd = \"64KB\"").unwrap();
    assert_eq!(SenderConfig::for_flow(&spec, &Transport::default(), MSS).rwnd, 64_000);
}
