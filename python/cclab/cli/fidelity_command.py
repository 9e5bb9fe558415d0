"""`cclab fidelity [--quick]`: the fidelity suite — every shipped scenario and the issue's mixes
on the simulator and on the emulator running Linux TCP, one table with the replication error
and each target's verdict (`cclab.fidelity`)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd
from rich.table import Table

from cclab import _core
from cclab.archive import RUNS_ENV
from cclab.batch import PlanError
from cclab.cli.common import CommandError, make_console
from cclab.cli.progress_bar import ProgressBar
from cclab.engines import EMU, SIM, add_tolerance_argument
from cclab.fidelity import (
    QUICK_DURATION,
    REFEREE_TOLERANCE_US,
    SCHEMES,
    TABLE_FILE,
    UNDECIDED,
    FidelityError,
    FidelityResult,
    interval_text,
    pooled_table,
    run_fidelity,
    undecided,
)

NAME = "fidelity"
HELP = (
    "run every shipped scenario and the fidelity mixes on the simulator and on the emulator "
    "(Linux TCP as the referee) and print the replication error against the targets (root)"
)


def _duration(text: str) -> str:
    try:
        _core.parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"the quick form (CI): three scenarios of {QUICK_DURATION}, under a minute",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="runs per scenario, scheme and engine (default 1; 3 or more give the share and "
        "replication verdicts a 95%% interval that says when the runs cannot tell)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        metavar="S",
        help="repetition k runs seed S + k - 1 on both engines (default: each scenario's own "
        "seed); a suite from the seed after an earlier one's last adds new seeds to --pool",
    )
    parser.add_argument(
        "--duration",
        type=_duration,
        metavar="D",
        help="cap every scenario at D (e.g. 10s) where its flow schedule fits (default: each "
        f"scenario's own; {QUICK_DURATION} with --quick)",
    )
    parser.add_argument(
        "--schemes",
        metavar="A,B",
        help=f"only these schemes in the scheme tests (of {', '.join(SCHEMES)}; default all)",
    )
    parser.add_argument(
        "--only",
        metavar="NAME,NAME",
        help="only these scenarios, by their names in the table (pantheon-1flow, "
        "fidelity/rtt-mix; default the whole suite)",
    )
    add_tolerance_argument(
        parser,
        default=REFEREE_TOLERANCE_US,
        default_text=f"{REFEREE_TOLERANCE_US}, so a referee adds no timing noise of its own",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="fidelity directory to create (new or empty) for the runs, the table "
        f"({TABLE_FILE}) and the report (default: ${RUNS_ENV} or ./cclab-runs, then "
        "<time>-fidelity-<form>)",
    )
    parser.add_argument(
        "--sim-only",
        action="store_true",
        help="run the simulator's side alone (no root): a directory to give --pool first, "
        "against kernel runs kept from earlier suites",
    )
    parser.add_argument(
        "--pool",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="run nothing: print the table of these fidelity directories' finished runs taken "
        "together, the emulator's from all, the simulator's from the first (more runs a row "
        "than one suite gives; today's definitions and targets)",
    )
    parser.add_argument(
        "--max-late",
        type=float,
        metavar="MS",
        help="with --pool: leave out the emulator's runs whose own timing error (p99) exceeded "
        "MS milliseconds (a loaded host's lateness is in the delays they measured)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit with status 1 when a target is not met (default: report it, exit 0)",
    )


def _pct(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{100 * x:.1f}%"


def _num(x: float, digits: int) -> str:
    return "-" if not math.isfinite(x) else f"{x:.{digits}f}"


def fidelity_summary(result: FidelityResult) -> Table:
    """One row per scenario and scheme: both engines' figures side by side, the errors and the
    verdict."""
    table = result.table
    form = "quick" if result.quick else "full"
    what = (
        f"fidelity runs of {result.pooled_from} directories pooled"
        if result.pooled_from
        else f"fidelity suite ({form})"
    )
    medians = f"medians of {'up to ' if result.pooled_from else ''}{result.runs} run(s)"
    checked = result.checked
    table_out = Table(
        title=f"{what}: {SIM.name} vs {EMU.name} (Linux TCP, the reference), {medians}",
        caption=f"{int(checked['passed'].sum())} of {len(checked)} targets met"
        + (f"; ?: {UNDECIDED}" if any(undecided(r) for r in checked.to_dict("records")) else ""),
    )
    for heading in (
        "scenario",
        "scheme",
        "Mbit/s\nsim",
        "Mbit/s\nemu",
        "p95 ms\nsim",
        "p95 ms\nemu",
        "Jain\nsim",
        "Jain\nemu",
        "share\nsim",
        "share\nemu",
        "emu late\np99 ms",
        "repl.\nerror",
        "share\nerror",
        "95% int.\n(share or\nrepl.)",
        "spread\nfactor",
        "target",
        "",
    ):
        left = heading in ("scenario", "scheme", "target", "")
        table_out.add_column(heading, justify="left" if left else "right")
    sim = table[table["engine"] == SIM.name]
    emu = table[table["engine"] == EMU.name].set_index(["scenario", "scheme"])
    for row in sim.to_dict("records"):
        key = (row["scenario"], row["scheme"])
        other = emu.loc[key].to_dict() if key in emu.index else None
        scheme = row["scheme"] if other is None else f"{row['scheme']} / {other['runs_as']}"

        def pair(column: str, digits: int, row: dict = row, other: dict | None = other) -> list:
            emu_cell = "sim only" if other is None else _num(other[column], digits)
            return [_num(row[column], digits), emu_cell]

        passed = row["passed"]
        verdict = "" if pd.isna(passed) else ("ok" if passed else "FAIL")
        if undecided(row):
            verdict += "?"
        table_out.add_row(
            row["scenario"],
            scheme,
            *pair("throughput_mbps", 2),
            *pair("delay_p95_ms", 1),
            *pair("jain_median", 3),
            *pair("share", 3),
            "-" if other is None else _num(other["late_p99_ms"], 2),
            _pct(row["replication_error"]),
            _pct(row["share_error"]),
            interval_text(row),
            _num(row["spread_factor"], 2),
            row["target"],
            verdict,
        )
    return table_out


def _names(text: str | None) -> list[str] | None:
    """A comma-separated option's names (None when it was not given)."""
    return None if not text else [n.strip() for n in text.split(",") if n.strip()]


def _pooled(args: argparse.Namespace) -> int:
    """`--pool`: the table of finished runs, read and printed; nothing is run or written."""
    given = [
        flag
        for flag, value in (
            ("--quick", args.quick),
            ("--runs", args.runs != 1),
            ("--seed", args.seed is not None),
            ("--duration", args.duration),
            ("--schemes", args.schemes),
            ("--only", args.only),
            ("--out", args.out),
            ("--sim-only", args.sim_only),
        )
        if value
    ]
    if given:
        raise CommandError(f"--pool reads finished runs and runs nothing: drop {', '.join(given)}")
    try:
        result = pooled_table(args.pool, args.max_late)
    except FidelityError as e:
        raise CommandError(str(e)) from e
    console = make_console()
    console.print(fidelity_summary(result))
    for note in result.notes:
        console.print(f"- {note}", highlight=False)
    return 1 if args.check and not result.all_passed else 0


def execute(args: argparse.Namespace) -> int:
    if args.pool:
        return _pooled(args)
    if args.max_late is not None:
        raise CommandError("--max-late filters the runs --pool reads: give it with --pool")
    if args.out is not None and args.out.exists() and any(args.out.iterdir()):
        raise CommandError(f"{args.out} is not empty; give --out a new or an empty directory")
    schemes = _names(args.schemes)
    only = _names(args.only)
    stderr = make_console(stderr=True)

    def started(label: str, k: int, total: int) -> None:
        stderr.print(f"[{k}/{total}] {label}", highlight=False)

    with ProgressBar(stderr) as progress:
        try:
            result = run_fidelity(
                quick=args.quick,
                runs=args.runs,
                duration=args.duration,
                schemes=schemes,
                only=only,
                tolerance_us=args.tolerance_us,
                out=args.out,
                on_start=started,
                progress=progress,
                command=["cclab", *sys.argv[1:]],
                sim_only=args.sim_only,
                first_seed=args.seed,
            )
        except PlanError as e:
            raise CommandError(str(e)) from e
    from cclab.report import write_report

    report = write_report(result.directory)
    console = make_console()
    console.print(fidelity_summary(result))
    for note in result.notes:
        console.print(f"- {note}", highlight=False)
    console.print(f"fidelity directory: {result.directory}", highlight=False, soft_wrap=True)
    console.print(f"report: {report}", highlight=False, soft_wrap=True)
    return 1 if args.check and not result.all_passed else 0
