use super::*;

use cclab_core::scenario::MSS;
use cclab_core::time::{jiffies, JIFFY};

/// Feeds BBR synthetic ACKs: one packet acked per call, with a rate sample.
struct Feed {
    bbr: Bbr,
    rng: Rng,
    now: Time,
    delivered: u64,
    id: u64,
}

impl Feed {
    fn new() -> Feed {
        let mut f = Feed { bbr: Bbr::new(MSS, BbrConfig::default()), rng: Rng::new(5), now: 0, delivered: 0, id: 0 };
        f.bbr.on_init(0, &RttStats::default(), &mut CcContext { mss: MSS, rng: &mut f.rng });
        f
    }

    /// One ACK at `now` of a packet with RTT `rtt`, whose rate sample says `pps` packets/s
    /// and whose send-time delivered count is `prior_delivered`.
    fn ack(&mut self, now: Time, rtt: Time, pps: f64, prior_delivered: u64, in_flight: u64, state: CaState) {
        self.now = now;
        self.delivered += MSS;
        self.id += 1;
        let acked = [AckedPacket { id: self.id, bytes: MSS, send_time: now - rtt, tag: 0, rtt }];
        let stats = RttStats { latest: rtt, smoothed: rtt, rttvar: 0, min: rtt, has_sample: true };
        let interval = SEC;
        let rate = RateSample {
            delivery_rate: pps * MSS as f64,
            interval,
            delivered: (pps * MSS as f64) as u64,
            prior_delivered,
            prior_time: now - rtt,
            tx_in_flight: in_flight * MSS,
            lost: 0,
            is_app_limited: false,
            rtt,
        };
        let ev = AckEvent {
            now,
            acked: &acked,
            lost: &[],
            newly_acked_bytes: MSS,
            newly_lost_bytes: 0,
            prior_in_flight: (in_flight + 1) * MSS,
            in_flight: in_flight * MSS,
            rtt: &stats,
            rate: Some(rate),
            delivered: self.delivered,
            round: 0,
            round_start: false,
            ca_state: state,
            app_limited: false,
            one_way_delay: None,
        };
        self.bbr.on_ack(&ev, &mut CcContext { mss: MSS, rng: &mut self.rng });
    }

    /// A whole round: one ACK that starts a new round (its packet was sent after the
    /// previous round's end), at the given bandwidth.
    fn round(&mut self, rtt: Time, pps: f64, in_flight: u64) {
        let prior = self.delivered;
        self.ack(self.now + rtt, rtt, pps, prior, in_flight, CaState::Open);
    }
}

#[test]
fn gains_are_linux_fixed_point_values() {
    assert!((HIGH_GAIN - 2.0 / std::f64::consts::LN_2).abs() < 0.002, "{HIGH_GAIN}");
    assert!((DRAIN_GAIN * HIGH_GAIN - 1.0).abs() < 0.01);
    assert_eq!(PACING_GAIN, [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
}

#[test]
fn probe_bw_starts_in_a_random_phase_but_never_the_draining_one() {
    let mut seen = [0u32; CYCLE_LEN];
    let mut b = Bbr::new(MSS, BbrConfig::default());
    let mut rng = Rng::new(9);
    for _ in 0..7_000 {
        b.reset_probe_bw_mode(&mut CcContext { mss: MSS, rng: &mut rng });
        seen[b.cycle_idx] += 1;
    }
    assert_eq!(seen[1], 0, "the 0.75 phase must not start a cycle: {seen:?}");
    for (i, &n) in seen.iter().enumerate().filter(|&(i, _)| i != 1) {
        assert!((800..1200).contains(&n), "phase {i} started {n} times of 7000: {seen:?}");
    }
}

#[test]
fn startup_ends_after_three_rounds_without_25_percent_growth_then_drains() {
    let mut f = Feed::new();
    let rtt = 50 * MS;
    // Doubling bandwidth: still in startup.
    for k in 0..6 {
        f.round(rtt, 1000.0 * (1 << k) as f64, 10 << k);
        assert_eq!(f.bbr.mode(), Mode::Startup, "round {k}");
    }
    // A plateau at 32 000 packets/s (+10 %, then flat): the third flat round ends startup.
    f.round(rtt, 35_200.0, 640);
    f.round(rtt, 35_200.0, 640);
    assert_eq!(f.bbr.mode(), Mode::Startup);
    // With 640 packets in flight against a BDP of 35 200 × 50 ms = 1760, the queue is
    // estimated drained at once, so DRAIN passes straight to PROBE_BW on the same ACK.
    f.round(rtt, 35_200.0, 640);
    assert!(f.bbr.full_bw_reached);
    assert_eq!(f.bbr.mode(), Mode::ProbeBw);
    // ssthresh (informational) = inflight(bw, 1): the BDP plus the TSO budget.
    let ssthresh = f.bbr.ssthresh.unwrap();
    assert!((1760..1760 + 3 * TSO_MAX_SEGS + 2).contains(&ssthresh), "{ssthresh}");
}

#[test]
fn drain_waits_for_the_startup_queue_to_go() {
    let mut f = Feed::new();
    let rtt = 50 * MS;
    for k in 0..4 {
        f.round(rtt, 1000.0 * (1 << k) as f64, 10 << k);
    }
    for _ in 0..3 {
        // BDP = 8000 × 50 ms = 400 packets; 1000 in flight is a startup queue.
        f.round(rtt, 8000.0, 1000);
    }
    assert_eq!(f.bbr.mode(), Mode::Drain);
    assert!((f.bbr.pacing_gain - DRAIN_GAIN).abs() < 1e-12);
    assert!((f.bbr.cwnd_gain - HIGH_GAIN).abs() < 1e-12);
    f.ack(f.now + MS, rtt, 8000.0, 0, 300, CaState::Open);
    assert_eq!(f.bbr.mode(), Mode::ProbeBw);
    assert_eq!(f.bbr.cwnd_gain, 2.0);
}

#[test]
fn probe_rtt_after_10_s_holds_4_packets_for_200_ms_and_a_round() {
    let mut f = Feed::new();
    let rtt = 50 * MS;
    for k in 0..4 {
        f.round(rtt, 1000.0 * (1 << k) as f64, 10 << k);
    }
    for _ in 0..4 {
        f.round(rtt, 8000.0, 300);
    }
    assert_eq!(f.bbr.mode(), Mode::ProbeBw);
    let cwnd_before = f.bbr.cwnd;
    // RTT samples a little above the minimum for 10 s: no new min_rtt.
    while f.now < 10 * SEC + 60 * MS {
        let prior = f.delivered;
        f.ack(f.now + 10 * MS, rtt + MS, 8000.0, prior, 300, CaState::Open);
    }
    assert_eq!(f.bbr.mode(), Mode::ProbeRtt);
    assert_eq!(f.bbr.cwnd, CWND_MIN_TARGET);
    assert!(f.bbr.prior_cwnd >= cwnd_before.min(f.bbr.prior_cwnd));
    // Flight still high: the 200 ms clock has not started.
    f.ack(f.now + MS, rtt, 8000.0, 0, 100, CaState::Open);
    assert_eq!(f.bbr.probe_rtt_done_stamp, None);
    // Down to 4 packets: the clock starts; 199 ms later and a round later, still probing.
    f.ack(f.now + MS, rtt, 8000.0, 0, 4, CaState::Open);
    let start = f.now;
    // Linux's clock is tcp_jiffies32: the 200 ms run from the start of the current jiffy.
    assert_eq!(f.bbr.probe_rtt_done_stamp, Some(jiffies(start) + 200 * MS));
    let prior = f.delivered;
    f.ack(start + 199 * MS, rtt, 8000.0, prior, 4, CaState::Open);
    assert_eq!(f.bbr.mode(), Mode::ProbeRtt);
    // On the first tick after 200 ms (and the round done), back to PROBE_BW with the window
    // restored ("after(tcp_jiffies32, bbr->probe_rtt_done_stamp)").
    f.ack(jiffies(start) + 200 * MS + JIFFY, rtt, 8000.0, 0, 4, CaState::Open);
    assert_eq!(f.bbr.mode(), Mode::ProbeBw);
    assert!(f.bbr.cwnd >= f.bbr.prior_cwnd.min(cwnd_before));
    assert_eq!(f.bbr.min_rtt_stamp, jiffies(f.now));
    // Samples taken while probing were tagged application-limited.
    let mut rng = Rng::new(1);
    let tag = f.bbr.on_packet_sent(&SentPacket::default(), &mut CcContext { mss: MSS, rng: &mut rng });
    assert_eq!(tag, TAG_APP_LIMITED);
}

#[test]
fn recovery_conserves_packets_for_a_round_then_restores_cwnd() {
    let mut f = Feed::new();
    let rtt = 50 * MS;
    for k in 0..4 {
        f.round(rtt, 1000.0 * (1 << k) as f64, 10 << k);
    }
    for _ in 0..4 {
        f.round(rtt, 8000.0, 300);
    }
    // This feed acks one packet per round, so set the window a long flow would have.
    f.bbr.cwnd = 800;
    let good = f.bbr.cwnd;
    // The ACK that reveals the first loss, then the transport's congestion event.
    f.ack(f.now + MS, rtt, 8000.0, 0, 500, CaState::Open);
    let mut rng = Rng::new(1);
    let ev = CongestionEvent {
        now: f.now,
        largest_lost_send_time: 0,
        lost_bytes: MSS,
        in_flight: 500 * MSS,
        prior_in_flight: 0,
    };
    f.bbr.on_congestion_event(&ev, &mut CcContext { mss: MSS, rng: &mut rng });
    assert_eq!(f.bbr.cwnd, 501, "in flight + acked");
    assert_eq!(f.bbr.prior_cwnd, good);
    assert!(f.bbr.packet_conservation);
    // In recovery, each ACK keeps cwnd at least in flight + acked (no growth beyond).
    f.ack(f.now + MS, rtt, 8000.0, 0, 500, CaState::Recovery);
    assert_eq!(f.bbr.cwnd, 501);
    // Recovery ends: the saved window comes back.
    f.ack(f.now + MS, rtt, 8000.0, 0, 500, CaState::Open);
    assert!(f.bbr.cwnd >= good, "{} < {good}", f.bbr.cwnd);
    assert!(!f.bbr.packet_conservation);
}

#[test]
fn rto_collapses_to_one_packet_and_restores_on_exit() {
    let mut f = Feed::new();
    let rtt = 50 * MS;
    for k in 0..4 {
        f.round(rtt, 1000.0 * (1 << k) as f64, 10 << k);
    }
    for _ in 0..4 {
        f.round(rtt, 8000.0, 300);
    }
    f.bbr.cwnd = 800;
    let good = f.bbr.cwnd;
    let mut rng = Rng::new(1);
    f.bbr.on_rto(f.now, &mut CcContext { mss: MSS, rng: &mut rng });
    assert_eq!(f.bbr.cwnd(), MSS);
    assert_eq!(f.bbr.full_bw, 0.0);
    // ACKs in the Loss state slow-start from one packet.
    f.ack(f.now + rtt, rtt, 8000.0, 0, 0, CaState::Loss);
    assert_eq!(f.bbr.cwnd, CWND_MIN_TARGET.max(2));
    f.ack(f.now + MS, rtt, 8000.0, 0, 0, CaState::Open);
    assert!(f.bbr.cwnd >= good);
}

#[test]
fn pacing_is_gain_times_bw_less_one_percent() {
    let mut f = Feed::new();
    for k in 0..4 {
        f.round(50 * MS, 1000.0 * (1 << k) as f64, 10 << k);
    }
    let bw = f.bbr.max_bw();
    assert_eq!(bw, 8000.0);
    let want = 8000.0 * MSS as f64 * HIGH_GAIN * 0.99;
    assert!((f.bbr.pacing_rate().unwrap() - want).abs() < 1e-6 * want);
}

/// bbr_init: "bbr->min_rtt_us = tcp_min_rtt(tp)", and bbr_init_pacing_rate_from_rtt paces the
/// initial window over srtt when the handshake gave one ("if (tp->srtt_us) { rtt_us =
/// max(tp->srtt_us >> 3, 1U); bbr->has_seen_rtt = 1; } else { rtt_us = USEC_PER_MSEC; }").
/// Over a 20 ms handshake the first rate is therefore 1/20 of the no-sample rate over 1 ms.
#[test]
fn init_takes_min_rtt_and_srtt_from_the_handshake() {
    let init = |rtt: &RttStats| {
        let mut bbr = Bbr::new(MSS, BbrConfig::default());
        bbr.on_init(0, rtt, &mut CcContext { mss: MSS, rng: &mut Rng::new(5) });
        bbr
    };
    let cold = init(&RttStats::default());
    assert_eq!(cold.min_rtt, None);
    let r = 20 * MS;
    let warm = init(&RttStats { latest: r, smoothed: r, rttvar: r / 2, min: r, has_sample: true });
    assert_eq!(warm.min_rtt, Some(r));
    assert!(warm.has_seen_rtt);
    let ratio = warm.pacing_rate().unwrap() / cold.pacing_rate().unwrap();
    assert!((ratio - 1.0 / 20.0).abs() < 1e-9, "{ratio}");
}
