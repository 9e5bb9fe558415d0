//! What the flows' endpoint threads share: the run's stop signal and their byte counts.

use crate::sys::Clock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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
