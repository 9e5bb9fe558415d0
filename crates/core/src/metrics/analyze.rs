//! One call from a packet log to its metrics.

use super::{Metrics, MetricsAccumulator, MetricsConfig};
use crate::record::{Fate, PacketKind, PacketLog};

/// The metrics of a whole packet log. `capacity_bits(t0, t1)`: bits the link could have
/// delivered in [t0, t1). Reads the columns directly: building a `PacketRecord` per row would
/// touch the columns no metric needs (uid, queue times).
pub fn analyze(log: &PacketLog, cfg: MetricsConfig, capacity_bits: &dyn Fn(u64, u64) -> f64) -> Metrics {
    let mut acc = MetricsAccumulator::new(cfg);
    let n = log.len();
    // Slicing every column to the same length lets the loop run without bounds checks.
    let (flow, kind, size) = (&log.flow[..n], &log.kind[..n], &log.size[..n]);
    let (sent, arrived, fate, retx) = (&log.sent[..n], &log.arrived[..n], &log.fate[..n], &log.retransmission[..n]);
    for i in 0..n {
        if kind[i] != PacketKind::Data as u8 {
            continue;
        }
        // Same reading of an unknown fate code as `PacketLog::get`.
        let fate = Fate::from_u8(fate[i]).unwrap_or(Fate::InFlight);
        acc.add_data(flow[i], size[i], sent[i], arrived[i], fate, retx[i]);
    }
    acc.finish(capacity_bits)
}
