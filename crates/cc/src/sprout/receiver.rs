//! Sprout's receiving end: the agent that learns the link's rate and forecasts deliveries.

use super::feedback::encode;
use super::forecast::{ln_factorial, normalize, Model};
use super::*;
use crate::agent::{ReceivedPacket, ReceiverAgent};

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
    pub(super) received_or_lost: u64,
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
