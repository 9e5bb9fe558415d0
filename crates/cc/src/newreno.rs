//! TCP NewReno (RFC 5681, RFC 6582) in the event form of RFC 9002 Appendix B.
//!
//! The transport detects losses and tells the controller once per recovery epoch
//! (`on_congestion_event`), so NewReno's `recover` bookkeeping lives there. Window in bytes.
//!
//! Deliberate simplifications, all allowed by the RFCs:
//! - no fast-recovery inflation (RFC 5681 §3.2 steps 3–4): the window is cut to ssthresh at the
//!   event and does not grow until recovery ends, as RFC 9002 §7.3.2 does; the transport meters
//!   the flight down to it by PRR (RFC 6937, `[transport] prr`), as Linux does for reno;
//! - on a full ACK (recovery exit) cwnd simply stays at ssthresh (RFC 6582 §3.2 step 3 allows it).

use crate::controller::CongestionControl;
use crate::registry::{BuildResult, OptValue, OptionInfo, OptionKind, Options, Scheme, SchemeInfo};
use crate::types::*;

/// RFC 6928 §2: the initial window is min(10·MSS, max(2·MSS, 14600 bytes)).
pub fn rfc6928_initial_window(mss: u64) -> u64 {
    (10 * mss).min((2 * mss).max(14_600))
}

/// The option every window-based scheme shares.
pub const INIT_CWND_OPTION: OptionInfo = OptionInfo {
    name: "init_cwnd",
    kind: OptionKind::Int { min: 1, max: 1_000_000 },
    default: Some(OptValue::Int(10)),
    help: "initial window in packets; when absent, RFC 6928's min(10·MSS, max(2·MSS, 14600 B)), \
           which is 10 packets at the default MSS",
};

/// The initial window in bytes for a scheme whose options include [`INIT_CWND_OPTION`].
pub fn initial_window(opts: &Options, mss: u64) -> u64 {
    match opts.int("init_cwnd") {
        Some(n) if opts.is_set("init_cwnd") => n as u64 * mss,
        _ => rfc6928_initial_window(mss),
    }
}

pub const SCHEME: Scheme = Scheme {
    info: SchemeInfo {
        name: "newreno",
        summary: "TCP NewReno (RFC 5681/6582): slow start, +1 MSS per RTT, halve on loss",
        options: &[INIT_CWND_OPTION],
    },
    build: build_from_options,
};

fn build_from_options(opts: &Options, mss: u64) -> BuildResult {
    Ok(Box::new(NewReno::new(mss, initial_window(opts, mss))))
}

#[derive(Clone, Debug)]
pub struct NewReno {
    mss: u64,
    init_cwnd: u64,
    cwnd: u64,
    /// `u64::MAX` until the first congestion event ("arbitrarily high", RFC 5681 §3.1).
    ssthresh: u64,
    /// RFC 3465 appropriate byte counting: bytes acked in congestion avoidance since cwnd last
    /// grew.
    bytes_acked: u64,
    in_recovery: bool,
    /// Set by a retransmission timeout until new data is acked, so that repeated expiries
    /// (backoff) do not shrink ssthresh again (RFC 5681 §3.1, equation 4 applies to the first).
    rto_pending: bool,
    /// Linux's prior_cwnd and prior_ssthresh: the window and tcp_current_ssthresh saved when a
    /// loss episode began, which an undo restores (0: nothing saved).
    prior_cwnd: u64,
    prior_ssthresh: u64,
    /// Bytes in flight as last reported: RFC 5681's FlightSize when the RTO fires.
    flight: u64,
}

impl NewReno {
    pub fn new(mss: u64, init_cwnd: u64) -> NewReno {
        NewReno {
            mss,
            init_cwnd,
            cwnd: init_cwnd,
            ssthresh: u64::MAX,
            bytes_acked: 0,
            in_recovery: false,
            rto_pending: false,
            prior_cwnd: 0,
            prior_ssthresh: 0,
            flight: 0,
        }
    }

    /// tcp_enter_recovery / tcp_enter_loss from Open: remember what an undo restores
    /// (tcp_current_ssthresh: the larger of ssthresh and ¾·cwnd).
    fn save_prior(&mut self) {
        self.prior_cwnd = self.cwnd;
        self.prior_ssthresh = self.ssthresh.max((self.cwnd >> 1) + (self.cwnd >> 2));
    }

    /// RFC 5681 equation (4): half the flight, but never below two segments.
    fn half_flight(&self, flight: u64) -> u64 {
        (flight / 2).max(2 * self.mss)
    }
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn on_packet_sent(&mut self, pkt: &SentPacket, _ctx: &mut CcContext) -> CcTag {
        self.flight = pkt.in_flight;
        0
    }

    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        self.flight = ev.in_flight;
        if ev.newly_acked_bytes > 0 {
            self.rto_pending = false;
        }
        // The transport's state is authoritative; the flag only tells `snapshot` about it.
        self.in_recovery = ev.ca_state == CaState::Recovery;
        // No growth during recovery (no inflation, RFC 9002 §7.3.2) nor when the window is not
        // what limits the sender (RFC 9002 §7.8; RFC 7661).
        if self.in_recovery || ev.app_limited {
            return;
        }
        let mut acked = ev.newly_acked_bytes;
        if self.cwnd < self.ssthresh {
            // Slow start counts every acked byte (as Linux and the QUIC stacks do, rather than
            // RFC 5681's per-ACK cap of one SMSS); stop at ssthresh and let the rest count
            // towards congestion avoidance, as Linux's tcp_slow_start does.
            let grown = (self.cwnd + acked).min(self.ssthresh);
            acked -= grown - self.cwnd;
            self.cwnd = grown;
        }
        if acked > 0 && self.cwnd >= self.ssthresh {
            // One MSS per cwnd's worth of acked bytes: +1 MSS per RTT at most (RFC 3465 §2.1).
            self.bytes_acked += acked;
            if self.bytes_acked >= self.cwnd {
                self.bytes_acked -= self.cwnd;
                self.cwnd += self.mss;
            }
        }
    }

    fn on_congestion_event(&mut self, ev: &CongestionEvent, _ctx: &mut CcContext) {
        // RFC 5681 §3.2 step 2 with FlightSize, not cwnd, so an application-limited flow is not
        // given credit for a window it did not use. The cut is immediate; the transport's
        // PRR meters the flight down to it (`uses_prr`).
        self.save_prior();
        self.ssthresh = self.half_flight(ev.prior_in_flight);
        self.cwnd = self.ssthresh;
        self.bytes_acked = 0;
        self.in_recovery = true;
    }

    fn on_recovery_exit(&mut self, _now: Time, _ctx: &mut CcContext) {
        self.in_recovery = false;
    }

    fn on_rto(&mut self, _now: Time, _ctx: &mut CcContext) {
        if !self.rto_pending {
            if !self.in_recovery {
                self.save_prior();
            }
            self.ssthresh = self.half_flight(self.flight);
        }
        self.rto_pending = true;
        // RFC 5681 §3.1: the loss window is one segment.
        self.cwnd = self.mss;
        self.bytes_acked = 0;
        self.in_recovery = false;
    }

    fn undo_cwnd(&mut self, _now: Time, _restored: &[LostPacket], _ctx: &mut CcContext) {
        // tcp_reno_undo_cwnd: max(cwnd, prior_cwnd); tcp_undo_cwnd_reduction raises ssthresh
        // back to prior_ssthresh.
        if self.prior_ssthresh == 0 {
            return;
        }
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.ssthresh = self.ssthresh.max(self.prior_ssthresh);
        self.rto_pending = false;
        self.in_recovery = false;
        self.bytes_acked = 0;
    }

    fn on_idle_restart(&mut self, _now: Time, idle_for: Time, rto: Time, _ctx: &mut CcContext) {
        // RFC 5681 §4.1 as Linux's tcp_cwnd_restart runs it: after more than the sender's RTO
        // of silence the ACK clock is gone, so the window halves per RTO of idle time, down
        // to min(IW, cwnd), and ssthresh keeps 3/4 of the old window.
        if let Some((cwnd, ssthresh)) =
            crate::linux::cwnd_restart(self.cwnd, self.ssthresh, self.init_cwnd, idle_for, rto)
        {
            self.cwnd = cwnd;
            self.ssthresh = ssthresh;
        }
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh != u64::MAX).then_some(self.ssthresh)
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn min_tso_segs(&self) -> Option<u64> {
        Some(crate::linux::MIN_TSO_SEGS)
    }

    fn uses_prr(&self) -> bool {
        true
    }

    fn snapshot(&self) -> CcSnapshot {
        let mode = if self.in_recovery {
            "recovery"
        } else if self.in_slow_start() {
            "slow_start"
        } else {
            "cong_avoid"
        };
        let ssthresh = if self.ssthresh == u64::MAX { f64::INFINITY } else { self.ssthresh as f64 };
        CcSnapshot {
            mode,
            vars: vec![("cwnd", self.cwnd as f64), ("ssthresh", ssthresh), ("bytes_acked", self.bytes_acked as f64)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{Driver, MS};

    use cclab_core::scenario::MSS;

    fn reno() -> NewReno {
        NewReno::new(MSS, rfc6928_initial_window(MSS))
    }

    #[test]
    fn initial_window_follows_rfc6928() {
        assert_eq!(rfc6928_initial_window(1448), 14_480);
        assert_eq!(rfc6928_initial_window(536), 5_360);
        assert_eq!(rfc6928_initial_window(4000), 14_600);
        assert_eq!(rfc6928_initial_window(9000), 18_000);
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        let mut d = Driver::new(reno(), MSS, 50 * MS);
        assert_eq!(d.cc.cwnd(), 10 * MSS);
        for round in 1..=6 {
            // All of a round's ACKs arrive at round·RTT; stop just after them.
            d.run_until(round * 50 * MS);
            assert_eq!(d.cc.cwnd(), (10 << round) * MSS, "round {round}");
            assert!(d.cc.in_slow_start());
        }
    }

    #[test]
    fn congestion_event_halves_flight_once_and_ca_adds_one_mss_per_rtt() {
        let mut d = Driver::new(reno(), MSS, 50 * MS);
        d.run_until(3 * 50 * MS);
        assert_eq!(d.cc.cwnd(), 80 * MSS);
        // The window is full: FlightSize = 80 packets.
        assert_eq!(d.in_flight(), 80 * MSS);
        d.congestion_event();
        assert_eq!(d.cc.cwnd(), 40 * MSS);
        assert_eq!(d.cc.ssthresh(), Some(40 * MSS));
        assert_eq!(d.cc.snapshot().mode, "recovery");
        // The ACKs of the rest of the old flight arrive in recovery: no growth, no second cut.
        let event_at = d.now;
        d.run_until(event_at + 50 * MS);
        assert_eq!(d.cc.cwnd(), 40 * MSS);
        // Then congestion avoidance: exactly one MSS per round trip.
        let mut last = d.cc.cwnd();
        for k in 1..=20 {
            d.run_until(event_at + (k + 1) * 50 * MS);
            let now = d.cc.cwnd();
            assert_eq!(now - last, MSS, "round {k}: {last} -> {now}");
            last = now;
        }
        assert_eq!(d.cc.snapshot().mode, "cong_avoid");
    }

    /// tcp_enter_loss saves prior_cwnd = cwnd and prior_ssthresh = tcp_current_ssthresh
    /// (max(ssthresh, ¾·cwnd)); on a spurious timeout tcp_undo_cwnd_reduction sets cwnd to
    /// tcp_reno_undo_cwnd's max(cwnd, prior_cwnd) and raises ssthresh back (net/ipv4/tcp_input.c,
    /// net/ipv4/tcp_cong.c). A second expiry of the same episode must not overwrite the save.
    #[test]
    fn undo_after_a_spurious_timeout_restores_the_window_and_ssthresh() {
        let mut r = reno();
        let mut rng = Rng::new(1);
        let mut ctx = CcContext { mss: MSS, rng: &mut rng };
        r.cwnd = 40 * MSS;
        r.ssthresh = 30 * MSS;
        r.flight = 40 * MSS;
        r.on_rto(0, &mut ctx);
        assert_eq!((r.cwnd(), r.ssthresh), (MSS, 20 * MSS));
        r.on_rto(1, &mut ctx); // backoff: same episode
        r.undo_cwnd(2, &[], &mut ctx);
        assert_eq!(r.cwnd(), 40 * MSS, "prior_cwnd");
        assert_eq!(r.ssthresh, 30 * MSS, "max(ssthresh 20, prior_ssthresh max(30, ¾·40 = 30))");
        assert!(!r.rto_pending);
    }

    #[test]
    fn every_congestion_event_cuts_exactly_once() {
        let mut r = reno();
        let mut rng = Rng::new(1);
        let mut ctx = CcContext { mss: MSS, rng: &mut rng };
        let ev = |prior| CongestionEvent {
            now: 0,
            largest_lost_send_time: 0,
            lost_bytes: MSS,
            in_flight: prior - MSS,
            prior_in_flight: prior,
        };
        r.on_congestion_event(&ev(100 * MSS), &mut ctx);
        assert_eq!(r.cwnd(), 50 * MSS);
        // ACKs that reveal more losses in the same epoch do not cut again (the transport does not
        // raise a second event) and do not grow the window.
        let stats = RttStats { latest: 10, smoothed: 10, rttvar: 5, min: 10, has_sample: true };
        let acked = [AckedPacket { id: 1, bytes: MSS, send_time: 0, tag: 0, rtt: 10 }];
        let lost = [LostPacket { id: 2, bytes: MSS, send_time: 0, tag: 0, cause: LossCause::PacketThreshold }];
        for _ in 0..100 {
            r.on_ack(&crate::testkit::ack_event(&acked, &lost, &stats, CaState::Recovery, 60 * MSS), &mut ctx);
        }
        assert_eq!(r.cwnd(), 50 * MSS);
        // A new epoch cuts again, from the new FlightSize.
        r.on_recovery_exit(0, &mut ctx);
        r.on_congestion_event(&ev(50 * MSS), &mut ctx);
        assert_eq!(r.cwnd(), 25 * MSS);
        // Never below two segments.
        r.on_congestion_event(&ev(MSS), &mut ctx);
        assert_eq!(r.cwnd(), 2 * MSS);
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_carries_the_rest() {
        let mut r = reno();
        let mut rng = Rng::new(1);
        let mut ctx = CcContext { mss: MSS, rng: &mut rng };
        r.ssthresh = 20 * MSS;
        r.cwnd = 20 * MSS - 500;
        let stats = RttStats::default();
        let acked = [AckedPacket { id: 1, bytes: MSS, send_time: 0, tag: 0, rtt: 10 }];
        r.on_ack(&crate::testkit::ack_event(&acked, &[], &stats, CaState::Open, 0), &mut ctx);
        assert_eq!(r.cwnd(), 20 * MSS);
        assert_eq!(r.bytes_acked, MSS - 500);
    }

    #[test]
    fn no_growth_when_application_limited() {
        let mut d = Driver::new(reno(), MSS, 50 * MS);
        d.app_limited = true;
        d.run_until(500 * MS);
        assert_eq!(d.cc.cwnd(), 10 * MSS);
    }

    #[test]
    fn rto_sets_ssthresh_on_first_expiry_only() {
        let mut d = Driver::new(reno(), MSS, 50 * MS);
        d.run_until(2 * 50 * MS);
        assert_eq!(d.in_flight(), 40 * MSS);
        d.rto();
        assert_eq!(d.cc.cwnd(), MSS);
        assert_eq!(d.cc.ssthresh(), Some(20 * MSS));
        // Backed-off expiries keep ssthresh, even though the flight is now one packet.
        d.rto();
        d.rto();
        assert_eq!(d.cc.ssthresh(), Some(20 * MSS));
        assert_eq!(d.cc.cwnd(), MSS);
        // Once new data is acked, a later timeout computes ssthresh afresh.
        d.step();
        assert_eq!(d.cc.cwnd(), 2 * MSS);
        assert!(d.in_flight() <= 2 * MSS);
        d.rto();
        assert_eq!(d.cc.ssthresh(), Some(2 * MSS));
    }

    #[test]
    fn idle_longer_than_rto_restarts_from_the_initial_window() {
        let mut d = Driver::new(reno(), MSS, 50 * MS);
        d.run_until(4 * 50 * MS);
        let before = d.cc.cwnd();
        assert!(before > 10 * MSS);
        let mut rng = Rng::new(1);
        let mut ctx = CcContext { mss: MSS, rng: &mut rng };
        d.cc.on_idle_restart(d.now, 100 * MS, 250 * MS, &mut ctx);
        assert_eq!(d.cc.cwnd(), before, "shorter than the sender's 250 ms RTO");
        // Between one and two RTOs: halved once (tcp_cwnd_restart), not straight to the IW.
        d.cc.on_idle_restart(d.now, 400 * MS, 250 * MS, &mut ctx);
        assert_eq!(d.cc.cwnd(), (before >> 1).max(10 * MSS));
        d.cc.on_idle_restart(d.now, 2_000 * MS, 250 * MS, &mut ctx);
        assert_eq!(d.cc.cwnd(), 10 * MSS);
    }
}
