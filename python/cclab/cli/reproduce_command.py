"""`cclab reproduce NAME`: run a published experiment and compare with its numbers."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cclab.cli.common import CommandError, add_jobs_argument, make_console
from cclab.cli.experiment_progress import ExperimentProgress
from cclab.cluster import CLUSTER_ENV, ClusterError
from cclab.reproduce import REPRODUCTIONS, Reproduction, reproduce
from cclab.reproduce_scale import plan as plan_scale
from cclab.reproduce_scale import reproduce_scale
from cclab.sweep import work_dir

#: Reproductions with their own module (IMC'21 at scale: python/cclab/reproduce_scale.py).
ALL_REPRODUCTIONS = (*REPRODUCTIONS, "scale")

NAME = "reproduce"
HELP = (
    "run a published experiment (copa-fairness, copa-rtt-fairness, bundler, scale) and compare "
    "with the paper"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name", choices=ALL_REPRODUCTIONS, metavar="NAME", help=", ".join(ALL_REPRODUCTIONS)
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="scale: CoreScale's rate, buffer and flow counts times this factor, in (0, 1] "
        "(e.g. 0.1; default 1, the paper's setting)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="SECONDS",
        help="scale: simulated seconds per run (default 300)",
    )
    parser.add_argument(
        "--kernel-runs",
        type=int,
        default=0,
        metavar="K",
        help="scale: also run each mix K times with Linux's reno/cubic/bbr in the emulator "
        "(needs root; settings up to 1 Gbit/s) and show their median beside ours",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="scale: complete an interrupted reproduction in --out, running only the missing runs",
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help=f"scale: run on a Dask cluster (tcp://HOST:8786; default ${CLUSTER_ENV})",
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds per scheme (default: 3; rtt-fairness 1)"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="experiment directory to create (new or empty) for the runs, tables and plots "
        "(default: a new directory under $CCLAB_RUNS or ./cclab-runs)",
    )
    parser.add_argument(
        "--schemes",
        metavar="A,B",
        help="only these schemes (bundler: configurations, or the opt-in variants mixed, "
        "bbr-hosts, elastic) (comma-separated)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="bundler: 20,000 requests and one seed per configuration (under two minutes; "
        "mixed rows 10,000 requests, elastic rows their full 180 s)",
    )
    parser.add_argument(
        "--engine",
        choices=["sim", "emu"],
        default=None,
        help="bundler: the engine (default sim; emu: kernel Cubic end hosts, the main "
        "comparison, B9 and bbr-hosts when named, --quick 10,000 requests)",
    )
    add_jobs_argument(parser, "default: one per core")


#: Short headers for the printed table (the saved CSV keeps the full column names).
HEADERS = {
    "scheme": "scheme",
    "jain_median": "Jain",
    "jain": "Jain",
    "jain_median_min": "min",
    "jain_min": "min",
    "jain_median_max": "max",
    "jain_max": "max",
    "jain_counted": "counted",
    "paper": "paper",
    "report": "report",
    "ours_minus_paper": "Δ paper",
    "ours_minus_report": "Δ report",
    "utilisation": "util",
    "finding": "finding",
    "setting": "setting",
    "flows": "flows",
    "ours": "ours",
    "kernel": "kernel",
    "kernel_runs": "kernel runs",
    "paper_text": "paper says",
    "model": "model",
    "error_median": "median err",
    "configuration": "configuration",
    "inbox": "inbox",
    "bottleneck": "bottleneck",
    "slowdown_median": "median slowdown",
    "paper_median": "paper",
    "slowdown_p99": "p99 slowdown",
    "paper_p99": "paper p99",
    "fct_median_ms": "median FCT ms",
    "small_slowdown_median": "<10KB median",
    "completed_pct": "completed %",
    "paper_fct_median_ms": "paper FCT ms",
    "bundle_mbps": "bundle Mbit/s",
    "bundle_change_pct": "bundle Δ %",
    "paper_change_pct": "paper Δ %",
    "settled_change_pct": "Δ % from 20 s",
}


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.2f}"
    return str(value)


def print_reproduction(rep: Reproduction, console: Console) -> None:
    columns = [c for c in rep.table.columns if c in HEADERS]
    table = Table(title=rep.name, title_justify="left")
    for col in columns:
        left = col in (
            "scheme",
            "finding",
            "setting",
            "paper_text",
            "kernel_runs",
            "configuration",
            "inbox",
            "bottleneck",
        )
        table.add_column(HEADERS[col], justify="left" if left else "right", no_wrap=True)
    for _, row in rep.table.iterrows():
        table.add_row(*(_cell(row[c]) for c in columns))
    console.print(table)
    for note in rep.notes:
        console.print(f"- {note}", highlight=False)
    console.print(f"written to {rep.out}", highlight=False, soft_wrap=True)


def _execute_scale(args: argparse.Namespace) -> int:
    extra = {} if args.duration is None else {"duration": args.duration}
    stderr = make_console(stderr=True)
    try:
        runs = len(plan_scale(args.scale, kernel_runs=args.kernel_runs)[0].runs)
        with ExperimentProgress(stderr, runs, name="scale") as progress:
            rep = reproduce_scale(
                **extra,
                scale=args.scale,
                kernel_runs=args.kernel_runs,
                out=args.out,
                workers=args.jobs,
                resume=args.resume,
                cluster=args.cluster,
                observer=progress,
                command=["cclab", *sys.argv[1:]],
            )
    except (ValueError, ClusterError) as e:
        raise CommandError(str(e)) from e
    except KeyboardInterrupt:
        if args.out is not None and work_dir(Path(args.out)).exists():
            stderr.print(
                f"finished runs are kept in {work_dir(Path(args.out))}; run the same command "
                "with --resume to complete it",
                highlight=False,
            )
        raise
    print_reproduction(rep, make_console())
    return 0


def execute(args: argparse.Namespace) -> int:
    if args.name == "scale":
        return _execute_scale(args)
    if args.kernel_runs or args.resume or args.cluster:
        raise CommandError(
            "--kernel-runs, --resume and --cluster apply to `cclab reproduce scale` only"
        )
    kwargs: dict[str, Any] = {"out": args.out, "workers": args.jobs}
    if args.seeds is not None:
        if args.seeds < 1:
            raise CommandError("--seeds must be at least 1")
        kwargs["seeds"] = args.seeds
    if args.schemes:
        kwargs["schemes"] = [s.strip() for s in args.schemes.split(",") if s.strip()]
    if args.name == "bundler":
        kwargs["quick"] = args.quick
        kwargs["engine"] = args.engine or "sim"
    elif args.quick or args.engine:
        raise CommandError("--quick and --engine apply to `cclab reproduce bundler` only")
    stderr = make_console(stderr=True)
    stderr.print(f"reproducing {args.name} ...", highlight=False)

    def finished(r: dict[str, Any]) -> None:
        if "error" in r:
            stderr.print(
                f"  {r['label']} seed {r['seed']}: [red]failed[/]: {r['error']}", highlight=False
            )
        elif args.name == "bundler":
            stderr.print(
                f"  {r['label']} seed {r['seed']}: done in {r['wall_secs']:.1f} s", highlight=False
            )
        else:
            stderr.print(
                f"  {r['label']} seed {r['seed']}: median Jain {r['jain_median']:.3f} "
                f"({100 * r['jain_counted']:.0f} % of buckets counted)",
                highlight=False,
            )

    try:
        rep = reproduce(args.name, progress=finished, command=["cclab", *sys.argv[1:]], **kwargs)
    except ValueError as e:
        raise CommandError(str(e)) from e
    print_reproduction(rep, make_console())
    return 0
