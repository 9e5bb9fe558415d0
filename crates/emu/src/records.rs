//! Packet records leave the forwarding threads in batches over a channel, so a forwarding
//! thread never waits for the metrics: one channel send per few thousand packets. The run's
//! main thread feeds them to the engine's shared sinks.

use cclab_core::record::{PacketKind, PacketRecord};
use cclab_engine::plan::PathPlan;
use cclab_engine::sinks::Sinks;
use cclab_engine::RunOutput;
use std::sync::mpsc;

/// Records per batch: large enough that channel traffic is negligible, small enough that the
/// collector sees a steady stream (at 1 Gbit/s about one batch per 50 ms).
const BATCH: usize = 4096;

/// What the worker threads tell the run's main thread.
pub(crate) enum Msg {
    Records(Vec<PacketRecord>),
    /// A worker failed; the run stops with this message.
    Failed(String),
}

pub(crate) struct RecordBatcher {
    tx: mpsc::Sender<Msg>,
    buf: Vec<PacketRecord>,
}

impl RecordBatcher {
    pub fn new(tx: mpsc::Sender<Msg>) -> RecordBatcher {
        RecordBatcher { tx, buf: Vec::with_capacity(BATCH) }
    }

    #[inline]
    pub fn push(&mut self, r: PacketRecord) {
        self.buf.push(r);
        if self.buf.len() >= BATCH {
            self.flush();
        }
    }

    pub fn flush(&mut self) {
        if !self.buf.is_empty() {
            let full = std::mem::replace(&mut self.buf, Vec::with_capacity(BATCH));
            // The receiver only goes away when the run is being torn down; records after that
            // have nowhere to go.
            let _ = self.tx.send(Msg::Records(full));
        }
    }
}

impl Drop for RecordBatcher {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Records in, metrics out, on the run's main thread.
pub(crate) struct Collector {
    sinks: Sinks,
    records: u64,
}

impl Collector {
    pub fn new(sinks: Sinks) -> Collector {
        Collector { sinks, records: 0 }
    }

    pub fn take(&mut self, batch: Vec<PacketRecord>) {
        for r in &batch {
            self.records += 1;
            // The emulator learns of a data packet only when it reads it from the sender's
            // TUN, and every packet read ends in exactly one record: the record is the send.
            if r.kind == PacketKind::Data {
                self.sinks.count_sent();
            }
            self.sinks.emit(r);
        }
    }

    /// The requests of the run's request workloads (`requests::merge`'s log).
    pub fn set_requests(&mut self, requests: Vec<cclab_core::metrics::fct::Request>) {
        self.sinks.requests.requests = requests;
    }

    /// The inbox's samples, when the run had a `[middlebox]`.
    pub fn set_middlebox(&mut self, rows: Vec<cclab_engine::middlebox::MiddleboxRow>) {
        self.sinks.middlebox = rows;
    }

    /// The run's results; the emulator's "events" are the records it collected.
    pub fn finish(self, plan: &PathPlan, wall_secs: f64) -> RunOutput {
        self.sinks.finish(plan, self.records, wall_secs)
    }
}
