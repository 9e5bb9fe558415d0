"""`cclab runs`: list and query the archive through its DuckDB index."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich import box
from rich.table import Table

from cclab.archive import RUNS_ENV, collect_partials, runs_root
from cclab.archive_index import LISTING_COLUMNS, IndexQueryError, experiments, runs
from cclab.cli.common import CommandError, make_console

#: What `cclab runs --experiments` shows.
EXPERIMENT_LISTING = ["experiment", "kind", "engine", "schemes", "runs", "failed", "started_at"]

NAME = "runs"
HELP = "list the archive's runs (or query its index with SQL)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheme", help="only runs with a flow of this scheme")
    parser.add_argument(
        "--where",
        metavar="CONDITION",
        help='an SQL condition on the runs table, e.g. "rate_mbps = 46 AND loss_pct < 1"',
    )
    parser.add_argument(
        "--sql",
        metavar="QUERY",
        help="any read-only SQL query over the tables runs, flows, experiments, sweeps and "
        "sweep_runs",
    )
    parser.add_argument(
        "--experiments", action="store_true", help="list the experiments instead of the runs"
    )
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="delete the index's cache (index.duckdb) and read every directory again first",
    )
    parser.add_argument(
        "--gc",
        action="store_true",
        help="remove the hidden .NAME.partial-* directories that killed runs and experiments "
        "left (those whose process is gone), then list as usual",
    )
    parser.add_argument("--limit", type=int, default=50, help="rows to show (default 50; 0: all)")
    parser.add_argument("--csv", action="store_true", help="print CSV (every column) instead")
    parser.add_argument(
        "--root", metavar="DIR", help=f"the archive (default: ${RUNS_ENV} or ./cclab-runs)"
    )


def _cell(value: Any) -> str:
    if isinstance(value, list | tuple | np.ndarray):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "-"
        return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, pd.Timestamp):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if value is None or pd.isna(value):
        return "-"
    return str(value)


def _table(frame: pd.DataFrame, title: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left")
    for column in frame.columns:
        numeric = pd.api.types.is_numeric_dtype(frame[column])
        table.add_column(
            str(column),
            justify="right" if numeric else "left",
            no_wrap=column in ("run_id", "experiment"),
        )
    for row in frame.itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    return table


def _collect(root: Path) -> None:
    removed, kept = collect_partials(root)
    err = make_console(stderr=True)
    for path in removed:
        err.print(f"removed abandoned {path}", highlight=False)
    for path in kept:
        err.print(f"kept {path} (its writer is running or on another host)", highlight=False)
    err.print(f"--gc: {len(removed)} removed, {len(kept)} kept", highlight=False)


def execute(args: argparse.Namespace) -> int:
    root = args.root or runs_root()
    if args.sql and (args.scheme or args.where or args.experiments):
        raise CommandError("--sql is a whole query; it does not combine with --scheme/--where")
    if args.gc:
        _collect(Path(root))
    try:
        if args.experiments:
            frame = experiments(root=root, rebuild=args.rebuild)
        else:
            frame = runs(
                scheme=args.scheme,
                where=args.where,
                sql=args.sql,
                root=root,
                rebuild=args.rebuild,
            )
    except IndexQueryError as e:
        raise CommandError(f"query failed: {e}") from None
    if args.csv:
        frame.to_csv(sys.stdout, index=False)
        return 0
    console = make_console()
    shown = frame
    if not args.sql:
        listed = EXPERIMENT_LISTING if args.experiments else LISTING_COLUMNS
        shown = frame[[c for c in listed if c in frame.columns]]
    total = len(shown)
    if args.limit > 0:
        shown = shown.head(args.limit)
    what = "experiments" if args.experiments else "rows" if args.sql else "runs"
    title = f"{total} {what} in {root}"
    if len(shown) < total:
        title += f" (newest {len(shown)} shown; --limit 0 for all)"
    console.print(_table(shown, title))
    return 0
