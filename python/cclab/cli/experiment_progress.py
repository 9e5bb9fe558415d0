"""What `cclab experiment` (and `cclab reproduce scale`) shows while a batch runs: one bar for
the whole batch, one bar per run in progress (simulated time, and the time left at its pace),
and a status line as each run ends."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from cclab.batch import BatchRun, RunOutcome


class ExperimentProgress:
    """An `Observer` of the batch runner (`cclab.batch`). On a terminal it draws live bars;
    elsewhere (a pipe, a CI log) it prints only the per-run status lines."""

    def __init__(self, console: Console, total_runs: int, name: str = "experiment") -> None:
        self._console = console
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not console.is_terminal,
        )
        self._overall = self._progress.add_task(name, total=total_runs, status="")
        self._running: dict[int, TaskID] = {}
        self.failed = 0

    def started(self, planned: BatchRun) -> None:
        if planned.order not in self._running:
            self._running[planned.order] = self._progress.add_task(
                f"  {planned.label}", total=None, status="starting"
            )

    def progress(self, planned: BatchRun, sim_ns: int, duration_ns: int) -> None:
        self.started(planned)
        self._progress.update(
            self._running[planned.order],
            completed=sim_ns / 1e9,
            total=duration_ns / 1e9,
            status=f"{sim_ns / 1e9:.1f} / {duration_ns / 1e9:g} s",
        )

    def finished(self, outcome: RunOutcome) -> None:
        task = self._running.pop(outcome.run.order, None)
        if task is not None:
            self._progress.remove_task(task)
        self._progress.advance(self._overall)
        label = outcome.run.label
        if outcome.ok:
            self._progress.console.print(
                f"[green]done[/]   {label}: {outcome.throughput_mbps:.2f} Mbit/s, "
                f"p95 delay {outcome.delay_p95_ms:.1f} ms, loss {outcome.loss_pct or 0:.2f} %"
                f" [dim]({outcome.wall_secs:.2f} s)[/]",
                highlight=False,
            )
        else:
            self.failed += 1
            self._progress.console.print(
                f"[red]failed[/] {label}: {outcome.error}", highlight=False
            )
        self._progress.update(self._overall, status=f"{self.failed} failed" if self.failed else "")

    def __enter__(self) -> ExperimentProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()
