"""Results in Jupyter: a run's or an experiment's tables as HTML, and the report's figures inline.

    result = cclab.run("pantheon-1flow")
    result                          # the summary as an HTML table
    result.plot("throughput")       # the report's throughput-over-time figure, inline
    exp = cclab.load_results(cclab.run_experiment("pantheon-1flow", ["cubic", "bbr"], runs=2))
    exp                             # per-scheme and per-run tables
    exp.plot("throughput_delay")    # the report's throughput-delay scatter

The figures are the report's own (`cclab.report.figures`), drawn from the same `Study` a report
reads; nothing here computes a metric or draws a figure of its own.

Owns: the notebook views. Must not import the runner or the CLI.
"""

from __future__ import annotations

import html
import importlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from cclab.report import tables
from cclab.report.loading import RunData, Study, load_study

if TYPE_CHECKING:
    from cclab.result import RunResult

#: The report's figures (functions of `cclab.report.figures`) by the name `.plot()` takes. By
#: name, so that `import cclab` does not import matplotlib: only the first plot does.
FIGURES: dict[str, str] = {
    "throughput_delay": "throughput_delay",
    "throughput": "throughput_over_time",
    "delay": "delay_over_time",
    "jain": "jain_over_time",
    "jain_cdf": "jain_cdf",
    "trace": "sender_trace",
}


@dataclass
class FigureView:
    """One report figure, shown inline by Jupyter (as SVG, with its title and definition)."""

    title: str
    definition: str
    #: The matplotlib figure.
    figure: Any

    def _repr_svg_(self) -> str:
        buffer = io.StringIO()
        self.figure.savefig(buffer, format="svg", bbox_inches="tight")
        return buffer.getvalue()

    def _repr_html_(self) -> str:
        return (
            f"<figure><figcaption><b>{html.escape(self.title)}</b></figcaption>"
            f"{self._repr_svg_()}<p><small>{html.escape(self.definition)}</small></p></figure>"
        )


def plot(study: Study, which: str) -> FigureView:
    """The report figure `which` (a key of `FIGURES`) of a study."""
    try:
        name = FIGURES[which]
    except KeyError:
        raise ValueError(
            f"unknown figure {which!r}; the figures are {', '.join(FIGURES)}"
        ) from None
    figures = importlib.import_module("cclab.report.figures")
    fig = getattr(figures, name)(study)
    figures.plt.close(fig.figure)  # shown by its view, not by pyplot's own machinery
    return FigureView(fig.title, fig.definition, fig.figure)


def study_of_run(result: RunResult) -> Study:
    """A study of one in-memory run, as `load_study` would read it from its directory (the
    path is the run's name: there is no directory, so per-packet figures use the series)."""
    meta = {"name": result.name, "seed": result.seed, "engine": result.engine}
    schemes = list(dict.fromkeys(str(s) for s in result.flows.get("scheme", [])))
    run = RunData(
        path=Path(result.name),
        scheme="+".join(schemes) or "?",
        repetition=None,
        meta=meta,
        scenario_toml=result.scenario_toml,
        summary=result.summary,
        timeseries=result.timeseries,
        jain=result.jain,
        flows=result.flows,
        capacity=None,
        trace=result.trace,
    )
    return Study(
        path=run.path,
        kind="run",
        title=result.name,
        meta=meta,
        scenario_toml=result.scenario_toml,
        runs=[run],
        schemes=[run.scheme],
    )


def _table(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, na_rep="", float_format=lambda x: f"{x:.3g}", border=0)


def run_html(result: RunResult) -> str:
    """A run as HTML: what ran, then its summary (one row per flow and the total)."""
    head = (
        f"<p><b>{html.escape(result.name)}</b> — seed {result.seed}, {result.duration_s:g} s "
        f"({html.escape(result.engine)}), wall {result.wall_secs:.2f} s</p>"
    )
    return head + _table(result.summary)


@dataclass
class Results:
    """An experiment's (or a run's) directory, read back for a notebook: `study` is what its
    report shows; `schemes` and `runs` its report's two tables."""

    study: Study

    @property
    def schemes(self) -> pd.DataFrame:
        return tables.scheme_summary(self.study)

    @property
    def runs(self) -> pd.DataFrame:
        return tables.run_table(self.study)

    def plot(self, which: str = "throughput_delay") -> FigureView:
        """One of the report's figures (`cclab.notebook.FIGURES`)."""
        return plot(self.study, which)

    def _repr_html_(self) -> str:
        s = self.study
        head = f"<p><b>{html.escape(s.title)}</b> — {s.kind}, {len(s.runs)} run(s)"
        if s.failed:
            head += f", {len(s.failed)} failed"
        head += "</p>"
        return head + _table(self.schemes) + _table(self.runs)


def load_results(path: str | Path) -> Results:
    """An experiment or run directory (as `cclab report` takes), for a notebook."""
    return Results(load_study(path))
