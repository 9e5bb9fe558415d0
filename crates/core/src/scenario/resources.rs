//! The resource model: what a run will hold in memory, estimated from the scenario before
//! anything runs, and the physical ranges no path has. A scenario whose estimate exceeds what
//! the machine can give (or the `CCLAB_MAX_MEMORY` the user set, `--max-memory` on the command
//! line) is refused with an error naming the field that costs the most and the estimate, instead
//! of aborting mid-run with an allocator's "memory allocation of N bytes failed".
//!
//! The estimate counts what grows with the user's numbers: time-series bins (flows × duration /
//! bin), Jain buckets (flows × duration / bucket), the packets a sender may keep in flight (its
//! window, when the scheme's options bound it), the queue (its limit, or what a paced sender
//! pushes beyond the link into an unbounded queue) and the packet log. The per-item sizes are
//! upper estimates of the Rust state plus the columns handed to Python; the fixed cost of a run
//! (tens of MB) is not counted. What no option bounds — an ACK-clocked window growing into an
//! unbounded queue over a long run — is watched while the run goes instead (`rss_bytes`, used
//! by the bindings' progress hook).

use super::{FlowSpec, QueueSize, Scenario, ScenarioError, ScenarioErrors, Source, PACKET_BYTES};
use crate::units::{Bytes, Dur, Rate};

/// One time-series bin of one flow: the accumulator's bin (48 bytes) plus its output row and
/// the DataFrame columns it becomes in Python.
pub const BIN_BYTES: u64 = 176;
/// One Jain bucket: 8 bytes per flow in the accumulator, plus one output row per bucket.
pub const JAIN_FLOW_BYTES: u64 = 8;
pub const JAIN_ROW_BYTES: u64 = 64;
/// One packet held anywhere in the path or a sender's scoreboard: the packet, its sender-side
/// record, its queue slot and its event on the heap.
pub const PACKET_STATE_BYTES: u64 = 160;
/// One record of the packet log, in Rust and again as numpy columns.
pub const RECORD_BYTES: u64 = 128;
/// One row of the sender trace (`--trace`): its fixed columns (about 104 bytes) and a dozen
/// controller variables (8 bytes each), in Rust and again as numpy columns.
pub const TRACE_ROW_BYTES: u64 = 2 * (104 + 12 * 8);
/// The environment variable that caps a run's memory (`--max-memory` sets it), e.g. "4GB".
pub const MAX_MEMORY_ENV: &str = "CCLAB_MAX_MEMORY";

/// What a flow's scheme options say about the packets it may have in flight.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowLimits {
    /// The most packets one flow of the entry keeps in flight, and the option that says so
    /// (e.g. `cwnd`); None when the scheme's window is not bounded by an option.
    pub window: Option<(u64, String)>,
    /// A constant paced rate the flow sends at whatever the path does, and its option.
    pub paced: Option<(Rate, String)>,
}

/// What a run records besides the always-on metrics, as far as memory goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recording {
    /// The packet log (`--log-packets`).
    pub log_packets: bool,
    /// The sender trace's sampling interval in ns (`--trace`; 0: every ACK), None without one.
    pub trace: Option<u64>,
}

/// `true`/`false`: the packet log on or off, no trace.
impl From<bool> for Recording {
    fn from(log_packets: bool) -> Recording {
        Recording { log_packets, trace: None }
    }
}

/// One line of the estimate: the field that causes it, its bytes and what it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub field: String,
    pub bytes: u64,
    pub what: String,
}

/// The memory a run is expected to hold, by cause.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Estimate {
    pub items: Vec<Item>,
}

impl Estimate {
    pub fn total(&self) -> u64 {
        self.items.iter().fold(0u64, |a, i| a.saturating_add(i.bytes))
    }
}

/// A memory limit and where it came from, for the message.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    pub bytes: u64,
    pub source: String,
}

/// Bytes in a form a person reads ("9.6 GB"), decimal units as the scenario's sizes.
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1_000_000 => format!("{:.0} kB", (b / 1e3).ceil()),
        1_000_000..1_000_000_000 => format!("{:.0} MB", b / 1e6),
        1_000_000_000..1_000_000_000_000 => format!("{:.1} GB", b / 1e9),
        _ => format!("{:.1e} bytes", b),
    }
}

fn count(n: u64, width: Dur) -> u64 {
    n.div_ceil(width.0.max(1))
}

/// The estimate for `s`; `limits(spec)` reads a flow entry's scheme options (the scheme
/// registry knows them; core does not).
pub fn estimate(s: &Scenario, limits: &dyn Fn(&FlowSpec) -> FlowLimits, rec: impl Into<Recording>) -> Estimate {
    let rec = rec.into();
    let flows: u64 = s.flows.iter().map(|f| f.count as u64).sum();
    let duration = s.duration.0;
    let mut items = Vec::new();
    let bins = count(duration, s.output.bin);
    items.push(Item {
        field: "output.bin".into(),
        bytes: flows.saturating_mul(bins).saturating_mul(BIN_BYTES),
        what: format!("{bins} time-series bins of {} for each of {flows} flows", s.output.bin),
    });
    let buckets = count(duration, s.output.jain_bucket);
    items.push(Item {
        field: "output.jain_bucket".into(),
        bytes: buckets.saturating_mul(flows.saturating_mul(JAIN_FLOW_BYTES).saturating_add(JAIN_ROW_BYTES)),
        what: format!("{buckets} Jain buckets of {} for {flows} flows", s.output.jain_bucket),
    });
    let link = s.link.rate;
    let mut windows: Option<u64> = Some(0);
    for (i, f) in s.flows.iter().enumerate() {
        let l = limits(f);
        let n = f.count as u64;
        let rwnd = f.rwnd.map(|Bytes(b)| (b.div_ceil(super::MSS), "rwnd".to_string()));
        let window = match (l.window, rwnd) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        match &window {
            Some((pkts, option)) => {
                windows = windows.map(|w| w.saturating_add(n.saturating_mul(*pkts)));
                items.push(Item {
                    field: format!("flows[{i}].{option}"),
                    bytes: n.saturating_mul(*pkts).saturating_mul(PACKET_STATE_BYTES),
                    what: format!("a window of {pkts} packets for each of {n} flows"),
                });
            }
            None => windows = None,
        }
        // A sender paced faster than the link fills an unbounded queue at the difference.
        if let (Some((rate, option)), QueueSize::Infinite) = (&l.paced, s.link.queue) {
            let drain = link.map_or(0, |r| r.0);
            if rate.0 > drain {
                let start = f.start.0.min(duration);
                let bytes = ((rate.0 - drain) as f64 / 8.0) * ((duration - start) as f64 / 1e9);
                let pkts = (bytes / PACKET_BYTES as f64).min(u64::MAX as f64 / 2.0) as u64;
                let pkts = window.as_ref().map_or(pkts, |(w, _)| pkts.min(*w));
                items.push(Item {
                    field: format!("flows[{i}].{option}"),
                    bytes: n.saturating_mul(pkts).saturating_mul(PACKET_STATE_BYTES),
                    what: format!("an unbounded queue filling at {rate} minus the link's rate: up to {pkts} packets"),
                });
            }
        }
    }
    if let Some(queue) = queue_packets(s) {
        let held = windows.map_or(queue, |w| w.min(queue));
        items.push(Item {
            field: "link.queue".into(),
            bytes: held.saturating_mul(PACKET_STATE_BYTES),
            what: format!("a queue of up to {held} packets"),
        });
    }
    if let Some(interval) = rec.trace {
        // At most one row per flow per interval, and never more than one per ACK (at the link's
        // full rate, when it has one; a trace link's rate is only known once its file is read,
        // so its every-ACK trace is not estimated, as its packet log is not).
        let per_interval = (interval > 0).then(|| flows.saturating_mul(count(duration, Dur(interval))));
        let per_ack = link.map(|r| {
            ((r.0 as f64 / (8 * PACKET_BYTES) as f64) * (duration as f64 / 1e9)).min(u64::MAX as f64 / 2.0) as u64
        });
        let rows = match (per_interval, per_ack) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(rows) = rows {
            let what = if interval == 0 {
                format!("the sender trace (--trace, every ACK): about {rows} rows")
            } else {
                format!("the sender trace (--trace, every {}): about {rows} rows", Dur(interval))
            };
            items.push(Item { field: "duration".into(), bytes: rows.saturating_mul(TRACE_ROW_BYTES), what });
        }
    }
    if rec.log_packets {
        if let Some((rate, packets)) = link.map(|rate| (rate, log_records(rate, duration))) {
            items.push(Item {
                field: "duration".into(),
                bytes: packets.saturating_mul(RECORD_BYTES),
                what: format!("the packet log (--log-packets): about {packets} records at {rate}"),
            });
        }
    }
    Estimate { items }
}

/// The packet log's records at most: every data packet the link can deliver in `duration`
/// (ns) at `rate`, and its ACK.
fn log_records(rate: Rate, duration: u64) -> u64 {
    let packets = (rate.0 as f64 / (8 * PACKET_BYTES) as f64) * (duration as f64 / 1e9) * 2.0;
    packets.min(u64::MAX as f64 / 2.0) as u64
}

/// The records worth reserving room for in a run's packet log up front: [`estimate`]'s count
/// at the link's mean rate (None when the rate is unknown before the run), at most what an
/// eighth of the memory available now holds, so that a reservation never asks for more than
/// the machine has.
pub fn log_reservation(rate: Rate, duration: u64) -> usize {
    let cap = available_memory().map_or(0, |m| m / 8 / RECORD_BYTES);
    log_records(rate, duration).min(cap) as usize
}

/// The queue's limit in packets, when finite.
fn queue_packets(s: &Scenario) -> Option<u64> {
    match s.link.queue {
        QueueSize::Infinite => None,
        QueueSize::Packets(n) => Some(n),
        // Packets of any size count against a byte limit; data packets are the ones that fill it.
        QueueSize::Bytes(b) => Some(b.div_ceil(PACKET_BYTES)),
        QueueSize::Bdp(x) => {
            let rtt = 2 * s.link.delay.0 + s.flows.iter().map(|f| f.extra_rtt.0).max().unwrap_or(0);
            let rate = s.link.rate.map_or(0, |r| r.0) as f64;
            Some((x * rate / 8.0 * rtt as f64 / 1e9 / PACKET_BYTES as f64).ceil().min(u64::MAX as f64 / 2.0) as u64)
        }
    }
}

/// Ranges no physical path has: a bin or bucket shorter than one packet's transmission on the
/// link (each would hold at most one packet, and their number explodes).
pub fn check_ranges(s: &Scenario, src: &Source) -> Vec<ScenarioError> {
    let mut errs = Vec::new();
    if let Some(rate) = s.link.rate {
        let packet_time = Dur(rate.serialisation_ns(PACKET_BYTES));
        for (field, width) in [("output.bin", s.output.bin), ("output.jain_bucket", s.output.jain_bucket)] {
            if width.0 > 0 && width < packet_time {
                errs.push(src.error(
                    field,
                    format!(
                        "{width} is shorter than one packet's transmission at link.rate {rate} ({packet_time}): \
                         each would hold at most one packet; use at least {packet_time}"
                    ),
                ));
            }
        }
    }
    errs
}

/// The memory limit: `CCLAB_MAX_MEMORY` when set (or an error naming it when unreadable), else
/// what the machine can give now (the smaller of `MemAvailable` and the cgroup's headroom).
pub fn memory_limit() -> Result<Option<Limit>, String> {
    if let Ok(text) = std::env::var(MAX_MEMORY_ENV) {
        if !text.trim().is_empty() {
            let bytes = match text.trim().parse::<u64>() {
                Ok(b) => b,
                Err(_) => Bytes::parse(&text).map_err(|e| format!("{MAX_MEMORY_ENV} (--max-memory): {e}"))?.0,
            };
            return Ok(Some(Limit { bytes, source: format!("the limit set by --max-memory / {MAX_MEMORY_ENV}") }));
        }
    }
    Ok(available_memory().map(|bytes| Limit { bytes, source: "the memory this machine has available".into() }))
}

/// `MemAvailable` (Linux), lowered to the cgroup v2 headroom (`memory.max − memory.current`)
/// when a container limits us. None where neither can be read.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    let read = |p: &str| std::fs::read_to_string(p).ok().and_then(|t| t.trim().parse::<u64>().ok());
    let cgroup = match (read("/sys/fs/cgroup/memory.max"), read("/sys/fs/cgroup/memory.current")) {
        (Some(max), Some(current)) => Some(max.saturating_sub(current)),
        _ => None,
    };
    match (available, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// This process's resident memory, in bytes (Linux; None elsewhere).
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Refuses a scenario whose estimate exceeds `limit`, naming the costliest field; also the
/// physical ranges of [`check_ranges`]. Returns the estimate.
pub fn check(
    s: &Scenario,
    src: &Source,
    limits: &dyn Fn(&FlowSpec) -> FlowLimits,
    rec: impl Into<Recording>,
    limit: Option<&Limit>,
) -> Result<Estimate, ScenarioErrors> {
    let mut errs = check_ranges(s, src);
    let estimate = estimate(s, limits, rec);
    if let Some(limit) = limit {
        let total = estimate.total();
        if total > limit.bytes {
            let worst = estimate.items.iter().max_by_key(|i| i.bytes).expect("the bins are always counted");
            errs.push(src.error(
                &worst.field,
                format!(
                    "this run would need about {} of memory, more than {} ({}); the most goes to {}: {}",
                    human_bytes(total),
                    human_bytes(limit.bytes),
                    limit.source,
                    worst.what,
                    human_bytes(worst.bytes)
                ),
            ));
        }
    }
    if errs.is_empty() {
        Ok(estimate)
    } else {
        Err(ScenarioErrors(errs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra_link: &str, flow: &str, output: &str, duration: &str) -> Scenario {
        let text = format!(
            "duration = \"{duration}\"\n[link]\nrate = \"12Mbps\"\ndelay = \"20ms\"\n{extra_link}\n\
             [[flows]]\nscheme = \"cubic\"\n{flow}\n[output]\n{output}\n"
        );
        Scenario::parse(&text, "t.toml").unwrap()
    }

    fn none(_: &FlowSpec) -> FlowLimits {
        FlowLimits::default()
    }

    #[test]
    fn bins_and_buckets_scale_with_flows_and_duration() {
        // 2 flows, 10 s, 500 ms bins: 20 bins each; 100 ms buckets: 100 buckets.
        let s = scenario("", "count = 2", "", "10s");
        let e = estimate(&s, &none, false);
        assert_eq!(e.items[0].bytes, 2 * 20 * BIN_BYTES);
        assert_eq!(e.items[1].bytes, 100 * (2 * JAIN_FLOW_BYTES + JAIN_ROW_BYTES));
        // The default queue is unbounded and cubic's window is not an option: nothing else.
        assert_eq!(e.items.len(), 2);
    }

    #[test]
    fn a_one_ns_bin_is_refused_by_range_and_by_memory() {
        let src = Source { file: "t.toml", text: "" };
        let s = scenario("", "", "bin = \"1ns\"", "30s");
        let errs = check(&s, &src, &none, false, Some(&Limit { bytes: 8 << 30, source: "test".into() })).unwrap_err();
        let text = errs.to_string();
        assert!(text.contains("field `output.bin`: 1ns is shorter than one packet's transmission"), "{text}");
        // 30 s / 1 ns bins × 176 bytes = 5.3 TB.
        assert!(text.contains("would need about 5.3e12 bytes"), "{text}");
    }

    #[test]
    fn a_bounded_window_and_queue_are_counted() {
        let cwnd = |_: &FlowSpec| FlowLimits { window: Some((1_000_000_000, "cwnd".into())), paced: None };
        let s = scenario("queue = 100", "", "", "10s");
        let e = estimate(&s, &cwnd, false);
        let window = e.items.iter().find(|i| i.field == "flows[0].cwnd").unwrap();
        assert_eq!(window.bytes, 1_000_000_000 * PACKET_STATE_BYTES);
        let queue = e.items.iter().find(|i| i.field == "link.queue").unwrap();
        assert_eq!(queue.bytes, 100 * PACKET_STATE_BYTES);
        let src = Source { file: "t.toml", text: "" };
        let limit = Limit { bytes: 1 << 30, source: "the limit".into() };
        let errs = check(&s, &src, &cwnd, false, Some(&limit)).unwrap_err().to_string();
        assert!(errs.contains("field `flows[0].cwnd`: this run would need about 160.0 GB"), "{errs}");
        // The smaller of rwnd and the option bounds the window.
        let s = scenario("", "rwnd = \"1448B\"", "", "10s");
        let e = estimate(&s, &cwnd, false);
        assert_eq!(e.items.iter().find(|i| i.field == "flows[0].rwnd").unwrap().bytes, PACKET_STATE_BYTES);
    }

    #[test]
    fn a_paced_sender_faster_than_the_link_fills_an_unbounded_queue() {
        let paced = |_: &FlowSpec| FlowLimits { window: None, paced: Some((Rate(1_000_000_000_000), "rate".into())) };
        let s = scenario("", "", "", "5s");
        let e = estimate(&s, &paced, false);
        let q = e.items.iter().find(|i| i.field == "flows[0].rate").unwrap();
        // (1e12 − 12e6) bit/s / 8 × 5 s / 1500 B ≈ 4.17e8 packets.
        let pkts = ((1e12 - 12e6) / 8.0 * 5.0 / 1500.0) as u64;
        assert_eq!(q.bytes, pkts * PACKET_STATE_BYTES);
    }

    #[test]
    fn the_packet_log_counts_records_at_the_link_rate() {
        let s = scenario("", "", "", "10s");
        let e = estimate(&s, &none, true);
        // 12 Mbit/s = 1000 packets/s; 10 s; data + ACK.
        assert_eq!(e.items.last().unwrap().bytes, 20_000 * RECORD_BYTES);
    }

    #[test]
    fn the_trace_counts_a_row_per_flow_and_interval_at_most_one_per_ack() {
        let s = scenario("", "count = 2", "", "10s");
        let e = estimate(&s, &none, Recording { log_packets: false, trace: Some(10_000_000) });
        // 2 flows × 10 s / 10 ms.
        assert_eq!(e.items.last().unwrap().bytes, 2 * 1000 * TRACE_ROW_BYTES);
        // Every ACK: 12 Mbit/s = 1000 packets/s over 10 s.
        let e = estimate(&s, &none, Recording { log_packets: false, trace: Some(0) });
        assert_eq!(e.items.last().unwrap().bytes, 10_000 * TRACE_ROW_BYTES);
        assert!(e.items.last().unwrap().what.contains("every ACK"));
        // A trace link has no rate before its file is read: its every-ACK trace is not
        // estimated (it was once counted as u64::MAX rows, refusing every such run).
        let text = "duration = \"30s\"\n[link]\ntrace = \"x.trace\"\n[[flows]]\nscheme = \"cubic\"\n";
        let s = Scenario::parse(text, "t.toml").unwrap();
        let e = estimate(&s, &none, Recording { log_packets: true, trace: Some(0) });
        assert!(e.items.iter().all(|i| !i.what.contains("sender trace")), "{:?}", e.items);
        let e = estimate(&s, &none, Recording { log_packets: false, trace: Some(10_000_000) });
        assert_eq!(e.items.last().unwrap().bytes, 3000 * TRACE_ROW_BYTES, "every 10 ms: counted by interval");
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(9_663_676_416), "9.7 GB");
        assert_eq!(human_bytes(1_500_000), "2 MB");
        assert_eq!(human_bytes(10), "1 kB");
    }
}
