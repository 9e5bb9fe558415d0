//! Copa as Bundler's default aggregate controller.

use cclab_core::scenario::PACKET_BYTES;
use cclab_core::time::Time;

/// Copa (Arun & Balakrishnan, NSDI'18) for an aggregate, as Bundler runs it through CCP: a
/// window updated every tick and converted to the token bucket's rate as cwnd / standing RTT.
/// The target rate is 1/(δ·d_q) packets per second, d_q the standing RTT (minimum over the last
/// srtt/2) minus the minimum RTT; below it the window grows by v/δ packets per RTT, above it
/// shrinks as much; the velocity v doubles once the window has moved the same way for three
/// RTTs and resets to 1 when the direction changes, or at once on a decision against it;
/// slow start doubles the window every RTT until the rate first exceeds the target.
///
/// The velocity's bookkeeping follows ccp_copa (the Copa Bundler runs, by Copa's first author):
/// every two RTTs it compares the window with the one two RTTs before, doubles v if the
/// direction is unchanged and has held for more than three RTTs, and resets it otherwise.
#[derive(Clone, Debug)]
pub struct CopaRate {
    delta: f64,
    /// bytes
    cwnd: f64,
    /// bytes/s, as last set
    rate: f64,
    slow_start: bool,
    velocity: f64,
    /// +1 / −1: the direction of the window's last change over a velocity period (two RTTs),
    /// and when that period began.
    direction: i8,
    /// When the direction last changed (or the velocity was last reset).
    direction_since: Time,
    rtt_start: Time,
    cwnd_at_rtt_start: f64,
}

/// The window before any measurement: ten packets, as an end host's initial window.
const INITIAL_CWND: f64 = 10.0 * PACKET_BYTES as f64;
/// The rate before the first RTT sample: 10 Mbit/s; slow start finds the real one.
const INITIAL_RATE: f64 = 10e6 / 8.0;
/// The window never falls below two packets.
const MIN_CWND: f64 = 2.0 * PACKET_BYTES as f64;
/// An app-limited bundle leaves the delay signal flat (no queue anywhere), which would let
/// the window grow without bound; it is capped at this multiple of the measured receive rate
/// times the standing RTT.
const RATE_CAP_OVER_RECEIVED: f64 = 2.0;

impl CopaRate {
    pub fn new(delta: f64) -> CopaRate {
        CopaRate {
            delta,
            cwnd: INITIAL_CWND,
            rate: INITIAL_RATE,
            slow_start: true,
            velocity: 1.0,
            direction: 0,
            direction_since: 0,
            rtt_start: 0,
            cwnd_at_rtt_start: INITIAL_CWND,
        }
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// One control step at `now`, `dt` after the last, with the standing and minimum RTT (ns)
    /// and the receive rate (bytes/s, if measured).
    pub fn tick(&mut self, now: Time, dt: Time, standing: Time, min_rtt: Time, receive_rate: Option<f64>) {
        let standing_s = standing.max(1) as f64 / 1e9;
        let dq = standing.saturating_sub(min_rtt) as f64 / 1e9;
        let pkt = PACKET_BYTES as f64;
        // Copa's target λ = 1/(δ·d_q) packets/s; with no queue at all the target is unbounded.
        let target = if dq > 0.0 { pkt / (self.delta * dq) } else { f64::INFINITY };
        let current = self.cwnd / standing_s;
        let frac = dt as f64 / 1e9 / standing_s;
        if self.slow_start && current >= target {
            self.slow_start = false;
        }
        if self.slow_start {
            self.cwnd *= 2f64.powf(frac);
        } else {
            let increase = current < target;
            // A decision against the direction the velocity was built up in resets it at
            // once, not at the next once-per-RTT check: otherwise the first RTT after the
            // target is crossed moves the window by the old v/δ packets (v can be in the
            // hundreds after a long climb) and drives it to the floor in a few ticks.
            // Copa as Bundler runs it (ccp_copa's `delay_control`) and mvfst both do this.
            if self.velocity > 1.0 && (increase != (self.direction > 0)) {
                self.velocity = 1.0;
                self.direction_since = now;
            }
            let step = self.velocity * pkt / self.delta * frac;
            if increase {
                self.cwnd += step;
            } else {
                self.cwnd -= step;
            }
        }
        if let Some(r) = receive_rate.filter(|r| r.is_finite() && *r > 0.0) {
            self.cwnd = self.cwnd.min(RATE_CAP_OVER_RECEIVED * r * standing_s);
        }
        self.cwnd = self.cwnd.max(MIN_CWND);
        // Velocity: every two RTTs compare the window with the one two RTTs ago (ccp_copa:
        // `now - prev_update_rtt >= 2*rtt`; doubling once `now - time_since_direction > 3*rtt`).
        // Checked every RTT, v doubled twice as often and, with the RTT signal arriving an RTT
        // late, climbed from a drained bundle to twice the link rate before the queue showed,
        // then fell to the floor (backlogged Cubic through a FIFO inbox: a 1.7 s cycle).
        if !self.slow_start && now >= self.rtt_start + 2 * standing {
            let dir = if self.cwnd >= self.cwnd_at_rtt_start { 1 } else { -1 };
            if dir == self.direction {
                if now > self.direction_since + 3 * standing {
                    self.velocity = (self.velocity * 2.0).min(1e6);
                }
            } else {
                self.direction = dir;
                self.direction_since = now;
                self.velocity = 1.0;
            }
            self.rtt_start = now;
            self.cwnd_at_rtt_start = self.cwnd;
        }
        self.rate = self.cwnd / standing_s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_core::time::MS;

    /// With no queue the window grows (slow start, then bounded by twice the receive rate);
    /// with a standing queue above Copa's target it falls, the velocity making it fast.
    #[test]
    fn copa_rate_moves_towards_its_delay_target() {
        let mut c = CopaRate::new(0.5);
        let mut now = 0;
        let received = Some(12e6);
        for _ in 0..200 {
            now += 10 * MS;
            c.tick(now, 10 * MS, 50 * MS, 50 * MS, received);
        }
        let high = c.rate();
        assert!(high > 12e6 && high <= 24e6 * (1.0 + 1e-9), "no queue: the rate grows to the cap ({high})");
        for _ in 0..200 {
            now += 10 * MS;
            // 20 ms of standing queue: target 1/(0.5·0.02) = 100 packets/s = 150 kB/s.
            c.tick(now, 10 * MS, 70 * MS, 50 * MS, received);
        }
        assert!(c.rate() < high / 8.0, "a standing queue drives the rate down ({})", c.rate());
    }

    /// Copa's velocity is reset when the direction changes (NSDI'18 §2.2: "If not, then reset
    /// v to 1"); the implementation Bundler runs (ccp_copa) and mvfst reset it on the first
    /// decision against the direction, so after a long climb the first RTT above the target
    /// moves the window by 1/δ packets, not by the climb's v/δ.
    #[test]
    fn velocity_resets_on_the_first_decision_against_it() {
        let mut c = CopaRate::new(0.5);
        let mut now = 0;
        let tick = |c: &mut CopaRate, now: &mut Time, standing: Time| {
            *now += 10 * MS;
            c.tick(*now, 10 * MS, standing, 50 * MS, None);
        };
        // 1 ms of queue ends slow start (target 1/(0.5·0.001) = 2000 packets/s = 24 Mbit/s).
        while c.slow_start {
            tick(&mut c, &mut now, 51 * MS);
        }
        // 1 µs of queue (target 24 Gbit/s) for 1 s: the window climbs, far below the target,
        // and v doubles (every 2 RTTs once the direction has held for 3).
        for _ in 0..100 {
            tick(&mut c, &mut now, 50 * MS + 1_000);
        }
        // 20 RTTs of climb: about 8 doublings at one per 2 RTTs (ccp_copa); one per RTT would
        // give about 16 (v ≈ 65,000).
        assert!(c.velocity >= 64.0 && c.velocity <= 1024.0, "a long climb builds up velocity ({})", c.velocity);
        // 20 ms of queue: one tick of 10 ms is a fifth of an RTT of 70 ms, so at v = 1 the
        // window falls by 1/δ · 1/7 packets (the bound allows for float rounding only).
        let before = c.cwnd;
        tick(&mut c, &mut now, 70 * MS);
        let fall = before - c.cwnd;
        let one_velocity = PACKET_BYTES as f64 / 0.5 * (10.0 / 70.0);
        assert!(fall > 0.0 && fall <= one_velocity * (1.0 + 1e-9), "fell {fall} B, at v = 1 {one_velocity} B");
        assert_eq!(c.velocity, 1.0);
    }
}
