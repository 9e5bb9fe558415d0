//! One call from a packet log to its metrics.

use super::{Metrics, MetricsAccumulator, MetricsConfig};
use crate::record::{Fate, PacketKind, PacketLog};

/// A packet log as borrowed columns, one entry per packet in each: the part of the packet
/// table the metrics read. `kind` and `retransmission` may be absent (every row data, none a
/// retransmission), as in logs that do not record them.
#[derive(Clone, Copy, Debug)]
pub struct PacketColumns<'a> {
    pub flow: &'a [u32],
    /// Bytes on the wire.
    pub size: &'a [u32],
    pub sent: &'a [u64],
    /// Arrival, or [`crate::NEVER`].
    pub arrived: &'a [u64],
    /// [`Fate`] codes; an unknown code reads as in flight (as [`PacketLog::get`] reads it).
    pub fate: &'a [u8],
    /// [`PacketKind`] codes; rows with the ACK code are skipped.
    pub kind: Option<&'a [u8]>,
    pub retransmission: Option<&'a [bool]>,
}

impl<'a> PacketColumns<'a> {
    /// The columns of a whole log.
    pub fn of(log: &'a PacketLog) -> Self {
        PacketColumns {
            flow: &log.flow,
            size: &log.size,
            sent: &log.sent,
            arrived: &log.arrived,
            fate: &log.fate,
            kind: Some(&log.kind),
            retransmission: Some(&log.retransmission),
        }
    }

    /// Rows, or an error naming the first column whose length differs from `flow`'s.
    pub fn rows(&self) -> Result<usize, String> {
        let n = self.flow.len();
        let lengths = [
            ("size", Some(self.size.len())),
            ("sent", Some(self.sent.len())),
            ("arrived", Some(self.arrived.len())),
            ("fate", Some(self.fate.len())),
            ("kind", self.kind.map(<[u8]>::len)),
            ("retransmission", self.retransmission.map(<[bool]>::len)),
        ];
        match lengths.iter().find(|(_, len)| len.is_some_and(|len| len != n)) {
            Some((name, _)) => Err(format!("column `{name}` has a different length than `flow`")),
            None => Ok(n),
        }
    }

    /// The number of flows the log names: its largest flow id + 1.
    pub fn n_flows(&self) -> usize {
        self.flow.iter().max().map_or(0, |&f| f as usize + 1)
    }
}

/// The metrics of a whole packet log. `capacity_bits(t0, t1)`: bits the link could have
/// delivered in [t0, t1).
pub fn analyze(log: &PacketLog, cfg: MetricsConfig, capacity_bits: &dyn Fn(u64, u64) -> f64) -> Metrics {
    analyze_columns(PacketColumns::of(log), cfg, capacity_bits).expect("a PacketLog's columns have one length")
}

/// The metrics of a packet log given as columns (from an engine, an importer or numpy). Reads
/// the columns directly: building a `PacketRecord` per row would touch the columns no metric
/// needs (uid, queue times). Errs when the columns' lengths differ.
pub fn analyze_columns(
    cols: PacketColumns<'_>,
    cfg: MetricsConfig,
    capacity_bits: &dyn Fn(u64, u64) -> f64,
) -> Result<Metrics, String> {
    let n = cols.rows()?;
    let mut acc = MetricsAccumulator::new(cfg);
    // Slicing every column to the same length lets the loop run without bounds checks.
    let (flow, size, sent, arrived, fate) =
        (&cols.flow[..n], &cols.size[..n], &cols.sent[..n], &cols.arrived[..n], &cols.fate[..n]);
    let kind = cols.kind.map(|k| &k[..n]);
    let retx = cols.retransmission.map(|r| &r[..n]);
    for i in 0..n {
        // Only the ACK code is skipped: the engines' logs hold 0 and 1 only, and a log from
        // elsewhere with another code is counted rather than silently dropped.
        if kind.is_some_and(|k| k[i] == PacketKind::Ack as u8) {
            continue;
        }
        let fate = Fate::from_u8(fate[i]).unwrap_or(Fate::InFlight);
        acc.add_data(flow[i], size[i], sent[i], arrived[i], fate, retx.is_some_and(|r| r[i]));
    }
    Ok(acc.finish(capacity_bits))
}
