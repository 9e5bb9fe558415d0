//! Property tests: every registered controller behind the sender, driven by random sequences of
//! sends, deliveries and drops on a FIFO path, lost ACKs, forged ACK frames, timers and
//! application limits, against the sender's and the controllers' invariants (checked after
//! every step):
//!
//! - bytes in flight equal the sum of the sizes of the packets tracked as in flight, and the
//!   tracking deque covers exactly the ids from its base to the next id;
//! - the flight never exceeds the receive window;
//! - the congestion window is never zero;
//! - any pacing rate, the controller's or the sender's own, is finite and positive;
//! - every snapshot value is finite, except the markers the controllers use for "not yet"
//!   (NaN for an absent RTT or epoch, +inf for an unset ssthresh);
//! - the controller hears of each transmission once when sent and at most once as acked or
//!   lost, and the bytes it was told are outstanding equal the sender's flight;
//! - delivered bytes never decrease, and nothing panics.
//!
//! Cases are bounded (cases × steps × ~20 controller set-ups) so the suite takes seconds in
//! release. A failing case found here is frozen as a named test at the bottom of this file.

use super::*;
use crate::{FeedbackSlot, Receiver, ReceiverConfig};
use cclab_cc::{OptValue, OptionKind};
use cclab_core::scenario::FlowSpec;
use cclab_core::time::{MS, SEC, US};
use proptest::prelude::{
    any, prop, prop_assert, prop_assert_eq, prop_oneof, proptest, Just, ProptestConfig, Strategy, TestCaseError,
};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

const MSS: u64 = 1448;

/// Scheme options for the schemes whose defaults do not build alone (`fixed` needs a window or
/// a rate); every other scheme runs with its defaults. New schemes are picked up from the
/// registry automatically.
const VARIANTS: &[(&str, &[&str])] = &[("fixed", &["cwnd = 40", "rate = \"10Mbps\""])];

/// Snapshot variables that may hold a non-finite "not yet" marker, and which one.
fn allowed_non_finite(var: &str, v: f64) -> bool {
    match var {
        "ssthresh" => v == f64::INFINITY,
        "min_rtt" | "base_rtt" | "epoch_start" | "pacing_rate" => v.is_nan(),
        _ => false,
    }
}

/// Every registered scheme, as flow entries: with its defaults (or `VARIANTS`), and once more
/// for each other value of each of its switches and choices.
fn flow_specs() -> Vec<FlowSpec> {
    let mut out = Vec::new();
    for info in cclab_cc::registry::schemes() {
        let mut variants: Vec<String> = match VARIANTS.iter().find(|(n, _)| *n == info.name) {
            Some((_, v)) => v.iter().map(|s| s.to_string()).collect(),
            None => vec![String::new()],
        };
        for o in info.options {
            match (o.kind, o.default) {
                (OptionKind::Bool, Some(OptValue::Bool(b))) => variants.push(format!("{} = {}", o.name, !b)),
                (OptionKind::Choice(words), d) => variants.extend(
                    words.iter().filter(|w| d != Some(OptValue::Choice(w))).map(|w| format!("{} = \"{w}\"", o.name)),
                ),
                _ => {}
            }
        }
        for v in variants {
            let text = format!("scheme = \"{}\"\n{v}\n", info.name);
            out.push(toml::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}")));
        }
    }
    out
}

/// One step of a random run.
#[derive(Clone, Debug)]
enum Op {
    /// Up to this many packets, as far as window and data allow; time moves on to the pacer's
    /// next departure when that is within 2 ms.
    Send(u8),
    /// An ACK clock: send what the window allows over one RTT (ms), deliver it all (with one
    /// packet in eight lost when `lossy`), and acknowledge it all.
    RoundTrip { rtt_ms: u8, lossy: bool },
    /// Time passes (µs); the receiver's delayed-ACK and agent timers fire if due.
    Advance(u32),
    /// Packets leave the forward path in order; bit `i % 8` of the mask drops the i-th.
    Deliver { n: u8, drop: u8 },
    /// ACKs reach the sender, in order.
    Acks(u8),
    /// The oldest ACK on the return path is lost.
    DropAck,
    /// A hand-made ACK frame with arbitrary ranges (not what a FIFO path produces).
    Forged { ranges: Vec<(u16, u8)>, owd_us: u32, feedback: Option<[u8; cclab_cc::FEEDBACK_BYTES]> },
    /// Jump to the sender's next timeout (at most 10 s ahead) and fire it.
    Timer,
    /// The application has written this many more bytes in total (a bulk flow otherwise).
    AppLimit(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u8..64).prop_map(Op::Send),
        3 => (1u8..200, prop::bool::weighted(0.3)).prop_map(|(rtt_ms, lossy)| Op::RoundTrip { rtt_ms, lossy }),
        4 => prop_oneof![0u32..2_000, 0u32..200_000].prop_map(Op::Advance),
        4 => (1u8..32, any::<u8>()).prop_map(|(n, drop)| Op::Deliver { n, drop: if drop % 4 == 0 { drop } else { 0 } }),
        4 => (1u8..32).prop_map(Op::Acks),
        1 => Just(Op::DropAck),
        1 => (
            proptest::collection::vec((any::<u16>(), 0u8..8), 1..=3),
            0u32..500_000,
            proptest::option::of(any::<[u8; cclab_cc::FEEDBACK_BYTES]>())
        )
            .prop_map(|(ranges, owd_us, feedback)| Op::Forged { ranges, owd_us, feedback }),
        2 => Just(Op::Timer),
        1 => (0u32..200_000).prop_map(Op::AppLimit),
    ]
}

/// The sender's settings for one case.
#[derive(Clone, Debug)]
struct Setup {
    pace_windowed: bool,
    never_pace: bool,
    rwnd_pkts: Option<u8>,
    min_rto_ms: u16,
    delayed_ack: bool,
    seed: u64,
}

fn setup() -> impl Strategy<Value = Setup> {
    (any::<bool>(), prop::bool::weighted(0.1), proptest::option::of(1u8..100), 1u16..1000, any::<bool>(), any::<u64>())
        .prop_map(|(pace_windowed, never_pace, rwnd_pkts, min_rto_ms, delayed_ack, seed)| Setup {
            pace_windowed,
            never_pace,
            rwnd_pkts,
            min_rto_ms,
            delayed_ack,
            seed,
        })
}

/// What a controller was told about each transmission: its size, and whether it was since
/// reported acked or lost (ids reported twice, or never sent, are counted as errors).
#[derive(Debug, Default)]
struct Ledger {
    outstanding: BTreeMap<u64, u64>,
    settled: BTreeMap<u64, &'static str>,
    errors: Vec<String>,
}

impl Ledger {
    fn settle(&mut self, id: u64, how: &'static str) {
        if self.outstanding.remove(&id).is_none() {
            let before = self.settled.get(&id).copied().unwrap_or("never sent");
            self.errors.push(format!("id {id} reported {how}, but it was {before}"));
        }
        self.settled.insert(id, how);
    }

    fn in_flight(&self) -> u64 {
        self.outstanding.values().sum()
    }
}

/// Wraps a registered controller, forwarding every call and keeping its [`Ledger`].
struct Audited {
    cc: Box<dyn CongestionControl>,
    ledger: Arc<Mutex<Ledger>>,
}

impl CongestionControl for Audited {
    fn name(&self) -> &'static str {
        self.cc.name()
    }
    fn on_init(&mut self, now: Time, rtt: &cclab_cc::RttStats, ctx: &mut CcContext) {
        self.cc.on_init(now, rtt, ctx)
    }
    fn on_packet_sent(&mut self, pkt: &SentPacket, ctx: &mut CcContext) -> CcTag {
        let mut l = self.ledger.lock().unwrap();
        if l.outstanding.insert(pkt.id, pkt.bytes).is_some() || l.settled.contains_key(&pkt.id) {
            l.errors.push(format!("id {} sent twice", pkt.id));
        }
        drop(l);
        self.cc.on_packet_sent(pkt, ctx)
    }
    fn on_ack(&mut self, ev: &AckEvent, ctx: &mut CcContext) {
        let mut l = self.ledger.lock().unwrap();
        ev.acked.iter().for_each(|p| l.settle(p.id, "acked"));
        ev.lost.iter().for_each(|p| l.settle(p.id, "lost"));
        if l.in_flight() != ev.in_flight {
            let msg = format!("AckEvent.in_flight {} but {} outstanding", ev.in_flight, l.in_flight());
            l.errors.push(msg);
        }
        drop(l);
        self.cc.on_ack(ev, ctx)
    }
    fn on_congestion_event(&mut self, ev: &CongestionEvent, ctx: &mut CcContext) {
        self.cc.on_congestion_event(ev, ctx)
    }
    fn on_rto(&mut self, now: Time, ctx: &mut CcContext) {
        self.cc.on_rto(now, ctx)
    }
    fn on_recovery_exit(&mut self, now: Time, ctx: &mut CcContext) {
        self.cc.on_recovery_exit(now, ctx)
    }
    fn undo_cwnd(&mut self, now: Time, restored: &[LostPacket], ctx: &mut CcContext) {
        // Restored packets were reported lost by a spurious timeout: outstanding once more.
        let mut l = self.ledger.lock().unwrap();
        for p in restored {
            if l.settled.remove(&p.id) != Some("lost") || l.outstanding.insert(p.id, p.bytes).is_some() {
                l.errors.push(format!("id {} restored, but it was not reported lost", p.id));
            }
        }
        drop(l);
        self.cc.undo_cwnd(now, restored, ctx)
    }
    fn on_idle_restart(&mut self, now: Time, idle_for: Time, rto: Time, ctx: &mut CcContext) {
        self.cc.on_idle_restart(now, idle_for, rto, ctx)
    }
    fn on_packets_lost(&mut self, now: Time, lost: &[LostPacket], ctx: &mut CcContext) {
        let mut l = self.ledger.lock().unwrap();
        lost.iter().for_each(|p| l.settle(p.id, "lost"));
        drop(l);
        self.cc.on_packets_lost(now, lost, ctx)
    }
    fn on_feedback(&mut self, now: Time, fb: &cclab_cc::Feedback, ctx: &mut CcContext) {
        self.cc.on_feedback(now, fb, ctx)
    }
    fn next_timer(&self) -> Option<Time> {
        self.cc.next_timer()
    }
    fn on_timer(&mut self, now: Time, ctx: &mut CcContext) {
        self.cc.on_timer(now, ctx)
    }
    fn cwnd(&self) -> u64 {
        self.cc.cwnd()
    }
    fn pacing_rate(&self) -> Option<f64> {
        self.cc.pacing_rate()
    }
    fn can_send(&self, in_flight: u64, mss: u64) -> bool {
        self.cc.can_send(in_flight, mss)
    }
    fn ssthresh(&self) -> Option<u64> {
        self.cc.ssthresh()
    }
    fn in_slow_start(&self) -> bool {
        self.cc.in_slow_start()
    }
    fn uses_prr(&self) -> bool {
        self.cc.uses_prr()
    }
    fn snapshot(&self) -> cclab_cc::CcSnapshot {
        self.cc.snapshot()
    }
}

/// A sender and a receiver joined by FIFO paths that the ops drive.
struct World {
    s: Sender,
    r: Receiver,
    fwd: VecDeque<DataPacket>,
    rev: VecDeque<AckFrame>,
    now: Time,
    last_delivered: u64,
    ledger: Arc<Mutex<Ledger>>,
}

impl World {
    fn new(spec: &FlowSpec, setup: &Setup) -> World {
        let cc = cclab_cc::registry::build(spec, MSS).unwrap_or_else(|e| {
            panic!("scheme `{}` does not build with its defaults ({e}): add a variant to VARIANTS", spec.scheme)
        });
        let cfg = SenderConfig {
            mss: MSS,
            min_rto: setup.min_rto_ms as Time * MS,
            pace_windowed: setup.pace_windowed,
            never_pace: setup.never_pace,
            rwnd: setup.rwnd_pkts.map_or(u64::MAX, |p| p as u64 * MSS),
            ..SenderConfig::default()
        };
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let cc = Box::new(Audited { cc, ledger: ledger.clone() });
        let mut s = Sender::new(cfg, cc, Rng::new(setup.seed));
        s.start(0);
        let agent = cclab_cc::agent::build(spec, MSS).expect("agent options");
        let r =
            Receiver::new(ReceiverConfig { delayed_ack: setup.delayed_ack, ..Default::default() }).with_agent(agent);
        World { s, r, fwd: VecDeque::new(), rev: VecDeque::new(), now: 0, last_delivered: 0, ledger }
    }

    /// Sends up to `n` packets, moving time to the pacer's next departure while that is no
    /// later than `until`.
    fn send(&mut self, n: usize, until: Time) {
        for _ in 0..n {
            if let Some(p) = self.s.poll_transmit(self.now) {
                self.fwd.push_back(p);
                continue;
            }
            let paced = self.s.next_send_time > self.now && self.s.next_send_time <= until;
            if !paced {
                break;
            }
            self.now = self.s.next_send_time;
            self.receiver_timers();
        }
    }

    fn receiver_timers(&mut self) {
        if self.r.next_timeout().is_some_and(|t| t <= self.now) {
            if let Some(a) = self.r.on_timeout(self.now) {
                self.rev.push_back(a);
            }
        }
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Send(n) => self.send(n as usize, self.now + 2 * MS),
            Op::RoundTrip { rtt_ms, lossy } => {
                let start = self.now;
                let end = start + rtt_ms as Time * MS;
                self.send(1000, end);
                self.now = self.now.max(end);
                self.receiver_timers();
                self.apply(&Op::Deliver { n: u8::MAX, drop: if lossy { 1 << (rtt_ms % 8) } else { 0 } });
                self.apply(&Op::Acks(u8::MAX));
            }
            Op::Advance(us) => {
                self.now += us as Time * US;
                self.receiver_timers();
            }
            Op::Deliver { n, drop } => {
                for i in 0..n {
                    let Some(p) = self.fwd.pop_front() else { break };
                    if drop & (1 << (i % 8)) != 0 {
                        continue;
                    }
                    if let Some(a) = self.r.on_data(self.now, &p) {
                        self.rev.push_back(a);
                    }
                }
            }
            Op::Acks(n) => {
                for _ in 0..n {
                    let Some(a) = self.rev.pop_front() else { break };
                    self.s.on_ack(self.now, &a);
                }
            }
            Op::DropAck => {
                self.rev.pop_front();
            }
            Op::Forged { ref ranges, owd_us, feedback } => {
                let span = self.s.next_id + 4;
                let mut f = AckFrame { one_way_delay: owd_us as Time * US, ..Default::default() };
                for (i, &(start, len)) in ranges.iter().enumerate() {
                    let start = start as u64 % span;
                    f.ranges[i] = (start, start + len as u64);
                }
                f.n_ranges = ranges.len() as u8;
                f.largest = f.ranges[0].1.saturating_sub(1);
                f.feedback = FeedbackSlot::new(feedback);
                self.s.on_ack(self.now, &f);
            }
            Op::Timer => {
                if let Some(t) = self.s.next_timeout() {
                    self.now = self.now.max(t.min(self.now + 10 * SEC));
                    self.s.on_timeout(self.now);
                    self.receiver_timers();
                }
            }
            Op::AppLimit(more) => {
                let limit = self.s.next_offset.saturating_add(more as u64);
                self.s.set_app_limit(limit);
            }
        }
    }

    /// The invariants listed at the top of this file.
    fn check(&mut self, scheme: &str) -> Result<(), TestCaseError> {
        let s = &self.s;
        let tracked: u64 = s.sent.iter().filter(|p| p.state == State::InFlight).map(|p| p.len as u64).sum();
        prop_assert_eq!(tracked, s.in_flight, "{}: in_flight vs tracked packets", scheme);
        prop_assert_eq!(s.sent.len() as u64, s.next_id - s.base_id, "{}: tracking deque", scheme);
        prop_assert_eq!(s.stats.packets_sent, s.next_id, "{}: one id per transmission", scheme);
        // The receive window bounds the data in flight, each byte once: an RTO found spurious
        // returns the originals to the flight beside their retransmissions (the same data
        // twice, as Linux's packets_in_flight counts retrans_out too).
        let mut offsets: Vec<(u64, u32)> =
            s.sent.iter().filter(|p| p.state == State::InFlight).map(|p| (p.offset, p.len)).collect();
        offsets.sort_unstable();
        offsets.dedup_by_key(|&mut (off, _)| off);
        let data: u64 = offsets.iter().map(|&(_, len)| len as u64).sum();
        prop_assert!(data <= s.cfg.rwnd, "{}: data in flight {} over rwnd {}", scheme, data, s.cfg.rwnd);
        prop_assert!(s.cc.cwnd() > 0, "{}: zero cwnd", scheme);
        for (who, rate) in [("controller", s.cc.pacing_rate()), ("sender", s.pacing_rate())] {
            if let Some(r) = rate {
                prop_assert!(r.is_finite() && r > 0.0, "{}: {} pacing rate {}", scheme, who, r);
            }
        }
        for (var, v) in s.cc.snapshot().vars {
            prop_assert!(v.is_finite() || allowed_non_finite(var, v), "{}: snapshot {} = {}", scheme, var, v);
        }
        prop_assert!(s.delivered >= self.last_delivered, "{}: delivered went back", scheme);
        let l = self.ledger.lock().unwrap();
        prop_assert!(l.errors.is_empty(), "{}: controller told {:?}", scheme, l.errors);
        prop_assert_eq!(l.in_flight(), s.in_flight, "{}: controller's view of the flight", scheme);
        drop(l);
        self.last_delivered = s.delivered;
        Ok(())
    }
}

/// Runs one case against every registered controller.
fn run_all(setup: &Setup, ops: &[Op]) -> Result<(), TestCaseError> {
    for spec in flow_specs() {
        let mut w = World::new(&spec, setup);
        let label = format!("{} {:?}", spec.scheme, spec.options);
        w.check(&label)?;
        for op in ops {
            w.apply(op);
            w.check(&label)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        // Failures are frozen as named tests below rather than in a regressions file.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_controller_keeps_the_invariants(setup in setup(), ops in proptest::collection::vec(op(), 1..300)) {
        run_all(&setup, &ops)?;
    }
}

#[test]
fn the_property_covers_every_scheme_and_every_switch() {
    let specs = flow_specs();
    for info in cclab_cc::registry::schemes() {
        assert!(specs.iter().any(|s| s.scheme == info.name), "{} not driven", info.name);
    }
    let has = |scheme: &str, opt: &str| specs.iter().any(|s| s.scheme == scheme && s.options.contains_key(opt));
    assert!(has("bbr", "offload_budget") && has("cubic", "hystart") && has("copa", "mode"));
    assert!(has("fixed", "cwnd") && has("fixed", "rate"));
}

/// The flow entry of a scheme with its defaults.
fn spec(scheme: &str) -> FlowSpec {
    toml::from_str(&format!("scheme = \"{scheme}\"")).unwrap()
}

/// Found by `every_controller_keeps_the_invariants`: all packets but one are acked, the loss
/// timer then declares that one lost (RACK time threshold) with nothing else in flight, and
/// BBR's recovery entry set cwnd = in-flight + acked = 0 packets. Linux sets that window on
/// the first ACK in recovery, when the retransmission is already in flight (and
/// `bbr_set_cwnd_to_recover_or_restore` floors a loss-reduced window at 1): fixed to match.
#[test]
fn bbr_cwnd_is_never_zero_after_a_timer_found_loss() {
    let mut w = bbr_timer_loss_with_empty_flight();
    assert!(w.s.cc.cwnd() >= MSS, "cwnd {} after the loss timer", w.s.cc.cwnd());
    w.check("bbr").unwrap();
    let p = w.s.poll_transmit(w.now).expect("the retransmission leaves");
    assert!(p.retransmission);
}

/// Seven packets out in one flight (rwnd 7, unpaced), the fifth dropped, the rest acked 68 ms
/// later; then the loss timer fires at 9/8 of the RTT.
fn bbr_timer_loss_with_empty_flight() -> World {
    let setup = Setup {
        pace_windowed: false,
        never_pace: true,
        rwnd_pkts: Some(7),
        min_rto_ms: 1,
        delayed_ack: false,
        seed: 0,
    };
    let mut w = World::new(&spec("bbr"), &setup);
    w.apply(&Op::RoundTrip { rtt_ms: 68, lossy: true });
    assert_eq!((w.s.stats.packets_sent, w.s.in_flight), (7, MSS));
    w.apply(&Op::Timer);
    assert_eq!((w.s.stats.packets_lost, w.s.stats.congestion_events, w.s.in_flight), (1, 1, 0));
    assert_eq!(w.s.ca_state, CaState::Recovery);
    w
}

/// Found by `every_controller_keeps_the_invariants` (a fixed window of 40 behind a receive
/// window of 23 packets): after an RTO its retransmissions fill the window, then the ACK that
/// proves the timeout spurious returns an original to the flight beside its retransmission —
/// 23 packets and one byte in flight, 23 packets of data. The invariant counts data.
#[test]
fn an_undone_timeout_may_count_a_byte_twice_in_flight_but_not_in_the_window() {
    let setup = Setup {
        pace_windowed: false,
        never_pace: false,
        rwnd_pkts: Some(23),
        min_rto_ms: 1,
        delayed_ack: false,
        seed: 0,
    };
    let spec: FlowSpec = toml::from_str("scheme = \"fixed\"\ncwnd = 40\n").unwrap();
    let mut w = World::new(&spec, &setup);
    let ops = [
        Op::AppLimit(21721),
        Op::Send(6),
        Op::RoundTrip { rtt_ms: 47, lossy: true },
        Op::Send(1),
        Op::AppLimit(30408),
        Op::Timer,
        Op::Deliver { n: 1, drop: 0 },
        Op::Send(23),
        Op::Timer,
        Op::Send(2),
        Op::Acks(1),
        Op::Timer,
        Op::Send(3),
        Op::Timer,
        Op::Send(23),
        Op::Deliver { n: 25, drop: 0 },
        Op::Acks(24),
    ];
    for op in &ops {
        w.apply(op);
        w.check("fixed").unwrap();
    }
    assert!(w.s.in_flight > w.s.cfg.rwnd, "the case still reaches a flight over the window");
}
