//! What the flows' endpoint threads share: the run's start line, its stop signal and their
//! byte counts.

use crate::sys::Clock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Set when the run ends or fails; every endpoint thread polls it at least every 20 ms.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<AtomicBool>);

/// Longest uninterrupted sleep of an endpoint waiting for its start.
const SLEEP_SLICE_NS: u64 = 20_000_000;

impl Stop {
    pub fn now(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
    pub fn flag(&self) -> &AtomicBool {
        &self.0
    }

    /// Sleeps until run time `t`; false if the run stopped first.
    pub fn sleep_until(&self, clock: Clock, t: u64) -> bool {
        loop {
            if self.now() {
                return false;
            }
            let now = clock.now();
            if now >= t {
                return true;
            }
            clock.sleep_until(t.min(now + SLEEP_SLICE_NS));
        }
    }
}

/// Where the run's threads wait for its clock to start. Creating a thread, entering a namespace
/// and opening a socket take milliseconds on a busy machine, tens of them for a few dozen
/// flows; before this line a flow planned to start at 0 connected up to 120 ms late (and the
/// others at random times between), so the first round trips met a queue the scenario does
/// not describe. Each thread prepares, then `arrive`s; the clock starts once all have.
#[derive(Debug, Default)]
pub struct StartLine {
    arrived: AtomicUsize,
    clock: OnceLock<Clock>,
}

impl StartLine {
    /// A prepared thread's arrival: blocks until the clock starts, then returns it.
    pub fn arrive(&self) -> Clock {
        self.arrived.fetch_add(1, Ordering::AcqRel);
        *self.clock.wait()
    }

    /// An arrival that does not wait for the clock: a path thread's, which has it already and
    /// checks in once it is serving its devices.
    pub fn check_in(&self) {
        self.arrived.fetch_add(1, Ordering::AcqRel);
    }

    /// Waits until `n` threads have arrived or `limit` has passed; whether all did.
    pub fn gather(&self, n: usize, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while self.arrived.load(Ordering::Acquire) < n {
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        true
    }

    /// Starts the run's clock and lets every thread at the line go. Called exactly once, also
    /// when `gather` failed: a thread at the line waits for it.
    pub fn start(&self, clock: Clock) {
        self.clock.set(clock).expect("the start line is started once");
    }

    /// The clock, once started.
    pub fn clock(&self) -> Option<Clock> {
        self.clock.get().copied()
    }
}

/// Application bytes a receiver read: its goodput, as the application sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppBytes {
    pub bytes: u64,
    /// Run times of the first and last read that returned data.
    pub first: u64,
    pub last: u64,
}

impl AppBytes {
    pub fn add(&mut self, now: u64, n: u64) {
        if self.bytes == 0 {
            self.first = now;
        }
        self.bytes += n;
        self.last = now;
    }

    /// Mbit/s between the first and the last read.
    pub fn goodput_mbps(&self) -> f64 {
        if self.last > self.first {
            self.bytes as f64 * 8.0 / (self.last - self.first) as f64 * 1e3
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StartLine;
    use std::time::Duration;

    #[test]
    fn the_endpoints_are_held_until_every_path_thread_checks_in() {
        let serving = StartLine::default();
        std::thread::scope(|s| {
            // Two path threads; the second is slow to start serving.
            s.spawn(|| serving.check_in());
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(30));
                serving.check_in();
            });
            assert!(!serving.gather(2, Duration::from_millis(5)), "one thread is still starting");
            assert!(serving.gather(2, Duration::from_secs(5)), "both serve in the end");
        });
        // A check-in never waits for a clock: nothing above started one.
        assert!(serving.clock().is_none());
    }
}
