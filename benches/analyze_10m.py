"""Analysis of a 10-million-packet log through the Rust metrics kernel, from Python.

Run:  .venv/bin/python benches/analyze_10m.py [--packets N] [--flows F] [--repeat R]
(also part of `make bench`). Budget (issue 5, DESIGN.md "Performance budgets"): throughput,
p95 delay, loss, the 500 ms series and Jain's index of 10 million packets in under 5 s.

The log is synthetic, built with numpy: F flows (100) with unequal shares of a 1 Gbit/s
bottleneck, 1500-byte packets departing back to back (12 µs apart, so 10 M packets span 120 s),
per-flow propagation delays of 5 to 50 ms, a queue that fills and drains every 2 s, 100 µs of
uniform jitter at ns resolution, 1 % of packets dropped and the last 200 still in flight. What is
timed is `cclab.analysis.analyze_packets` on those columns (dtype checks, the kernel, and the
DataFrames it returns) — the same call the log importers make.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cclab.analysis import FATE_DELIVERED, FATE_DROP_QUEUE, FATE_IN_FLIGHT, NEVER, analyze_packets

PACKET_BYTES = 1500
SLOT_NS = 12_000  # 1500 B at 1 Gbit/s
MS = 1_000_000
BUDGET_S = 5.0


def synthetic_log(packets: int, flows: int, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    weights = np.arange(1, flows + 1, dtype=np.float64)
    flow = rng.choice(flows, size=packets, p=weights / weights.sum()).astype(np.uint32)
    departure = np.arange(packets, dtype=np.uint64) * np.uint64(SLOT_NS)
    phase = departure % np.uint64(2_000 * MS)
    queueing = phase * np.uint64(25) // np.uint64(2_000) + rng.integers(
        0, 100_000, size=packets, dtype=np.uint64
    )
    propagation = np.uint64(5 * MS) + flow.astype(np.uint64) * np.uint64(450_000)
    sent = departure - np.minimum(queueing, departure)
    fate = np.full(packets, FATE_DELIVERED, dtype=np.uint8)
    fate[rng.random(packets) < 0.01] = FATE_DROP_QUEUE
    fate[-200:] = FATE_IN_FLIGHT
    arrived = np.where(
        fate == FATE_DELIVERED, departure + np.uint64(SLOT_NS) + propagation, NEVER
    ).astype(np.uint64)
    return {
        "flow": flow,
        "size": np.full(packets, PACKET_BYTES, dtype=np.uint32),
        "sent_ns": sent,
        "arrived_ns": arrived,
        "fate": fate,
    }


def _time_from_parquet(log: dict[str, np.ndarray], repeat: int) -> float:
    """Best time to read the log's columns from a zstd Parquet file and analyse them."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "packets.parquet"
        pq.write_table(pa.table(log), path, compression="zstd")
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            table = pq.read_table(path)
            columns = {name: table.column(name).to_numpy() for name in log}
            analyze_packets(**columns, capacity_mbps=1000.0)
            times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=10_000_000)
    parser.add_argument("--flows", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="timed analyses; the best counts")
    args = parser.parse_args()

    t0 = time.perf_counter()
    log = synthetic_log(args.packets, args.flows)
    print(
        f"synthetic log: {args.packets:,} packets, {args.flows} flows, "
        f"built in {time.perf_counter() - t0:.2f} s"
    )

    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        result = analyze_packets(**log, capacity_mbps=1000.0)
        times.append(time.perf_counter() - t0)
    best = min(times)
    from_parquet = _time_from_parquet(log, args.repeat)
    total = result.summary.iloc[-1]
    print(
        f"total: {total.throughput_mbps:.1f} Mbit/s, p95 one-way delay {total.delay_p95_ms:.3f} ms,"
        f" loss {total.loss:.4%}, utilisation {result.metrics['utilisation']:.3f}, "
        f"Jain median {result.metrics['jain_median']:.3f}, "
        f"{len(result.timeseries):,} series rows, {len(result.jain):,} Jain buckets"
    )
    print(
        f"analysis of {args.packets:,} packets: best {best:.3f} s of {args.repeat} "
        f"({args.packets / best / 1e6:.1f} M packets/s); all: "
        + ", ".join(f"{t:.3f}" for t in times)
    )
    print(f"read from packets.parquet and analysed: best {from_parquet:.3f} s")
    within = max(best, from_parquet) < BUDGET_S
    print(f"budget {BUDGET_S:.0f} s: {'met' if within else 'MISSED'}")
    return 0 if within else 1


if __name__ == "__main__":
    raise SystemExit(main())
