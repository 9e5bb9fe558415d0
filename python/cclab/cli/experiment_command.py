"""`cclab experiment SCENARIO --schemes a,b --runs N`: the Pantheon's scripted comparison."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.table import Table

from cclab.archive import RUNS_ENV
from cclab.batch import PlanError
from cclab.cli.common import (
    CommandError,
    add_jobs_argument,
    add_set_argument,
    add_trace_arguments,
    make_console,
    overrides_of,
    trace_of,
)
from cclab.cli.experiment_progress import ExperimentProgress
from cclab.engines import add_engine_argument
from cclab.experiment import parse_schemes, run_experiment
from cclab.experiment_dir import read_experiment
from cclab.report.loading import load_study
from cclab.report.tables import scheme_summary

NAME = "experiment"
HELP = "run every scheme over the same scenario, repeatedly, and archive them as one experiment"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", type=Path, metavar="SCENARIO")
    parser.add_argument(
        "--schemes",
        required=True,
        help="comma-separated schemes, each run on every [[flows]] entry (`cclab schemes`)",
    )
    parser.add_argument("--runs", type=int, default=5, help="runs per scheme (default 5)")
    parser.add_argument(
        "--seed", type=int, help="seed of the first run of each scheme (default: the scenario's)"
    )
    parser.add_argument(
        "--random-order", action="store_true", help="run the scheme x run pairs in random order"
    )
    parser.add_argument(
        "--order-seed", type=int, help="seed of the random order (recorded; default: fresh)"
    )
    add_engine_argument(parser)
    add_jobs_argument(
        parser, "default: one per core; a real-time engine, such as the emulator, runs one"
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help=f"experiment directory to create (default: ${RUNS_ENV} or ./cclab-runs, then "
        "<time>-<scenario name>-x)",
    )
    parser.add_argument(
        "--log-packets", action="store_true", help="keep every packet's record in each run"
    )
    add_trace_arguments(parser, "each run")
    add_set_argument(parser)


def study_summary_table(directory: Path) -> Table:
    """Each scheme's mean ± sd over the runs of an experiment (or the one run) in `directory`;
    `cclab import` prints it too."""
    table = Table(title="mean ± sd over runs", title_justify="left", box=None)
    for header in ("scheme", "runs", "throughput Mbit/s", "p95 delay ms", "loss %", "util. %"):
        table.add_column(header, justify="left" if header == "scheme" else "right")
    for row in scheme_summary(load_study(directory)).itertuples(index=False):
        table.add_row(
            row.scheme,
            str(row.runs),
            row.throughput,
            row.delay_p95,
            row.loss_pct,
            row.utilisation,
        )
    return table


def execute(args: argparse.Namespace) -> int:
    if args.out is not None and args.out.exists():
        raise CommandError(f"{args.out} already exists; give --out a new directory")
    try:
        schemes = parse_schemes(args.schemes)
        trace = trace_of(args)
    except PlanError as e:
        raise CommandError(str(e)) from None
    stderr = make_console(stderr=True)
    total = len(schemes) * args.runs
    stderr.print(
        f"experiment: {args.scenario} x {', '.join(schemes)}, {args.runs} run(s) each "
        f"({total} runs, engine {args.engine})",
        highlight=False,
    )
    try:
        with ExperimentProgress(stderr, total) as progress:
            directory = run_experiment(
                args.scenario,
                schemes,
                runs=args.runs,
                seed=args.seed,
                random_order=args.random_order,
                order_seed=args.order_seed,
                engine=args.engine,
                jobs=args.jobs,
                out=args.out,
                log_packets=args.log_packets,
                trace=trace,
                observer=progress,
                command=["cclab", *sys.argv[1:]],
                **overrides_of(args),
            )
    except PlanError as e:
        raise CommandError(str(e)) from None
    stdout = make_console()
    meta = read_experiment(directory) or {}
    failed = [r for r in meta.get("runs", []) if r["status"] != "ok"]
    if len(failed) < total:
        stdout.print(study_summary_table(directory))
    stdout.print(f"experiment directory: {directory}", highlight=False, soft_wrap=True)
    if failed:
        stderr.print(f"[red]{len(failed)} of {total} runs failed[/]", highlight=False)
        return 2
    return 0
