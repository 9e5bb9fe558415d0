use super::histogram::DelayHist;
use super::*;
use crate::record::{Fate, PacketKind, PacketLog, NEVER};

use crate::time::MS;

fn cfg(n_flows: usize, bin: u64, jain_bucket: u64) -> MetricsConfig {
    MetricsConfig { n_flows, bin, jain_bucket, origin: 0, schedule: Vec::new(), arrivals_ordered: false }
}

/// A data record; `arrived` in ns or NEVER.
fn data(uid: u64, flow: u32, size: u32, sent: u64, arrived: u64, fate: Fate) -> PacketRecord {
    PacketRecord {
        uid,
        flow,
        kind: PacketKind::Data,
        size,
        sent,
        arrived,
        fate,
        enqueued: NEVER,
        dequeued: NEVER,
        retransmission: false,
        push: false,
        seq: 0,
    }
}

fn run(cfg: MetricsConfig, records: &[PacketRecord], capacity: &dyn Fn(u64, u64) -> f64) -> Metrics {
    let mut acc = MetricsAccumulator::new(cfg);
    for r in records {
        acc.add(r);
    }
    acc.finish(capacity)
}

/// 1 Mbit/s: 1 bit per 1000 ns.
fn one_mbps(t0: u64, t1: u64) -> f64 {
    (t1 - t0) as f64 / 1000.0
}

fn no_capacity(_: u64, _: u64) -> f64 {
    0.0
}

/// Debug output prints NaN as "NaN", so equal strings mean identical metrics, NaNs included,
/// where `==` would call two NaN-holding results different.
fn same(a: &Metrics, b: &Metrics) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {{
        let (a, b) = ($a as f64, $b as f64);
        assert!(close(a, b), "{} = {a}, expected {b}", stringify!($a));
    }};
}

/// Three flows with hand-checked numbers. Times in ms; `bin` 100 ms, Jain bucket 50 ms.
///
/// flow 0, 1000 B: sent→arrived (delay)  0→10 (10), 10→30 (20), 20 DropQueue,
///   40→52 (12, retransmission), 88→100 (12), 250→262 (12)
/// flow 1, 500 B: 40→55 (15), 45→60.5 (15.5), 60→76 (16), 70 DropLoss, 80 InFlight,
///   85→101 (16), 320→335 (15)
/// flow 2, 1500 B: 200→230 (30), 205→232.0015 (27.0015), 210 DropDevice, 260→290 (30)
fn hand_log() -> Vec<PacketRecord> {
    let mut uid = 0;
    let mut v = Vec::new();
    let mut push = |flow, size, sent: f64, arrived: Option<f64>, fate| {
        let ns = |ms: f64| (ms * 1e6).round() as u64;
        uid += 1;
        v.push(data(uid, flow, size, ns(sent), arrived.map_or(NEVER, ns), fate));
    };
    use Fate::*;
    push(0, 1000, 0.0, Some(10.0), Delivered);
    push(0, 1000, 10.0, Some(30.0), Delivered);
    push(0, 1000, 20.0, None, DropQueue);
    push(0, 1000, 40.0, Some(52.0), Delivered);
    push(0, 1000, 88.0, Some(100.0), Delivered);
    push(0, 1000, 250.0, Some(262.0), Delivered);
    push(1, 500, 40.0, Some(55.0), Delivered);
    push(1, 500, 45.0, Some(60.5), Delivered);
    push(1, 500, 60.0, Some(76.0), Delivered);
    push(1, 500, 70.0, None, DropLoss);
    push(1, 500, 80.0, None, InFlight);
    push(1, 500, 85.0, Some(101.0), Delivered);
    push(1, 500, 320.0, Some(335.0), Delivered);
    push(2, 1500, 200.0, Some(230.0), Delivered);
    push(2, 1500, 205.0, Some(232.0015), Delivered);
    push(2, 1500, 210.0, None, DropDevice);
    push(2, 1500, 260.0, Some(290.0), Delivered);
    v[3].retransmission = true;
    v
}

#[test]
fn hand_computed_flow_summaries() {
    let m = run(cfg(3, 100 * MS, 50 * MS), &hand_log(), &one_mbps);
    assert_eq!(m.flows.len(), 3);

    let f0 = &m.flows[0];
    assert_eq!(f0.flow, Some(0));
    assert_eq!((f0.packets_sent, f0.packets_delivered, f0.packets_dropped), (6, 5, 1));
    assert_eq!((f0.bytes_sent, f0.bytes_delivered, f0.retransmissions), (6000, 5000, 1));
    assert_eq!((f0.first_delivery, f0.last_delivery), (10 * MS, 262 * MS));
    // 5000 B · 8 over 252 ms = 40 000 bit / 0.252 s.
    assert_close!(f0.throughput_mbps, 0.04 / 0.252);
    // Sorted delays [10 12 12 12 20]: rank round(0.95 · 4 = 3.8) = 4 → 20.
    assert_close!(f0.delay_p95_ms, 20.0);
    assert_close!(f0.delay_mean_ms, 66.0 / 5.0);
    assert_close!(f0.delay_min_ms, 10.0);
    assert_close!(f0.queueing_p95_ms, 10.0);
    assert_close!(f0.loss_pct, 100.0 * 1.0 / 6.0);

    // The in-flight packet is sent, neither delivered nor dropped, and counts as lost bytes.
    let f1 = &m.flows[1];
    assert_eq!((f1.packets_sent, f1.packets_delivered, f1.packets_dropped), (7, 5, 1));
    assert_eq!((f1.bytes_sent, f1.bytes_delivered, f1.retransmissions), (3500, 2500, 0));
    assert_eq!((f1.first_delivery, f1.last_delivery), (55 * MS, 335 * MS));
    assert_close!(f1.throughput_mbps, 0.02 / 0.280);
    // [15 15 15.5 16 16]: rank 4 → 16.
    assert_close!(f1.delay_p95_ms, 16.0);
    assert_close!(f1.delay_mean_ms, 77.5 / 5.0);
    assert_close!(f1.delay_min_ms, 15.0);
    assert_close!(f1.queueing_p95_ms, 1.0);
    assert_close!(f1.loss_pct, 100.0 * (1.0 - 2500.0 / 3500.0));

    // 27.0015 ms floors to 27 001 µs in the order statistics; the mean stays exact.
    let f2 = &m.flows[2];
    assert_eq!((f2.packets_sent, f2.packets_delivered, f2.packets_dropped), (4, 3, 1));
    assert_eq!((f2.bytes_sent, f2.bytes_delivered), (6000, 4500));
    assert_close!(f2.throughput_mbps, 0.036 / 0.060);
    // [27.001 30 30]: rank round(1.9) = 2 → 30.
    assert_close!(f2.delay_p95_ms, 30.0);
    assert_close!(f2.delay_mean_ms, 87.0015 / 3.0);
    assert_close!(f2.delay_min_ms, 27.001);
    assert_close!(f2.queueing_p95_ms, 2.999);
    assert_close!(f2.loss_pct, 100.0 * 0.25);

    let t = &m.total;
    assert_eq!(t.flow, None);
    assert_eq!((t.packets_sent, t.packets_delivered, t.packets_dropped), (17, 13, 3));
    assert_eq!((t.bytes_sent, t.bytes_delivered, t.retransmissions), (15500, 12000, 1));
    assert_eq!((t.first_delivery, t.last_delivery), (10 * MS, 335 * MS));
    // 12 000 B over 10 → 335 ms.
    assert_close!(t.throughput_mbps, 0.096 / 0.325);
    // 13 pooled delays: rank round(0.95 · 12 = 11.4) = 11, the second largest (30 ms).
    assert_close!(t.delay_p95_ms, 30.0);
    assert_close!(t.delay_mean_ms, (66.0 + 77.5 + 87.0015) / 13.0);
    assert_close!(t.delay_min_ms, 10.0);
    // Per packet minus own flow's min: [0 0 0 0 .5 1 1 2 2 2 2.999 2.999 10] → rank 11 → 2.999;
    // neither the pooled p95 − pooled min (20) nor the maximum (10).
    assert_close!(t.queueing_p95_ms, 2.999);
    assert_close!(t.loss_pct, 100.0 * (1.0 - 12000.0 / 15500.0));

    assert_close!(m.capacity_mbps, 1.0);
    // The first delivery (flow 0's 1000 B at 10 ms) left the link before the span began: the
    // other 11 000 B over the 325 ms the capacity is measured over.
    assert_close!(m.utilisation, 0.088 / 0.325);
}

#[test]
fn hand_computed_series() {
    let m = run(cfg(3, 100 * MS, 50 * MS), &hand_log(), &one_mbps);
    // (flow, bin start ms, throughput, sending, mean delay, max delay); 1000 B in 100 ms is
    // 0.08 Mbit/s.
    let nan = f64::NAN;
    let expected = [
        (0, 0, 0.24, 0.40, 14.0, 20.0),
        (0, 100, 0.08, 0.0, 12.0, 12.0),
        (0, 200, 0.08, 0.08, 12.0, 12.0),
        (1, 0, 0.12, 0.24, 15.5, 16.0),
        (1, 100, 0.04, 0.0, 16.0, 16.0),
        // A gap inside the flow's life: a row of zeros and NaN delays.
        (1, 200, 0.0, 0.0, nan, nan),
        (1, 300, 0.04, 0.04, 15.0, 15.0),
        // Flow 2 starts in bin 2: no rows before.
        (2, 200, 0.36, 0.48, 29.0005, 30.0),
    ];
    assert_eq!(m.series.len(), expected.len(), "{:#?}", m.series);
    for (row, &(flow, t, tput, send, mean, max)) in m.series.iter().zip(&expected) {
        assert_eq!((row.flow, row.t), (flow, t * MS));
        assert_close!(row.throughput_mbps, tput);
        assert_close!(row.sending_mbps, send);
        if mean.is_nan() {
            assert!(row.delay_mean_ms.is_nan() && row.delay_max_ms.is_nan(), "{row:?}");
        } else {
            assert_close!(row.delay_mean_ms, mean);
            assert_close!(row.delay_max_ms, max);
        }
    }
}

#[test]
fn hand_computed_jain() {
    let m = run(cfg(3, 100 * MS, 50 * MS), &hand_log(), &one_mbps);
    // No schedule given: each flow is scheduled from its first send to its last, shifted by its
    // minimum delay: f0 [10, 260], f1 [55, 335], f2 [227.001, 287.001] ms (the minimum is
    // floored to whole µs). Delivered bytes per 50-ms bucket (by arrival), over scheduled flows:
    //   k0 {0}      f0 2000                 J 1                      counted (first bucket)
    //   k1 {0,1}    f0 1000, f1 1500        J j                      skipped (set changed)
    //   k2 {0,1}    f0 1000, f1 500         J 0.9                    counted
    //   k3 {0,1}    nothing delivered       NaN                      skipped (idle)
    //   k4 {0,1,2}  f2 3000: f0, f1 starved J 1/3                    skipped (set changed)
    //   k5 {0,1,2}  f0 1000, f1 0, f2 1500  J 2500²/(3·(1000²+1500²)) counted: f1 starved
    //   k6 {1}      f1 500                  J 1                      skipped (set changed)
    let j = 6.25 / 6.5;
    let expected = [
        (1, 1, 1.0, true),
        (2, 2, j, false),
        (2, 2, 0.9, true),
        (2, 0, f64::NAN, false),
        (3, 1, 1.0 / 3.0, false),
        (3, 2, 6.25 / 9.75, true),
        (1, 1, 1.0, false),
    ];
    assert_eq!(m.jain.len(), expected.len(), "{:#?}", m.jain);
    for (k, (row, &(n, delivering, jain, counted))) in m.jain.iter().zip(&expected).enumerate() {
        assert_eq!(row.t, k as u64 * 50 * MS);
        assert_eq!((row.active_flows, row.delivering_flows, row.counted), (n, delivering, counted), "bucket {k}");
        if jain.is_nan() {
            assert!(row.jain.is_nan());
        } else {
            assert_close!(row.jain, jain);
        }
    }
    // Median of [1.0, 0.9, 0.641]; the old rule (flows that delivered) had [1.0, 0.9] → 0.95.
    assert_close!(m.jain_median, 0.9);
    assert_close!(m.jain_counted, 3.0 / 7.0);
}

/// Issue 9: a flow that is scheduled and delivers nothing counts as zero, where it used to
/// vanish from the bucket and leave the lone delivering flow a perfect 1.0.
#[test]
fn a_starved_flow_lowers_jain() {
    let schedule = vec![Schedule { start: 0, stop: 1_000 * MS }; 2];
    let c = MetricsConfig { schedule, ..cfg(2, 100 * MS, 100 * MS) };
    // Flow 0 delivers 1000 B every 10 ms for a second; flow 1 sends every 100 ms and loses all.
    let mut log = Vec::new();
    for i in 0..100u64 {
        log.push(data(i, 0, 1000, i * 10 * MS, i * 10 * MS + 5 * MS, Fate::Delivered));
    }
    for i in 0..10u64 {
        log.push(data(1000 + i, 1, 1000, i * 100 * MS, NEVER, Fate::DropQueue));
    }
    let m = run(c, &log, &one_mbps);
    // Buckets 0 … 9 (last delivery at 995 ms): every one whole, the set {0, 1} unchanged.
    assert_eq!(m.jain.len(), 10);
    assert!(m.jain.iter().all(|r| r.active_flows == 2 && r.delivering_flows == 1 && r.counted));
    assert_close!(m.jain_median, 0.5);
    assert_close!(m.jain_counted, 1.0);
}

/// A flow starting mid-run (Copa's rule): the bucket it starts in is skipped, and none after it
/// once the set is stable.
#[test]
fn jain_skips_the_buckets_where_the_schedule_changes() {
    let schedule = vec![Schedule { start: 0, stop: 1_000 * MS }, Schedule { start: 450 * MS, stop: 1_000 * MS }];
    let c = MetricsConfig { schedule, ..cfg(2, 100 * MS, 100 * MS) };
    let mut log = Vec::new();
    for i in 0..100u64 {
        log.push(data(i, 0, 1000, i * 10 * MS, i * 10 * MS + 5 * MS, Fate::Delivered));
        if i >= 50 {
            log.push(data(1000 + i, 1, 1000, i * 10 * MS, i * 10 * MS + 5 * MS, Fate::Delivered));
        }
    }
    let m = run(c, &log, &one_mbps);
    let got: Vec<_> = m.jain.iter().map(|r| (r.active_flows, r.counted)).collect();
    let mut expected = vec![(1, true); 4];
    expected.push((2, false));
    expected.extend([(2, true); 5]);
    assert_eq!(got, expected);
    assert_close!(m.jain_median, 1.0);
    assert_close!(m.jain_counted, 0.9);
}

/// Issue 9: on a fully used constant link, utilisation is at most 1, where throughput over the
/// delivery span (which counts the first packet, served before the span began) divided by the
/// capacity over that span exceeded it.
#[test]
fn utilisation_of_a_saturated_link_is_at_most_one() {
    // 1 Mbit/s: a 1000-B packet takes 8 ms; 50 of them back to back, delivered 8 ms apart.
    let log: Vec<_> = (0..50u64).map(|i| data(i, 0, 1000, 0, (i + 1) * 8 * MS, Fate::Delivered)).collect();
    let m = run(cfg(1, 100 * MS, 100 * MS), &log, &one_mbps);
    assert_close!(m.utilisation, 1.0);
    assert!(m.total.throughput_mbps > m.capacity_mbps, "the span still counts every delivered bit");
}

#[test]
fn acks_are_ignored() {
    let log = hand_log();
    let mut with_acks = Vec::new();
    for r in &log {
        with_acks.push(*r);
        // An ACK for every data packet, in a flow that has no data, with times far out: any
        // of them would show in the counts, the series or the spans.
        for flow in [r.flow, 7] {
            let mut ack = data(r.uid + 1000, flow, 40, r.sent + 5 * MS, r.sent + 900 * MS, Fate::Delivered);
            ack.kind = PacketKind::Ack;
            with_acks.push(ack);
        }
    }
    let c = cfg(3, 100 * MS, 50 * MS);
    let plain = run(c.clone(), &log, &one_mbps);
    let acked = run(c, &with_acks, &one_mbps);
    assert!(same(&plain, &acked));
    assert_eq!(acked.flows.len(), 3);
}

#[test]
fn no_deliveries_gives_defined_values() {
    let log = [data(1, 0, 1000, 0, NEVER, Fate::DropQueue), data(2, 0, 1000, MS, NEVER, Fate::InFlight)];
    let m = run(cfg(2, 100 * MS, 50 * MS), &log, &one_mbps);
    let f0 = &m.flows[0];
    assert_eq!((f0.packets_sent, f0.packets_delivered, f0.packets_dropped), (2, 0, 1));
    assert_eq!((f0.first_delivery, f0.last_delivery, f0.throughput_mbps), (0, 0, 0.0));
    assert!(f0.delay_p95_ms.is_nan() && f0.delay_mean_ms.is_nan() && f0.queueing_p95_ms.is_nan());
    assert_close!(f0.loss_pct, 100.0 * 1.0);
    // Flow 1 never sent: nothing lost.
    assert_eq!((m.flows[1].packets_sent, m.flows[1].loss_pct), (0, 0.0));
    assert!(m.jain.is_empty() && m.jain_median.is_nan());
    assert_eq!((m.capacity_mbps, m.utilisation), (0.0, 0.0));
    // The sending rate is still reported.
    assert_eq!(m.series.len(), 1);
    assert_close!(m.series[0].sending_mbps, 0.16);
}

#[test]
fn single_delivery_has_zero_throughput() {
    let log = [data(1, 0, 1000, 0, 10 * MS, Fate::Delivered)];
    let m = run(cfg(1, 100 * MS, 50 * MS), &log, &one_mbps);
    assert_eq!(m.flows[0].throughput_mbps, 0.0);
    assert_eq!(m.total.throughput_mbps, 0.0);
    assert_close!(m.flows[0].delay_p95_ms, 10.0);
}

#[test]
fn delivered_without_arrival_time_is_not_delivered() {
    let log = [data(1, 0, 1000, 0, NEVER, Fate::Delivered)];
    let m = run(cfg(1, 100 * MS, 50 * MS), &log, &one_mbps);
    assert_eq!((m.flows[0].packets_sent, m.flows[0].packets_delivered, m.flows[0].packets_dropped), (1, 0, 0));
}

#[test]
fn nearest_rank_matches_numpy() {
    // numpy 2.4: int(np.percentile(np.arange(n), q, method='nearest')); the .5 cases round
    // half to even: (3, 25) → 0.5 → 0, (4, 50) → 1.5 → 2, (6, 50) → 2.5 → 2, (7, 75) → 4.5 → 4,
    // (31, 95) → 28.5 → 28.
    let numpy = [
        (1, 95.0, 0),
        (2, 95.0, 1),
        (4, 95.0, 3),
        (5, 95.0, 4),
        (11, 95.0, 10),
        (12, 95.0, 10),
        (13, 95.0, 11),
        (20, 95.0, 18),
        (21, 95.0, 19),
        (31, 95.0, 28),
        (41, 95.0, 38),
        (2, 50.0, 0),
        (4, 50.0, 2),
        (6, 50.0, 2),
        (3, 25.0, 0),
        (7, 75.0, 4),
        (100, 95.0, 94),
        (1001, 99.9, 999),
        (12345, 95.0, 11727),
    ];
    for (n, q, idx) in numpy {
        assert_eq!(nearest_rank(n, q), idx, "n {n} q {q}");
    }
}

/// A small deterministic generator, so the tests need no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Records with every fate, retransmissions, ACKs, sub-µs delays and delays far apart.
fn random_log(seed: u64, n: usize, flows: u32) -> Vec<PacketRecord> {
    let mut rng = Rng(seed);
    (0..n as u64)
        .map(|uid| {
            let flow = rng.below(flows as u64) as u32;
            let sent = rng.below(3_000 * MS);
            let delay = match rng.below(10) {
                0 => rng.below(2_000 * MS),
                _ => 5 * MS * (flow as u64 + 1) + rng.below(40 * MS),
            };
            let fate = Fate::from_u8(rng.below(12).saturating_sub(7) as u8).unwrap();
            let arrived = if fate == Fate::Delivered { sent + delay } else { NEVER };
            let mut r = data(uid, flow, 40 + rng.below(1461) as u32, sent, arrived, fate);
            r.retransmission = rng.below(20) == 0;
            if rng.below(8) == 0 {
                r.kind = PacketKind::Ack;
            }
            r
        })
        .collect()
}

fn shuffle(v: &mut [PacketRecord], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

#[test]
fn record_order_does_not_change_the_metrics() {
    let c = cfg(5, 100 * MS, 20 * MS);
    let mut log = random_log(7, 20_000, 5);
    let reference = run(c.clone(), &log, &one_mbps);
    assert!(reference.jain.iter().any(|r| r.counted) && reference.series.len() > 100);
    let mut rng = Rng(99);
    for _ in 0..3 {
        shuffle(&mut log, &mut rng);
        assert!(same(&run(c.clone(), &log, &one_mbps), &reference));
    }
    log.reverse();
    assert!(same(&run(c, &log, &one_mbps), &reference));
}

#[test]
fn analyze_matches_the_accumulator() {
    let c = cfg(4, 100 * MS, 20 * MS);
    let records = random_log(3, 10_000, 6);
    let mut log = PacketLog::default();
    for r in &records {
        log.record(r);
    }
    assert!(same(&analyze(&log, c.clone(), &one_mbps), &run(c, &records, &one_mbps)));
}

/// Percentiles straight from sorted vectors of floored µs delays, the definition the
/// histograms must reproduce exactly.
#[test]
fn percentiles_match_sorted_vectors() {
    let flows = 6;
    let records = random_log(11, 30_000, flows);
    let m = run(cfg(flows as usize, 100 * MS, 20 * MS), &records, &no_capacity);
    let data = || records.iter().filter(|r| r.kind == PacketKind::Data && r.fate == Fate::Delivered);
    let p95 = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[nearest_rank(v.len() as u64, 95.0) as usize] as f64 / 1e3
    };
    let mut pooled = Vec::new();
    let mut pooled_queueing = Vec::new();
    for f in 0..flows {
        let mut d: Vec<u64> = data().filter(|r| r.flow == f).map(|r| (r.arrived - r.sent) / 1000).collect();
        let min = *d.iter().min().unwrap();
        pooled.extend(&d);
        pooled_queueing.extend(d.iter().map(|x| x - min));
        let s = &m.flows[f as usize];
        assert_eq!(s.delay_p95_ms, p95(&mut d), "flow {f}");
        assert_eq!(s.delay_min_ms, min as f64 / 1e3);
        let mut q: Vec<u64> = d.iter().map(|x| x - min).collect();
        assert_eq!(s.queueing_p95_ms, p95(&mut q));
    }
    assert_eq!(m.total.delay_p95_ms, p95(&mut pooled));
    assert_eq!(m.total.queueing_p95_ms, p95(&mut pooled_queueing));
    assert_eq!(m.total.delay_min_ms, pooled[0] as f64 / 1e3);
}

#[test]
fn every_delay_is_counted_however_few_records_follow_it() {
    // The accumulator counts a delay in its histogram a few records late (`HIST_LAG`): the
    // last records of a run, and a run of fewer records than that, must still be counted.
    for n in 1..=6u64 {
        let log: Vec<PacketRecord> =
            (0..n).map(|i| data(i, (i % 2) as u32, 1500, i * MS, i * MS + (10 + i) * MS, Fate::Delivered)).collect();
        let m = run(cfg(2, 100 * MS, 10 * MS), &log, &no_capacity);
        // Flow 0 carries the even records: delays 10, 12, 14 … ms; its largest is its p95.
        let f0_max = (0..n).step_by(2).map(|i| 10 + i).max().unwrap();
        assert_close!(m.flows[0].delay_min_ms, 10.0);
        assert_close!(m.flows[0].delay_p95_ms, f0_max as f64);
        assert_close!(m.total.delay_p95_ms, (10 + n - 1) as f64);
    }
}

#[test]
fn memory_does_not_grow_with_packets() {
    // 1M packets in one second of three flows with four distinct delays: the state after the
    // first 10 000 already holds every bin, bucket and delay value the rest will touch.
    let c = cfg(3, 100 * MS, 10 * MS);
    let mut acc = MetricsAccumulator::new(c);
    let delays = [10 * MS, 10 * MS + 1_500, 12 * MS, 40 * MS];
    let mut at_10k = (0, 0);
    for i in 0..1_000_000u64 {
        let sent = (i * 7_919) % 1_000 * MS;
        let r = data(i, (i % 3) as u32, 1500, sent, sent + delays[(i % 4) as usize], Fate::Delivered);
        acc.add(&r);
        if i == 9_999 {
            at_10k = (acc.histogram_bytes(), acc.series_bytes());
        }
    }
    assert_eq!((acc.histogram_bytes(), acc.series_bytes()), at_10k);
    // Per flow: a 2 KiB directory block and three 1 KiB pages of 128 µs (10 and 10.0015 ms share
    // one; 12 and 40 ms have their own), under 8 KiB with the Vecs' spare capacity.
    assert!(acc.histogram_bytes() < 3 * 8 * 1024, "{} bytes", acc.histogram_bytes());
    let m = acc.finish(&no_capacity);
    assert_eq!(m.total.packets_delivered, 1_000_000);
}

#[test]
fn histogram_iterates_in_order_across_pages_blocks_and_far_values() {
    let mut h = DelayHist::default();
    // Page, block and dense-limit boundaries, inserted out of order.
    let values = [1u64 << 40, 65_536, 0, 127, 128, (1 << 32) - 1, 1 << 32, 65_535, 5_000_000, 128];
    for &v in &values {
        h.add(v, 1);
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let mut expected: Vec<(u64, u64)> = Vec::new();
    for v in sorted {
        match expected.last_mut() {
            Some((last, n)) if *last == v => *n += 1,
            _ => expected.push((v, 1)),
        }
    }
    assert_eq!(h.iter().collect::<Vec<_>>(), expected);
    assert_eq!((h.total(), h.distinct(), h.min()), (10, 9, Some(0)));
    // Sorted: 0 127 128 128 65535 …
    assert_eq!(h.at_rank(2), Some(128));
    assert_eq!(h.at_rank(3), Some(128));
    assert_eq!(h.at_rank(4), Some(65_535));
    assert_eq!(h.at_rank(9), Some(1 << 40));
    assert_eq!(h.at_rank(10), None);
    // rank round(0.95 · 9 = 8.55) = 9.
    assert_eq!(h.percentile(95.0), Some(1 << 40));
}

#[test]
fn origin_and_times_before_it() {
    let c = MetricsConfig { origin: 1_000 * MS, ..cfg(1, 100 * MS, 50 * MS) };
    // Sent before the origin: its sending counts in the first bin.
    let log = [
        data(1, 0, 1000, 990 * MS, 1_010 * MS, Fate::Delivered),
        data(2, 0, 1000, 1_150 * MS, 1_160 * MS, Fate::Delivered),
    ];
    let m = run(c, &log, &one_mbps);
    let bins: Vec<_> = m.series.iter().map(|r| (r.t / MS, r.sending_mbps, r.throughput_mbps)).collect();
    assert_eq!(bins, vec![(0, 0.08, 0.08), (100, 0.08, 0.08)]);
    let buckets: Vec<_> = m.jain.iter().map(|r| (r.t / MS, r.active_flows, r.counted)).collect();
    // Scheduled from its first send + its minimum delay (1 000 ms) to its last (1 160 ms): the
    // empty buckets between keep the flow (idle, so no index).
    assert_eq!(buckets, vec![(0, 1, true), (50, 1, false), (100, 1, false), (150, 1, true)]);
    // Summary times stay absolute.
    assert_eq!((m.total.first_delivery, m.total.last_delivery), (1_010 * MS, 1_160 * MS));
}

#[test]
fn analyze_columns_skips_acks_and_reads_absent_columns_as_data() {
    let c = cfg(2, 100 * MS, 20 * MS);
    let records = random_log(5, 2_000, 2);
    let mut log = PacketLog::default();
    for r in &records {
        log.record(r);
    }
    // Without `kind` and `retransmission` every row counts, as data and never retransmitted.
    let bare = PacketColumns { kind: None, retransmission: None, ..PacketColumns::of(&log) };
    let as_data: Vec<PacketRecord> =
        records.iter().map(|r| PacketRecord { kind: PacketKind::Data, retransmission: false, ..*r }).collect();
    assert!(same(&analyze_columns(bare, c.clone(), &one_mbps).unwrap(), &run(c.clone(), &as_data, &one_mbps)));
    // With them, ACK rows are skipped as the accumulator skips them.
    let mut acked = log.clone();
    acked.kind[0] = PacketKind::Ack as u8;
    let mut expected = records.clone();
    expected[0].kind = PacketKind::Ack;
    assert!(same(
        &analyze_columns(PacketColumns::of(&acked), c.clone(), &one_mbps).unwrap(),
        &run(c, &expected, &one_mbps)
    ));
}

#[test]
fn analyze_columns_rejects_ragged_columns() {
    let log = PacketLog { flow: vec![0, 0], size: vec![1], ..PacketLog::default() };
    let err = analyze_columns(PacketColumns::of(&log), cfg(1, MS, MS), &no_capacity).unwrap_err();
    assert!(err.contains("`size`"), "{err}");
}

// --- Memory bounds (issue 12) -------------------------------------------------------------

#[test]
fn log_buckets_floor_within_a_256th_and_keep_order() {
    use super::histogram::{log_bucket, log_bucket_floor};
    let mut last = 0;
    for v in (0..5_000u64).chain((0..60).map(|k| 1u64 << k)).chain((1..60).map(|k| (1u64 << k) - 1)) {
        let b = log_bucket(v);
        let floor = log_bucket_floor(b);
        assert!(floor <= v, "{v}: floor {floor}");
        // Exact below 512 µs; above, the bucket is narrower than v / 256.
        if v < 512 {
            assert_eq!(floor, v);
        } else {
            assert!((v - floor) * 256 < v, "{v}: floor {floor}");
        }
        assert_eq!(log_bucket(floor), b, "a floor is in its own bucket");
    }
    for v in 0..5_000u64 {
        assert!(log_bucket(v) >= last, "bucket order follows value order at {v}");
        last = log_bucket(v);
    }
    // Hand-checked: 512..1023 µs in 2 µs buckets, 1024..2047 in 4 µs ones.
    assert_eq!(log_bucket_floor(log_bucket(513)), 512);
    assert_eq!(log_bucket_floor(log_bucket(1027)), 1024);
    assert_eq!(log_bucket_floor(log_bucket(1028)), 1028);
    assert_eq!(log_bucket_floor(log_bucket(300_001)), 300_000 & !1023);
}

#[test]
fn histogram_past_its_budget_goes_log_linear_whatever_the_order() {
    let mut rng = Rng(3);
    let values: Vec<u64> = (0..20_000).map(|_| 20_000 + rng.below(600_000)).collect();
    let exact = {
        let mut h = DelayHist::default();
        values.iter().for_each(|&v| h.add(v, 1));
        h
    };
    assert!(exact.is_exact());
    let fill = |order: &[u64]| {
        let mut h = DelayHist::with_budget(16 << 10);
        order.iter().for_each(|&v| h.add(v, 1));
        h
    };
    let a = fill(&values);
    let mut reversed = values.clone();
    reversed.reverse();
    let b = fill(&reversed);
    assert!(!a.is_exact());
    assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>(), "order-independent");
    assert_eq!(a.total(), 20_000);
    // ~256 buckets per octave over 20..620 ms: five octaves, a few KiB.
    assert!(a.heap_bytes() < 16 << 10, "{}", a.heap_bytes());
    for q in [0.0, 50.0, 95.0, 100.0] {
        let (e, l) = (exact.percentile(q).unwrap(), a.percentile(q).unwrap());
        assert!(l <= e && (e - l) * 256 < e, "p{q}: exact {e}, log-linear {l}");
    }
    // Under the budget nothing changes: the same set stays exact with the full budget.
    let small = fill(&[10_000, 10_001, 10_002]);
    assert!(small.is_exact());
    assert_eq!(small.iter().collect::<Vec<_>>(), [(10_000, 1), (10_001, 1), (10_002, 1)]);
}

/// Records of `flows` flows over `secs` seconds, in arrival order, whose delays wander over
/// 20..620 ms as a deep queue's would.
fn wandering_log(flows: u32, secs: u64, per_flow_per_sec: u64) -> Vec<PacketRecord> {
    let mut rng = Rng(9);
    let n = flows as u64 * secs * per_flow_per_sec;
    let mut v: Vec<PacketRecord> = (0..n)
        .map(|uid| {
            let at = 1_000 * MS + uid * (secs * 1_000 * MS / n);
            let sent = at - 20 * MS - rng.below(600 * MS);
            let fate = if rng.below(50) == 0 { Fate::DropQueue } else { Fate::Delivered };
            let arrived = if fate == Fate::Delivered { at } else { NEVER };
            data(uid, (uid % flows as u64) as u32, 1500, sent, arrived, fate)
        })
        .collect();
    v.sort_by_key(|r| r.arrived);
    v
}

#[test]
fn memory_is_independent_of_simulated_time() {
    // 2000 flows: each histogram's exact budget is 32 KiB; delays over 600 ms exceed it.
    let flows = 2_000u32;
    let schedule = vec![Schedule { start: 0, stop: u64::MAX }; flows as usize];
    let c = MetricsConfig { schedule, arrivals_ordered: true, ..cfg(flows as usize, 500 * MS, 100 * MS) };
    let bytes_after = |secs: u64| {
        let mut acc = MetricsAccumulator::new(c.clone());
        for r in wandering_log(flows, secs, 20) {
            acc.add(&r);
        }
        (acc.histogram_bytes(), acc.series_bytes(), acc.inexact_histograms())
    };
    let (h10, s10, inexact) = bytes_after(10);
    let (h100, s100, _) = bytes_after(100);
    assert_eq!(inexact, flows as usize, "every flow's delays outgrew its exact budget");
    // Histograms: bounded by the octaves seen, not by time.
    assert!(h100 <= h10 * 5 / 4, "histograms {h10} -> {h100} bytes");
    assert!(h100 < (flows as usize * 12) << 10, "{h100}");
    // The series grows with time until the bin budget, never past it; the Jain buckets stream.
    let budget = super::accumulator::SERIES_BUDGET * 48 + flows as usize * 12;
    assert!(s10 < s100 && s100 < budget, "series {s10} -> {s100} bytes (budget {budget})");
}

#[test]
fn series_bins_double_past_the_budget_and_stay_exact_sums() {
    // Enough flows that each may keep only 64 bins: 100 bins of 10 ms must become 50 of 20 ms.
    let n = super::accumulator::SERIES_BUDGET / 64;
    let records: Vec<PacketRecord> =
        (0..100u64).map(|k| data(k, 0, 1000, k * 10 * MS, k * 10 * MS + 5 * MS, Fate::Delivered)).collect();
    let wide = run(cfg(n, 10 * MS, 10 * MS), &records, &no_capacity);
    assert_eq!(wide.series_bin, 20 * MS);
    let reference = run(cfg(1, 20 * MS, 10 * MS), &records, &no_capacity);
    assert_eq!(reference.series_bin, 20 * MS);
    let rows = |m: &Metrics| m.series.iter().filter(|r| r.flow == 0).cloned().collect::<Vec<_>>();
    assert_eq!(rows(&wide).len(), 50);
    assert_eq!(rows(&wide), rows(&reference));
    // Two packets of 1000 B per 20 ms bin: 0.8 Mbit/s.
    assert_close!(rows(&wide)[10].throughput_mbps, 0.8);
    // A flow of a short run keeps its configured width.
    assert_eq!(run(cfg(n, 10 * MS, 10 * MS), &records[..60], &no_capacity).series_bin, 10 * MS);
}

#[test]
fn streamed_jain_equals_buffered_jain() {
    let flows = 5u32;
    // Flows scheduled at staggered starts and stops, so the scheduled sets change.
    let schedule: Vec<Schedule> =
        (0..flows as u64).map(|f| Schedule { start: f * 150 * MS, stop: 2_000 * MS + f * 170 * MS }).collect();
    let mut records = random_log(21, 20_000, flows);
    records.sort_by_key(|r| (r.fate != Fate::Delivered, r.arrived));
    let c = MetricsConfig { schedule, ..cfg(flows as usize, 250 * MS, 50 * MS) };
    let buffered = run(c.clone(), &records, &one_mbps);
    let streamed = run(MetricsConfig { arrivals_ordered: true, ..c }, &records, &one_mbps);
    assert!(buffered.jain.len() > 50 && buffered.jain.iter().any(|r| !r.counted));
    assert!(same(&buffered, &streamed));
}

#[test]
#[should_panic(expected = "arrival order")]
fn streamed_jain_refuses_records_out_of_order() {
    let c = MetricsConfig {
        schedule: vec![Schedule { start: 0, stop: u64::MAX }],
        arrivals_ordered: true,
        ..cfg(1, 100 * MS, 10 * MS)
    };
    let mut acc = MetricsAccumulator::new(c);
    acc.add(&data(0, 0, 1000, 0, 50 * MS, Fate::Delivered));
    acc.add(&data(1, 0, 1000, 0, 20 * MS, Fate::Delivered));
}

// --- Congestion statistics (issue 12) -----------------------------------------------------

#[test]
fn burstiness_of_hand_checked_gap_sequences() {
    let of = |times: &[u64]| {
        let mut g = LossGaps::default();
        times.iter().for_each(|&t| g.record(t));
        g.burstiness()
    };
    // Periodic losses: σ = 0, B = −1.
    assert_eq!(of(&[0, 10, 20, 30]), -1.0);
    // Gaps 0, 0, 30: μ = 10, σ = √200 = 14.142…, B = (σ − μ)/(σ + μ) = 0.17157…
    let b = of(&[5, 5, 5, 35]);
    let sd = 200f64.sqrt();
    assert_close!(b, (sd - 10.0) / (sd + 10.0));
    // Gaps 1, 3: μ = 2, σ = 1, B = −1/3.
    assert_close!(of(&[0, 1, 4]), -1.0 / 3.0);
    // Fewer than two gaps, or all gaps zero: undefined.
    assert!(of(&[1, 2]).is_nan() && of(&[]).is_nan() && of(&[7, 7, 7]).is_nan());
}

#[test]
fn losses_per_event_divides_drops_by_events() {
    let mut s = FlowSummary { packets_dropped: 12, ..FlowSummary::default() };
    assert!(s.losses_per_event().is_nan(), "unknown events");
    s.set_congestion(0, &LossGaps::default());
    assert!(s.losses_per_event().is_nan(), "no events");
    s.set_congestion(8, &LossGaps::default());
    assert_eq!(s.losses_per_event(), 1.5);
    assert!(s.loss_burstiness.is_nan());
}
