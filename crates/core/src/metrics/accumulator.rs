//! The streaming accumulator behind every metric cclab reports (definitions in `metrics.rs`).
//!
//! Records may come in any order (the simulator emits them as packets complete, the emulator and
//! the log importers need not), so every piece of state is a sum, a count, a min or a max,
//! kept in integers: the output depends on the multiset of records only, not on their order.
//! Memory grows with flows × duration / bin (time series and Jain buckets) and with the distinct
//! delay values (the histograms), never with the number of packets.
//!
//! Resolution: throughput, loss and mean delays are exact (integer bytes and ns). Order
//! statistics — minimum, p95 and queueing p95 — come from histograms of the delay floored to
//! whole µs (see `histogram.rs`), so they are exact for µs-resolution logs and at most 1 µs
//! below the true value for ns-resolution ones. The minimum is taken from the same histogram on
//! purpose: reporting an exact ns minimum next to a floored p95 could show p95 < min.

use super::histogram::DelayHist;
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
            // In-flight bytes count as not delivered, as in the Pantheon (ingress vs egress).
            loss_pct: if self.bytes_sent > 0 {
                100.0 * (1.0 - self.bytes_delivered as f64 / self.bytes_sent as f64)
            } else {
                0.0
            },
        }
    }
}

#[derive(Clone, Debug)]
struct FlowAcc {
    counts: Counts,
    /// Time-series bins from bin 0; `bins.len() - 1` is the last active bin.
    bins: Vec<Bin>,
    first_bin: usize,
    /// Delivered bytes per Jain bucket, from bucket 0.
    jain: Vec<u64>,
    hist: DelayHist,
}

impl Default for FlowAcc {
    fn default() -> Self {
        FlowAcc {
            counts: Counts::default(),
            bins: Vec::new(),
            first_bin: usize::MAX,
            jain: Vec::new(),
            hist: DelayHist::default(),
        }
    }
}

impl FlowAcc {
    #[inline]
    fn bin(&mut self, i: usize) -> &mut Bin {
        if i >= self.bins.len() {
            self.bins.resize(i + 1, Bin::default());
        }
        self.first_bin = self.first_bin.min(i);
        &mut self.bins[i]
    }
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
}

impl MetricsAccumulator {
    /// Panics if `cfg.bin` or `cfg.jain_bucket` is zero.
    pub fn new(cfg: MetricsConfig) -> Self {
        assert!(cfg.bin > 0, "metrics: time-series bin must be > 0 ns");
        assert!(cfg.jain_bucket > 0, "metrics: Jain bucket must be > 0 ns");
        let flows = (0..cfg.n_flows).map(|_| FlowAcc::default()).collect();
        MetricsAccumulator { cfg, flows }
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
            self.flows.resize_with(f + 1, FlowAcc::default);
        }
        let (origin, bin, jain_bucket) = (self.cfg.origin, self.cfg.bin, self.cfg.jain_bucket);
        // Times before the origin land in the first bin rather than wrapping around.
        let index = |t: u64, width: u64| (t.saturating_sub(origin) / width) as usize;
        let acc = &mut self.flows[f];
        let size = size as u64;
        acc.counts.packets_sent += 1;
        acc.counts.bytes_sent += size;
        acc.counts.retransmissions += retx as u64;
        acc.counts.first_sent = acc.counts.first_sent.min(sent);
        acc.counts.last_sent = acc.counts.last_sent.max(sent);
        acc.bin(index(sent, bin)).sent_bytes += size;
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
                let b = acc.bin(index(arrived, bin));
                b.delivered_bytes += size;
                b.delivered += 1;
                b.delay_sum_ns += delay as u128;
                b.delay_max_ns = b.delay_max_ns.max(delay);
                let j = index(arrived, jain_bucket);
                if j >= acc.jain.len() {
                    acc.jain.resize(j + 1, 0);
                }
                acc.jain[j] += size;
                acc.hist.add(delay / 1000, 1);
            }
            Fate::DropQueue | Fate::DropLoss | Fate::DropDevice => acc.counts.packets_dropped += 1,
            Fate::Delivered | Fate::InFlight => {}
        }
    }

    /// Heap bytes held by the delay histograms, for memory-bound checks.
    pub fn histogram_bytes(&self) -> usize {
        self.flows.iter().map(|f| f.hist.heap_bytes()).sum()
    }

    /// Heap bytes held by the time series and Jain buckets.
    pub fn series_bytes(&self) -> usize {
        let per_flow = |f: &FlowAcc| {
            f.bins.capacity() * std::mem::size_of::<Bin>() + f.jain.capacity() * std::mem::size_of::<u64>()
        };
        self.flows.iter().map(per_flow).sum()
    }

    /// `capacity_bits(t0, t1)`: bits the link could have delivered in (t0, t1], both times
    /// being deliveries as the records see them (the caller shifts them to the link's clock).
    pub fn finish(self, capacity_bits: &dyn Fn(u64, u64) -> f64) -> Metrics {
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

        let series = self.series();
        let jain = self.jain(&total);
        let jain_median = median(jain.iter().filter(|r| r.counted).map(|r| r.jain).collect());
        let counted = jain.iter().filter(|r| r.counted).count();
        let jain_counted = if jain.is_empty() { f64::NAN } else { counted as f64 / jain.len() as f64 };
        Metrics { flows, total: total_summary, capacity_mbps, utilisation, series, jain, jain_median, jain_counted }
    }

    fn series(&self) -> Vec<SeriesRow> {
        let width = self.cfg.bin;
        let mut rows = Vec::new();
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
        let mut rows = Vec::new();
        let mut previous: Option<Vec<usize>> = None;
        for k in index(total.first_delivery)..=index(total.last_delivery) {
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
                let x = self.flows.get(f).and_then(|acc| acc.jain.get(k)).copied().unwrap_or(0) as u128;
                delivering += (x > 0) as u32;
                sum += x;
                sum_sq += x * x;
            }
            let n = scheduled.len() as u128;
            let jain = if sum > 0 { (sum * sum) as f64 / (n * sum_sq) as f64 } else { f64::NAN };
            // Copa's script skips a bucket where the set of flows changes: a flow starting or
            // stopping mid-bucket would make the index meaningless. An idle bucket (nothing
            // delivered by any scheduled flow) has no index.
            let counted = sum > 0 && previous.as_ref().is_none_or(|p| *p == scheduled);
            rows.push(JainRow {
                t: k as u64 * width,
                active_flows: scheduled.len() as u32,
                delivering_flows: delivering,
                jain,
                counted,
            });
            previous = Some(scheduled);
        }
        rows
    }
}
