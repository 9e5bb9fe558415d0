//! Flow-completion times of request workloads (scenario/workload.rs) and their slowdown.
//!
//! A request's FCT runs from its arrival at the sending application to the acknowledgement of
//! its last byte at the sender (the sender-side view of one request-response exchange, so an
//! idle path's FCT is the transfer time plus one round trip). Slowdown = FCT / (size / link
//! rate plus base RTT), Bundler's definition (`graphs/overview-benefits.Rnw`: size at 96 Mbit/s
//! plus one RTT), so an uncontended request has a slowdown near 1. Buckets as Bundler's plots:
//! small below 10 KB, medium 10 KB–1 MB, large above 1 MB. Percentiles by nearest rank
//! ([`super::nearest_rank`]).

use super::nearest_rank;

/// One request as an engine saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Request id, unique in the run (in arrival order).
    pub id: u64,
    /// The connection (flow id) that carried it.
    pub flow: u32,
    /// Payload bytes.
    pub size: u64,
    /// Arrival at the sending application, ns.
    pub start: u64,
    /// Acknowledgement of its last byte, ns; `None` if the run ended first.
    pub end: Option<u64>,
}

/// The size buckets, by code.
pub const BUCKETS: [&str; 3] = ["small", "medium", "large"];
/// Upper bounds of the small and medium buckets, bytes (small: size < 10 KB; medium: ≤ 1 MB).
pub const SMALL_BELOW: u64 = 10_000;
pub const MEDIUM_UP_TO: u64 = 1_000_000;

/// The bucket code of a size.
pub fn bucket(size: u64) -> u8 {
    if size < SMALL_BELOW {
        0
    } else if size <= MEDIUM_UP_TO {
        1
    } else {
        2
    }
}

/// The ideal completion time, ns: the transfer at the link rate plus one base RTT.
pub fn ideal_ns(size: u64, rate_bytes_per_sec: f64, base_rtt: u64) -> f64 {
    size as f64 / rate_bytes_per_sec * 1e9 + base_rtt as f64
}

/// One row of the `requests` table.
#[derive(Clone, Debug, PartialEq)]
pub struct FctRow {
    pub request: Request,
    pub bucket: u8,
    /// NaN when not completed.
    pub fct_ms: f64,
    pub slowdown: f64,
}

/// Every request's FCT and slowdown; `base_rtt(flow)` is the connection's base RTT, ns.
pub fn rows(requests: &[Request], rate_bytes_per_sec: f64, base_rtt: &dyn Fn(u32) -> u64) -> Vec<FctRow> {
    requests
        .iter()
        .map(|r| {
            let fct = r.end.map(|e| (e - r.start) as f64);
            FctRow {
                request: *r,
                bucket: bucket(r.size),
                fct_ms: fct.map_or(f64::NAN, |f| f / 1e6),
                slowdown: fct.map_or(f64::NAN, |f| f / ideal_ns(r.size, rate_bytes_per_sec, base_rtt(r.flow))),
            }
        })
        .collect()
}

/// One row of the `fct` table: a size bucket's (or all requests') statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct FctSummary {
    /// "small", "medium", "large" or "all".
    pub bucket: &'static str,
    pub requests: u64,
    pub completed: u64,
    pub fct_median_ms: f64,
    pub fct_p99_ms: f64,
    pub slowdown_median: f64,
    pub slowdown_p99: f64,
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[nearest_rank(sorted.len() as u64, q) as usize]
}

/// Per-bucket medians and p99 of completed requests, then the row over all of them.
pub fn summary(rows: &[FctRow]) -> Vec<FctSummary> {
    let one = |name: &'static str, pick: &dyn Fn(&FctRow) -> bool| {
        let chosen: Vec<&FctRow> = rows.iter().filter(|r| pick(r)).collect();
        let done: Vec<&&FctRow> = chosen.iter().filter(|r| r.request.end.is_some()).collect();
        let mut fct: Vec<f64> = done.iter().map(|r| r.fct_ms).collect();
        let mut slow: Vec<f64> = done.iter().map(|r| r.slowdown).collect();
        fct.sort_by(f64::total_cmp);
        slow.sort_by(f64::total_cmp);
        FctSummary {
            bucket: name,
            requests: chosen.len() as u64,
            completed: done.len() as u64,
            fct_median_ms: percentile(&fct, 50.0),
            fct_p99_ms: percentile(&fct, 99.0),
            slowdown_median: percentile(&slow, 50.0),
            slowdown_p99: percentile(&slow, 99.0),
        }
    };
    let mut out: Vec<FctSummary> =
        BUCKETS.iter().enumerate().map(|(code, name)| one(name, &|r: &FctRow| r.bucket as usize == code)).collect();
    out.push(one("all", &|_| true));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slowdown_divides_by_transfer_time_plus_base_rtt() {
        // 12e6 B/s (96 Mbit/s), 50 ms: a 1.2 MB request ideally takes 100 + 50 ms.
        let req = |id, size, end| Request { id, flow: 0, size, start: 1_000, end };
        let r = rows(&[req(0, 1_200_000, Some(1_000 + 300_000_000)), req(1, 5_000, None)], 12e6, &|_| 50_000_000);
        assert_eq!(r[0].bucket, 2);
        assert!((r[0].fct_ms - 300.0).abs() < 1e-9);
        assert!((r[0].slowdown - 2.0).abs() < 1e-9);
        assert!(r[1].fct_ms.is_nan() && r[1].bucket == 0);
        let s = summary(&r);
        assert_eq!(s.iter().map(|b| b.bucket).collect::<Vec<_>>(), ["small", "medium", "large", "all"]);
        assert_eq!((s[0].requests, s[0].completed), (1, 0));
        assert!(s[0].slowdown_median.is_nan());
        assert_eq!((s[3].requests, s[3].completed), (2, 1));
        assert!((s[2].slowdown_p99 - 2.0).abs() < 1e-9);
    }

    #[test]
    fn buckets_split_at_10_kb_and_1_mb() {
        assert_eq!([bucket(9_999), bucket(10_000), bucket(1_000_000), bucket(1_000_001)], [0, 1, 1, 2]);
    }
}
