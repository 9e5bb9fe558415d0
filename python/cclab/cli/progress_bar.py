"""A progress bar for runs that take a while: it appears only after SHOW_AFTER seconds of wall
time, and only on a terminal."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

#: Runs shorter than this never show a bar.
SHOW_AFTER = 2.0


class ProgressBar:
    """Use as `cclab.run(..., progress=bar)` inside `with ProgressBar(console) as bar:`."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._started = time.monotonic()
        self._progress: Progress | None = None
        self._task = 0

    def __call__(self, sim_ns: int, duration_ns: int) -> None:
        if self._progress is None:
            if not self._console.is_terminal or time.monotonic() - self._started < SHOW_AFTER:
                return
            self._progress = Progress(
                TextColumn("simulated"),
                BarColumn(),
                TextColumn("{task.fields[simulated]}"),
                TimeRemainingColumn(),
                console=self._console,
                transient=True,
            )
            self._task = self._progress.add_task("run", total=duration_ns, simulated="")
            self._progress.start()
        label = f"{sim_ns / 1e9:.1f} / {duration_ns / 1e9:g} s"
        self._progress.update(self._task, completed=sim_ns, simulated=label)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
