//! PCC Allegro and PCC Vivace, as PCC-Uspace implements them (`pcc_sender.cpp`,
//! `pcc_vivace_sender.cpp`; reference §8 and §9).
//!
//! Both are rate-based: time is cut into monitor intervals (MIs, [`monitor`]), each sent at one
//! rate; when an MI's packets have all been acked or lost, its utility ([`utility`]) is computed,
//! and a state machine moves the rate:
//! - STARTING doubles the rate every MI while utility grows, then halves it and probes.
//! - PROBING sends three pairs of MIs at `r(1 ± 5%)` in random order and decides a direction when
//!   the pairs agree (Allegro: all three; Vivace: a majority to increase, or all to decrease).
//! - DECISION_MADE moves the rate each MI while utility keeps improving. Allegro steps by
//!   `min(n·2%, 10%)`; Vivace follows the utility gradient `Δr = θ₀·γ·m(τ)` with the confidence
//!   amplifier `m(τ) = ⌊(τ+1)/2⌋^1.2` and the dynamic change boundary `|Δr| ≤ (5% + 5%·k)·r`.
//!
//! The sender is purely rate-based, as in the reference: it paces at the current MI's rate and
//! only stops sending when more than four non-useful MIs are queued (`CanSend`); its "congestion
//! window" (rate × min RTT) is informational.

mod monitor;
mod utility;

use crate::controller::CongestionControl;
use crate::registry::{BuildResult, Options, Scheme, SchemeInfo};
use crate::types::*;
use monitor::{EventRtt, MonitorQueue, Ready};
use utility::{UtilityKind, UtilityManager};

/// PCC-Uspace `kInitialRtt`: the RTT assumed before the first sample (and the reference RTT for
/// scaling the initial rate).
const INITIAL_RTT: Time = 100_000_000;
/// PCC-Uspace `kDefaultTCPMSS` and the initial window PCC-Uspace's UDT glue uses
/// (`PccVivaceSender(10, 10)`): the initial rate is 10 × 1400 B per 100 ms.
const DEFAULT_TCP_MSS: f64 = 1400.0;
const INITIAL_CWND_PACKETS: f64 = 10.0;
/// PCC-Uspace `kMegabit`: 2²⁰ bits, the unit of Vivace's gradient and θ₀.
const MEGABIT: f64 = 1024.0 * 1024.0;
/// PCC-Uspace: ±5% probing step (`kProbingStepSize`); Allegro's DECISION_MADE steps of
/// `min(rounds·2%, 10%)` (`kDecisionMadeStepSize`, `kMaxDecisionMadeStepSize`).
const PROBING_STEP: f64 = 0.05;
const DECISION_MADE_STEP: f64 = 0.02;
const MAX_DECISION_MADE_STEP: f64 = 0.10;
/// `kNumIntervalGroupsInProbingPrimary`: three pairs of MIs per probing round.
const PROBING_PAIRS: usize = 3;
/// Vivace: θ₀ (`kUtilityGradientToRateChangeFactor`), the amplifier exponent
/// (`kRateChangeAmplifyExponent`), the dynamic boundary's initial and incremental step
/// (`kInitialMaxStepSize`, `kIncrementalStepSize`).
const GRADIENT_TO_RATE: f64 = 1.0;
const AMPLIFY_EXPONENT: f64 = 1.2;
const INITIAL_MAX_STEP: f64 = 0.05;
const INCREMENTAL_STEP: f64 = 0.05;
/// Vivace `kMinRateChange` and `kMinSendingRate`: 500 kbit/s. Allegro has no floor in the
/// reference; it gets the same one so that a rate driven down by heavy loss keeps a finite
/// pacing gap.
const MIN_RATE_CHANGE: f64 = 500_000.0;
const MIN_SENDING_RATE: f64 = 500_000.0;
/// `kMinReliabilityRatio`: an MI whose share of reliable RTT samples is at most this is
/// extended once.
const MIN_RELIABILITY_RATIO: f64 = 0.8;
/// `FLAGS_max_rtt_fluctuation_tolerance_ratio_in_{starting,decision_made}` as compiled in
/// PCC-Uspace (100 and 1.0; the deviation-based refinement after them is unreachable there).
const RTT_TOLERANCE_STARTING: f64 = 100.0;
const RTT_TOLERANCE_OTHER: f64 = 1.0;
/// `CanSend`: sending pauses while more than this many non-useful MIs are queued.
const MAX_NON_USEFUL: usize = 4;

pub const ALLEGRO: Scheme = Scheme {
    info: SchemeInfo {
        name: "pcc-allegro",
        summary: "PCC Allegro (NSDI'15, PCC-Uspace): rate control by online utility experiments",
        options: &[],
    },
    build: build_allegro,
};

pub const VIVACE: Scheme = Scheme {
    info: SchemeInfo {
        name: "pcc-vivace",
        summary: "PCC Vivace (NSDI'18, PCC-Uspace): gradient-ascent rate control on a latency-aware utility",
        options: &[],
    },
    build: build_vivace,
};

fn build_allegro(_opts: &Options, mss: u64) -> BuildResult {
    Ok(Box::new(Pcc::new(Variant::Allegro, mss)))
}

fn build_vivace(_opts: &Options, mss: u64) -> BuildResult {
    Ok(Box::new(Pcc::new(Variant::Vivace, mss)))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Allegro,
    Vivace,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Starting,
    Probing,
    DecisionMade,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Increase,
    Decrease,
}

/// An MI's rate (bit/s) and utility.
#[derive(Clone, Copy, Debug, Default)]
struct UtilityInfo {
    rate: f64,
    utility: f64,
}

/// Whether pair `i` of the probing results says "increase": the higher utility went with the
/// higher rate (PCC-Uspace's `increase_i`).
fn pair_says_increase(u: &[UtilityInfo], i: usize) -> bool {
    let (a, b) = (u[2 * i], u[2 * i + 1]);
    if a.utility > b.utility {
        a.rate > b.rate
    } else {
        a.rate < b.rate
    }
}

#[derive(Clone, Debug)]
pub struct Pcc {
    variant: Variant,
    mss: u64,
    mode: Mode,
    /// Bits per second, as the reference keeps it.
    sending_rate: f64,
    has_seen_valid_rtt: bool,
    /// Allegro's `latest_utility_`.
    latest_utility: f64,
    /// Vivace's `latest_utility_info_`.
    latest_info: UtilityInfo,
    monitor_duration: Time,
    direction: Direction,
    rounds: usize,
    queue: MonitorQueue,
    utility: UtilityManager,
    rtt_on_inflation_start: Time,
    rtt_deviation: Time,
    latest_rtt: Time,
    min_rtt: Time,
    avg_rtt: Time,
    latest_ack: Option<Time>,
    /// Vivace's dynamic-boundary counter k.
    step_allowance: usize,
    /// Scratch for the utilities of one decision.
    infos: Vec<UtilityInfo>,
}

impl Pcc {
    pub fn new(variant: Variant, mss: u64) -> Pcc {
        let initial = INITIAL_CWND_PACKETS * DEFAULT_TCP_MSS * 8.0 / (INITIAL_RTT as f64 / 1e9);
        Pcc {
            variant,
            mss,
            mode: Mode::Starting,
            sending_rate: initial,
            has_seen_valid_rtt: false,
            latest_utility: 0.0,
            latest_info: UtilityInfo::default(),
            monitor_duration: 0,
            direction: Direction::Increase,
            rounds: 1,
            queue: MonitorQueue::new(),
            utility: UtilityManager::new(match variant {
                Variant::Allegro => UtilityKind::Allegro,
                Variant::Vivace => UtilityKind::Vivace,
            }),
            rtt_on_inflation_start: 0,
            rtt_deviation: 0,
            latest_rtt: 0,
            min_rtt: 0,
            avg_rtt: 0,
            latest_ack: None,
            step_allowance: 0,
            infos: Vec::with_capacity(2 * PROBING_PAIRS),
        }
    }

    /// Bits per second at which packets leave now.
    fn current_rate(&self) -> f64 {
        self.queue.current().map_or(self.sending_rate, |m| m.sending_rate)
    }

    fn update_rtt(&mut self, rtt: Time) {
        self.latest_rtt = rtt;
        self.rtt_deviation = if self.rtt_deviation == 0 {
            rtt / 2
        } else {
            (0.75 * self.rtt_deviation as f64 + 0.25 * self.avg_rtt.abs_diff(rtt) as f64) as Time
        };
        self.avg_rtt = if self.avg_rtt == 0 { rtt } else { (self.avg_rtt as f64 * 0.875 + rtt as f64 * 0.125) as Time };
        if self.min_rtt == 0 || rtt < self.min_rtt {
            self.min_rtt = rtt;
        }
    }

    fn tolerance(&self) -> f64 {
        if self.mode == Mode::Starting {
            RTT_TOLERANCE_STARTING
        } else {
            RTT_TOLERANCE_OTHER
        }
    }

    /// `CreateNewInterval`: a new MI starts on a send once the current useful MI is long enough
    /// and has enough reliable RTT samples (an unreliable one is extended once).
    fn create_new_interval(&mut self, now: Time) -> bool {
        let Some(current) = self.queue.current() else { return true };
        if self.latest_rtt == 0 {
            return false;
        }
        if self.queue.num_useful() == 0 {
            return true;
        }
        if !current.is_useful {
            return false;
        }
        if !current.has_enough_reliable_rtt || now - current.first_packet_sent_time < self.monitor_duration {
            return false;
        }
        let ratio = current.num_reliable_rtt as f64 / current.rtt_samples.len() as f64;
        if ratio > MIN_RELIABILITY_RATIO || current.is_monitor_duration_extended {
            true
        } else {
            self.monitor_duration *= 2;
            self.queue.extend_current();
            false
        }
    }

    fn create_useful_interval(&self) -> bool {
        if self.avg_rtt == 0 {
            return false;
        }
        let max_useful = if self.mode == Mode::Probing { 2 * PROBING_PAIRS } else { 1 };
        self.queue.num_useful() < max_useful
    }

    fn non_useful_rate(&self) -> f64 {
        match self.variant {
            Variant::Vivace => self.sending_rate,
            Variant::Allegro => match self.mode {
                Mode::Starting => self.sending_rate * 0.5,
                Mode::Probing => self.sending_rate * (1.0 - PROBING_STEP),
                Mode::DecisionMade => match self.direction {
                    Direction::Decrease => self.sending_rate,
                    Direction::Increase => self.sending_rate / (1.0 + self.decision_step()),
                },
            },
        }
    }

    fn decision_step(&self) -> f64 {
        (self.rounds as f64 * DECISION_MADE_STEP).min(MAX_DECISION_MADE_STEP)
    }

    /// `MaybeSetSendingRate`: in PROBING, sets the rate of the next useful MI (the pair members
    /// in random order), and the central rate once the pairs are all out.
    fn maybe_set_sending_rate(&mut self, rng: &mut Rng) {
        let n = self.queue.num_useful();
        if self.mode != Mode::Probing || (n == 2 * PROBING_PAIRS && !self.queue.current().is_some_and(|m| m.is_useful))
        {
            return;
        }
        if n != 0 {
            self.restore_central_rate();
            if n == 2 * PROBING_PAIRS {
                return;
            }
        }
        self.direction = if n % 2 == 0 {
            if rng.below(2) == 1 {
                Direction::Increase
            } else {
                Direction::Decrease
            }
        } else {
            match self.direction {
                Direction::Increase => Direction::Decrease,
                Direction::Decrease => Direction::Increase,
            }
        };
        self.sending_rate *= match self.direction {
            Direction::Increase => 1.0 + PROBING_STEP,
            Direction::Decrease => 1.0 - PROBING_STEP,
        };
    }

    /// `RestoreCentralSendingRate`.
    fn restore_central_rate(&mut self) {
        match self.mode {
            // The rate on leaving STARTING is set separately.
            Mode::Starting => {}
            Mode::Probing => {
                if self.queue.current().is_some_and(|m| m.is_useful) {
                    self.sending_rate /= match self.direction {
                        Direction::Increase => 1.0 + PROBING_STEP,
                        Direction::Decrease => 1.0 - PROBING_STEP,
                    };
                }
            }
            Mode::DecisionMade => {
                let step = self.decision_step();
                self.sending_rate /= match self.direction {
                    Direction::Increase => 1.0 + step,
                    Direction::Decrease => 1.0 - step,
                };
            }
        }
    }

    /// `PccSender::EnterProbing`.
    fn enter_probing(&mut self) {
        match self.mode {
            Mode::Starting => self.sending_rate *= 0.5,
            Mode::Probing | Mode::DecisionMade => self.restore_central_rate(),
        }
        if self.mode == Mode::Probing {
            self.rounds += 1;
            return;
        }
        self.mode = Mode::Probing;
        self.rounds = 1;
    }

    /// `CheckForRttInflation` (STARTING only): the smoothed RTT grew beyond the tolerance over the
    /// current MI's starting RTT. With PCC-Uspace's compiled tolerance (×101) it practically
    /// never fires; kept for fidelity.
    fn check_for_rtt_inflation(&mut self) -> bool {
        let front_start = self.queue.front().map_or(0, |m| m.rtt_on_monitor_start);
        if self.queue.is_empty() || front_start == 0 || self.latest_rtt <= self.avg_rtt {
            self.rtt_on_inflation_start = 0;
            return false;
        }
        if self.rtt_on_inflation_start == 0 {
            self.rtt_on_inflation_start = self.avg_rtt;
        }
        let max_ratio = 1.0 + self.tolerance();
        let start = self.queue.current().map_or(0, |m| m.rtt_on_monitor_start);
        let inflated = max_ratio * (start as f64) < self.avg_rtt as f64;
        if inflated {
            self.rtt_on_inflation_start = 0;
        }
        inflated
    }

    /// One ACK or loss event (`PccSender::OnCongestionEvent`).
    fn on_event(&mut self, now: Time, acked: &[AckedPacket], lost: &[LostPacket]) {
        let latest_ack = *self.latest_ack.get_or_insert(now);
        // The RTT of the newest packet this event acknowledges, if any.
        let rtt = acked.iter().max_by_key(|p| (p.send_time, p.id)).map(|p| p.rtt.max(1));
        let mut ack_interval = 0;
        if let Some(rtt) = rtt {
            ack_interval = now - latest_ack;
            self.update_rtt(rtt);
            self.latest_ack = Some(now);
        }
        if !self.has_seen_valid_rtt && rtt.is_some() {
            self.has_seen_valid_rtt = true;
            // Start faster on paths shorter than the 100 ms the initial rate assumed.
            if self.latest_rtt < INITIAL_RTT {
                self.sending_rate *= INITIAL_RTT as f64 / self.latest_rtt as f64;
            }
        }
        if self.mode == Mode::Starting && self.check_for_rtt_inflation() {
            self.queue.clear();
            self.enter_probing();
            return;
        }
        let ev = rtt.map(|_| EventRtt { avg_rtt: self.avg_rtt, latest_rtt: self.latest_rtt, ack_interval });
        match self.queue.on_event(acked, lost, ev) {
            Ready::NotYet => {}
            Ready::Invalid => self.queue.pop_useful(),
            Ready::Available => {
                let mut infos = std::mem::take(&mut self.infos);
                infos.clear();
                for m in self.queue.useful() {
                    infos.push(UtilityInfo { rate: m.sending_rate, utility: self.utility.utility(m) });
                }
                match self.variant {
                    Variant::Allegro => self.allegro_on_utilities(&infos),
                    Variant::Vivace => self.vivace_on_utilities(&infos),
                }
                self.infos = infos;
                self.queue.pop_useful();
                if self.variant == Variant::Allegro {
                    self.sending_rate = self.sending_rate.max(MIN_SENDING_RATE);
                }
            }
        }
    }

    /// `PccSender::OnUtilityAvailable` (Allegro).
    fn allegro_on_utilities(&mut self, u: &[UtilityInfo]) {
        match self.mode {
            Mode::Starting => {
                if u[0].utility > self.latest_utility {
                    self.sending_rate *= 2.0;
                    self.latest_utility = u[0].utility;
                    self.rounds += 1;
                } else {
                    self.enter_probing();
                }
            }
            Mode::Probing => {
                let all_agree = u.len() >= 2 * PROBING_PAIRS
                    && (0..PROBING_PAIRS).all(|i| pair_says_increase(u, i) == pair_says_increase(u, 0));
                if all_agree {
                    self.direction = if pair_says_increase(u, 0) { Direction::Increase } else { Direction::Decrease };
                    let last = 2 * PROBING_PAIRS;
                    self.latest_utility = u[last - 2].utility.max(u[last - 1].utility);
                    // EnterDecisionMade: move from the central rate past the winning probe.
                    self.sending_rate *= match self.direction {
                        Direction::Increase => (1.0 + PROBING_STEP) * (1.0 + DECISION_MADE_STEP),
                        Direction::Decrease => (1.0 - PROBING_STEP) * (1.0 - DECISION_MADE_STEP),
                    };
                    self.mode = Mode::DecisionMade;
                    self.rounds = 1;
                } else {
                    self.enter_probing();
                }
            }
            Mode::DecisionMade => {
                if u[0].utility > self.latest_utility {
                    self.rounds += 1;
                    let step = self.decision_step();
                    self.sending_rate *= match self.direction {
                        Direction::Increase => 1.0 + step,
                        Direction::Decrease => 1.0 - step,
                    };
                    self.latest_utility = u[0].utility;
                } else {
                    self.enter_probing();
                }
            }
        }
    }

    /// Vivace's decision rule: a majority of pairs for "increase", or all of them for
    /// "decrease" (`PccVivaceSender::CanMakeDecision`).
    fn vivace_can_decide(u: &[UtilityInfo]) -> bool {
        if u.len() < 2 * PROBING_PAIRS {
            return false;
        }
        let inc = (0..PROBING_PAIRS).filter(|&i| pair_says_increase(u, i)).count();
        inc > PROBING_PAIRS / 2 || inc == 0
    }

    /// `PccVivaceSender::OnUtilityAvailable`.
    fn vivace_on_utilities(&mut self, u: &[UtilityInfo]) {
        match self.mode {
            Mode::Starting => {
                if u[0].utility > self.latest_info.utility {
                    self.sending_rate *= 2.0;
                    self.latest_info = u[0];
                    self.rounds += 1;
                } else {
                    self.enter_probing();
                }
            }
            Mode::Probing => {
                if Self::vivace_can_decide(u) {
                    self.set_rate_change_direction(u);
                    self.vivace_enter_decision_made(u);
                } else {
                    self.enter_probing();
                }
                if (self.rounds > 1 || self.mode == Mode::DecisionMade) && self.sending_rate <= MIN_SENDING_RATE {
                    self.sending_rate = MIN_SENDING_RATE;
                    self.step_allowance = 0;
                    self.rounds = 1;
                    self.mode = Mode::Starting;
                }
            }
            Mode::DecisionMade => {
                let (now, last) = (u[0], self.latest_info);
                let consistent = match self.direction {
                    Direction::Increase => {
                        (now.utility > last.utility && now.rate > last.rate)
                            || (now.utility < last.utility && now.rate < last.rate)
                    }
                    Direction::Decrease => {
                        (now.utility > last.utility && now.rate < last.rate)
                            || (now.utility < last.utility && now.rate > last.rate)
                    }
                };
                if consistent {
                    self.vivace_enter_decision_made(u);
                    self.latest_info = u[0];
                } else {
                    self.vivace_enter_probing(u);
                }
            }
        }
    }

    /// `SetRateChangeDirection`: the majority direction, and the better MI of the last pair
    /// that agrees with it as the reference point for the next comparison.
    fn set_rate_change_direction(&mut self, u: &[UtilityInfo]) {
        let inc = (0..PROBING_PAIRS).filter(|&i| pair_says_increase(u, i)).count();
        self.direction = if inc > PROBING_PAIRS - inc { Direction::Increase } else { Direction::Decrease };
        for i in 0..PROBING_PAIRS {
            let says_inc = pair_says_increase(u, i);
            if says_inc == (self.direction == Direction::Increase) {
                let (a, b) = (u[2 * i], u[2 * i + 1]);
                self.latest_info = if a.utility > b.utility { a } else { b };
            }
        }
    }

    /// `PccVivaceSender::EnterDecisionMade`.
    fn vivace_enter_decision_made(&mut self, u: &[UtilityInfo]) {
        if self.mode == Mode::Probing {
            self.sending_rate *= match self.direction {
                Direction::Increase => 1.0 + PROBING_STEP,
                Direction::Decrease => 1.0 - PROBING_STEP,
            };
        }
        self.rounds = if self.mode == Mode::Probing { 1 } else { self.rounds + 1 };
        let change = self.compute_rate_change(u);
        match self.direction {
            Direction::Increase => self.sending_rate += change,
            Direction::Decrease => self.sending_rate -= change,
        }
        if self.sending_rate < MIN_SENDING_RATE {
            self.sending_rate = MIN_SENDING_RATE;
            self.mode = Mode::Probing;
            self.rounds = 1;
            self.step_allowance = 0;
        } else {
            self.mode = Mode::DecisionMade;
        }
    }

    /// `PccVivaceSender::EnterProbing`: undo a step that did not pay off, then probe.
    fn vivace_enter_probing(&mut self, u: &[UtilityInfo]) {
        self.rounds = 1;
        let change = self.compute_rate_change(u);
        match self.direction {
            Direction::Increase => self.sending_rate -= change,
            Direction::Decrease => self.sending_rate += change,
        }
        if self.sending_rate < MIN_SENDING_RATE {
            self.sending_rate = MIN_SENDING_RATE;
            self.step_allowance = 0;
        }
        self.mode = Mode::Probing;
    }

    /// `ComputeRateChange`: the utility gradient γ = Δu/Δr (Δr in units of 2²⁰ bit/s) times
    /// θ₀, amplified by ⌊(τ+1)/2⌋^1.2 in DECISION_MADE, bounded by (5% + 5%·k)·r, at least
    /// 500 kbit/s.
    fn compute_rate_change(&mut self, u: &[UtilityInfo]) -> f64 {
        let (delta_rate, delta_utility) = if self.mode == Mode::Probing {
            let delta_rate = (u[0].rate - u[1].rate).abs();
            let mut du = 0.0;
            for i in 0..PROBING_PAIRS {
                if pair_says_increase(u, i) != (self.direction == Direction::Increase) {
                    continue;
                }
                du += (u[2 * i].utility - u[2 * i + 1].utility).abs();
            }
            (delta_rate, du / PROBING_PAIRS as f64)
        } else {
            ((u[0].rate - self.latest_info.rate).abs(), (u[0].utility - self.latest_info.utility).abs())
        };
        let gradient = if delta_rate > 0.0 { MEGABIT * delta_utility / delta_rate } else { 0.0 };
        let mut change = gradient * MEGABIT * GRADIENT_TO_RATE;
        if self.mode == Mode::DecisionMade {
            // The reference's integer `(rounds + 1) / 2`, i.e. ⌈rounds/2⌉.
            change *= (self.rounds.div_ceil(2) as f64).powf(AMPLIFY_EXPONENT);
        } else {
            self.step_allowance = 0;
        }
        let max_change = self.sending_rate * (INITIAL_MAX_STEP + INCREMENTAL_STEP * self.step_allowance as f64);
        if change > max_change {
            change = max_change;
            self.step_allowance += 1;
        } else if self.step_allowance > 0 {
            self.step_allowance -= 1;
        }
        change.max(MIN_RATE_CHANGE)
    }
}

impl CongestionControl for Pcc {
    fn name(&self) -> &'static str {
        match self.variant {
            Variant::Allegro => "pcc-allegro",
            Variant::Vivace => "pcc-vivace",
        }
    }

    fn on_packet_sent(&mut self, pkt: &SentPacket, ctx: &mut CcContext) -> CcTag {
        let now = pkt.send_time;
        if self.create_new_interval(now) {
            self.maybe_set_sending_rate(ctx.rng);
            self.monitor_duration = self.min_rtt;
            let useful = self.create_useful_interval();
            let rate = if useful { self.sending_rate } else { self.non_useful_rate() };
            self.queue.enqueue(rate, useful, self.tolerance(), self.avg_rtt);
        }
        self.queue.on_packet_sent(now, pkt.bytes)
    }

    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        if ev.acked.is_empty() && ev.lost.is_empty() {
            return;
        }
        self.on_event(ev.now, ev.acked, ev.lost);
    }

    fn on_packets_lost(&mut self, now: Time, lost: &[LostPacket], _ctx: &mut CcContext) {
        if !lost.is_empty() {
            self.on_event(now, &[], lost);
        }
    }

    fn cwnd(&self) -> u64 {
        // `GetCongestionWindow`: rate × min RTT (100 ms before the first sample). The sender
        // does not enforce it; it is reported for traces.
        let rtt = if self.min_rtt == 0 { INITIAL_RTT } else { self.min_rtt };
        ((self.sending_rate / 8.0 * rtt as f64 / 1e9) as u64).max(2 * self.mss)
    }

    fn can_send(&self, _in_flight: u64, _mss: u64) -> bool {
        self.queue.len() - self.queue.num_useful() <= MAX_NON_USEFUL
    }

    fn pacing_rate(&self) -> Option<f64> {
        Some(self.current_rate() / 8.0)
    }

    fn snapshot(&self) -> CcSnapshot {
        CcSnapshot {
            mode: match self.mode {
                Mode::Starting => "starting",
                Mode::Probing => "probing",
                Mode::DecisionMade => "decision_made",
            },
            vars: vec![
                ("rate_mbps", self.sending_rate / 1e6),
                ("pacing_mbps", self.current_rate() / 1e6),
                ("rounds", self.rounds as f64),
                ("avg_rtt_ms", self.avg_rtt as f64 / 1e6),
                ("mis", self.queue.len() as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(rate_mbps: f64, utility: f64) -> UtilityInfo {
        UtilityInfo { rate: rate_mbps * 1e6, utility }
    }

    #[test]
    fn initial_rate_is_ten_1400_byte_packets_per_100ms() {
        let p = Pcc::new(Variant::Vivace, 1448);
        assert!((p.sending_rate - 1.12e6).abs() < 1.0);
        assert_eq!(p.pacing_rate(), Some(1.12e6 / 8.0));
    }

    #[test]
    fn pairs_vote_by_which_rate_won() {
        // Pair 0: the higher rate won (increase); pair 1: the lower rate won (decrease).
        let u = [info(10.5, 5.0), info(9.5, 4.0), info(9.5, 5.0), info(10.5, 4.0)];
        assert!(pair_says_increase(&u, 0));
        assert!(!pair_says_increase(&u, 1));
        // Vivace decides on a 2-of-3 majority to increase, or 3 of 3 to decrease.
        let up = [info(10.5, 5.0), info(9.5, 4.0), info(9.5, 4.0), info(10.5, 5.0), info(9.5, 5.0), info(10.5, 4.0)];
        assert!(Pcc::vivace_can_decide(&up));
        let mixed_down =
            [info(10.5, 4.0), info(9.5, 5.0), info(9.5, 5.0), info(10.5, 4.0), info(9.5, 4.0), info(10.5, 5.0)];
        assert!(!Pcc::vivace_can_decide(&mixed_down), "1 up, 2 down: no decision");
    }

    #[test]
    fn vivace_step_is_gradient_times_theta_bounded_by_the_dynamic_boundary() {
        let mut p = Pcc::new(Variant::Vivace, 1448);
        p.mode = Mode::Probing;
        p.direction = Direction::Increase;
        p.sending_rate = 100e6;
        // All three pairs: +1 utility for +10 Mbit/s → γ = 2²⁰·1/10⁷ per bit/s; Δr = γ·2²⁰ ≈ 0.11 Mbit/s,
        // below the 0.5 Mbit/s minimum change.
        let u =
            [info(105.0, 2.0), info(95.0, 1.0), info(105.0, 2.0), info(95.0, 1.0), info(105.0, 2.0), info(95.0, 1.0)];
        let change = p.compute_rate_change(&u);
        assert_eq!(change, MIN_RATE_CHANGE);
        // A huge gradient is clipped to 5% of the rate, and the boundary grows by 5% each time.
        let u = [
            info(105.0, 2000.0),
            info(95.0, 1.0),
            info(105.0, 2000.0),
            info(95.0, 1.0),
            info(105.0, 2000.0),
            info(95.0, 1.0),
        ];
        assert_eq!(p.compute_rate_change(&u), 5e6);
        p.mode = Mode::DecisionMade;
        p.latest_info = info(105.0, 1.0);
        p.rounds = 3;
        assert!((p.compute_rate_change(&[info(110.0, 2000.0)]) - 10e6).abs() < 1e-6, "(5% + 5%·1) of 100 Mbit/s");
        assert_eq!(p.step_allowance, 2);
    }

    #[test]
    fn vivace_amplifier_uses_integer_half_rounds() {
        let mut p = Pcc::new(Variant::Vivace, 1448);
        p.mode = Mode::DecisionMade;
        p.sending_rate = 1e9;
        p.latest_info = info(100.0, 0.0);
        // Δu/Δr chosen so the raw change is 1 Mbit/s (2²⁰ units): Δu = Δr_bits / 2⁴⁰ · 10⁶.
        let du = 10e6 * 1e6 / (MEGABIT * MEGABIT);
        p.rounds = 2; // ⌊3/2⌋ = 1
        let c1 = p.compute_rate_change(&[info(110.0, du)]);
        p.rounds = 5; // ⌊6/2⌋ = 3
        let c3 = p.compute_rate_change(&[info(110.0, du)]);
        assert!((c1 - 1e6).abs() < 1.0, "{c1}");
        assert!((c3 / c1 - 3f64.powf(1.2)).abs() < 1e-9, "{}", c3 / c1);
    }

    #[test]
    fn allegro_decision_made_steps_grow_linearly_to_ten_percent() {
        let mut p = Pcc::new(Variant::Allegro, 1448);
        p.mode = Mode::DecisionMade;
        p.direction = Direction::Increase;
        p.sending_rate = 10e6;
        p.latest_utility = 0.0;
        let mut rates = vec![];
        for k in 1..=7 {
            p.allegro_on_utilities(&[info(10.0, k as f64)]);
            rates.push(p.sending_rate);
        }
        // rounds 2, 3, 4, 5, 6, … → steps 4%, 6%, 8%, 10%, 10%, …
        assert!((rates[0] / 10e6 - 1.04).abs() < 1e-12);
        assert!((rates[1] / rates[0] - 1.06).abs() < 1e-12);
        assert!((rates[5] / rates[4] - 1.10).abs() < 1e-12);
        // A worse utility restores the central rate and probes.
        p.allegro_on_utilities(&[info(10.0, -1.0)]);
        assert_eq!(p.mode, Mode::Probing);
        assert!((p.sending_rate - rates[6] / 1.10).abs() < 1e-6);
    }
}
