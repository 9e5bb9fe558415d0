//! Sender traces: every flow's congestion-control state over time (`--trace`), as columns.
//!
//! Engine-neutral: the simulator and the emulator's cclab-over-UDP senders sample the
//! transport's sender and its controller, the emulator's kernel senders sample TCP_INFO, and all
//! of them append [`Sample`]s here. The columns, their units and meanings are declared once, in
//! `schema::TRACE`; the controller's own variables (`CongestionControl::snapshot`) become
//! `cc_<name>` columns, NaN in the rows of flows whose controller has no such variable.
//!
//! Sampling ([`Sampler`]): on the sender's ACK processing, at most one sample per flow per
//! interval (the first ACK at or after each multiple of the interval), or every ACK with an
//! interval of 0. Memory is bounded by flows × duration / interval (the resource model counts
//! it: `scenario::resources::TRACE_ROW_BYTES`).

use crate::time::Time;
use std::sync::Mutex;

/// The default sampling interval: the emulator's TCP_INFO readings are this far apart too, so
/// the two engines' traces have the same resolution.
pub const DEFAULT_INTERVAL_NS: Time = 10_000_000;

/// Linux's TCP congestion states (`enum tcp_ca_state`, include/uapi/linux/tcp.h), indexed by
/// value: what the trace's `ca_state` column holds for both engines' senders.
pub const CA_STATES: [&str; 5] = ["open", "disorder", "cwr", "recovery", "loss"];

/// The name of Linux's congestion state `value` ("unknown" past the enum's end).
pub fn ca_state_name(value: u8) -> &'static str {
    CA_STATES.get(value as usize).copied().unwrap_or("unknown")
}

/// Prefix of the columns that hold a controller's own variables.
pub const VAR_PREFIX: &str = "cc_";

/// Controller variables the fixed columns already hold, in the same unit (bytes): left out.
const RESTATED: [&str; 2] = ["cwnd", "ssthresh"];

/// One reading of one flow's sender.
#[derive(Clone, Debug, Default)]
pub struct Sample<'a> {
    pub flow: u32,
    /// ns since the start of the run.
    pub t: Time,
    /// The controller's mode (e.g. "probe_bw", "slow_start"; for kernel flows the TCP
    /// congestion-avoidance state: "open", "disorder", "cwr", "recovery", "loss").
    pub mode: &'static str,
    /// The sender's TCP congestion state, one of [`CA_STATES`] ("" where unknown).
    pub ca_state: &'static str,
    /// Congestion window and bytes in flight.
    pub cwnd: u64,
    pub in_flight: u64,
    /// Bytes/s; None when the sender is not paced.
    pub pacing_rate: Option<f64>,
    /// Smoothed and minimum RTT, ns; None before the first RTT sample.
    pub srtt: Option<Time>,
    pub min_rtt: Option<Time>,
    /// The last delivery-rate sample, bytes/s; None before the first.
    pub delivery_rate: Option<f64>,
    /// Slow-start threshold in bytes: `Some(f64::INFINITY)` while unset, None where the
    /// controller has none.
    pub ssthresh: Option<f64>,
    /// The receive window the sender is held to, bytes (`u64::MAX`: none); None if unknown.
    pub rwnd: Option<u64>,
    /// How long the receive window alone has kept data back since the start, ns (Linux's
    /// tcpi_rwnd_limited); None if unknown.
    pub rwnd_limited: Option<Time>,
    /// The controller's named variables (`cc_<name>` columns; `cwnd` and `ssthresh`, which
    /// the fixed columns hold, are left out).
    pub vars: &'a [(&'static str, f64)],
}

/// The trace of a run, column by column (see `schema::TRACE` for units).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CcTrace {
    pub flow: Vec<u32>,
    /// ns since the start of the run.
    pub t: Vec<u64>,
    pub mode: Vec<&'static str>,
    pub ca_state: Vec<&'static str>,
    /// Bytes.
    pub cwnd: Vec<u64>,
    pub in_flight: Vec<u64>,
    /// Mbit/s; NaN when the sender is not paced.
    pub pacing_rate_mbps: Vec<f64>,
    /// ms; NaN before the first RTT sample.
    pub srtt_ms: Vec<f64>,
    pub min_rtt_ms: Vec<f64>,
    /// Mbit/s; NaN before the first delivery-rate sample.
    pub delivery_rate_mbps: Vec<f64>,
    /// Bytes; inf while unset, NaN where the controller has none.
    pub ssthresh: Vec<f64>,
    /// Bytes; inf for none, NaN where unknown.
    pub rwnd_bytes: Vec<f64>,
    /// ms, cumulative; NaN where unknown.
    pub rwnd_limited_ms: Vec<f64>,
    /// The controllers' variables by name (without the prefix), in order of first
    /// appearance; NaN in rows whose controller does not report that name.
    pub vars: Vec<(&'static str, Vec<f64>)>,
}

fn mbps(bytes_per_s: Option<f64>) -> f64 {
    bytes_per_s.map_or(f64::NAN, |r| r * 8.0 / 1e6)
}

fn ms(t: Option<Time>) -> f64 {
    t.map_or(f64::NAN, |t| t as f64 / 1e6)
}

impl CcTrace {
    pub fn len(&self) -> usize {
        self.t.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    /// A controller variable's column.
    pub fn var(&self, name: &str) -> Option<&[f64]> {
        self.vars.iter().find(|(n, _)| *n == name).map(|(_, c)| c.as_slice())
    }

    /// Row indices of one flow, in time order.
    pub fn rows_of(&self, flow: u32) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(move |&i| self.flow[i] == flow)
    }

    /// Appends one row.
    pub fn push(&mut self, s: &Sample) {
        let n = self.len();
        self.flow.push(s.flow);
        self.t.push(s.t);
        self.mode.push(s.mode);
        self.ca_state.push(s.ca_state);
        self.cwnd.push(s.cwnd);
        self.in_flight.push(s.in_flight);
        self.pacing_rate_mbps.push(mbps(s.pacing_rate));
        self.srtt_ms.push(ms(s.srtt));
        self.min_rtt_ms.push(ms(s.min_rtt));
        self.delivery_rate_mbps.push(mbps(s.delivery_rate));
        self.ssthresh.push(s.ssthresh.unwrap_or(f64::NAN));
        self.rwnd_bytes.push(s.rwnd.map_or(f64::NAN, |w| if w == u64::MAX { f64::INFINITY } else { w as f64 }));
        self.rwnd_limited_ms.push(ms(s.rwnd_limited));
        for &(name, value) in s.vars.iter().filter(|(name, _)| !RESTATED.contains(name)) {
            let col = match self.vars.iter().position(|(c, _)| *c == name) {
                Some(i) => &mut self.vars[i].1,
                None => {
                    self.vars.push((name, vec![f64::NAN; n]));
                    &mut self.vars.last_mut().expect("just pushed").1
                }
            };
            // A name given twice in one sample keeps its first value.
            if col.len() == n {
                col.push(value);
            }
        }
        for (_, col) in &mut self.vars {
            if col.len() == n {
                col.push(f64::NAN);
            }
        }
    }

    /// Appends another trace's rows (e.g. one flow's, collected on its own thread); rows are
    /// then sorted by [`CcTrace::sort`].
    pub fn extend(&mut self, other: CcTrace) {
        let n = self.len();
        let m = other.len();
        self.flow.extend(other.flow);
        self.t.extend(other.t);
        self.mode.extend(other.mode);
        self.ca_state.extend(other.ca_state);
        self.cwnd.extend(other.cwnd);
        self.in_flight.extend(other.in_flight);
        self.pacing_rate_mbps.extend(other.pacing_rate_mbps);
        self.srtt_ms.extend(other.srtt_ms);
        self.min_rtt_ms.extend(other.min_rtt_ms);
        self.delivery_rate_mbps.extend(other.delivery_rate_mbps);
        self.ssthresh.extend(other.ssthresh);
        self.rwnd_bytes.extend(other.rwnd_bytes);
        self.rwnd_limited_ms.extend(other.rwnd_limited_ms);
        for (name, col) in other.vars {
            match self.vars.iter().position(|(c, _)| *c == name) {
                Some(i) => self.vars[i].1.extend(col),
                None => {
                    let mut v = vec![f64::NAN; n];
                    v.extend(col);
                    self.vars.push((name, v));
                }
            }
        }
        for (_, col) in &mut self.vars {
            col.resize(n + m, f64::NAN);
        }
    }

    /// Orders the rows by time, then flow (stable): traces merged from several threads read
    /// as one run's.
    pub fn sort(&mut self) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by_key(|&i| (self.t[i], self.flow[i]));
        fn permute<T: Copy>(v: &mut Vec<T>, order: &[usize]) {
            *v = order.iter().map(|&i| v[i]).collect();
        }
        permute(&mut self.flow, &order);
        permute(&mut self.t, &order);
        permute(&mut self.mode, &order);
        permute(&mut self.ca_state, &order);
        permute(&mut self.cwnd, &order);
        permute(&mut self.in_flight, &order);
        permute(&mut self.pacing_rate_mbps, &order);
        permute(&mut self.srtt_ms, &order);
        permute(&mut self.min_rtt_ms, &order);
        permute(&mut self.delivery_rate_mbps, &order);
        permute(&mut self.ssthresh, &order);
        permute(&mut self.rwnd_bytes, &order);
        permute(&mut self.rwnd_limited_ms, &order);
        for (_, col) in &mut self.vars {
            permute(col, &order);
        }
    }
}

/// When each flow is next sampled.
#[derive(Clone, Debug)]
pub struct Sampler {
    interval: Time,
    next: Vec<Time>,
}

impl Sampler {
    /// Samples at most once per `interval` ns per flow (0: every ACK).
    pub fn new(interval: Time) -> Sampler {
        Sampler { interval, next: Vec::new() }
    }

    /// Whether flow `flow` is due a sample at `t`; if so, the next one is due at the next
    /// multiple of the interval after `t` (a grid shared by every flow, so flows' samples line up).
    #[inline]
    pub fn due(&mut self, flow: u32, t: Time) -> bool {
        let f = flow as usize;
        if f >= self.next.len() {
            self.next.resize(f + 1, 0);
        }
        if t < self.next[f] {
            return false;
        }
        // Interval 0 (every ACK) leaves the next due time at 0.
        if let Some(k) = t.checked_div(self.interval) {
            self.next[f] = (k + 1) * self.interval;
        }
        true
    }
}

/// `cc_<name>` as a `'static` column name. Names are the controllers' own (a fixed, small
/// set), so each distinct one is allocated once for the life of the process.
pub fn var_column(name: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let full = format!("{VAR_PREFIX}{name}");
    if let Some(n) = names.iter().find(|n| **n == full) {
        return n;
    }
    let leaked: &'static str = Box::leak(full.into_boxed_str());
    names.push(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample<'a>(flow: u32, t: Time, vars: &'a [(&'static str, f64)]) -> Sample<'a> {
        Sample { flow, t, mode: "m", cwnd: 10, vars, ..Default::default() }
    }

    #[test]
    fn columns_stay_aligned_when_controllers_differ() {
        let mut tr = CcTrace::default();
        tr.push(&sample(0, 1, &[("a", 1.0)]));
        tr.push(&sample(1, 2, &[("b", 2.0)]));
        tr.push(&sample(0, 3, &[("a", 3.0), ("b", 4.0)]));
        let a = tr.var("a").unwrap();
        let b = tr.var("b").unwrap();
        assert_eq!(a.len(), 3);
        assert_eq!(b.len(), 3);
        assert_eq!((a[0], a[2]), (1.0, 3.0));
        assert!(a[1].is_nan() && b[0].is_nan());
        assert_eq!((b[1], b[2]), (2.0, 4.0));
        assert!(tr.srtt_ms.iter().all(|x| x.is_nan()), "no RTT given: NaN, not 0");
    }

    #[test]
    fn merged_traces_sort_by_time_and_keep_their_variables() {
        let mut a = CcTrace::default();
        a.push(&sample(0, 10, &[("x", 1.0)]));
        a.push(&sample(0, 30, &[("x", 3.0)]));
        let mut b = CcTrace::default();
        b.push(&sample(1, 20, &[("y", 2.0)]));
        a.extend(b);
        a.sort();
        assert_eq!(a.t, vec![10, 20, 30]);
        assert_eq!(a.flow, vec![0, 1, 0]);
        let x = a.var("x").unwrap();
        assert_eq!((x[0], x[2]), (1.0, 3.0));
        assert!(x[1].is_nan());
        assert_eq!(a.var("y").unwrap()[1], 2.0);
    }

    #[test]
    fn sampler_takes_the_first_ack_of_each_interval() {
        let mut s = Sampler::new(10);
        let taken: Vec<Time> = [0, 3, 9, 10, 11, 25, 29, 30].into_iter().filter(|&t| s.due(0, t)).collect();
        assert_eq!(taken, vec![0, 10, 25, 30]);
        // Flows have their own schedules.
        assert!(s.due(3, 29));
        let mut every = Sampler::new(0);
        assert!([5, 5, 6].into_iter().all(|t| every.due(0, t)));
    }

    #[test]
    fn var_columns_are_interned() {
        let a = var_column("bw");
        let b = var_column("bw");
        assert_eq!(a, "cc_bw");
        assert!(std::ptr::eq(a, b));
    }
}
