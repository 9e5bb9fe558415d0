"""A 200-run sweep (short simulator runs) on a local Dask cluster of 2 worker processes against
the local process pool with 2 jobs: prints both wall times and their ratio. Budget: the cluster
within 15% of the pool (issue 10), i.e. the cluster path is not a slow path.

    .venv/bin/python benches/sweep_dask.py [--repeats N]

Each repetition times one whole `run_sweep` per executor (plan, validation, runs, writing the
sweep directory), alternating the two so that a change in the machine's load hits both; the
figure is the median over repetitions. The Dask cluster is started once beforehand (a cluster
outlives the sweeps sent to it); the pool's start is part of every sweep (it is made per
sweep). Needs `dask[distributed]` (`pip install 'cclab[cluster]'`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from cclab.cluster import DaskExecutor
from cclab.sweep import SweepSpec, make_axes, run_sweep

#: One Cubic or BBR flow for 2 s: a run of a few tens of ms, so per-run overhead shows.
SCENARIO = {
    "name": "bench-sweep",
    "duration": "2s",
    "seed": 1,
    "link": {"rate": "10Mbps", "delivery": "poisson", "delay": "10ms", "queue": "1bdp"},
    "flows": [{"scheme": "cubic"}],
}
#: 10 rates x 10 delays x 2 schemes x 1 run = 200 runs.
GRID = {
    "link.rate": [f"{r}Mbps" for r in (5, 10, 15, 20, 25, 30, 35, 40, 45, 50)],
    "link.delay": [f"{d}ms" for d in (5, 10, 15, 20, 25, 30, 35, 40, 45, 50)],
}
SCHEMES = ["cubic", "bbr"]
WORKERS = 2
BUDGET = 1.15


def _spec() -> SweepSpec:
    return SweepSpec(scenario=SCENARIO, axes=make_axes(GRID), schemes=SCHEMES, runs=1)


def _timed(out: Path, **kwargs: object) -> float:
    t0 = time.perf_counter()
    result = run_sweep(_spec(), out, **kwargs)  # type: ignore[arg-type]
    wall = time.perf_counter() - t0
    assert len(result.outcomes) == 200 and not result.failed, result.failed[:1]
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    pool, dask = [], []
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster(
            n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        executor = DaskExecutor(client)
        for i in range(args.repeats):
            pool.append(_timed(Path(tmp) / f"pool-{i}", jobs=WORKERS))
            dask.append(_timed(Path(tmp) / f"dask-{i}", executor=executor))
            print(f"repeat {i + 1}: pool {pool[-1]:.2f} s, dask {dask[-1]:.2f} s", flush=True)
    p, d = statistics.median(pool), statistics.median(dask)
    print(f"200-run sweep, {WORKERS} workers, median of {args.repeats}:")
    print(f"  process pool ({WORKERS} jobs):          {p:.2f} s")
    print(f"  Dask LocalCluster ({WORKERS} processes): {d:.2f} s")
    verdict = "within" if d / p <= BUDGET else "OVER"
    print(f"  ratio dask / pool: {d / p:.3f} ({verdict} the budget of {BUDGET:.2f})")


if __name__ == "__main__":
    main()
