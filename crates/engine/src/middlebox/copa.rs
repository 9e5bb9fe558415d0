//! Copa as Bundler's default aggregate controller.

use cclab_core::scenario::PACKET_BYTES;
use cclab_core::time::Time;

/// Copa (Arun & Balakrishnan, NSDI'18) for an aggregate, as Bundler runs it through CCP: a
/// window updated every tick and converted to the token bucket's rate as cwnd / standing RTT.
/// The target rate is 1/(δ·d_q) packets per second, d_q the standing RTT (minimum over the last
/// srtt/2) minus the minimum RTT; below it the window grows by v/δ packets per RTT, above it
/// shrinks as much; the velocity v doubles once the window has moved the same way for three
/// RTTs and resets to 1 when the direction changes; slow start doubles the window every RTT
/// until the rate first exceeds the target.
#[derive(Clone, Debug)]
pub struct CopaRate {
    delta: f64,
    /// bytes
    cwnd: f64,
    /// bytes/s, as last set
    rate: f64,
    slow_start: bool,
    velocity: f64,
    /// +1 / −1: the direction of the last RTT's change, and when that RTT began.
    direction: i8,
    same_direction_rtts: u32,
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
            same_direction_rtts: 0,
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
            let step = self.velocity * pkt / self.delta * frac;
            if current < target {
                self.cwnd += step;
            } else {
                self.cwnd -= step;
            }
        }
        if let Some(r) = receive_rate.filter(|r| r.is_finite() && *r > 0.0) {
            self.cwnd = self.cwnd.min(RATE_CAP_OVER_RECEIVED * r * standing_s);
        }
        self.cwnd = self.cwnd.max(MIN_CWND);
        // Velocity: once per RTT, compare the window with the one an RTT ago.
        if !self.slow_start && now >= self.rtt_start + standing {
            let dir = if self.cwnd >= self.cwnd_at_rtt_start { 1 } else { -1 };
            if dir == self.direction {
                self.same_direction_rtts += 1;
                if self.same_direction_rtts >= 3 {
                    self.velocity = (self.velocity * 2.0).min(1e6);
                }
            } else {
                self.direction = dir;
                self.same_direction_rtts = 0;
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
}
