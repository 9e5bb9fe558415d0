"""`cclab compare SCENARIO --engines sim,emu`: one scenario on two engines, per-scheme
throughput and p95 delay side by side, and the Pantheon's replication error."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from rich.table import Table

from cclab.archive import RUNS_ENV
from cclab.batch import PlanError
from cclab.cli.common import (
    CommandError,
    add_set_argument,
    add_trace_arguments,
    make_console,
    overrides_of,
    trace_of,
)
from cclab.cli.progress_bar import ProgressBar
from cclab.compare import (
    DEFAULT_ENGINES,
    CompareError,
    Comparison,
    compare,
    parse_engines,
    parse_scheme_pairs,
)
from cclab.engines import add_tolerance_argument

NAME = "compare"
HELP = (
    "run a scenario on two engines (e.g. the simulator and the emulator) and print per-scheme "
    "throughput and p95 delay side by side with the replication error"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", type=Path, metavar="SCENARIO")
    parser.add_argument(
        "--engines",
        default=",".join(DEFAULT_ENGINES),
        help="two engines; the second is the reference ('real') (default: sim,emu)",
    )
    parser.add_argument(
        "--schemes",
        help="schemes to compare, each a name run by both engines or a pair A=B run as A on the "
        "first engine and B on the second, e.g. cubic=kernel:cubic,bbr=kernel:bbr (default: the "
        "scenario as written)",
    )
    parser.add_argument("--runs", type=int, default=1, help="runs per scheme and engine")
    parser.add_argument("--seed", type=int, help="seed of the first run (default: the scenario's)")
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="experiment directory to create for the runs and compare.json (default: "
        f"${RUNS_ENV} or ./cclab-runs, then <time>-<scenario name>-compare)",
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    add_trace_arguments(parser, "each run (the report then draws both engines' cwnd together)")
    add_tolerance_argument(parser)
    add_set_argument(parser)


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"


def comparison_table(c: Comparison) -> Table:
    a, b = c.engines
    table = Table(
        title=f"{c.scenario}: {a} vs {b} (reference), {c.runs} run(s) each",
        caption=(
            f"replication error {_pct(c.replication_error)} "
            f"(throughput {_pct(c.throughput_error)}, p95 delay {_pct(c.delay_error)})"
        ),
    )
    table.add_column("scheme")
    for engine in (a, b):
        table.add_column(f"{engine}\nMbit/s", justify="right")
    table.add_column("Δ tput", justify="right")
    for engine in (a, b):
        table.add_column(f"{engine}\np95 ms", justify="right")
    table.add_column("Δ p95", justify="right")
    for r in c.rows:
        table.add_row(
            r.label,
            f"{r.first.throughput:.2f}",
            f"{r.second.throughput:.2f}",
            _pct(r.throughput_error),
            f"{r.first.delay_p95:.1f}",
            f"{r.second.delay_p95:.1f}",
            _pct(r.delay_error),
        )
    return table


def execute(args: argparse.Namespace) -> int:
    try:
        engines = parse_engines(args.engines)
        pairs = parse_scheme_pairs(args.schemes) if args.schemes else None
        trace = trace_of(args)
    except CompareError as e:
        raise CommandError(str(e)) from e
    if args.out is not None and args.out.exists():
        raise CommandError(f"{args.out} already exists; give --out a new directory")
    stderr = make_console(stderr=True)

    def started(engine: str, scheme: str, k: int, runs: int) -> None:
        stderr.print(f"running {scheme} on {engine} ({k}/{runs})", highlight=False)

    with ProgressBar(stderr) as progress:
        try:
            result = compare(
                args.scenario,
                engines=engines,
                pairs=pairs,
                runs=args.runs,
                seed=args.seed,
                overrides=overrides_of(args),
                out=args.out,
                trace=trace,
                tolerance_us=args.tolerance_us,
                on_start=started,
                progress=progress,
                command=["cclab", *sys.argv[1:]],
            )
        except PlanError as e:
            raise CommandError(str(e)) from e
    stderr.print(f"comparison directory: {result.directory}", highlight=False, soft_wrap=True)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        make_console().print(comparison_table(result))
    return 0
