//! mahimahi's trace format: delivery opportunities at whole milliseconds.

use super::OPPORTUNITY_BYTES;
use cclab_core::time::{Time, MS};
use cclab_core::units::Rate;
use std::path::Path;

/// The last timestamp a trace may have: a year in ms, so that times in ns (and their sums over
/// many periods) stay far inside 64 bits.
const MAX_TIMESTAMP_MS: u64 = 366 * 24 * 3600 * 1000;

/// A mahimahi trace: delivery opportunities at whole milliseconds, repeating with a period
/// equal to the last timestamp.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// Distinct opportunity times in ms within one period, ascending, with their counts.
    times: Vec<u64>,
    counts: Vec<u32>,
    /// Cumulative opportunities before index i (for capacity over a span).
    before: Vec<u64>,
    period_ms: u64,
    total: u64,
}

impl Trace {
    pub fn load(path: &Path) -> Result<Trace, String> {
        let text = cclab_core::input::read_text(path, cclab_core::input::MAX_TRACE_BYTES)
            .map_err(|e| format!("cannot read the trace file {}: {e}", path.display()))?;
        // "FILE:LINE: why", as a compiler writes it, so an editor jumps to the line.
        Trace::parse(&text).map_err(|e| match e.strip_prefix("line ") {
            Some(rest) => format!("{}:{rest}", path.display()),
            None => format!("{}: {e}", path.display()),
        })
    }

    /// Parses mahimahi's format: one non-decreasing integer (ms) per line. An error starts with
    /// "line N: " when a line is at fault.
    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut times: Vec<u64> = Vec::new();
        let mut counts: Vec<u32> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let t: u64 = line.parse().map_err(|_| {
                format!(
                    "line {}: {} is not a whole number of milliseconds (a mahimahi trace has one per line)",
                    i + 1,
                    cclab_core::input::quote_line(line)
                )
            })?;
            if t > MAX_TIMESTAMP_MS {
                return Err(format!(
                    "line {}: {t} ms is past the longest trace period cclab takes ({MAX_TIMESTAMP_MS} ms, a year)",
                    i + 1
                ));
            }
            match times.last() {
                Some(&last) if t < last => {
                    return Err(format!("line {}: timestamps must not decrease ({t} after {last})", i + 1))
                }
                Some(&last) if t == last => {
                    let c = counts.last_mut().expect("parallel to times");
                    *c = c.checked_add(1).ok_or_else(|| format!("line {}: too many opportunities at {t} ms", i + 1))?;
                }
                _ => {
                    times.push(t);
                    counts.push(1);
                }
            }
        }
        let period_ms = *times.last().ok_or("the trace has no delivery opportunities")?;
        if period_ms == 0 {
            return Err("the last timestamp must be positive (it is the trace's period)".into());
        }
        let mut before = Vec::with_capacity(times.len());
        let mut acc = 0;
        for c in &counts {
            before.push(acc);
            acc += *c as u64;
        }
        Ok(Trace { times, counts, before, period_ms, total: acc })
    }

    /// Average rate of the trace.
    pub fn mean_rate(&self) -> Rate {
        Rate((self.total * OPPORTUNITY_BYTES * 8 * 1000 / self.period_ms).max(1))
    }

    /// The first opportunity at or after `t` (ns): its time and how many opportunities it holds.
    pub fn next_at_or_after(&self, t: Time) -> (Time, u32) {
        let period = self.period_ms * MS;
        let cycle = t / period;
        let within = t - cycle * period;
        let ms = within.div_ceil(MS);
        // Timestamps are in (0, period]; an offset of 0 in this cycle is the previous
        // cycle's final timestamp, which equals `period`.
        let i = self.times.partition_point(|&x| x < ms.max(1));
        if i < self.times.len() {
            (cycle * period + self.times[i] * MS, self.counts[i])
        } else {
            ((cycle + 1) * period + self.times[0] * MS, self.counts[0])
        }
    }

    /// Opportunities in [0, t).
    fn opportunities_before(&self, t: Time) -> u64 {
        let period = self.period_ms * MS;
        let cycles = t / period;
        let within = (t - cycles * period).div_ceil(MS);
        let i = self.times.partition_point(|&x| x < within);
        let partial = if i < self.times.len() { self.before[i] } else { self.total };
        cycles * self.total + partial
    }

    /// Bits the trace can deliver in [t0, t1).
    pub fn capacity_bits(&self, t0: Time, t1: Time) -> f64 {
        (self.opportunities_before(t1) - self.opportunities_before(t0)) as f64 * (OPPORTUNITY_BYTES * 8) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_parsing_and_lookup() {
        let t = Trace::parse("1\n1\n3\n").unwrap();
        assert_eq!(t.mean_rate(), Rate(3 * 1500 * 8 * 1000 / 3));
        assert_eq!(t.next_at_or_after(0), (MS, 2));
        assert_eq!(t.next_at_or_after(MS + 1), (3 * MS, 1));
        // The trace loops with period 3 ms: the next after 3 ms is 3 + 1 ms.
        assert_eq!(t.next_at_or_after(3 * MS + 1), (4 * MS, 2));
        assert_eq!(t.capacity_bits(0, 6 * MS + 1), 6.0 * 12000.0);
        assert!(Trace::parse("3\n2\n").unwrap_err().contains("must not decrease"));
        assert!(Trace::parse("0\n").is_err());
        assert!(Trace::parse("1\nx\n").unwrap_err().contains("line 2"));
    }
}
