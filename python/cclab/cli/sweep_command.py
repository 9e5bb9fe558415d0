"""`cclab sweep SCENARIO --set link.rate=10Mbps,50Mbps --schemes a,b --runs N`: the cartesian
product of the given values as independent runs, archived as one sweep directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from cclab.archive import RUNS_ENV
from cclab.batch import BatchRun, PlanError, RunOutcome
from cclab.cli.common import (
    CommandError,
    add_jobs_argument,
    make_console,
    parse_assignment,
)
from cclab.cluster import CLUSTER_ENV, ClusterError, executor_for
from cclab.engines import add_engine_argument
from cclab.experiment import parse_schemes
from cclab.sweep import SweepSpec, make_axes, run_sweep, split_values, sweep_frame, work_dir

NAME = "sweep"
HELP = "run a scenario over every combination of values of its keys, schemes and repetitions"


def grid_entry(text: str) -> tuple[str, list[Any]]:
    """`link.rate=10Mbps,50Mbps` → ("link.rate", ["10Mbps", "50Mbps"]); each value is read as
    `--set` reads one (a TOML value, else a string)."""
    key, _ = parse_assignment(text)
    raw = text.partition("=")[2]
    pieces = split_values(raw)
    if not any(pieces):
        raise argparse.ArgumentTypeError(f"{key}: no values; give KEY=V1,V2,... ({text!r})")
    if not all(pieces):
        raise argparse.ArgumentTypeError(f"{key}: an empty value in {raw!r}")
    return key, [parse_assignment(f"{key}={piece}")[1] for piece in pieces]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", type=Path, metavar="SCENARIO")
    parser.add_argument(
        "--set",
        dest="grid",
        metavar="KEY=V1,V2,...",
        type=grid_entry,
        action="append",
        default=[],
        help="a scenario key and the values it takes (link.rate=10Mbps,50Mbps); one value holds "
        "it fixed; repeatable: the sweep runs every combination",
    )
    parser.add_argument(
        "--schemes",
        help="comma-separated schemes, each run on every [[flows]] entry (default: the "
        "scenario's own flows)",
    )
    parser.add_argument("--runs", type=int, default=1, help="runs per point and scheme (default 1)")
    parser.add_argument(
        "--seed", type=int, help="seed of the first run of each point (default: the scenario's)"
    )
    add_engine_argument(parser)
    add_jobs_argument(parser, "default: one per core; the emulator runs one")
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help=f"run on a Dask cluster (tcp://HOST:8786; default ${CLUSTER_ENV}); needs "
        "pip install 'cclab[cluster]'",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help=f"sweep directory to create (default: ${RUNS_ENV} or ./cclab-runs, then "
        "<time>-<scenario name>-sweep)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="complete the sweep in --out (interrupted, or with failed runs): run only the "
        "runs that are missing or failed",
    )
    parser.add_argument(
        "--log-packets", action="store_true", help="keep every packet's record in each run"
    )


class SweepProgress:
    """An `Observer` of the batch runner: one bar for the whole sweep. On a terminal it is a
    live bar; elsewhere it prints a line at every tenth of the runs. Failed runs are printed
    as they end."""

    def __init__(self, console: Console, total: int) -> None:
        self._console = console
        self._total = total
        self._done = 0
        self.failed = 0
        self.reused = 0
        self._progress = Progress(
            TextColumn("sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not console.is_terminal,
        )
        self._task = self._progress.add_task("sweep", total=total, status="")

    def started(self, planned: BatchRun) -> None:
        pass

    def progress(self, planned: BatchRun, sim_ns: int, duration_ns: int) -> None:
        pass

    def finished(self, outcome: RunOutcome) -> None:
        self._done += 1
        if not outcome.ok:
            self.failed += 1
            self._progress.console.print(
                f"[red]failed[/] {outcome.run.label}: {outcome.error}", highlight=False
            )
        self._progress.update(
            self._task,
            advance=1,
            status=f"[red]{self.failed} failed[/]" if self.failed else "",
        )
        tenth = self._done * 10 // self._total
        if not self._console.is_terminal and tenth > (self._done - 1) * 10 // self._total:
            self._console.print(f"sweep: {self._done}/{self._total} runs ended", highlight=False)

    def __enter__(self) -> SweepProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()


def point_table(directory: Path) -> Table:
    """Mean throughput and p95 delay of each point and scheme over its runs."""
    frame = sweep_frame(directory)
    totals = frame[frame["flow"].isna() & (frame["status"] == "ok")]
    axes = list(frame.attrs["axes"])
    table = Table(title="mean over runs, per point and scheme", title_justify="left", box=None)
    for header in ("point", *axes, "scheme", "runs", "throughput Mbit/s", "p95 delay ms"):
        table.add_column(header, justify="right" if header in ("runs", "point") else "left")
    for (point, scheme), rows in totals.groupby(["point", "scheme"], sort=False):
        values = [str(rows.iloc[0][a]) for a in axes]
        table.add_row(
            str(point),
            *values,
            str(scheme),
            str(len(rows)),
            f"{rows['throughput_mbps'].mean():.2f}",
            f"{rows['delay_p95_ms'].mean():.1f}",
        )
    return table


def execute(args: argparse.Namespace) -> int:
    try:
        schemes = parse_schemes(args.schemes) if args.schemes is not None else None
        spec = SweepSpec(
            scenario=args.scenario,
            axes=make_axes(args.grid),
            schemes=schemes,
            runs=args.runs,
            seed=args.seed,
            engine=args.engine,
            log_packets=args.log_packets,
        )
    except PlanError as e:
        raise CommandError(str(e)) from None
    points = 1
    for axis in spec.axes:
        points *= len(axis.values)
    total = points * len(schemes or [None]) * args.runs
    stderr = make_console(stderr=True)
    try:
        with executor_for(args.engine, jobs=args.jobs, cluster=args.cluster) as executor:
            where = "the Dask cluster" if executor is not None else "local cores"
            stderr.print(
                f"sweep: {args.scenario}, {points} point(s) x "
                f"{', '.join(schemes) if schemes else 'its own flows'} x {args.runs} run(s) "
                f"= {total} runs on {where} (engine {args.engine})",
                highlight=False,
            )
            with SweepProgress(stderr, total) as progress:
                result = run_sweep(
                    spec,
                    args.out,
                    resume=args.resume,
                    jobs=args.jobs,
                    executor=executor,
                    observer=progress,
                    command=["cclab", *sys.argv[1:]],
                )
    except (PlanError, ClusterError) as e:
        raise CommandError(str(e)) from None
    except KeyboardInterrupt:
        if args.out is not None and work_dir(args.out).exists():
            stderr.print(
                f"finished runs are kept in {work_dir(args.out)}; run the same command with "
                "--resume to complete the sweep",
                highlight=False,
            )
        raise
    stdout = make_console()
    failed = len(result.failed)
    if failed < total:
        stdout.print(point_table(result.directory))
    stdout.print(f"sweep directory: {result.directory}", highlight=False, soft_wrap=True)
    if failed:
        stderr.print(
            f"[red]{failed} of {total} runs failed[/] (recorded in sweep.json; --resume runs "
            "them again)",
            highlight=False,
        )
        return 2
    return 0
