"""Calibration against a hidden path (issue 10's targets).

A target is made by running four schemes over a link whose parameters the calibration does not
see (Poisson deliveries, i.i.d. loss, a queue that is no round number of BDPs), each over seeds
the calibration never uses; `cclab.calibrate` then fits both delivery models with 3 seeds per
trial. Prints the recovered link against the truth, the replication error against its 5%
budget (and the error of the truth itself: the noise floor the target's own seeds leave), and
the wall time against its 3-minute budget.

    .venv/bin/python benches/calibrate_bench.py [--trials 60] [--duration 15s] [--jobs 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import cclab
from cclab.calibrate import base_scenario, calibrate, load_target, settings_for
from cclab.calibrate.search import default_executor, evaluate
from cclab.calibrate.space import LinkParams

#: The hidden path: 8 Mbit/s Poisson, 23 ms one way (RTT 46 ms, BDP 30.7 packets), a
#: 37-packet buffer (1.2 BDP) and 0.4% loss.
TRUTH = LinkParams("poisson", rate_mbps=8.0, delay_ms=23.0, queue_packets=37, loss=0.004)
SCHEMES = ("cubic", "bbr", "vegas", "copa")
#: The target's seeds: none of the calibration's (1, 2, 3).
TARGET_SEEDS = range(101, 106)
ERROR_BUDGET = 0.05
WALL_BUDGET_S = 180.0


def make_target(directory: Path, duration: str) -> Path:
    rows = ["scheme,throughput_mbps,delay_p95_ms"]
    for scheme in SCHEMES:
        figures = []
        for seed in TARGET_SEEDS:
            scenario = {
                "duration": duration,
                "link": TRUTH.link_table(),
                "flows": [{"scheme": scheme}],
            }
            summary = cclab.run(scenario, seed=seed).summary
            total = summary[summary["flow"].isna()].iloc[0]
            figures.append((float(total.throughput_mbps), float(total.delay_p95_ms)))
        tput = statistics.fmean(t for t, _ in figures)
        delay = statistics.fmean(d for _, d in figures)
        rows.append(f"{scheme},{tput},{delay}")
    path = directory / "hidden.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=60, help="trials per study")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--duration", default="15s", help="each run's length")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cclab-calibrate-bench-"))
    target_path = make_target(work, args.duration)
    target = load_target(target_path)
    settings = settings_for(
        target,
        None,
        seeds=args.seeds,
        trials=args.trials,
        scenario=base_scenario(None, target, args.duration),
    )
    (truth,) = evaluate([TRUTH], settings, target, default_executor(args.jobs), work / "s")
    t0 = time.perf_counter()
    manifest = calibrate(target, settings, args.out or work / "calibration", jobs=args.jobs)
    wall = time.perf_counter() - t0
    best = manifest["best"]
    link = best["link"]
    print(f"target: {', '.join(SCHEMES)} over {args.duration}, seeds {list(TARGET_SEEDS)}")
    print(f"{'':<10}{'truth':>12}{'recovered':>12}")
    print(f"{'delivery':<10}{TRUTH.delivery:>12}{link['delivery']:>12}")
    print(f"{'rate Mb/s':<10}{TRUTH.rate_mbps:>12.3f}{link['rate_mbps']:>12.3f}")
    print(f"{'delay ms':<10}{TRUTH.delay_ms:>12.2f}{link['delay_ms']:>12.2f}")
    print(f"{'queue pkt':<10}{TRUTH.queue_packets:>12}{link['queue_packets']:>12}")
    print(f"{'loss %':<10}{100 * TRUTH.loss:>12.3f}{100 * link['loss']:>12.3f}")
    for d, s in manifest["studies"].items():
        print(f"{d} study best: {100 * s['replication_error']:.1f}%")
    print(f"error of the truth itself (noise floor): {100 * truth.replication_error:.1f}%")
    loo = manifest["leave_one_out_error"]
    print(f"leave-one-scheme-out mean held-out error: {100 * loo:.1f}%")
    error = best["replication_error"]
    print(
        f"replication error: {100 * error:.1f}% (budget {100 * ERROR_BUDGET:.0f}%: "
        f"{'met' if error <= ERROR_BUDGET else 'MISSED'})"
    )
    print(
        f"calibration wall time: {wall:.0f} s for 2 studies x {args.trials} trials, "
        f"{len(SCHEMES)} schemes, {args.seeds} seeds, jobs {manifest['jobs']} "
        f"(budget {WALL_BUDGET_S:.0f} s: {'met' if wall <= WALL_BUDGET_S else 'MISSED'})"
    )
    print(f"calibration directory: {args.out or work / 'calibration'}")


if __name__ == "__main__":
    main()
