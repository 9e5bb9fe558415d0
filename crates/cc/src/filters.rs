//! Windowed running min/max filters.
//!
//! [`WindowedFilter`] is Kathleen Nichols' three-sample estimator as Linux's `lib/win_minmax.c`
//! implements it (and BBR uses for its bandwidth filter): O(1) time and space, approximate. It
//! keeps the best, second-best and third-best samples of the window, with the later ones taken
//! from later sub-windows, so that when the best expires a good successor is already known.
//!
//! The key is any monotonically non-decreasing `u64`: nanoseconds for a time window, or a
//! packet-timed round count for BBR's "10 rounds" bandwidth window.

#[derive(Clone, Copy, Debug, PartialEq)]
struct Sample<V> {
    key: u64,
    value: V,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Extreme {
    Max,
    Min,
}

/// A running maximum or minimum over the last `window` units of key.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowedFilter<V> {
    window: u64,
    extreme: Extreme,
    /// Best, second and third choice; `None` before the first sample.
    s: Option<[Sample<V>; 3]>,
}

impl<V: Copy + PartialOrd> WindowedFilter<V> {
    /// A running maximum over `window` units of key.
    pub fn max(window: u64) -> Self {
        WindowedFilter { window, extreme: Extreme::Max, s: None }
    }

    /// A running minimum over `window` units of key.
    pub fn min(window: u64) -> Self {
        WindowedFilter { window, extreme: Extreme::Min, s: None }
    }

    pub fn window(&self) -> u64 {
        self.window
    }

    pub fn set_window(&mut self, window: u64) {
        self.window = window;
    }

    /// The current estimate, if any sample was taken.
    pub fn get(&self) -> Option<V> {
        self.s.map(|s| s[0].value)
    }

    /// Forgets everything and starts over from one sample.
    pub fn reset(&mut self, key: u64, value: V) -> V {
        let x = Sample { key, value };
        self.s = Some([x; 3]);
        value
    }

    /// Whether `a` is at least as good as `b` (ties count: a fresher equal sample wins).
    fn at_least(&self, a: V, b: V) -> bool {
        match self.extreme {
            Extreme::Max => a >= b,
            Extreme::Min => a <= b,
        }
    }

    /// Adds a sample taken at `key` and returns the updated estimate.
    pub fn update(&mut self, key: u64, value: V) -> V {
        let Some(mut s) = self.s else {
            return self.reset(key, value);
        };
        let x = Sample { key, value };
        // A new best, or nothing left in the window: earlier samples can never matter again.
        if self.at_least(value, s[0].value) || key.saturating_sub(s[2].key) > self.window {
            return self.reset(key, value);
        }
        if self.at_least(value, s[1].value) {
            s[1] = x;
            s[2] = x;
        } else if self.at_least(value, s[2].value) {
            s[2] = x;
        }
        self.s = Some(self.expire(s, x));
        self.s.map_or(value, |s| s[0].value)
    }

    /// Advances the choices as the window moves past them (Linux `minmax_subwin_update`).
    fn expire(&self, mut s: [Sample<V>; 3], x: Sample<V>) -> [Sample<V>; 3] {
        let win = self.window;
        let age = x.key.saturating_sub(s[0].key);
        if age > win {
            // The best has left the window: promote the others and take the new sample third.
            // The second may be out of the window too (the third was checked to be inside).
            s = [s[1], s[2], x];
            if x.key.saturating_sub(s[0].key) > win {
                s = [s[1], s[2], x];
            }
        } else if s[1].key == s[0].key && age > win / 4 {
            // A quarter window without a new second choice: take one from the second quarter.
            s[1] = x;
            s[2] = x;
        } else if s[2].key == s[1].key && age > win / 2 {
            // Half a window without a new third choice: take one from the second half.
            s[2] = x;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact windowed maximum, for comparison.
    fn exact_max(samples: &[(u64, u64)], now: u64, win: u64) -> u64 {
        samples.iter().filter(|(k, _)| now - k <= win).map(|(_, v)| *v).max().unwrap()
    }

    #[test]
    fn empty_then_first_sample() {
        let mut f = WindowedFilter::<u64>::max(10);
        assert_eq!(f.get(), None);
        assert_eq!(f.update(0, 5), 5);
        assert_eq!(f.get(), Some(5));
    }

    #[test]
    fn max_holds_for_the_window_then_falls_to_the_successor() {
        let mut f = WindowedFilter::max(10);
        f.update(0, 100);
        f.update(3, 80); // a second choice from the second quarter
        f.update(6, 60); // a third choice from the second half
        assert_eq!(f.update(10, 10), 100, "the best is still inside the window");
        assert_eq!(f.update(11, 10), 80, "the best expired; the second takes over");
        assert_eq!(f.update(14, 10), 60, "then the third");
        assert_eq!(f.update(17, 10), 10);
    }

    #[test]
    fn a_new_best_replaces_everything() {
        let mut f = WindowedFilter::max(10);
        f.update(0, 50);
        f.update(4, 40);
        assert_eq!(f.update(5, 70), 70);
        // Older, lower samples are gone: after 70 expires only newer samples remain.
        assert_eq!(f.update(16, 1), 1);
    }

    #[test]
    fn min_filter_mirrors_max() {
        let mut f = WindowedFilter::min(100);
        assert_eq!(f.update(0, 30.0), 30.0);
        assert_eq!(f.update(10, 40.0), 30.0);
        assert_eq!(f.update(20, 25.0), 25.0);
        assert_eq!(f.update(119, 50.0), 25.0);
        // 25.0 expired; the successor was the fresher 50.0 (nothing lower was seen after it).
        assert_eq!(f.update(121, 60.0), 50.0);
    }

    #[test]
    fn a_gap_longer_than_the_window_forgets_the_past() {
        let mut f = WindowedFilter::max(10);
        f.update(0, 100);
        f.update(5, 90);
        assert_eq!(f.update(50, 1), 1);
    }

    #[test]
    fn never_above_the_exact_max_and_never_stale() {
        // Deterministic pseudo-random samples at irregular keys.
        let mut rng = crate::types::Rng::new(3);
        let win = 100;
        let mut f = WindowedFilter::max(win);
        let mut seen = Vec::new();
        let mut key = 0;
        for _ in 0..20_000 {
            key += rng.below(7);
            let v = rng.below(1000);
            seen.push((key, v));
            let est = f.update(key, v);
            let exact = exact_max(&seen[seen.len().saturating_sub(800)..], key, win);
            // The estimate is one of the samples of the window, so it can only underestimate.
            assert!(est <= exact, "at {key}: {est} > {exact}");
            assert!(est >= v);
            assert!(seen.iter().rev().take_while(|(k, _)| key - k <= win).any(|&(_, x)| x == est));
        }
    }

    #[test]
    fn round_keys_work_like_time() {
        // BBR-style: a 10-round bandwidth window keyed by round count.
        let mut f = WindowedFilter::max(10);
        for round in 0..=10 {
            f.update(round, if round == 0 { 1000.0 } else { 500.0 });
        }
        assert_eq!(f.get(), Some(1000.0));
        assert_eq!(f.update(11, 500.0), 500.0);
    }
}
