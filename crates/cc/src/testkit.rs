//! A synthetic ACK driver for controller unit tests: no transport, no losses unless a test
//! injects them, one ACK per packet.
//!
//! Packets leave in a burst whenever the window opens. Without a bottleneck every packet is
//! acked exactly one `base_rtt` later; with one, packets are serialised at a fixed packet rate
//! through an unbounded FIFO, so the RTT grows with the standing queue and ACKs come back
//! spaced by the serialisation time, as through a real bottleneck.

use crate::controller::CongestionControl;
use crate::types::*;
use std::collections::VecDeque;

pub use cclab_core::time::MS;
pub use cclab_core::time::SEC;

struct Pending {
    id: u64,
    bytes: u64,
    send_time: Time,
    tag: CcTag,
    ack_at: Time,
}

pub struct Driver<C: CongestionControl> {
    pub cc: C,
    pub now: Time,
    pub mss: u64,
    pub base_rtt: Time,
    /// Added to the RTT of packets sent from now on (to model a path change).
    pub extra_delay: Time,
    /// Serialisation time of one packet at the bottleneck, if there is one.
    per_packet: Option<Time>,
    link_free_at: Time,
    flight: VecDeque<Pending>,
    in_flight: u64,
    next_id: u64,
    rtt: RttStats,
    delivered: u64,
    rng: Rng,
    /// Packets with ids below this were sent before the current recovery began.
    recovery_end: Option<u64>,
    in_loss: bool,
    pub app_limited: bool,
}

/// An ACK event for hand-written unit tests; `in_flight` is after the ACK.
pub fn ack_event<'a>(
    acked: &'a [AckedPacket],
    lost: &'a [LostPacket],
    rtt: &'a RttStats,
    ca_state: CaState,
    in_flight: u64,
) -> AckEvent<'a> {
    let newly_acked_bytes = acked.iter().map(|p| p.bytes).sum();
    let newly_lost_bytes = lost.iter().map(|p| p.bytes).sum();
    AckEvent {
        now: acked.iter().map(|p| p.send_time + p.rtt).max().unwrap_or(0),
        acked,
        lost,
        newly_acked_bytes,
        newly_lost_bytes,
        prior_in_flight: in_flight + newly_acked_bytes + newly_lost_bytes,
        in_flight,
        rtt,
        rate: None,
        delivered: 0,
        round: 0,
        round_start: false,
        ca_state,
        app_limited: false,
        one_way_delay: None,
    }
}

impl<C: CongestionControl> Driver<C> {
    pub fn new(cc: C, mss: u64, base_rtt: Time) -> Driver<C> {
        Driver::build(cc, mss, base_rtt, None)
    }

    /// Puts a bottleneck of `packets_per_sec` full packets per second on the path.
    pub fn with_bottleneck(cc: C, mss: u64, base_rtt: Time, packets_per_sec: u64) -> Driver<C> {
        Driver::build(cc, mss, base_rtt, Some(SEC / packets_per_sec))
    }

    fn build(cc: C, mss: u64, base_rtt: Time, per_packet: Option<Time>) -> Driver<C> {
        let mut d = Driver {
            cc,
            now: 0,
            mss,
            base_rtt,
            extra_delay: 0,
            per_packet,
            link_free_at: 0,
            flight: VecDeque::new(),
            in_flight: 0,
            next_id: 0,
            rtt: RttStats::default(),
            delivered: 0,
            rng: Rng::new(7),
            recovery_end: None,
            in_loss: false,
            app_limited: false,
        };
        let mut ctx = CcContext { mss, rng: &mut d.rng };
        d.cc.on_init(0, &RttStats::default(), &mut ctx);
        d.send();
        d
    }

    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Sends as many full packets as the controller allows, all at `now`.
    fn send(&mut self) {
        while self.cc.can_send(self.in_flight, self.mss) {
            let id = self.next_id;
            self.next_id += 1;
            self.in_flight += self.mss;
            let pkt = SentPacket {
                id,
                bytes: self.mss,
                send_time: self.now,
                is_retransmission: false,
                in_flight: self.in_flight,
                app_limited: self.app_limited,
            };
            let mut ctx = CcContext { mss: self.mss, rng: &mut self.rng };
            let tag = self.cc.on_packet_sent(&pkt, &mut ctx);
            let leaves = match self.per_packet {
                Some(ser) => {
                    self.link_free_at = self.link_free_at.max(self.now) + ser;
                    self.link_free_at
                }
                None => self.now,
            };
            // FIFO: a later packet never overtakes an earlier one.
            let ack_at = (leaves + self.base_rtt + self.extra_delay).max(self.flight.back().map_or(0, |p| p.ack_at));
            self.flight.push_back(Pending { id, bytes: self.mss, send_time: self.now, tag, ack_at });
            if self.app_limited {
                // An application-limited sender does not fill the window.
                break;
            }
        }
    }

    /// Delivers the next ACK; false if nothing is in flight.
    pub fn step(&mut self) -> bool {
        let Some(p) = self.flight.pop_front() else {
            return false;
        };
        self.now = p.ack_at;
        let sample = self.now - p.send_time;
        self.update_rtt(sample);
        let prior = self.in_flight;
        self.in_flight -= p.bytes;
        self.delivered += p.bytes;
        let mut ctx = CcContext { mss: self.mss, rng: &mut self.rng };
        let mut ca_state = if self.in_loss { CaState::Loss } else { CaState::Open };
        self.in_loss = false;
        if let Some(end) = self.recovery_end {
            if p.id < end {
                ca_state = CaState::Recovery;
            } else {
                self.recovery_end = None;
                self.cc.on_recovery_exit(self.now, &mut ctx);
            }
        }
        let acked = [AckedPacket { id: p.id, bytes: p.bytes, send_time: p.send_time, tag: p.tag, rtt: sample }];
        let ev = AckEvent {
            now: self.now,
            acked: &acked,
            lost: &[],
            newly_acked_bytes: p.bytes,
            newly_lost_bytes: 0,
            prior_in_flight: prior,
            in_flight: self.in_flight,
            rtt: &self.rtt,
            rate: None,
            delivered: self.delivered,
            round: 0,
            round_start: false,
            ca_state,
            app_limited: self.app_limited,
            one_way_delay: None,
        };
        self.cc.on_ack(&ev, &mut ctx);
        self.send();
        true
    }

    /// RFC 6298 smoothing, so controllers that read srtt see realistic values.
    fn update_rtt(&mut self, r: Time) {
        let s = &mut self.rtt;
        if !s.has_sample {
            *s = RttStats { latest: r, smoothed: r, rttvar: r / 2, min: r, has_sample: true };
        } else {
            s.rttvar = (3 * s.rttvar + s.smoothed.abs_diff(r)) / 4;
            s.smoothed = (7 * s.smoothed + r) / 8;
            s.latest = r;
            s.min = s.min.min(r);
        }
    }

    /// Delivers every ACK due at or before `t`, then moves the clock to `t`.
    pub fn run_until(&mut self, t: Time) {
        self.run_until_with(t, |_, _| {});
    }

    /// As [`Driver::run_until`], calling `observe(now, cc)` after every ACK.
    pub fn run_until_with(&mut self, t: Time, mut observe: impl FnMut(Time, &C)) {
        while self.flight.front().is_some_and(|p| p.ack_at <= t) {
            self.step();
            observe(self.now, &self.cc);
        }
        self.now = self.now.max(t);
    }

    /// Delivers ACKs until `done(cc)` holds; panics after `limit` of simulated time.
    pub fn run_while(&mut self, limit: Time, mut go_on: impl FnMut(&C) -> bool) {
        while go_on(&self.cc) {
            assert!(self.now <= limit, "condition still holds at {} ms", self.now / MS);
            assert!(self.step(), "nothing in flight");
        }
    }

    /// A loss episode detected now: the controller is told once, and the packets already in
    /// flight are acked in recovery (none is actually lost, as with an ECN mark).
    pub fn congestion_event(&mut self) {
        let ev = CongestionEvent {
            now: self.now,
            largest_lost_send_time: self.flight.front().map_or(self.now, |p| p.send_time),
            lost_bytes: self.mss,
            in_flight: self.in_flight,
            prior_in_flight: self.in_flight,
        };
        let mut ctx = CcContext { mss: self.mss, rng: &mut self.rng };
        self.cc.on_congestion_event(&ev, &mut ctx);
        self.recovery_end = Some(self.next_id);
    }

    /// A retransmission timeout now: everything in flight is lost; sending resumes at once.
    pub fn rto(&mut self) {
        let mut ctx = CcContext { mss: self.mss, rng: &mut self.rng };
        self.cc.on_rto(self.now, &mut ctx);
        self.flight.clear();
        self.in_flight = 0;
        self.link_free_at = self.now;
        self.recovery_end = None;
        self.in_loss = true;
        self.send();
    }
}

/// The value of a named variable in a snapshot.
pub fn var(snap: &CcSnapshot, name: &str) -> f64 {
    snap.vars.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no `{name}` in {snap:?}")).1
}
