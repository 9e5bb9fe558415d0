//! The streaming accumulator behind every metric cclab reports (definitions in `metrics.rs`).
//!
//! Records may come in any order (the simulator emits them as packets complete, the emulator and
//! the log importers need not), so every piece of state is a sum, a count, a min or a max,
//! kept in integers: the output depends on the multiset of records only, not on their order.
//! Memory never grows with the number of packets, and it is bounded independently of the
//! simulated time (issue 12: thousands of flows for hours):
//! - the time series keeps at most [`SERIES_BUDGET`] bins over all flows: when a run outgrows
//!   it, the bin width doubles (pairs of bins merge exactly; the width reached depends only on
//!   the last bin touched, so not on the records' order) and [`Metrics::series_bin`] says which
//!   width the rows have;
//! - the Jain buckets stream when the engine delivers records in arrival order
//!   ([`MetricsConfig::arrivals_ordered`], the simulator): a bucket is closed as soon as a later
//!   delivery is seen, holding one counter per flow; otherwise (imports, the emulator) every
//!   flow's buckets are kept to the end, as the records may come in any order;
//! - the delay histograms switch from exact to log-linear past a per-flow budget (`histogram.rs`).
//!
//! Resolution: throughput, loss and mean delays are exact (integer bytes and ns). Order
//! statistics — minimum, p95 and queueing p95 — come from histograms of the delay floored to
//! whole µs (see `histogram.rs`), so they are exact for µs-resolution logs and at most 1 µs
//! below the true value for ns-resolution ones. The minimum is taken from the same histogram on
//! purpose: reporting an exact ns minimum next to a floored p95 could show p95 < min.

use super::histogram::DelayHist;

/// Time-series bins (over all flows) the accumulator keeps before doubling the bin width:
/// ~100 MB at 48 bytes a bin, 1000 s of 500 ms bins for 4000 flows.
pub const SERIES_BUDGET: usize = 1 << 21;
use super::{FlowSummary, JainRow, Metrics, MetricsConfig, Schedule, SeriesRow};
use crate::record::{Fate, PacketKind, PacketRecord, NEVER};

const P95: f64 = 95.0;

/// One flow in one time-series bin.
#[derive(Clone, Copy, Debug, Default)]
struct Bin {
    delay_sum_ns: u128,
    sent_bytes: u64,
    delivered_bytes: u64,
    delivered: u64,
    delay_max_ns: u64,
}

impl Bin {
    /// Adds `o`'s records to this bin's.
    fn merge(&mut self, o: &Bin) {
        self.delay_sum_ns += o.delay_sum_ns;
        self.sent_bytes += o.sent_bytes;
        self.delivered_bytes += o.delivered_bytes;
        self.delivered += o.delivered;
        self.delay_max_ns = self.delay_max_ns.max(o.delay_max_ns);
    }
}

/// The additive part of a flow's state; the total is the merge of all flows'.
#[derive(Clone, Copy, Debug)]
struct Counts {
    packets_sent: u64,
    bytes_sent: u64,
    packets_delivered: u64,
    bytes_delivered: u64,
    packets_dropped: u64,
    retransmissions: u64,
    /// NEVER until a delivery is seen.
    first_delivery: u64,
    last_delivery: u64,
    /// Bytes delivered at `first_delivery` (the largest packet on a tie, so that the value does
    /// not depend on the records' order): served before the delivery span began.
    first_delivery_bytes: u64,
    /// NEVER until a send is seen; the span of sends schedules a flow without a schedule.
    first_sent: u64,
    last_sent: u64,
    delay_sum_ns: u128,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            packets_sent: 0,
            bytes_sent: 0,
            packets_delivered: 0,
            bytes_delivered: 0,
            packets_dropped: 0,
            retransmissions: 0,
            first_delivery: NEVER,
            last_delivery: 0,
            first_delivery_bytes: 0,
            first_sent: NEVER,
            last_sent: 0,
            delay_sum_ns: 0,
        }
    }
}

impl Counts {
    fn merge(&mut self, o: &Counts) {
        self.packets_sent += o.packets_sent;
        self.bytes_sent += o.bytes_sent;
        self.packets_delivered += o.packets_delivered;
        self.bytes_delivered += o.bytes_delivered;
        self.packets_dropped += o.packets_dropped;
        self.retransmissions += o.retransmissions;
        self.note_first_delivery(o.first_delivery, o.first_delivery_bytes);
        self.last_delivery = self.last_delivery.max(o.last_delivery);
        self.first_sent = self.first_sent.min(o.first_sent);
        self.last_sent = self.last_sent.max(o.last_sent);
        self.delay_sum_ns += o.delay_sum_ns;
    }

    fn note_first_delivery(&mut self, t: u64, bytes: u64) {
        if t < self.first_delivery {
            (self.first_delivery, self.first_delivery_bytes) = (t, bytes);
        } else if t == self.first_delivery {
            self.first_delivery_bytes = self.first_delivery_bytes.max(bytes);
        }
    }

    /// `p95`, `min` and `queueing_p95` in µs, from the matching histograms.
    fn summary(&self, flow: Option<u32>, p95: Option<u64>, min: Option<u64>, q95: Option<u64>) -> FlowSummary {
        let delivered = self.packets_delivered > 0;
        let span = if delivered { self.last_delivery - self.first_delivery } else { 0 };
        let us_ms = |v: Option<u64>| v.map_or(f64::NAN, |us| us as f64 / 1e3);
        FlowSummary {
            flow,
            packets_sent: self.packets_sent,
            packets_delivered: self.packets_delivered,
            packets_dropped: self.packets_dropped,
            bytes_sent: self.bytes_sent,
            bytes_delivered: self.bytes_delivered,
            retransmissions: self.retransmissions,
            first_delivery: if delivered { self.first_delivery } else { 0 },
            last_delivery: self.last_delivery,
            throughput_mbps: if self.packets_delivered >= 2 && span > 0 {
                mbps(self.bytes_delivered, span)
            } else {
                0.0
            },
            delay_p95_ms: us_ms(p95),
            delay_mean_ms: if delivered {
                self.delay_sum_ns as f64 / self.packets_delivered as f64 / 1e6
            } else {
                f64::NAN
            },
            delay_min_ms: us_ms(min),
            queueing_p95_ms: us_ms(q95),
            congestion_events: None,
            loss_burstiness: f64::NAN,
            // In-flight bytes count as not delivered, as in the Pantheon (ingress vs egress).
            loss_pct: if self.bytes_sent > 0 {
                100.0 * (1.0 - self.bytes_delivered as f64 / self.bytes_sent as f64)
            } else {
                0.0
            },
        }
    }
}

/// `FlowAcc::win_hi` while no bin is held inline.
const NO_WINDOW: usize = usize::MAX;

/// What a record updates comes first (`MetricsAccumulator::prefetch_flow` asks for those lines),
/// and each flow starts on a cache line, so that it is the fewest lines.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct FlowAcc {
    counts: Counts,
    /// The flow's two newest bins, `win_hi - 1` and `win_hi`, kept inline rather than in
    /// `bins`: nearly every record lands in one of them (its arrival's bin or, when its delay
    /// crossed a bin edge, the one before), and a record's update then stays within the lines
    /// `MetricsAccumulator::prefetch_flow` asks for, where the series' own allocation was a
    /// cache miss per record at thousands of flows. Merged into `bins` when the window moves
    /// and before anything reads the bins; the sums and maxima merge exactly.
    win: [Bin; 2],
    win_hi: usize,
    /// The lowest bin a record touched (usize::MAX before any).
    first_bin: usize,
    hist: DelayHist,
    /// Time-series bins from bin 0; `bins.len() - 1` is the last active bin. The window's two
    /// entries here hold only what was merged into them.
    bins: Vec<Bin>,
    /// Delivered bytes per Jain bucket, from bucket 0.
    jain: Vec<u64>,
}

impl FlowAcc {
    fn new(hist_budget: usize) -> Self {
        FlowAcc {
            counts: Counts::default(),
            win: [Bin::default(); 2],
            win_hi: NO_WINDOW,
            bins: Vec::new(),
            first_bin: usize::MAX,
            jain: Vec::new(),
            hist: DelayHist::with_budget(hist_budget),
        }
    }

    /// Bin `i`, below `cap` (the bins a flow may hold before the width doubles): in the
    /// window, or else in `bins`.
    #[inline]
    fn bin(&mut self, i: usize, cap: usize) -> &mut Bin {
        self.first_bin = self.first_bin.min(i);
        let hi = self.win_hi;
        if hi != NO_WINDOW && i <= hi {
            if i == hi {
                return &mut self.win[1];
            }
            if i + 1 == hi {
                return &mut self.win[0];
            }
            // Older than the window: `bins` already reaches past it.
            return &mut self.bins[i];
        }
        self.advance(i, cap);
        &mut self.win[1]
    }

    /// Moves the window up to end at bin `i` (above it, or none yet), merging what leaves it.
    #[inline(never)]
    fn advance(&mut self, i: usize, cap: usize) {
        // Room for bin i in `bins`, so that a later record older than the window finds its bin.
        self.reserve(i, cap);
        if self.win_hi != NO_WINDOW && i == self.win_hi + 1 {
            // The usual step: the newest bin becomes the one before.
            if let Some(k) = self.win_hi.checked_sub(1) {
                self.bins[k].merge(&self.win[0]);
            }
            self.win = [self.win[1], Bin::default()];
        } else {
            self.flush_window();
            self.win = [Bin::default(); 2];
        }
        self.win_hi = i;
    }

    /// Merges the window into `bins` and empties it.
    fn flush_window(&mut self) {
        let hi = self.win_hi;
        if hi == NO_WINDOW {
            return;
        }
        self.bins[hi].merge(&self.win[1]);
        if let Some(k) = hi.checked_sub(1) {
            self.bins[k].merge(&self.win[0]);
        }
        self.win_hi = NO_WINDOW;
    }

    /// Grows `bins` to hold bin `i`, below `cap`.
    ///
    /// The bins grow by doubling up to the cap and never past it, and halving merges them in
    /// place: each flow's bins are one allocation of at most `cap` that is reused after every
    /// doubling of the width. (A Vec's own growth went to 512 bins for CoreScale's cap of 419,
    /// and a freshly collected Vec after each halving grew again.)
    fn reserve(&mut self, i: usize, cap: usize) {
        if i >= self.bins.len() {
            if i >= self.bins.capacity() {
                let want = (2 * self.bins.capacity()).clamp(i + 1, cap.max(i + 1));
                self.bins.reserve_exact(want - self.bins.len());
            }
            self.bins.resize(i + 1, Bin::default());
        }
    }

    /// Merges bins pairwise: the series at twice the width, exactly.
    fn halve_bins(&mut self) {
        self.flush_window();
        // In place: pair k is read (bins 2k, 2k + 1) before bin k, at or below it, is written.
        let n = self.bins.len().div_ceil(2);
        for k in 0..n {
            let mut a = self.bins[2 * k];
            a.merge(&self.bins.get(2 * k + 1).copied().unwrap_or_default());
            self.bins[k] = a;
        }
        self.bins.truncate(n);
        if self.first_bin != usize::MAX {
            self.first_bin /= 2;
        }
    }
}

/// The Jain buckets being streamed (arrival-ordered records): the open bucket's bytes per flow.
#[derive(Clone, Debug, Default)]
struct JainStream {
    /// The open bucket, once a delivery has been seen.
    open: Option<usize>,
    bytes: Vec<u64>,
    /// Flows with bytes in the open bucket, to reset only those.
    touched: Vec<u32>,
    rows: Vec<JainRow>,
    previous: Option<Vec<usize>>,
}

/// Bits over a span in ns, as Mbit/s (bits/ns = Gbit/s).
fn mbps(bytes: u64, span_ns: u64) -> f64 {
    bytes as f64 * 8000.0 / span_ns as f64
}

fn ns_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// numpy.median: the mean of the two middle values for an even count.
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Accumulates packet records into [`Metrics`].
#[derive(Clone, Debug)]
pub struct MetricsAccumulator {
    cfg: MetricsConfig,
    flows: Vec<FlowAcc>,
    /// Each flow's histogram budget.
    hist_budget: usize,
    /// The series' bins are `cfg.bin << series_shift` wide.
    series_shift: u32,
    /// Bins per flow before the width doubles.
    series_cap: usize,
    /// Streaming Jain state, when records come in arrival order and every flow has a schedule.
    stream: Option<JainStream>,
    /// The last [`HIST_LAG`] delays (flow, µs) not yet counted in their histograms: each is
    /// counted that many records after its counter was asked for (`DelayHist::prefetch`), so
    /// the counter's cache miss overlaps other work instead of stalling this record. Counted
    /// before anything reads a histogram (`settle`).
    lagging: [(u32, u64); HIST_LAG],
    lag_at: usize,
}

/// Records between asking for a histogram counter and updating it: a few records are a few
/// hundred ns of work at the simulator's rate, longer than a miss to memory takes.
const HIST_LAG: usize = 4;
/// No delay waits in this slot of `lagging`.
const NO_FLOW: u32 = u32::MAX;

impl MetricsAccumulator {
    /// Panics if `cfg.bin` or `cfg.jain_bucket` is zero.
    pub fn new(cfg: MetricsConfig) -> Self {
        assert!(cfg.bin > 0, "metrics: time-series bin must be > 0 ns");
        assert!(cfg.jain_bucket > 0, "metrics: Jain bucket must be > 0 ns");
        let hist_budget = DelayHist::flow_budget(cfg.n_flows);
        let flows = (0..cfg.n_flows).map(|_| FlowAcc::new(hist_budget)).collect();
        let series_cap = (SERIES_BUDGET / cfg.n_flows.max(1)).max(64);
        // Streaming needs each flow's schedule up front (a derived one is known only at the end).
        let stream = (cfg.arrivals_ordered && cfg.schedule.len() >= cfg.n_flows)
            .then(|| JainStream { bytes: vec![0; cfg.n_flows], ..JainStream::default() });
        MetricsAccumulator {
            cfg,
            flows,
            hist_budget,
            series_shift: 0,
            series_cap,
            stream,
            lagging: [(NO_FLOW, 0); HIST_LAG],
            lag_at: 0,
        }
    }

    /// The series bin of time `t`, doubling the bin width until it fits the cap.
    #[inline]
    fn series_index(&mut self, t: u64) -> usize {
        loop {
            let i = (t.saturating_sub(self.cfg.origin) / (self.cfg.bin << self.series_shift)) as usize;
            if i < self.series_cap {
                return i;
            }
            self.series_shift += 1;
            for f in &mut self.flows {
                f.halve_bins();
            }
        }
    }

    /// Closes the open Jain bucket and the empty ones up to (not including) bucket `upto`.
    fn close_jain(&mut self, upto: usize) {
        let Some(st) = &mut self.stream else { return };
        let Some(open) = st.open else { return };
        let schedules: Vec<Option<Schedule>> = self.cfg.schedule.iter().copied().map(Some).collect();
        for k in open..upto {
            let bytes = &st.bytes;
            let row = jain_row(k, &self.cfg, &schedules, &mut st.previous, |f| bytes.get(f).copied().unwrap_or(0));
            st.rows.push(row);
            if k == open {
                for &f in &st.touched {
                    st.bytes[f as usize] = 0;
                }
                st.touched.clear();
            }
        }
        st.open = Some(upto);
    }

    #[inline]
    pub fn add(&mut self, r: &PacketRecord) {
        if r.kind == PacketKind::Data {
            self.add_data(r.flow, r.size, r.sent, r.arrived, r.fate, r.retransmission);
        }
    }

    /// One data packet; the column-wise entry point for [`super::analyze`].
    #[inline]
    pub(super) fn add_data(&mut self, flow: u32, size: u32, sent: u64, arrived: u64, fate: Fate, retx: bool) {
        let f = flow as usize;
        if f >= self.flows.len() {
            let budget = self.hist_budget;
            self.flows.resize_with(f + 1, || FlowAcc::new(budget));
            // A flow beyond the configured ones has no schedule: buckets must wait for the end.
            if let Some(st) = self.stream.take() {
                assert!(st.open.is_none(), "metrics: flow {f} appeared after Jain buckets were closed");
            }
        }
        let (origin, jain_bucket) = (self.cfg.origin, self.cfg.jain_bucket);
        // Times before the origin land in the first bin rather than wrapping around.
        let index = |t: u64, width: u64| (t.saturating_sub(origin) / width) as usize;
        let delivered = fate == Fate::Delivered && arrived != NEVER;
        // Widen the bins first for the later of the two times, so both use the same width.
        self.series_index(if delivered { sent.max(arrived) } else { sent });
        let width = self.cfg.bin << self.series_shift;
        let (sent_bin, arrived_bin) = (index(sent, width), if delivered { index(arrived, width) } else { 0 });
        if let Some(st) = &self.stream {
            if delivered {
                let j = index(arrived, jain_bucket);
                match st.open {
                    None => self.stream.as_mut().expect("checked").open = Some(j),
                    Some(open) if j > open => self.close_jain(j),
                    Some(open) => assert!(
                        j == open,
                        "metrics: records promised in arrival order, but one arrived in Jain bucket {j} after bucket {open}"
                    ),
                }
            }
        }
        let cap = self.series_cap;
        let acc = &mut self.flows[f];
        let size = size as u64;
        acc.counts.packets_sent += 1;
        acc.counts.bytes_sent += size;
        acc.counts.retransmissions += retx as u64;
        acc.counts.first_sent = acc.counts.first_sent.min(sent);
        acc.counts.last_sent = acc.counts.last_sent.max(sent);
        acc.bin(sent_bin, cap).sent_bytes += size;
        match fate {
            // A "delivered" record without an arrival time is corrupt; counting it as delivered
            // would put it in a bin at the end of time.
            Fate::Delivered if arrived != NEVER => {
                let c = &mut acc.counts;
                c.packets_delivered += 1;
                c.bytes_delivered += size;
                c.note_first_delivery(arrived, size);
                c.last_delivery = c.last_delivery.max(arrived);
                let delay = arrived.saturating_sub(sent);
                c.delay_sum_ns += delay as u128;
                let b = acc.bin(arrived_bin, cap);
                b.delivered_bytes += size;
                b.delivered += 1;
                b.delay_sum_ns += delay as u128;
                b.delay_max_ns = b.delay_max_ns.max(delay);
                match &mut self.stream {
                    Some(st) => {
                        if st.bytes[f] == 0 {
                            st.touched.push(f as u32);
                        }
                        st.bytes[f] += size;
                    }
                    None => {
                        let j = index(arrived, jain_bucket);
                        if j >= acc.jain.len() {
                            acc.jain.resize(j + 1, 0);
                        }
                        acc.jain[j] += size;
                    }
                }
                acc.hist.prefetch(delay / 1000);
                self.count_delay(flow, delay / 1000);
            }
            Fate::DropQueue | Fate::DropLoss | Fate::DropDevice => acc.counts.packets_dropped += 1,
            Fate::Delivered | Fate::InFlight => {}
        }
    }

    /// Cache hint: the lines of flow `f`'s state that its next record updates — the counters,
    /// the bins in the window and the histogram's header — all at constant offsets from the
    /// flow's entry (not the histogram's counts nor older bins: finding those would wait on
    /// the entry's own miss; see `Sender::prefetch`).
    #[inline]
    pub fn prefetch_flow(&self, f: u32) {
        if let Some(acc) = self.flows.get(f as usize) {
            crate::hint::prefetch_bytes(acc, std::mem::offset_of!(FlowAcc, bins));
        }
    }

    /// Counts delay `us` in flow `flow`'s histogram [`HIST_LAG`] records from now (nothing for
    /// [`NO_FLOW`]), and the one that waited that long now.
    #[inline]
    fn count_delay(&mut self, flow: u32, us: u64) {
        let (g, late) = std::mem::replace(&mut self.lagging[self.lag_at], (flow, us));
        self.lag_at = (self.lag_at + 1) % HIST_LAG;
        if g != NO_FLOW {
            self.flows[g as usize].hist.add(late, 1);
        }
    }

    /// Counts the delays still lagging (`lagging`) in their histograms.
    fn settle(&mut self) {
        for _ in 0..HIST_LAG {
            self.count_delay(NO_FLOW, 0);
        }
    }

    /// Heap bytes held by the delay histograms, for memory-bound checks.
    pub fn histogram_bytes(&self) -> usize {
        self.flows.iter().map(|f| f.hist.heap_bytes()).sum()
    }

    /// Heap bytes held by the time series and Jain buckets (streamed ones included).
    pub fn series_bytes(&self) -> usize {
        let per_flow = |f: &FlowAcc| {
            f.bins.capacity() * std::mem::size_of::<Bin>() + f.jain.capacity() * std::mem::size_of::<u64>()
        };
        let stream = self.stream.as_ref().map_or(0, |st| {
            st.bytes.capacity() * 8 + st.touched.capacity() * 4 + st.rows.capacity() * std::mem::size_of::<JainRow>()
        });
        self.flows.iter().map(per_flow).sum::<usize>() + stream
    }

    /// Flows whose delay histogram went log-linear (past its budget).
    #[cfg(test)]
    pub(super) fn inexact_histograms(&self) -> usize {
        self.flows.iter().filter(|f| !f.hist.is_exact()).count()
    }

    /// `capacity_bits(t0, t1)`: bits the link could have delivered in (t0, t1], both times
    /// being deliveries as the records see them (the caller shifts them to the link's clock).
    pub fn finish(mut self, capacity_bits: &dyn Fn(u64, u64) -> f64) -> Metrics {
        self.settle();
        let mut total = Counts::default();
        let mut pooled = DelayHist::default();
        // Per packet: delay − its own flow's minimum delay.
        let mut pooled_queueing = DelayHist::default();
        let mut flows = Vec::with_capacity(self.flows.len());
        for (i, acc) in self.flows.iter().enumerate() {
            total.merge(&acc.counts);
            let min = acc.hist.min();
            if let Some(min) = min {
                for (us, n) in acc.hist.iter() {
                    pooled.add(us, n);
                    pooled_queueing.add(us - min, n);
                }
            }
            let p95 = acc.hist.percentile(P95);
            // Subtracting the minimum keeps the order, so the shifted p95 is p95 − min.
            let q95 = p95.zip(min).map(|(p, m)| p - m);
            flows.push(acc.counts.summary(Some(i as u32), p95, min, q95));
        }
        let total_summary = total.summary(None, pooled.percentile(P95), pooled.min(), pooled_queueing.percentile(P95));

        let (mut capacity_mbps, mut utilisation) = (0.0, 0.0);
        let span = total_summary.last_delivery.saturating_sub(total_summary.first_delivery);
        if total.packets_delivered >= 2 && span > 0 {
            let bits = capacity_bits(total.first_delivery, total.last_delivery);
            capacity_mbps = bits * 1000.0 / span as f64;
            // The same span for both: the first delivery's bits left the link before it began.
            let delivered_bits = ((total.bytes_delivered - total.first_delivery_bytes) * 8) as f64;
            if bits > 0.0 {
                utilisation = delivered_bits / bits;
            }
        }

        for acc in &mut self.flows {
            acc.flush_window();
        }
        let series = self.series();
        let jain = match &self.stream {
            Some(st) => {
                let last = st.open.map_or(0, |k| k + 1);
                self.close_jain(last);
                self.stream.take().map(|st| st.rows).unwrap_or_default()
            }
            None => self.jain(&total),
        };
        let series_bin = self.cfg.bin << self.series_shift;
        let jain_median = median(jain.iter().filter(|r| r.counted).map(|r| r.jain).collect());
        let counted = jain.iter().filter(|r| r.counted).count();
        let jain_counted = if jain.is_empty() { f64::NAN } else { counted as f64 / jain.len() as f64 };
        Metrics {
            flows,
            total: total_summary,
            capacity_mbps,
            utilisation,
            series,
            series_bin,
            jain,
            jain_median,
            jain_counted,
        }
    }

    fn series(&self) -> Vec<SeriesRow> {
        let width = self.cfg.bin << self.series_shift;
        // Sized up front: at thousands of flows the rows are tens of MB.
        let n = self.flows.iter().map(|acc| acc.bins.len().saturating_sub(acc.first_bin)).sum();
        let mut rows = Vec::with_capacity(n);
        for (f, acc) in self.flows.iter().enumerate() {
            if acc.bins.is_empty() {
                continue;
            }
            for (k, b) in acc.bins.iter().enumerate().skip(acc.first_bin) {
                let (delay_mean_ms, delay_max_ms) = if b.delivered > 0 {
                    (b.delay_sum_ns as f64 / b.delivered as f64 / 1e6, ns_ms(b.delay_max_ns))
                } else {
                    (f64::NAN, f64::NAN)
                };
                rows.push(SeriesRow {
                    flow: f as u32,
                    t: k as u64 * width,
                    throughput_mbps: mbps(b.delivered_bytes, width),
                    sending_mbps: mbps(b.sent_bytes, width),
                    delay_mean_ms,
                    delay_max_ms,
                });
            }
        }
        rows
    }

    /// Each flow's schedule: the configured one, or else its sends' span shifted by its
    /// minimum one-way delay (None for a flow that sent nothing and has no configured one).
    fn schedules(&self) -> Vec<Option<Schedule>> {
        let derived = |acc: &FlowAcc| {
            (acc.counts.packets_sent > 0).then(|| {
                let lag = acc.hist.min().unwrap_or(0) * 1000;
                Schedule { start: acc.counts.first_sent + lag, stop: acc.counts.last_sent + lag }
            })
        };
        let n = self.flows.len().max(self.cfg.schedule.len());
        (0..n).map(|f| self.cfg.schedule.get(f).copied().or_else(|| self.flows.get(f).and_then(derived))).collect()
    }

    fn jain(&self, total: &Counts) -> Vec<JainRow> {
        if total.packets_delivered == 0 {
            return Vec::new();
        }
        let (width, origin) = (self.cfg.jain_bucket, self.cfg.origin);
        let index = |t: u64| (t.saturating_sub(origin) / width) as usize;
        let schedules = self.schedules();
        let mut previous = None;
        (index(total.first_delivery)..=index(total.last_delivery))
            .map(|k| {
                let bytes = |f: usize| self.flows.get(f).and_then(|acc| acc.jain.get(k)).copied().unwrap_or(0);
                jain_row(k, &self.cfg, &schedules, &mut previous, bytes)
            })
            .collect()
    }
}

/// Jain's index of bucket `k` over the flows scheduled in it, with `bytes(flow)` delivered in it;
/// `previous` is the previous bucket's scheduled set (updated).
fn jain_row(
    k: usize,
    cfg: &MetricsConfig,
    schedules: &[Option<Schedule>],
    previous: &mut Option<Vec<usize>>,
    bytes: impl Fn(usize) -> u64,
) -> JainRow {
    let (width, origin) = (cfg.jain_bucket, cfg.origin);
    let (b0, b1) = (origin + k as u64 * width, origin + (k as u64 + 1) * width);
    // Flows scheduled during any part of the bucket.
    let scheduled: Vec<usize> = schedules
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_some_and(|s| s.start < b1 && s.stop > b0))
        .map(|(f, _)| f)
        .collect();
    let (mut delivering, mut sum, mut sum_sq) = (0u32, 0u128, 0u128);
    for &f in &scheduled {
        let x = bytes(f) as u128;
        delivering += (x > 0) as u32;
        sum += x;
        sum_sq += x * x;
    }
    let n = scheduled.len() as u128;
    let jain = if sum > 0 { (sum * sum) as f64 / (n * sum_sq) as f64 } else { f64::NAN };
    // Copa's script skips a bucket where the set of flows changes: a flow starting or stopping
    // mid-bucket would make the index meaningless. An idle bucket (nothing delivered by any
    // scheduled flow) has no index.
    let counted = sum > 0 && previous.as_ref().is_none_or(|p| *p == scheduled);
    let row = JainRow {
        t: k as u64 * width,
        active_flows: scheduled.len() as u32,
        delivering_flows: delivering,
        jain,
        counted,
    };
    *previous = Some(scheduled);
    row
}
