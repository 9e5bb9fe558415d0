//! Throughput of the metrics accumulator on a synthetic 10-million-packet, 100-flow log.
//!
//! Run: `cargo bench -p cclab-core --bench metrics` (optionally `-- <packets> <jitter µs>`).
//!
//! The log imitates a simulator run: 100 flows with unequal shares through a 1 Gbit/s
//! bottleneck for 120 s, one-way delays of 5–50 ms propagation plus a queue that fills and
//! drains every 2 s (so ~25 000 distinct µs delay values per flow), uniform per-packet jitter
//! at ns resolution (100 µs by default), 1 % queue drops, 1 % retransmissions, and records in
//! arrival order. Budgets (DESIGN.md): `add` ≥ 20 M records/s on one core; whole analysis < 5 s.
//! A large jitter (e.g. 2000 µs) is the stress case: each flow's packets then spread over many
//! histogram pages and the counters stop fitting in cache.

use cclab_core::metrics::{analyze, MetricsAccumulator, MetricsConfig};
use cclab_core::record::{Fate, PacketKind, PacketLog, PacketRecord, RecordSink, NEVER};
use std::hint::black_box;
use std::time::Instant;

const FLOWS: u32 = 100;
const PACKET: u32 = 1500;
/// 1500 B at 1 Gbit/s.
const SLOT_NS: u64 = 12_000;
use cclab_core::time::MS;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn synthetic_log(packets: usize, jitter_ns: u64) -> PacketLog {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Flow f gets a share proportional to f + 1: picking a slot uniformly from the cumulative
    // weights keeps shares unequal, as real flows' are.
    let mut cumulative = Vec::new();
    let mut weight_total = 0;
    for w in 1..=FLOWS as u64 {
        weight_total += w;
        cumulative.push(weight_total);
    }
    let mut log = PacketLog::default();
    for i in 0..packets as u64 {
        let pick = rng.below(weight_total);
        let flow = cumulative.partition_point(|&c| c <= pick) as u32;
        let departure = i * SLOT_NS;
        let phase = departure % (2_000 * MS);
        let queueing = phase * 25 / 2_000 + rng.below(jitter_ns.max(1));
        let propagation = 5 * MS + flow as u64 * 450_000;
        let sent = departure.saturating_sub(queueing);
        let dropped = rng.below(100) == 0;
        let in_flight = i + 200 >= packets as u64;
        let (fate, arrived) = match (dropped, in_flight) {
            (true, _) => (Fate::DropQueue, NEVER),
            (false, true) => (Fate::InFlight, NEVER),
            (false, false) => (Fate::Delivered, departure + SLOT_NS + propagation),
        };
        log.record(&PacketRecord {
            uid: i,
            flow,
            kind: PacketKind::Data,
            size: PACKET,
            sent,
            arrived,
            fate,
            enqueued: sent,
            dequeued: departure,
            retransmission: rng.below(100) == 0,
            push: false,
            seq: 0,
        });
    }
    log
}

fn config() -> MetricsConfig {
    MetricsConfig {
        n_flows: FLOWS as usize,
        bin: 500 * MS,
        jain_bucket: 100 * MS,
        origin: 0,
        schedule: Vec::new(),
        arrivals_ordered: false,
    }
}

fn capacity(t0: u64, t1: u64) -> f64 {
    (t1 - t0) as f64
}

fn main() {
    // cargo passes `--bench` to the binary; only bare numbers are ours.
    let numbers: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let packets = numbers.first().map_or(10_000_000, |&n| n as usize);
    let jitter_us = numbers.get(1).copied().unwrap_or(100);
    let t = Instant::now();
    let log = synthetic_log(packets, jitter_us * 1000);
    println!("built {packets} records ({FLOWS} flows, {jitter_us} µs jitter) in {:.2} s", t.elapsed().as_secs_f64());

    // `add` alone, fed the way an engine feeds it: one PacketRecord at a time.
    let mut best_add = f64::INFINITY;
    for run in 0..3 {
        let mut acc = MetricsAccumulator::new(config());
        let t = Instant::now();
        for i in 0..log.len() {
            acc.add(&log.get(i));
        }
        best_add = best_add.min(t.elapsed().as_secs_f64());
        if run == 0 {
            println!(
                "  state: histograms {:.1} MiB, series and Jain buckets {:.1} MiB",
                acc.histogram_bytes() as f64 / (1 << 20) as f64,
                acc.series_bytes() as f64 / (1 << 20) as f64
            );
        }
        black_box(acc.finish(&capacity));
    }
    println!("add:     {:.1} M records/s ({best_add:.3} s, best of 3)", packets as f64 / best_add / 1e6);

    // Everything a caller waits for: columns in, Metrics out.
    let mut best = f64::INFINITY;
    let mut metrics = None;
    for _ in 0..3 {
        let t = Instant::now();
        let m = analyze(&log, config(), &capacity);
        best = best.min(t.elapsed().as_secs_f64());
        metrics = Some(black_box(m));
    }
    let m = metrics.unwrap();
    println!("analyze: {best:.3} s for {packets} records ({:.1} M records/s, best of 3)", packets as f64 / best / 1e6);
    println!(
        "  total {:.1} Mbit/s, p95 {:.3} ms, loss {:.2} %, {} series rows, {} Jain buckets, median Jain {:.3}",
        m.total.throughput_mbps,
        m.total.delay_p95_ms,
        m.total.loss_pct,
        m.series.len(),
        m.jain.len(),
        m.jain_median
    );
}
