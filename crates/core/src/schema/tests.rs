use super::*;
use crate::record::{PacketRecord, RecordSink, NEVER};

/// A summary whose every field holds a different value, so a column reading the wrong field
/// shows up as a wrong number.
fn distinct_summary(flow: Option<u32>, base: u64) -> FlowSummary {
    FlowSummary {
        flow,
        packets_sent: base + 1,
        packets_delivered: base + 2,
        packets_dropped: base + 3,
        bytes_sent: base + 4,
        bytes_delivered: base + 5,
        retransmissions: base + 6,
        first_delivery: base + 7,
        last_delivery: base + 8,
        throughput_mbps: base as f64 + 0.1,
        delay_p95_ms: base as f64 + 0.2,
        delay_mean_ms: base as f64 + 0.3,
        delay_min_ms: base as f64 + 0.4,
        queueing_p95_ms: base as f64 + 0.5,
        loss_pct: base as f64 + 0.6,
        congestion_events: Some(base + 9),
        loss_burstiness: base as f64 + 0.7,
    }
}

fn metrics() -> Metrics {
    Metrics {
        flows: vec![distinct_summary(Some(0), 100), distinct_summary(Some(1), 200)],
        total: distinct_summary(None, 300),
        capacity_mbps: 12.0,
        utilisation: 0.75,
        series: vec![SeriesRow {
            flow: 1,
            t: 1_500_000_000,
            throughput_mbps: 3.0,
            sending_mbps: 4.0,
            delay_mean_ms: 5.0,
            delay_max_ms: 6.0,
        }],
        series_bin: 500_000_000,
        jain: vec![JainRow { t: 7, active_flows: 2, delivering_flows: 1, jain: 0.9, counted: true }],
        jain_median: 0.8,
        jain_counted: 0.6,
    }
}

fn f64s(c: &Columns, name: &str) -> Vec<f64> {
    match c.get(name) {
        Some(Data::F64(v)) => v.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

fn i64s(c: &Columns, name: &str) -> Vec<i64> {
    match c.get(name) {
        Some(Data::I64(v)) => v.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn summary_reads_every_field_into_its_column() {
    let c = summary(&metrics(), &["cubic", "bbr"]);
    assert_eq!(i64s(&c, "flow"), [0, 1, TOTAL_FLOW]);
    assert_eq!(c.get("scheme"), Some(&Data::Str(vec!["cubic".into(), "bbr".into(), "total".into()])));
    let ints = [
        ("packets_sent", 1),
        ("packets_delivered", 2),
        ("packets_dropped", 3),
        ("bytes_sent", 4),
        ("bytes_delivered", 5),
        ("retransmissions", 6),
        ("first_delivery_ns", 7),
        ("last_delivery_ns", 8),
    ];
    for (name, offset) in ints {
        assert_eq!(i64s(&c, name), [100 + offset, 200 + offset, 300 + offset], "{name}");
    }
    let floats = [
        ("throughput_mbps", 0.1),
        ("delay_p95_ms", 0.2),
        ("delay_mean_ms", 0.3),
        ("delay_min_ms", 0.4),
        ("queueing_p95_ms", 0.5),
        ("loss_pct", 0.6),
        ("congestion_events", 9.0),
        ("loss_burstiness", 0.7),
    ];
    for (name, offset) in floats {
        assert_eq!(f64s(&c, name), [100.0 + offset, 200.0 + offset, 300.0 + offset], "{name}");
    }
    // Drops per event: (base + 3) / (base + 9).
    assert_eq!(f64s(&c, "losses_per_event"), [103.0 / 109.0, 203.0 / 209.0, 303.0 / 309.0]);
    // Whole-run figures only on the total row.
    let util = f64s(&c, "utilisation");
    assert!(util[0].is_nan() && util[1].is_nan() && util[2] == 0.75);
    let jain = f64s(&c, "jain_median");
    assert!(jain[0].is_nan() && jain[1].is_nan() && jain[2] == 0.8);
    let counted = f64s(&c, "jain_counted");
    assert!(counted[0].is_nan() && counted[1].is_nan() && counted[2] == 0.6);
}

#[test]
fn a_flow_without_a_scheme_name_gets_an_empty_one() {
    let c = summary(&metrics(), &["cubic"]);
    assert_eq!(c.get("scheme"), Some(&Data::Str(vec!["cubic".into(), String::new(), "total".into()])));
}

#[test]
fn scalar_series_and_jain_tables() {
    let m = metrics();
    let s = super::metrics(&m);
    assert_eq!(s.names(), ["capacity_mbps", "utilisation", "jain_median", "jain_counted"]);
    assert_eq!(
        (f64s(&s, "capacity_mbps"), f64s(&s, "utilisation"), f64s(&s, "jain_median"), f64s(&s, "jain_counted")),
        (vec![12.0], vec![0.75], vec![0.8], vec![0.6])
    );
    let t = timeseries(&m);
    assert_eq!(t.get("flow"), Some(&Data::U32(vec![1])));
    assert_eq!(t.get("t_ns"), Some(&Data::U64(vec![1_500_000_000])));
    assert_eq!(f64s(&t, "t_s"), [1.5]);
    let got: Vec<f64> =
        ["throughput_mbps", "sending_mbps", "delay_mean_ms", "delay_max_ms"].iter().map(|n| f64s(&t, n)[0]).collect();
    assert_eq!(got, [3.0, 4.0, 5.0, 6.0]);
    let j = jain(&m);
    assert_eq!(j.get("t_ns"), Some(&Data::U64(vec![7])));
    assert_eq!(j.get("active_flows"), Some(&Data::U32(vec![2])));
    assert_eq!(j.get("delivering_flows"), Some(&Data::U32(vec![1])));
    assert_eq!(f64s(&j, "jain"), [0.9]);
    assert_eq!(j.get("counted"), Some(&Data::Bool(vec![true])));
}

#[test]
fn packets_move_out_column_by_column() {
    let mut log = PacketLog::default();
    for i in 0..3u64 {
        log.record(&PacketRecord {
            uid: 10 + i,
            flow: i as u32,
            kind: if i == 1 { PacketKind::Ack } else { PacketKind::Data },
            size: 1500 + i as u32,
            sent: 100 * i,
            arrived: if i == 2 { NEVER } else { 100 * i + 50 },
            fate: if i == 2 { Fate::DropQueue } else { Fate::Delivered },
            enqueued: 20 + i,
            dequeued: 30 + i,
            retransmission: i == 0,
            push: i == 2,
            seq: 7 * i as u32,
        });
    }
    let expected = log.clone();
    let c = packets(log);
    assert_eq!(c.get("uid"), Some(&Data::U64(expected.uid)));
    assert_eq!(c.get("flow"), Some(&Data::U32(expected.flow)));
    assert_eq!(c.get("kind"), Some(&Data::U8(vec![0, 1, 0])));
    assert_eq!(c.get("size"), Some(&Data::U32(expected.size)));
    assert_eq!(c.get("sent_ns"), Some(&Data::U64(expected.sent)));
    assert_eq!(c.get("arrived_ns"), Some(&Data::U64(expected.arrived)));
    assert_eq!(c.get("fate"), Some(&Data::U8(vec![0, 0, 1])));
    assert_eq!(c.get("enqueued_ns"), Some(&Data::U64(expected.enqueued)));
    assert_eq!(c.get("dequeued_ns"), Some(&Data::U64(expected.dequeued)));
    assert_eq!(c.get("retransmission"), Some(&Data::Bool(expected.retransmission)));
    assert_eq!(c.get("push"), Some(&Data::Bool(vec![false, false, true])));
    assert_eq!(c.get("seq"), Some(&Data::U32(vec![0, 7, 14])));
    let codes: Vec<_> = c.0.iter().filter(|v| !v.codes.is_empty()).map(|v| (v.name, v.codes)).collect();
    assert_eq!(codes, [("kind", &PacketKind::NAMES[..]), ("fate", &Fate::NAMES[..])]);
}

#[test]
fn values_match_their_declarations() {
    let m = metrics();
    let mut log = PacketLog::default();
    log.record(&PacketRecord {
        uid: 0,
        flow: 0,
        kind: PacketKind::Data,
        size: 1,
        sent: 0,
        arrived: 1,
        fate: Fate::Delivered,
        enqueued: 0,
        dequeued: 0,
        retransmission: false,
        push: false,
        seq: 0,
    });
    let mut tr = crate::cctrace::CcTrace::default();
    tr.push(&crate::cctrace::Sample { vars: &[("bw", 1.0)], ..Default::default() });
    let values = [
        summary(&m, &[]),
        super::metrics(&m),
        timeseries(&m),
        jain(&m),
        packets(log),
        requests(&[]),
        fct(&[]),
        trace(tr),
    ];
    assert_eq!(values.len(), tables().len(), "every table is checked");
    for (table, values) in tables().iter().zip(values) {
        // A column family (`cc_*`) stands for the columns its prefix starts.
        let declared: Vec<_> = table
            .columns
            .iter()
            .map(|c| match c.name.strip_suffix('*') {
                Some(prefix) => (if prefix == crate::cctrace::VAR_PREFIX { "cc_bw" } else { c.name }, c.dtype),
                None => (c.name, c.dtype),
            })
            .collect();
        let got: Vec<_> = values.0.iter().map(|v| (v.name, v.data.dtype())).collect();
        assert_eq!(declared, got, "{}", table.name);
        let rows = values.0[0].data.len();
        assert!(values.0.iter().all(|v| v.data.len() == rows), "{}: ragged", table.name);
    }
}

#[test]
fn names_are_unique_and_documented() {
    for table in tables() {
        let mut names: Vec<_> = table.columns.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), table.columns.len(), "{}: duplicate column", table.name);
        assert!(table.columns.iter().all(|c| !c.doc.is_empty()), "{}", table.name);
    }
}

/// A unit named in the docs is one the summary's name suffix agrees with, so `_ms` columns
/// are in ms, `_ns` columns in ns and `_pct` columns in percent.
#[test]
fn name_suffixes_agree_with_units() {
    for table in tables() {
        for c in &table.columns {
            for (suffix, unit) in [("_ms", "ms"), ("_ns", "ns"), ("_mbps", "Mbit/s"), ("_s", "s"), ("_pct", "%")] {
                if c.name.ends_with(suffix) {
                    assert_eq!(c.unit, unit, "{}.{}", table.name, c.name);
                }
            }
        }
    }
}
