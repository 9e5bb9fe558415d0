"""`cclab calibrate TARGET`: fit an emulator (rate, one-way delay, droptail queue, i.i.d. loss;
constant and Poisson deliveries) to a real path's per-scheme figures, the Pantheon's way."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cclab.cli.common import CommandError, make_console
from cclab.cluster import CLUSTER_ENV, ClusterError, executor_for
from cclab.compare import CompareError, parse_scheme_pairs
from cclab.engines import DEFAULT_ENGINE

NAME = "calibrate"
HELP = "fit an emulated path to a real path's per-scheme throughput and p95 delay (Optuna)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="the real path's figures: a CSV (scheme,throughput_mbps,delay_p95_ms), a JSON "
        '({"schemes": [...]}) or a cclab experiment directory',
    )
    parser.add_argument(
        "--schemes",
        metavar="LIST",
        help="the schemes to fit (default: every scheme of the target); SIM=TARGET pairs name "
        "the simulator's scheme for a target's, e.g. cubic=kernel:cubic",
    )
    parser.add_argument(
        "--trials", type=int, default=60, metavar="N", help="trials per study (default 60)"
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=3,
        metavar="K",
        help="seeds per scheme and trial where the path is random (default 3)",
    )
    parser.add_argument(
        "--scenario",
        type=Path,
        metavar="FILE",
        help="the flows and duration each trial runs (default: the target experiment's "
        "scenario, or one flow for 30 s); its [link] is replaced",
    )
    parser.add_argument(
        "--duration", metavar="TIME", help="each run's length (overrides the scenario's)"
    )
    parser.add_argument(
        "--loo-trials",
        type=int,
        default=0,
        metavar="N",
        help="leave-one-scheme-out with a fresh N-trial study per held-out scheme (default 0: "
        "select among the calibration's own trials)",
    )
    parser.add_argument(
        "--jobs", type=int, metavar="N", help="parallel runs on this machine (default: cores)"
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help=f"run the trials on a Dask cluster (tcp://HOST:8786; default ${CLUSTER_ENV})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="the calibration directory (new, empty, or an earlier one to resume; default: a "
        "new one in the archive)",
    )
    parser.add_argument("--sampler-seed", type=int, default=0, help=argparse.SUPPRESS)


def execute(args: argparse.Namespace) -> int:
    try:
        from cclab.calibrate import (
            CalibrationError,
            TargetError,
            base_scenario,
            calibrate,
            load_target,
            settings_for,
        )
    except ModuleNotFoundError as e:
        if e.name != "optuna":
            raise
        raise CommandError(str(e)) from None
    from cclab.experiment_dir import new_archive_dir

    try:
        target = load_target(args.target)
        pairs = parse_scheme_pairs(args.schemes) if args.schemes else None
        scenario = base_scenario(args.scenario, target, args.duration)
        settings = settings_for(
            target,
            pairs,
            seeds=args.seeds,
            trials=args.trials,
            scenario=scenario,
            sampler_seed=args.sampler_seed,
        )
    except (TargetError, CalibrationError, CompareError, OSError) as e:
        raise CommandError(str(e)) from None
    out = args.out or new_archive_dir(Path(args.target).stem, "calibration")
    console = make_console()
    console.print(
        f"calibrating {', '.join(label for _, label in settings.pairs)} of {target.source}: "
        f"{settings.trials} trials x 2 studies, seeds {', '.join(map(str, settings.seeds))}",
        highlight=False,
        soft_wrap=True,
    )

    def on_trial(delivery: str, done: int, wanted: int, error: float, best: float) -> None:
        if done == wanted or done % 10 == 0:
            print(
                f"  {delivery:<8} trial {done:>4}/{wanted}  error {100 * error:6.1f}%  "
                f"best {100 * best:6.1f}%",
                file=sys.stderr,
                flush=True,
            )

    try:
        # The trials run in the simulator: on a Dask cluster when one is named (--cluster or
        # $CCLAB_CLUSTER), else on this machine's cores.
        with executor_for(DEFAULT_ENGINE, cluster=args.cluster) as executor:
            manifest = calibrate(
                target,
                settings,
                out,
                executor=executor,
                jobs=args.jobs,
                loo_trials=args.loo_trials,
                on_trial=on_trial,
                command=["cclab", *sys.argv[1:]],
                log=lambda m: print(m, file=sys.stderr),
            )
    except (CalibrationError, ClusterError) as e:
        raise CommandError(str(e)) from None
    _print_result(console, manifest, Path(out))
    return 0


def _print_result(console: Any, manifest: dict[str, Any], out: Path) -> None:
    from rich.table import Table

    best = manifest["best"]
    link = best["link"]
    console.print(
        f"best emulator ({best['delivery']} deliveries): {link['rate_mbps']:.3f} Mbit/s, "
        f"one-way delay {link['delay_ms']:.2f} ms, queue {link['queue_packets']} packets, "
        f"loss {100 * link['loss']:.3f}%",
        highlight=False,
        soft_wrap=True,
    )
    table = Table(box=None)
    for heading in (
        "scheme",
        "real Mbit/s",
        "emu Mbit/s",
        "real p95 ms",
        "emu p95 ms",
        "error %",
    ):
        table.add_column(heading, justify="left" if heading == "scheme" else "right")
    for r in best["schemes"]:
        table.add_row(
            r["scheme"],
            f"{r['real_throughput_mbps']:.3f}",
            f"{r['emulated_throughput_mbps']:.3f}",
            f"{r['real_delay_p95_ms']:.1f}",
            f"{r['emulated_delay_p95_ms']:.1f}",
            f"{100 * r['replication_error']:.1f}",
        )
    table.add_row("all", "", "", "", "", f"{100 * best['replication_error']:.1f}")
    console.print(table)
    for d, s in manifest["studies"].items():
        console.print(f"{d} study best: {100 * s['replication_error']:.1f}%", highlight=False)
    if manifest["leave_one_out"]:
        console.print(
            "leave-one-scheme-out: "
            + ", ".join(
                f"{r['held_out']} {100 * r['held_out_error']:.1f}%"
                for r in manifest["leave_one_out"]
            )
            + f" (mean {100 * manifest['leave_one_out_error']:.1f}%)",
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"wall time {manifest['wall_secs']:.0f} s", highlight=False)
    console.print(f"calibration: {out} (cclab report {out})", highlight=False, soft_wrap=True)
