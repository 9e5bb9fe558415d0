//! When the path thread sleeps, and how far from the model's time it lets a packet leave.
//!
//! Every wake-up costs the path thread a timer, a context switch and (in a VM) exits to the
//! hypervisor, whether it then writes one packet or ten; spinning costs the whole CPU. So the
//! thread works with a *tolerance* T, a window centred on each packet's model time: a
//! departure from a path's last delay line (data after the propagation delay, ACKs after
//! theirs) may be written up to T before its model time or T after it, and one wake-up writes
//! a whole *group* — everything due within 2·T of the earliest departure — at the group's
//! middle, so each of its packets leaves within half the group's span of its time (early or
//! late, where a window after the model time made every packet late: the errors fall on both
//! sides of zero).
//! Taking each group as everything within 2·T of the earliest departure left is the fewest
//! wake-ups that keep every packet within T — the greedy cover of points by intervals. Those
//! due times are known well ahead (a delay line's exits are fixed when a packet enters it), so
//! the thread plans on them; the stages ahead of the last line (access lines, the bottleneck,
//! Bundler's inbox) work in model time and are served whenever the thread wakes (before any
//! packet read then enters the model), never needing a wake-up of their own.
//!
//! What must not happen early is never done early: the bottleneck's departures when no delay
//! line follows it (a packet arriving meanwhile must find the model as it was then) are
//! written at their time or up to T after, as before the window was centred.
//!
//! Timed sleeps end late by an amount that varies with the machine, so the thread aims earlier
//! by a *margin* learnt from its own past wake-ups ([`WakeLatency`]); a wake-up that comes too
//! early to release the whole group spins the rest of the way when that is short, and when the
//! tolerance is smaller than the margin (fast links, where the thread is busy anyway).

/// Largest tolerance, ns, whatever the link: the error any packet may be given by design.
pub const MAX_TOLERANCE_NS: u64 = 80_000;

/// The tolerance for a link of `rate_bps`: 5/8 of the serialisation time of a full 1500-byte
/// packet, so that one wake-up's window (2·T, 1.25 packet times) holds two full packets back
/// to back on the model's wire and whatever (an ACK, in the other direction) falls up to a
/// quarter of a packet time beside them — with T at half a packet time the window was exactly
/// one packet time, and any jitter split the pairs; at most [`MAX_TOLERANCE_NS`]. A link
/// without a rate (none) gets the largest tolerance. Measured at 100 Mbit/s (crates/emu
/// README): 75 µs gives ~4.1 k wake-ups/s, 60 µs ~4.6–5.0 k.
pub fn tolerance_ns(rate_bps: u64) -> u64 {
    if rate_bps == 0 {
        return MAX_TOLERANCE_NS;
    }
    // 5/8 of 1500 bytes = 7500 bits, in ns at rate_bps.
    (7_500u128 * 1_000_000_000 / rate_bps as u128).min(MAX_TOLERANCE_NS as u128) as u64
}

/// How late the thread's timed sleeps end: a histogram (for the run's report) and a running
/// estimate of a high quantile, the *margin* the thread aims before due times.
///
/// The quantile is tracked by stochastic approximation (each sample moves the estimate up by
/// `STEP·q` if it lies above, down by `STEP·(1−q)` if below; it settles where a fraction q of
/// samples lie below): unlike a mean plus deviations it is not blown up by the rare wake-up
/// that a busy machine delays by milliseconds, which no margin could absorb anyway.
#[derive(Clone, Debug)]
pub struct WakeLatency {
    margin: f64,
    /// Lateness histogram, 1 µs buckets (the last: that or more).
    hist: Vec<u64>,
}

impl WakeLatency {
    /// The quantile of wake-up lateness aimed for: nine wake-ups in ten are on time.
    const QUANTILE: f64 = 0.9;
    /// Step of the estimate per sample, ns: it crosses a 100 µs change in a few hundred
    /// wake-ups (a fraction of a second on a loaded link) without jumping on one sample.
    const STEP_NS: f64 = 1_000.0;
    /// Bounds of the margin, ns: a wake-up is never assumed exact, and a bad spell (a busy
    /// neighbour) must not turn the thread into a spinner.
    const MIN_MARGIN_NS: f64 = 2_000.0;
    const MAX_MARGIN_NS: f64 = 100_000.0;
    const BUCKETS: usize = 1000;

    /// Starts from a guess for a virtual machine's timer (tens of µs), which the first few
    /// hundred wake-ups correct.
    pub fn new() -> WakeLatency {
        WakeLatency { margin: 30_000.0, hist: vec![0; Self::BUCKETS] }
    }

    /// One timed sleep that asked to end at `asked` and ended at `woke` (ns, same clock).
    pub fn observe(&mut self, asked: u64, woke: u64) {
        let late = woke.saturating_sub(asked);
        self.hist[((late / 1000) as usize).min(Self::BUCKETS - 1)] += 1;
        if late as f64 > self.margin {
            self.margin += Self::STEP_NS * Self::QUANTILE;
        } else {
            self.margin -= Self::STEP_NS * (1.0 - Self::QUANTILE);
        }
        self.margin = self.margin.clamp(Self::MIN_MARGIN_NS, Self::MAX_MARGIN_NS);
    }

    /// How much earlier than the wanted time a sleep should end, ns.
    pub fn margin_ns(&self) -> u64 {
        self.margin as u64
    }

    /// Timed wake-ups observed.
    pub fn samples(&self) -> u64 {
        self.hist.iter().sum()
    }

    /// The q-quantile of observed lateness, µs (upper edge of its 1 µs bucket; NaN if none).
    pub fn quantile_us(&self, q: f64) -> f64 {
        let n = self.samples();
        if n == 0 {
            return f64::NAN;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut acc = 0;
        for (i, c) in self.hist.iter().enumerate() {
            acc += c;
            if acc >= rank {
                return (i + 1) as f64;
            }
        }
        Self::BUCKETS as f64
    }
}

impl Default for WakeLatency {
    fn default() -> Self {
        Self::new()
    }
}

/// What the thread does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Poll the devices again without sleeping: something is due too soon for a sleep.
    Spin,
    /// Sleep (woken early by an arriving packet) until this run time.
    SleepUntil(u64),
}

/// What lies ahead in the paths, as the next wake-up is planned (model times, ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ahead {
    /// The earliest time at which the thread may have something to do.
    pub first: u64,
    /// The latest departure that may leave early due within `2 · tolerance` of `first`
    /// (`first` when there is none).
    pub last: u64,
    /// Whether `first` must not be acted on before its time (a bottleneck with no delay line
    /// after it, a stage ahead of a line shorter than the tolerance).
    pub exact: bool,
}

/// The next step at run time `now` for what lies `ahead` (None: nothing in the paths), the
/// run's `end`, the `tolerance`, the wake-up `margin` and `min_sleep` (a sleep shorter than
/// this is not worth its wake-up: spin instead).
///
/// A group of departures that may leave early (`first` to `last`, at most two tolerances
/// apart) is released at its middle, so each leaves within `(last - first) / 2` of its model
/// time, early or late; it may be released from `last - tolerance` on, and when that is
/// closer than `min_sleep` the thread spins to it rather than sleeping once more. An event
/// that must not be acted on early is served as late as the tolerance allows, as every
/// departure was before the window was centred (an exact event later than a group's middle
/// is simply not due at its release, and comes first in the next plan).
pub fn plan(now: u64, ahead: Option<Ahead>, end: u64, tolerance: u64, margin: u64, min_sleep: u64) -> Plan {
    let Some(a) = ahead else {
        return if end <= now + min_sleep { Plan::Spin } else { Plan::SleepUntil(end) };
    };
    let (at, earliest) = if a.exact {
        (a.first + tolerance, None)
    } else {
        (a.first + (a.last - a.first) / 2, Some(a.last.saturating_sub(tolerance)))
    };
    // Timed sleeps end late: aim `margin` before the release time.
    let wake = at.saturating_sub(margin).min(end);
    if wake <= now + min_sleep || earliest.is_some_and(|e| e <= now + min_sleep) {
        Plan::Spin
    } else {
        Plan::SleepUntil(wake)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_is_five_eighths_of_a_packet_time_capped() {
        // 1500 bytes at 100 Mbit/s take 120 µs; at 1 Gbit/s 12 µs; at 10 Gbit/s 1.2 µs.
        assert_eq!(tolerance_ns(100_000_000), 75_000);
        assert_eq!(tolerance_ns(1_000_000_000), 7_500);
        assert_eq!(tolerance_ns(10_000_000_000), 750);
        // 12 Mbit/s: 5/8 of a packet is 625 µs, beyond the cap.
        assert_eq!(tolerance_ns(12_000_000), MAX_TOLERANCE_NS);
        assert_eq!(tolerance_ns(0), MAX_TOLERANCE_NS);
    }

    #[test]
    fn the_margin_learns_a_high_quantile_of_the_wake_up_lateness() {
        let mut w = WakeLatency::new();
        for i in 0..5_000u64 {
            // Wake-ups 5–14 µs late, evenly (p90 = 14 µs), and one in a hundred 5 ms late: a
            // busy neighbour, which must not drag the margin up to milliseconds.
            let late = if i % 100 == 99 { 5_000_000 } else { 5_000 + (i % 10) * 1_000 };
            w.observe(1_000_000 * i, 1_000_000 * i + late);
        }
        assert!((11_000..16_000).contains(&w.margin_ns()), "{w:?}");
        assert_eq!(w.samples(), 5_000);
        assert_eq!(w.quantile_us(0.5), 10.0);
        assert_eq!(w.quantile_us(1.0), WakeLatency::BUCKETS as f64, "the 5 ms ones land in the last bucket");
        // Wake-ups that end early count as on time; the margin shrinks to its floor.
        let mut e = WakeLatency::new();
        for _ in 0..5_000 {
            e.observe(5_000, 4_000);
        }
        assert_eq!(e.margin_ns(), WakeLatency::MIN_MARGIN_NS as u64);
        assert!(WakeLatency::new().quantile_us(0.5).is_nan());
    }

    /// A group of departures that may leave early, from `first` to `last`.
    fn group(first: u64, last: u64) -> Option<Ahead> {
        Some(Ahead { first, last, exact: false })
    }

    #[test]
    fn plans_release_a_group_at_its_middle() {
        let (tol, margin, min_sleep, end) = (60_000, 10_000, 5_000, 1_000_000_000);
        // One departure in 1 ms: wake at its time (less the margin); it leaves on time.
        assert_eq!(plan(0, group(1_000_000, 1_000_000), end, tol, margin, min_sleep), Plan::SleepUntil(990_000));
        // Two, 120 µs apart (a full packet at 100 Mbit/s): at their middle, each 60 µs off.
        assert_eq!(plan(0, group(1_000_000, 1_120_000), end, tol, margin, min_sleep), Plan::SleepUntil(1_050_000));
        // Woken before the group could all leave (the last is more than the tolerance away)
        // but within `min_sleep` of that: spin rather than pay another wake-up.
        assert_eq!(plan(1_056_000, group(1_120_000, 1_120_000), end, tol, margin, min_sleep), Plan::Spin);
        // Further away: sleep again.
        assert_eq!(
            plan(1_000_000, group(1_120_000, 1_120_000), end, tol, margin, min_sleep),
            Plan::SleepUntil(1_110_000)
        );
    }

    #[test]
    fn plans_serve_what_must_not_be_early_late_within_the_tolerance() {
        let (tol, margin, min_sleep, end) = (60_000, 10_000, 5_000, 1_000_000_000);
        let exact = |t: u64| Some(Ahead { first: t, last: t, exact: true });
        // A bottleneck departure in 1 ms with nothing after it: as late as the tolerance allows,
        // less the margin.
        assert_eq!(plan(0, exact(1_000_000), end, tol, margin, min_sleep), Plan::SleepUntil(1_050_000));
        // Nothing in the path: sleep until the end (the caller caps each sleep).
        assert_eq!(plan(0, None, end, tol, margin, min_sleep), Plan::SleepUntil(end));
        // Never past the end.
        assert_eq!(plan(0, exact(end), end, tol, margin, min_sleep), Plan::SleepUntil(end));
        // Due now, or so soon that the sleep would be shorter than `min_sleep`: spin.
        assert_eq!(plan(100_000, exact(50_000), end, tol, margin, min_sleep), Plan::Spin);
        assert_eq!(plan(100_000, exact(54_000), end, tol, margin, min_sleep), Plan::Spin);
        // A tolerance below the margin (fast link): wake before the due time and spin the rest.
        assert_eq!(plan(0, exact(1_000_000), end, 600, margin, min_sleep), Plan::SleepUntil(990_600));
    }
}
