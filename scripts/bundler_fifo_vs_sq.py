"""Issue 11: why one `--quick` seed of the Bundler reproduction gives "FIFO at the inbox"
a lower median slowdown than the status quo in the simulator.

Runs the status quo and FIFO at the inbox (Copa) of `scenarios/repro/bundler.toml` over
several seeds at one shape, traced, and prints per seed both median slowdowns and, for every
request of at least `--large` bytes, the ssthresh its persistent connection carried when the
request started. A request that lands on a connection whose ssthresh an earlier small
request's loss left at a few packets starts in congestion avoidance and grows by about one
packet per RTT (Linux keeps ssthresh across idle: tcp_cwnd_restart sets it to
tcp_current_ssthresh, never back to infinity), so for seconds it does not fill the queue the
small requests wait in.

    .venv/bin/python scripts/bundler_fifo_vs_sq.py            # 10,000 requests, seeds 0-9
    .venv/bin/python scripts/bundler_fifo_vs_sq.py --requests 20000 --duration 45s --seeds 0
    .venv/bin/python scripts/bundler_fifo_vs_sq.py --emu-dir /tmp/emu   # with emulator runs

`--emu-dir` reads run directories `status-quo-s<seed>` and `fifo-at-inbox-s<seed>` made by
`cclab run ... --engine emu --trace` (kernel TCP_INFO traces) and reports them the same way.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import cclab

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "repro" / "bundler.toml"
CONFIGURATIONS = {
    "status-quo": {},
    "fifo-at-inbox": {"middlebox": {"scheduler": "droptail", "controller": "copa"}},
}
MSS = 1448


def large_requests(run: Path, large: int) -> pd.DataFrame:
    """Every request of at least `large` bytes with its connection's ssthresh (packets) and
    mode at its start, from the run's trace."""
    req = pd.read_parquet(run / "requests.parquet")
    columns = ["flow", "t_ns", "mode", "ssthresh_bytes"]
    trace = pd.read_parquet(run / "trace.parquet", columns=columns)
    rows = []
    for r in req[req.size_bytes >= large].itertuples():
        before = trace[(trace.flow == r.flow) & (trace.t_ns < r.start_ns)]
        last = before.iloc[-1] if len(before) else None
        ssthresh = np.nan if last is None else last.ssthresh_bytes / MSS
        rows.append(
            {
                "request": r.request,
                "start_s": r.start_ns / 1e9,
                "mb": r.size_bytes / 1e6,
                "flow": r.flow,
                "ssthresh_pkts": ssthresh,
                "slowdown": r.slowdown,
            }
        )
    return pd.DataFrame(rows)


def summarise(label: str, run: Path, large: int) -> float:
    req = pd.read_parquet(run / "requests.parquet")
    median = float(req.slowdown.median())
    big = large_requests(run, large)
    print(f"  {label:14s} median slowdown {median:.2f}")
    for b in big.itertuples():
        print(
            f"    request {b.request:6d} at {b.start_s:6.2f} s, {b.mb:6.1f} MB on connection "
            f"{b.flow:3d}: ssthresh {b.ssthresh_pkts:7.0f} packets, slowdown {b.slowdown:.2f}"
        )
    return median


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--duration", default="25s")
    ap.add_argument("--seeds", default="0-9", help="e.g. 0-9 or 0,17,26")
    ap.add_argument("--large", type=int, default=10_000_000, help="bytes (default 10 MB)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--emu-dir", type=Path, default=None)
    a = ap.parse_args()
    if "-" in a.seeds:
        lo, hi = a.seeds.split("-")
        seeds = list(range(int(lo), int(hi) + 1))
    else:
        seeds = [int(s) for s in a.seeds.split(",")]
    out = a.out or Path(tempfile.mkdtemp(prefix="bundler-fifo-"))
    shape = {"duration": a.duration, "flows__0__requests__max_requests": a.requests}
    worse = 0
    for seed in seeds:
        print(f"seed {seed} (simulator, {a.requests:,} requests, {a.duration})")
        medians = {}
        for name, overrides in CONFIGURATIONS.items():
            run = out / f"{name}-s{seed}"
            if not (run / "meta.json").exists():
                cclab.run(SCENARIO, seed=seed, trace=True, out=run, **shape, **overrides)
            medians[name] = summarise(name, run, a.large)
        worse += medians["fifo-at-inbox"] > medians["status-quo"]
        if a.emu_dir is not None:
            for name in CONFIGURATIONS:
                run = a.emu_dir / f"{name}-s{seed}"
                if (run / "trace.parquet").exists():
                    summarise(f"emu {name}", run, a.large)
    print(f"FIFO at the inbox worse than the status quo in {worse} of {len(seeds)} seeds")
    print(f"runs in {out}")


if __name__ == "__main__":
    main()
