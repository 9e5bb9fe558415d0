//! The engine-level result tables, `flows` and `stats`, declared beside the types they read
//! (`FlowInfo`, `EngineStats`) with the core's schema machinery; the core declares the rest
//! (`cclab_core::schema`).

use crate::middlebox::MiddleboxRow;
use crate::{EngineStats, FlowInfo};
use cclab_core::schema::{col, describe, Column, Columns, Get, Table};

pub static FLOWS: &[Column<Get<FlowInfo>>] = &[
    col("flow", "", "flow id", Get::U32(|f| f.id)),
    col("scheme", "", "congestion-control scheme", Get::Str(|f| f.scheme.clone())),
    col("start_ns", "ns", "start of sending", Get::U64(|f| f.start)),
    col("stop_ns", "ns", "end of sending", Get::U64(|f| f.stop)),
    col("base_rtt_ns", "ns", "base round-trip propagation delay (0: unknown)", Get::U64(|f| f.base_rtt)),
];

pub static STATS: &[Column<Get<EngineStats>>] = &[
    col("events", "events", "events the engine processed", Get::U64(|s| s.events)),
    col("wall_secs", "s", "wall-clock time of the run", Get::F64(|s| s.wall_secs)),
    col("data_sent", "packets", "data packets sent", Get::U64(|s| s.data_sent)),
    col("data_delivered", "packets", "data packets delivered", Get::U64(|s| s.data_delivered)),
    col("data_dropped", "packets", "data packets dropped", Get::U64(|s| s.data_dropped)),
    col("data_in_flight_end", "packets", "data packets still in flight at the end", Get::U64(|s| s.data_in_flight_end)),
];

pub static MIDDLEBOX: &[Column<Get<MiddleboxRow>>] = &[
    col("t_ns", "ns", "time of the inbox's control step", Get::U64(|r| r.t)),
    col("t_s", "s", "the same in seconds", Get::F64(|r| r.t as f64 / 1e9)),
    col(
        "rate_mbps",
        "Mbit/s",
        "the token bucket's rate set by the aggregate controller",
        Get::F64(|r| r.rate * 8.0 / 1e6),
    ),
    col("queue_bytes", "bytes", "bytes waiting in the inbox's queue", Get::U64(|r| r.queue_bytes)),
    col("queue_packets", "packets", "packets waiting in the inbox's queue", Get::U64(|r| r.queue_packets)),
    col(
        "rtt_ms",
        "ms",
        "standing RTT inbox → outbox → inbox the controller used (0 before a sample)",
        Get::F64(|r| r.rtt as f64 / 1e6),
    ),
    col("min_rtt_ms", "ms", "minimum of those RTTs (0 before a sample)", Get::F64(|r| r.min_rtt as f64 / 1e6)),
    col(
        "receive_mbps",
        "Mbit/s",
        "the bundle's receive rate at the outbox, from its feedback (NaN before two)",
        Get::F64(|r| r.receive_rate * 8.0 / 1e6),
    ),
    col("epoch", "packets", "epoch length: one packet in this many is a sampled boundary", Get::U32(|r| r.epoch)),
    col(
        "mode",
        "",
        "the controller's mode: copa; Nimbus's delay or competitive; BBR's startup, drain, probe_bw or probe_rtt",
        Get::Str(|r| r.mode.to_string()),
    ),
];

/// The `middlebox` table: one row per control interval of the inbox.
pub fn middlebox(rows: &[MiddleboxRow]) -> Columns {
    Columns::from_rows(MIDDLEBOX, rows)
}

/// The `flows` table: one row per flow.
pub fn flows(flows: &[FlowInfo]) -> Columns {
    Columns::from_rows(FLOWS, flows)
}

/// The `stats` table: one row.
pub fn stats(stats: &EngineStats) -> Columns {
    Columns::from_rows(STATS, std::slice::from_ref(stats))
}

/// The tables declared here.
pub fn tables() -> Vec<Table> {
    vec![
        describe("flows", "one row per flow of the run", FLOWS),
        describe("stats", "engine counters (one row; an engine may add its own)", STATS),
        describe("middlebox", "the inbox sampled every control interval (empty without a [middlebox])", MIDDLEBOX),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_core::schema::Data;

    #[test]
    fn flows_and_stats_read_their_fields() {
        let info = FlowInfo { id: 3, scheme: "cubic".into(), start: 1, stop: 2, base_rtt: 4 };
        let f = flows(&[info]);
        assert_eq!(f.names(), ["flow", "scheme", "start_ns", "stop_ns", "base_rtt_ns"]);
        assert_eq!(f.get("flow"), Some(&Data::U32(vec![3])));
        assert_eq!(f.get("scheme"), Some(&Data::Str(vec!["cubic".into()])));
        assert_eq!(f.get("start_ns"), Some(&Data::U64(vec![1])));
        assert_eq!(f.get("stop_ns"), Some(&Data::U64(vec![2])));
        assert_eq!(f.get("base_rtt_ns"), Some(&Data::U64(vec![4])));
        let s = stats(&EngineStats {
            events: 1,
            wall_secs: 0.5,
            data_sent: 2,
            data_delivered: 3,
            data_dropped: 4,
            data_in_flight_end: 5,
        });
        let got: Vec<_> = s.0.iter().map(|v| (v.name, v.data.clone())).collect();
        assert_eq!(
            got,
            [
                ("events", Data::U64(vec![1])),
                ("wall_secs", Data::F64(vec![0.5])),
                ("data_sent", Data::U64(vec![2])),
                ("data_delivered", Data::U64(vec![3])),
                ("data_dropped", Data::U64(vec![4])),
                ("data_in_flight_end", Data::U64(vec![5])),
            ]
        );
    }
}
