//! Sprout (Winstein, Sivaraman and Balakrishnan, NSDI'13), as keithw/sprout implements it
//! (`src/sprout/receiver.cc`, `process.cc`, `processforecaster.cc`; `src/network/sproutconn.cc`;
//! the `sproutbt2` sender loop). Reference §12.
//!
//! The **receiver** ([`SproutAgent`]) models the link's packet deliveries as a Poisson process
//! whose rate λ does a Brownian walk (σ = 200 packets/s per √s) with a sticky outage state at
//! λ = 0 (left at 1/s). It keeps a 257-bin distribution over λ ∈ [0, 1000] packets/s and, every
//! 20 ms tick, diffuses it and multiplies in the Poisson likelihood of the packets that arrived
//! in the tick. Its forecast is, for each of the next 8 ticks, the 5th percentile of the
//! cumulative number of packets the link will deliver, and rides on the next ACK together with
//! the count of packets received or lost so far.
//!
//! The **sender** ([`Sprout`]) estimates its packets queued in the link as "sent − received or
//! lost" when a forecast arrives, drains that estimate by the forecast as ticks pass, and may
//! send `forecast(now + 100 ms) − forecast(now) − queue` packets: with 95% confidence, everything
//! it sends leaves the queue within the 100 ms target. When the window stays shut it still sends
//! one packet every 50 ms (`sproutbt2`'s fallback interval), so that feedback never stops.
//!
//! Constants are those of keithw/sprout master (`receiver.hh`: `MAX_ARRIVAL_RATE` 1000,
//! `BROWNIAN_MOTION_RATE` 200, `OUTAGE_ESCAPE_RATE` 1, `NUM_BINS` 256, `TICK_LENGTH` 20,
//! `MAX_ARRIVALS_PER_TICK` 30, `NUM_TICKS` 8), which are also the paper's. (Reference §12 quotes a
//! different snapshot — 2000/300/5/64 bins/10 ticks — that the mirrored repository's history
//! does not contain on master.)
//!
//! Deviations, each forced by the transport and documented where it happens: counts are in
//! MSS-sized packets on both sides (the code divides by 1400 at the receiver and multiplies by
//! 1440 at the sender); "received or lost" is the highest packet id received + 1 (our paths are
//! FIFO, so no reorder window is needed); the sender's per-packet `time_to_next` is not carried,
//! and the receiver assumes each packet may end a flight (see [`SproutAgent`]); a fallback packet
//! is a full packet, not an empty one.

use crate::agent::{ReceivedPacket, ReceiverAgent};
use crate::controller::CongestionControl;
use crate::registry::{BuildResult, Options, Scheme, SchemeInfo};
use crate::types::*;
use std::sync::OnceLock;

use cclab_core::time::MS;

/// `MAX_ARRIVAL_RATE`, packets per second: the top of the rate grid.
const MAX_ARRIVAL_RATE: f64 = 1000.0;
/// `BROWNIAN_MOTION_RATE`: standard deviation of the rate's change over one second.
const BROWNIAN_MOTION_RATE: f64 = 200.0;
/// `OUTAGE_ESCAPE_RATE`: how fast (per second) the link leaves an outage.
const OUTAGE_ESCAPE_RATE: f64 = 1.0;
/// `NUM_BINS`: the grid has `NUM_BINS + 1` bins of width `MAX_ARRIVAL_RATE / NUM_BINS`.
const NUM_BINS: usize = 256;
/// `TICK_LENGTH`: 20 ms.
const TICK: Time = 20 * MS;
/// `MAX_ARRIVALS_PER_TICK`: per-tick count distributions are truncated at this many packets.
const MAX_ARRIVALS_PER_TICK: usize = 30;
/// `NUM_TICKS`: the forecast covers 8 ticks (160 ms).
const NUM_TICKS: usize = 8;
/// The forecast is the 5th percentile of cumulative deliveries (95% confidence).
const FORECAST_QUANTILE: f64 = 0.05;
/// `TARGET_DELAY_TICKS`: 5 ticks = the 100 ms delay target.
const TARGET_DELAY_TICKS: usize = 5;
/// `sproutbt2`'s `fallback_interval`: at least one packet every 50 ms, and the `time_to_next`
/// written on the last packet of a flight.
const FALLBACK_INTERVAL: Time = 50 * MS;
/// `SampledFunction`'s stand-in for ±infinity at the grid's ends.
const BIG: f64 = 1e6;
/// `GaussianCache` tabulates the normal CDF on `NUM_BINS · 128` bins over ±`MAX_ARRIVAL_RATE`.
const GAUSSIAN_BINS: usize = NUM_BINS * 128;

pub const SCHEME: Scheme = Scheme {
    info: SchemeInfo {
        name: "sprout",
        summary: "Sprout (NSDI'13): receiver forecasts cellular deliveries; sender targets 100 ms delay",
        options: &[],
    },
    build: build_from_options,
};

fn build_from_options(_opts: &Options, mss: u64) -> BuildResult {
    Ok(Box::new(Sprout::new(mss)))
}

/// The receiver-agent builder the agent registry uses.
pub fn build_agent(_opts: &Options, mss: u64) -> Box<dyn ReceiverAgent> {
    Box::new(SproutAgent::new(mss))
}

// ---------------------------------------------------------------------------------------------
// Numerics.

/// The complementary error function, accurate to ~1e-16 absolute for x ≥ 0: a positive-term
/// series of erf below 5, a continued fraction above (where erfc < 2e-12).
fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 5.0 {
        // erf(x) = 2/√π · e^{−x²} · Σ 2ⁿ x^{2n+1} / (1·3·…·(2n+1)); every term is positive.
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        while term > sum * 1e-17 {
            n += 1.0;
            term *= 2.0 * x * x / (2.0 * n + 1.0);
            sum += term;
        }
        1.0 - 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp() * sum
    } else {
        // erfc(x) = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …))))), evaluated
        // from the tail; 60 levels are far more than x ≥ 5 needs.
        let mut f = x;
        for k in (1..=60).rev() {
            f = x + (k as f64 / 2.0) / f;
        }
        (-x * x).exp() / std::f64::consts::PI.sqrt() / f
    }
}

/// Standard normal CDF of x/σ.
fn normal_cdf(x: f64, sigma: f64) -> f64 {
    0.5 * erfc(-x / (sigma * std::f64::consts::SQRT_2))
}

/// ln k!, exactly summed (k is a packet count in one tick).
fn ln_factorial(k: u64) -> f64 {
    (2..=k).map(|i| (i as f64).ln()).sum()
}

/// Poisson probability of `k` events at mean `lambda` (`poissonpdf`), with ln k! given.
fn poisson_pdf(lambda: f64, k: u64, ln_k_fact: f64) -> f64 {
    if lambda == 0.0 {
        if k == 0 {
            1.0
        } else {
            0.0
        }
    } else {
        (-lambda + k as f64 * lambda.ln() - ln_k_fact).exp()
    }
}

/// The rate grid (`SampledFunction(NUM_BINS, MAX_ARRIVAL_RATE, 0)`): bin i covers
/// [i·w, (i+1)·w), bin 0 is the outage state, the last bin runs to infinity.
struct Grid {
    width: f64,
    size: usize,
}

impl Grid {
    fn new(samples: usize, max: f64, min: f64) -> Grid {
        let width = (max - min) / samples as f64;
        Grid { width, size: ((max - min) / width) as usize + 1 }
    }

    fn to_bin(&self, x: f64, offset: f64) -> usize {
        let b = ((x - offset) / self.width) as i64;
        b.clamp(0, self.size as i64 - 1) as usize
    }

    fn floor(&self, bin: usize, offset: f64) -> f64 {
        if bin == 0 {
            -BIG
        } else {
            bin as f64 * self.width + offset
        }
    }

    fn ceil(&self, bin: usize, offset: f64) -> f64 {
        if bin >= self.size - 1 {
            BIG
        } else {
            (bin + 1) as f64 * self.width + offset
        }
    }

    fn mid(&self, bin: usize, offset: f64) -> f64 {
        if bin == 0 {
            offset
        } else {
            (bin as f64 + 0.5) * self.width + offset
        }
    }
}

/// Everything about the process that does not depend on observations, computed once per run
/// of the program: the one-tick diffusion as a banded matrix, and, per rate bin, the
/// distribution of cumulative deliveries over 1…8 ticks (`ProcessForecastInterval`).
struct Model {
    /// Rate midpoints, packets/s.
    mid: Vec<f64>,
    /// `evolve`: row `old` spreads its mass over bins `lo[old]..lo[old] + w[old].len()`.
    evolve_lo: Vec<usize>,
    evolve_w: Vec<Vec<f64>>,
    /// `forecast[k][c * bins + b]`: probability that a link at rate bin b delivers c packets in
    /// the next k + 1 ticks (counts truncated per tick as the reference does).
    forecast: Vec<Vec<f64>>,
}

impl Model {
    fn get() -> &'static Model {
        static MODEL: OnceLock<Model> = OnceLock::new();
        MODEL.get_or_init(Model::build)
    }

    fn bins(&self) -> usize {
        self.mid.len()
    }

    fn build() -> Model {
        let grid = Grid::new(NUM_BINS, MAX_ARRIVAL_RATE, 0.0);
        let n = grid.size;
        let mid: Vec<f64> = (0..n).map(|i| grid.mid(i, 0.0)).collect();
        let t = TICK as f64 / 1e9;

        // Process::evolve over one tick. The reference reads the normal CDF from a table
        // (`GaussianCache`) indexed by bin; the same quantisation is reproduced here.
        let stddev = BROWNIAN_MOTION_RATE * t.sqrt();
        let gauss = Grid::new(GAUSSIAN_BINS, MAX_ARRIVAL_RATE, -MAX_ARRIVAL_RATE);
        let cdf = |x: f64| normal_cdf(gauss.mid(gauss.to_bin(x, -MAX_ARRIVAL_RATE), -MAX_ARRIVAL_RATE), stddev);
        let zero_escape = 1.0 - poisson_pdf(t * OUTAGE_ESCAPE_RATE, 0, 0.0);
        let mut evolve_lo = Vec::with_capacity(n);
        let mut evolve_w = Vec::with_capacity(n);
        for (old, &old_rate) in mid.iter().enumerate() {
            // `for_range(old − 5σ, old + 5σ)`: from the bin of the floor of the low end to the
            // bin of the ceiling of the high end.
            let lo = grid.to_bin(grid.floor(grid.to_bin(old_rate - 5.0 * stddev, 0.0), 0.0), 0.0);
            let hi = grid.to_bin(grid.ceil(grid.to_bin(old_rate + 5.0 * stddev, 0.0), 0.0), 0.0);
            let row: Vec<f64> = (lo..=hi)
                .map(|new| {
                    let zfactor = match (old, new) {
                        (0, 0) => 1.0 - zero_escape,
                        (0, _) => zero_escape,
                        _ => 1.0,
                    };
                    let p = cdf(grid.ceil(new, 0.0) - old_rate) - cdf(grid.floor(new, 0.0) - old_rate);
                    zfactor * p.max(0.0)
                })
                .collect();
            evolve_lo.push(lo);
            evolve_w.push(row);
        }

        // ProcessForecastTick: per rate bin, P(c arrivals in a tick) for c < 30.
        let ln_fact: Vec<f64> = (0..MAX_ARRIVALS_PER_TICK as u64).map(ln_factorial).collect();
        let tick_prob: Vec<Vec<f64>> = mid
            .iter()
            .map(|&rate| (0..MAX_ARRIVALS_PER_TICK).map(|c| poisson_pdf(rate * t, c as u64, ln_fact[c])).collect())
            .collect();

        let mut model = Model { mid, evolve_lo, evolve_w, forecast: Vec::new() };
        let lens: Vec<usize> = (1..=NUM_TICKS).map(|k| 1 + k * (MAX_ARRIVALS_PER_TICK - 1)).collect();
        let mut forecast: Vec<Vec<f64>> = lens.iter().map(|len| vec![0.0; len * n]).collect();
        // ProcessForecastInterval: for each component (the process certain to be at bin b),
        // convolve the per-tick count distributions while evolving the component forward. The
        // k-tick interval is the prefix of the same chain, so one pass fills all eight.
        let mut pmf = vec![0.0; n];
        let mut tick = vec![0.0; MAX_ARRIVALS_PER_TICK];
        for b in 0..n {
            pmf.fill(0.0);
            pmf[b] = 1.0;
            let mut chain = vec![1.0];
            for (k, table) in forecast.iter_mut().enumerate() {
                normalize(&mut pmf);
                for (c, slot) in tick.iter_mut().enumerate() {
                    let p: f64 = pmf.iter().zip(&tick_prob).map(|(w, probs)| w * probs[c]).sum();
                    *slot = p.min(1.0);
                }
                chain = convolve(&chain, &tick);
                debug_assert_eq!(chain.len(), lens[k]);
                for (c, p) in chain.iter().enumerate() {
                    table[c * n + b] = *p;
                }
                pmf = model.evolve(&pmf);
            }
        }
        model.forecast = forecast;
        model
    }

    /// `Process::evolve` over one tick (mass is not conserved at the outage state and the grid's
    /// ends, as in the reference; the next normalisation takes care of it).
    fn evolve(&self, pmf: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; pmf.len()];
        for (old, &p) in pmf.iter().enumerate() {
            if p == 0.0 {
                continue;
            }
            let lo = self.evolve_lo[old];
            for (j, w) in self.evolve_w[old].iter().enumerate() {
                out[lo + j] += p * w;
            }
        }
        out
    }

    /// `ProcessForecastInterval::lower_quantile` over `k + 1` ticks for a normalised `pmf`.
    fn lower_quantile(&self, pmf: &[f64], k: usize, q: f64) -> u32 {
        let n = self.bins();
        let table = &self.forecast[k];
        let counts = table.len() / n;
        let mut sum = 0.0;
        for c in 0..counts {
            let p: f64 = pmf.iter().zip(&table[c * n..(c + 1) * n]).map(|(w, x)| w * x).sum();
            sum += p.min(1.0);
            if sum >= q {
                return c as u32;
            }
        }
        counts as u32 + 1
    }

    /// The 8 cumulative counts (saturated to 8 bits for the feedback payload: they never exceed
    /// 1 + 8·29 = 233 here).
    fn forecast(&self, pmf: &[f64]) -> [u8; NUM_TICKS] {
        let mut out = [0u8; NUM_TICKS];
        for (k, slot) in out.iter_mut().enumerate() {
            *slot = self.lower_quantile(pmf, k, FORECAST_QUANTILE).min(u8::MAX as u32) as u8;
        }
        out
    }
}

fn normalize(pmf: &mut [f64]) {
    let sum: f64 = pmf.iter().sum();
    if sum > 0.0 && sum.is_finite() {
        for p in pmf.iter_mut() {
            *p /= sum;
        }
    } else {
        // Every hypothesis was ruled out (impossible in exact arithmetic): start from the prior.
        pmf.fill(1.0 / pmf.len() as f64);
    }
}

fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}

/// Bits per tick in the feedback payload: eight ticks × 6 bits = the 6 bytes an ACK carries.
const INCREMENT_BITS: u32 = 6;

/// The forecast as the ACK carries it: the eight per-tick increments of the cumulative counts,
/// 6 bits each (a tick's 5th-percentile deliveries stay below `MAX_ARRIVALS_PER_TICK` = 30; a
/// larger increment would be saturated at 63). The count of packets received or lost is not in
/// the payload: it is the ACK's own largest received id + 1 (see [`Feedback`]).
fn encode(counts: &[u8; NUM_TICKS]) -> [u8; FEEDBACK_BYTES] {
    let max = (1u64 << INCREMENT_BITS) - 1;
    let mut packed = 0u64;
    let mut prev = 0u8;
    for (k, &c) in counts.iter().enumerate() {
        let inc = (c.saturating_sub(prev) as u64).min(max);
        packed |= inc << (INCREMENT_BITS * k as u32);
        prev = c;
    }
    let bytes = packed.to_le_bytes();
    let mut out = [0u8; FEEDBACK_BYTES];
    out.copy_from_slice(&bytes[..FEEDBACK_BYTES]);
    out
}

fn decode(payload: &[u8; FEEDBACK_BYTES]) -> [u8; NUM_TICKS] {
    let mut bytes = [0u8; 8];
    bytes[..FEEDBACK_BYTES].copy_from_slice(payload);
    let packed = u64::from_le_bytes(bytes);
    let mask = (1u64 << INCREMENT_BITS) - 1;
    let mut counts = [0u8; NUM_TICKS];
    let mut total = 0u8;
    for (k, c) in counts.iter_mut().enumerate() {
        total = total.saturating_add(((packed >> (INCREMENT_BITS * k as u32)) & mask) as u8);
        *c = total;
    }
    counts
}

// ---------------------------------------------------------------------------------------------
// Receiver.

/// Sprout's receiver (`Receiver` in keithw/sprout), as an agent of the transport's receiver.
///
/// keithw/sprout's sender writes, on every packet, how long until it expects to send the next
/// one (`time_to_next`: 0 inside a flight, the 50 ms fallback interval on a flight's last packet),
/// and the receiver counts an empty tick as evidence only once that time has passed. The
/// transport carries no such field, so the agent treats every packet as possibly the last of a
/// flight: an empty tick counts once 50 ms have passed since the last arrival. A flight's last
/// packet follows its first within a few transmit times, so this shifts the rule by at most the
/// length of a flight.
///
/// Like `sproutbt2`'s receiving end, which also transmits at least every fallback interval, the
/// agent asks for a feedback-only ACK when 50 ms pass without an ACK and its forecast changed.
#[derive(Debug)]
pub struct SproutAgent {
    mss: u64,
    pmf: Vec<f64>,
    /// Start of the current tick (`_time`), set by the first packet.
    time: Option<Time>,
    /// Empty ticks before this time are not observed (`_score_time`).
    score_time: Time,
    /// Packets (in MSS units) that arrived in the current tick.
    count_this_tick: f64,
    /// Packets received or lost: the highest id received + 1.
    received_or_lost: u64,
    /// The forecast of the current tick, computed at most once per tick.
    cached: Option<(Time, [u8; NUM_TICKS])>,
    /// The tick and content of the last forecast sent.
    last_sent: Option<(Time, u64, [u8; NUM_TICKS])>,
    /// When the agent next checks whether a heartbeat ACK is due.
    heartbeat_at: Time,
}

impl SproutAgent {
    pub fn new(mss: u64) -> SproutAgent {
        let model = Model::get();
        SproutAgent {
            mss: mss.max(1),
            pmf: vec![1.0 / model.bins() as f64; model.bins()],
            time: None,
            score_time: 0,
            count_this_tick: 0.0,
            received_or_lost: 0,
            cached: None,
            last_sent: None,
            heartbeat_at: 0,
        }
    }

    /// `Receiver::advance_to`: processes every tick that ended before `now`.
    fn advance_to(&mut self, now: Time) {
        let Some(mut time) = self.time else { return };
        let model = Model::get();
        let tick_secs = TICK as f64 / 1e9;
        while time + TICK < now {
            self.pmf = model.evolve(&self.pmf);
            if time >= self.score_time || self.count_this_tick > 0.0 {
                let mut observed = (self.count_this_tick + 0.5) as u64;
                if self.count_this_tick > 0.0 && self.count_this_tick < 1.0 {
                    observed = 1;
                }
                self.observe(model, tick_secs, observed);
                self.count_this_tick = 0.0;
            }
            time += TICK;
        }
        self.time = Some(time);
    }

    /// `Process::observe` then `normalize`. The likelihood is scaled by its maximum before
    /// multiplying, which normalisation cancels; it keeps a count far above the grid's top rate
    /// (a fast link) from underflowing every bin to zero.
    fn observe(&mut self, model: &Model, t: f64, count: u64) {
        let ln_fact = ln_factorial(count);
        let log_lik = |rate: f64| -> f64 {
            let lambda = rate * t;
            if lambda == 0.0 {
                if count == 0 {
                    0.0
                } else {
                    f64::NEG_INFINITY
                }
            } else {
                -lambda + count as f64 * lambda.ln() - ln_fact
            }
        };
        let max = model.mid.iter().map(|&r| log_lik(r)).fold(f64::NEG_INFINITY, f64::max);
        for (p, &rate) in self.pmf.iter_mut().zip(&model.mid) {
            *p *= (log_lik(rate) - max).exp();
        }
        normalize(&mut self.pmf);
    }

    fn current_forecast(&mut self) -> Option<(Time, [u8; NUM_TICKS])> {
        let time = self.time?;
        if self.cached.is_none_or(|(t, _)| t != time) {
            normalize(&mut self.pmf);
            self.cached = Some((time, Model::get().forecast(&self.pmf)));
        }
        self.cached
    }
}

impl ReceiverAgent for SproutAgent {
    fn name(&self) -> &'static str {
        "sprout"
    }

    fn on_data(&mut self, now: Time, pkt: &ReceivedPacket) {
        if self.time.is_none() {
            // `warp_to`: ticks start at the first arrival.
            self.time = Some(now);
            self.score_time = now;
            self.heartbeat_at = now + FALLBACK_INTERVAL;
        }
        self.advance_to(now);
        self.count_this_tick += pkt.bytes as f64 / self.mss as f64;
        let tick = self.time.unwrap_or(now);
        self.score_time = self.score_time.max(tick + FALLBACK_INTERVAL);
        self.received_or_lost = self.received_or_lost.max(pkt.id + 1);
    }

    fn next_timer(&self) -> Option<Time> {
        self.time.map(|_| self.heartbeat_at)
    }

    fn on_timer(&mut self, now: Time) -> bool {
        if now < self.heartbeat_at {
            return false;
        }
        self.advance_to(now);
        let changed = match (self.current_forecast(), self.last_sent) {
            (Some((_, counts)), Some((_, rol, sent))) => counts != sent || rol != self.received_or_lost,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !changed {
            self.heartbeat_at = now + FALLBACK_INTERVAL;
        }
        changed
    }

    fn feedback(&mut self, now: Time) -> Option<[u8; FEEDBACK_BYTES]> {
        self.heartbeat_at = now + FALLBACK_INTERVAL;
        self.advance_to(now);
        let (time, counts) = self.current_forecast()?;
        // A forecast goes out once per tick (`the_fc.time() != local_forecast_time`).
        if self.last_sent.is_some_and(|(t, _, _)| t == time) {
            return None;
        }
        self.last_sent = Some((time, self.received_or_lost, counts));
        Some(encode(&counts))
    }
}

// ---------------------------------------------------------------------------------------------
// Sender.

/// Sprout's sender (`SproutConnection` with `sproutbt2`'s loop), in packets.
#[derive(Clone, Debug)]
pub struct Sprout {
    mss: u64,
    /// The operative forecast: cumulative packets deliverable over 1…8 ticks.
    counts: [u8; NUM_TICKS],
    /// When that forecast arrived (`remote_forecast_time`).
    forecast_time: Time,
    /// Packets estimated to be queued in the link (`current_queue_bytes_estimate`).
    queue: i64,
    /// Ticks of the forecast already drained from `queue` (`current_forecast_tick`).
    tick: usize,
    /// Packets sent so far (the transport's next packet id).
    sent: u64,
    /// Packets the window allows now.
    window: i64,
    last_send: Option<Time>,
    /// No packet for a fallback interval: one may go regardless of the window.
    fallback_due: bool,
}

impl Sprout {
    pub fn new(mss: u64) -> Sprout {
        // "Something reasonable" before the first feedback: the forecast of a receiver that has
        // seen nothing (keithw/sprout starts from its own receiver's forecast the same way).
        let model = Model::get();
        let prior = vec![1.0 / model.bins() as f64; model.bins()];
        Sprout {
            mss,
            counts: model.forecast(&prior),
            forecast_time: 0,
            queue: 0,
            tick: 0,
            sent: 0,
            window: 0,
            last_send: None,
            fallback_due: false,
        }
    }

    /// `update_queue_estimate`: drain the queue estimate as forecast ticks pass. The reference
    /// subtracts the forecast's *cumulative* count for each tick passed; it is kept. (A fresh
    /// forecast normally arrives every tick, so rarely more than the first is subtracted.)
    fn update_queue_estimate(&mut self, now: Time) {
        let elapsed_ticks = (now.saturating_sub(self.forecast_time) / TICK) as usize;
        let new_tick = elapsed_ticks.min(NUM_TICKS - 1);
        while self.tick < new_tick {
            self.queue = (self.queue - self.counts[self.tick] as i64).max(0);
            self.tick += 1;
        }
    }

    /// `window_size`, in packets, and whether the fallback packet is due.
    fn refresh(&mut self, now: Time) {
        self.update_queue_estimate(now);
        let horizon = (self.tick + TARGET_DELAY_TICKS).min(NUM_TICKS - 1);
        let deliverable = self.counts[horizon] as i64 - self.counts[self.tick] as i64;
        self.window = (deliverable - self.queue).max(0);
        self.fallback_due = self.last_send.is_none_or(|t| now >= t + FALLBACK_INTERVAL);
    }
}

impl CongestionControl for Sprout {
    fn name(&self) -> &'static str {
        "sprout"
    }

    fn on_init(&mut self, now: Time, _ctx: &mut CcContext) {
        self.forecast_time = now;
        self.last_send = Some(now);
        self.refresh(now);
    }

    fn on_packet_sent(&mut self, pkt: &SentPacket, _ctx: &mut CcContext) -> CcTag {
        self.sent = self.sent.max(pkt.id + 1);
        self.queue += 1;
        self.last_send = Some(pkt.send_time);
        self.refresh(pkt.send_time);
        0
    }

    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        self.refresh(ev.now);
    }

    fn on_feedback(&mut self, now: Time, fb: &Feedback, _ctx: &mut CcContext) {
        // keithw/sprout: queue estimate = bytes sent − bytes received or lost. With FIFO paths,
        // everything up to the ACK's largest received id was received or lost.
        let received_or_lost = fb.largest_received + 1;
        self.counts = decode(&fb.payload);
        self.forecast_time = now;
        self.queue = self.sent.saturating_sub(received_or_lost) as i64;
        self.tick = 0;
        self.refresh(now);
    }

    fn next_timer(&self) -> Option<Time> {
        // The next forecast tick (the window may open as the queue estimate drains) and the
        // fallback deadline.
        let tick = (self.tick < NUM_TICKS - 1).then(|| self.forecast_time + (self.tick as Time + 1) * TICK);
        let fallback = match (self.fallback_due, self.last_send) {
            (false, Some(t)) => Some(t + FALLBACK_INTERVAL),
            _ => None,
        };
        match (tick, fallback) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timer(&mut self, now: Time, _ctx: &mut CcContext) {
        self.refresh(now);
    }

    fn can_send(&self, _in_flight: u64, _mss: u64) -> bool {
        self.window >= 1 || self.fallback_due
    }

    fn cwnd(&self) -> u64 {
        // What Sprout allows outstanding (queued + sendable), at least two packets; informational,
        // `can_send` decides.
        (self.queue + self.window).max(2) as u64 * self.mss
    }

    fn snapshot(&self) -> CcSnapshot {
        CcSnapshot {
            mode: "sprout",
            vars: vec![
                ("window_pkts", self.window as f64),
                ("queue_estimate_pkts", self.queue as f64),
                ("forecast_100ms_pkts", self.counts[TARGET_DELAY_TICKS - 1] as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_matches_known_values() {
        // erfc(0) = 1, erfc(1) = 0.157299207050285, erfc(3) = 2.20904969985854e-5,
        // erfc(6) = 2.15197367124989e-17 (Abramowitz & Stegun tables / mpmath).
        assert!((erfc(0.0) - 1.0).abs() < 1e-15);
        assert!((erfc(1.0) - 0.157_299_207_050_285).abs() < 1e-14);
        assert!((erfc(3.0) - 2.209_049_699_858_54e-5).abs() < 1e-15);
        assert!((erfc(6.0) / 2.151_973_671_249_89e-17 - 1.0).abs() < 1e-9);
        assert!((erfc(-1.0) - (2.0 - 0.157_299_207_050_285)).abs() < 1e-14);
        assert!((normal_cdf(1.0, 1.0) - 0.841_344_746_068_543).abs() < 1e-14);
    }

    #[test]
    fn grid_matches_sampled_function() {
        let g = Grid::new(NUM_BINS, MAX_ARRIVAL_RATE, 0.0);
        assert_eq!(g.size, 257);
        assert_eq!(g.width, 3.906_25);
        assert_eq!(g.mid(0, 0.0), 0.0, "bin 0 is the outage state");
        assert_eq!(g.mid(1, 0.0), 1.5 * 3.906_25);
        assert_eq!(g.floor(0, 0.0), -BIG);
        assert_eq!(g.ceil(256, 0.0), BIG);
        assert_eq!(g.to_bin(-5.0, 0.0), 0);
        assert_eq!(g.to_bin(5000.0, 0.0), 256);
    }

    #[test]
    fn forecast_tables_are_distributions_and_cumulative() {
        let m = Model::get();
        let n = m.bins();
        // For a link certain to run at ~500 packets/s, one tick delivers ~10 packets: the 5th
        // percentile is a few below that, and the cumulative forecasts grow with the horizon.
        let mut pmf = vec![0.0; n];
        pmf[128] = 1.0;
        let counts = m.forecast(&pmf);
        let rate = m.mid[128];
        assert!((rate - 502.0).abs() < 1.0);
        assert!(counts[0] >= 3 && counts[0] <= 8, "{counts:?}");
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
        // Deliveries over 8 ticks at 500/s would average 80; diffusion widens the spread, so the
        // 5th percentile is well below but far from zero.
        assert!(counts[7] > 40 && counts[7] < 80, "{counts:?}");
        // Each k-tick table sums to at most 1 per bin (per-tick truncation loses a little).
        for table in &m.forecast {
            let counts = table.len() / n;
            for b in [0, 1, 50, 128, 256] {
                let total: f64 = (0..counts).map(|c| table[c * n + b]).sum();
                assert!(total <= 1.0 + 1e-9 && total > 0.5, "bin {b}: {total}");
            }
        }
        // An outage forecasts nothing.
        let mut outage = vec![0.0; n];
        outage[0] = 1.0;
        assert_eq!(m.forecast(&outage), [0; NUM_TICKS]);
    }

    #[test]
    fn evolve_diffuses_and_outages_are_sticky() {
        let m = Model::get();
        let mut pmf = vec![0.0; m.bins()];
        pmf[128] = 1.0;
        let out = m.evolve(&pmf);
        let mass: f64 = out.iter().sum();
        // The kernel is cut at ±5σ and read from a quantised CDF table, as in the reference.
        assert!((mass - 1.0).abs() < 1e-5, "mass {mass}");
        let mean: f64 = out.iter().zip(&m.mid).map(|(p, r)| p * r).sum();
        assert!((mean - m.mid[128]).abs() < 0.5, "no drift: {mean}");
        // From the outage state, ~98% of the mass stays (escape rate 1/s over 20 ms) weighted
        // by the half of the Gaussian kernel that stays below the first bin edge.
        pmf.fill(0.0);
        pmf[0] = 1.0;
        let out = m.evolve(&pmf);
        assert!(out[0] > 0.5 && out[0] < 0.56, "{}", out[0]);
    }

    #[test]
    fn receiver_learns_a_rate_and_feedback_round_trips() {
        let mss = 1448;
        let mut a = SproutAgent::new(mss);
        // 10 packets per 20 ms tick (500 packets/s) for two seconds.
        let mut id = 0;
        for tick in 0..100u64 {
            for k in 0..10u64 {
                let now = tick * TICK + k * 2 * MS;
                a.on_data(now, &ReceivedPacket { id, bytes: mss, sent: now });
                id += 1;
            }
        }
        let fb = a.feedback(100 * TICK - MS).expect("a new tick's forecast");
        let counts = decode(&fb);
        assert_eq!(a.received_or_lost, 1000);
        assert!(counts[4] >= 30 && counts[4] <= 50, "100 ms at 500/s ≈ 50 packets, 5th pct: {counts:?}");
        assert!(a.feedback(100 * TICK - 1).is_none(), "one forecast per tick");
        // Silence: once the fallback interval has passed, empty ticks count and the forecast
        // collapses towards an outage.
        let later = 100 * TICK + 400 * MS;
        assert!(a.on_timer(later), "a changed forecast is worth a heartbeat");
        let quiet = decode(&a.feedback(later).unwrap());
        assert!(quiet[4] < counts[4] / 4, "{quiet:?} vs {counts:?}");
    }

    #[test]
    fn only_sprout_has_a_receiver_agent() {
        assert!(crate::agent::has_agent("sprout"));
        assert!(!crate::agent::has_agent("cubic"));
    }

    #[test]
    fn forecast_fits_six_bytes_as_per_tick_increments() {
        let counts = [3, 9, 15, 22, 29, 35, 42, 50];
        assert_eq!(decode(&encode(&counts)), counts);
        // An increment above 63 saturates (never met with 30 arrivals per tick at most).
        assert_eq!(decode(&encode(&[70, 70, 70, 70, 70, 70, 70, 70])), [63; NUM_TICKS]);
    }

    #[test]
    fn sender_window_is_forecast_minus_queue() {
        let mut s = Sprout::new(1448);
        let mut rng = Rng::new(1);
        let mut ctx = CcContext { mss: 1448, rng: &mut rng };
        s.on_init(0, &mut ctx);
        // A forecast of 10 packets per tick; 30 sent, 20 received or lost → 10 queued.
        for id in 0..30 {
            let pkt = SentPacket { id, bytes: 1448, send_time: 0, ..Default::default() };
            s.on_packet_sent(&pkt, &mut ctx);
        }
        let counts = [10, 20, 30, 40, 50, 60, 70, 80];
        s.on_feedback(MS, &Feedback { payload: encode(&counts), largest_received: 19 }, &mut ctx);
        assert_eq!(s.queue, 10);
        // 100 ms ahead: counts[5] − counts[0] = 50 deliverable, minus 10 queued.
        assert_eq!(s.window, 40);
        assert!(s.can_send(0, 1448));
        // One tick later the queue estimate drains by the first tick's count.
        s.on_timer(MS + TICK, &mut ctx);
        assert_eq!((s.tick, s.queue), (1, 0));
        assert_eq!(s.window, 50);
        assert_eq!(s.next_timer(), Some(MS + 2 * TICK));
    }

    #[test]
    fn sender_falls_back_to_one_packet_per_50ms() {
        let mut s = Sprout::new(1448);
        let mut rng = Rng::new(1);
        let mut ctx = CcContext { mss: 1448, rng: &mut rng };
        s.on_init(0, &mut ctx);
        s.on_feedback(0, &Feedback { payload: encode(&[0; NUM_TICKS]), largest_received: 0 }, &mut ctx);
        assert!(!s.can_send(0, 1448), "an outage forecast shuts the window");
        assert_eq!(s.next_timer(), Some(TICK));
        s.on_timer(FALLBACK_INTERVAL, &mut ctx);
        assert!(s.can_send(0, 1448), "the fallback packet");
        let pkt = SentPacket { id: 0, bytes: 1448, send_time: FALLBACK_INTERVAL, ..Default::default() };
        s.on_packet_sent(&pkt, &mut ctx);
        assert!(!s.can_send(0, 1448));
    }
}
