//! Where packet records go: one [`Sinks::emit`] feeds the metrics accumulator, the packet log
//! (when the run keeps one) and the engine's counters, whichever engine made the record.

use crate::middlebox::MiddleboxRow;
use crate::plan::PathPlan;
use crate::workload::RequestLog;
use crate::{EngineStats, RunOutput};
use cclab_core::metrics::{fct, MetricsAccumulator};
use cclab_core::record::{Fate, PacketKind, PacketLog, PacketRecord, RecordSink};

pub struct Sinks {
    metrics: MetricsAccumulator,
    log: Option<PacketLog>,
    stats: EngineStats,
    /// The requests of request workloads, as the engine starts and completes them.
    pub requests: RequestLog,
    /// The middlebox's samples, handed over by the engine at the end.
    pub middlebox: Vec<MiddleboxRow>,
}

impl Sinks {
    /// Sinks for a run of `plan`, keeping every record when `log_packets`.
    pub fn new(plan: &PathPlan, log_packets: bool) -> Sinks {
        Sinks {
            metrics: MetricsAccumulator::new(plan.metrics.clone()),
            log: log_packets.then(PacketLog::default),
            stats: EngineStats::default(),
            requests: RequestLog::default(),
            middlebox: Vec::new(),
        }
    }

    /// Room for `records` packet records in the log, if it is kept, from the start: its
    /// columns then never move as they grow. Each doubling of a column copies every record so
    /// far into fresh pages that the kernel zeroes first; in the emulator that was the run's
    /// main thread zeroing pages for most of its time at 10 Gbit/s (perf: `clear_page_erms`),
    /// memory traffic beside the path thread's copies, whose timing error it tripled.
    pub fn reserve_log(&mut self, records: usize) {
        if let Some(log) = &mut self.log {
            log.reserve(records);
        }
    }

    /// A data packet entered the path. Counted apart from the records, where the engine can, so
    /// that "sent = delivered + dropped + in flight" checks the engine's bookkeeping.
    #[inline]
    pub fn count_sent(&mut self) {
        self.stats.data_sent += 1;
    }

    /// Cache hint: flow `f`'s metrics, which its next data record updates.
    #[inline]
    pub fn prefetch_flow(&self, f: u32) {
        self.metrics.prefetch_flow(f);
    }

    /// A packet's journey ended (delivered, dropped, or still in flight at the end).
    #[inline]
    pub fn emit(&mut self, r: &PacketRecord) {
        if r.kind == PacketKind::Data {
            match r.fate {
                Fate::Delivered => self.stats.data_delivered += 1,
                Fate::InFlight => self.stats.data_in_flight_end += 1,
                _ => self.stats.data_dropped += 1,
            }
        }
        self.metrics.record(r);
        if let Some(log) = &mut self.log {
            log.record(r);
        }
    }

    /// Closes the run: the metrics against the plan's link capacity, the log, the counters.
    pub fn finish(self, plan: &PathPlan, events: u64, wall_secs: f64) -> RunOutput {
        let Sinks { metrics, log, mut stats, requests, middlebox } = self;
        // The kernel asks for the capacity between two deliveries, (t0, t1]; the link served
        // those packets one propagation delay earlier, and its capacity counts [t0, t1).
        let link_time = |t: u64| (t + 1).saturating_sub(plan.prop_delay);
        let metrics = metrics.finish(&|t0, t1| plan.service.capacity_bits(link_time(t0), link_time(t1)));
        stats.events = events;
        stats.wall_secs = wall_secs;
        let base_rtt = |id: u32| plan.flows.get(id as usize).map_or(plan.base_rtt, |f| f.info.base_rtt);
        let requests = fct::rows(&requests.requests, plan.service.mean_rate().bytes_per_sec(), &base_rtt);
        RunOutput { metrics, packets: log, flows: plan.infos(), stats, requests, middlebox, trace: None }
    }
}
