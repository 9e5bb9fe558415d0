"""Reports: one self-contained HTML page per run or experiment, and the same figures as PNG
and SVG files for papers.

    >>> import cclab.report
    >>> cclab.report.write_report("cclab-runs/20260101-120000-pantheon-3flows-x")
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from cclab.report.loading import NotARunError, Study, load_study

if TYPE_CHECKING:
    from cclab.report.figures import ReportFigure

REPORT_FILE = "report.html"
PNG_DPI = 200

__all__ = ["REPORT_FILE", "NotARunError", "Study", "load_study", "write_report"]


def _save_figures(figures: list[ReportFigure], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for figure in figures:
        for suffix, options in ((".svg", {"metadata": {"Date": None}}), (".png", {"dpi": PNG_DPI})):
            path = directory / f"{figure.key}{suffix}"
            figure.figure.savefig(path, **options)
            written.append(path)
    return written


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        Path(staging).chmod(0o644)
        Path(staging).replace(path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def write_report(
    directory: str | Path,
    *,
    out: str | Path | None = None,
    figures_dir: str | Path | None = None,
) -> Path:
    """Writes the report of the run or experiment in `directory` to `out` (default:
    `<directory>/report.html`) and returns its path; with `figures_dir`, also every figure as
    `<name>.png` and `<name>.svg` there."""
    # matplotlib is imported here, not with the package: every `cclab` command imports the
    # package's loading helpers, and only a report needs the plotting machinery.
    import matplotlib.pyplot as plt

    from cclab.report.calibration import is_calibration, render_calibration
    from cclab.report.fidelity import fidelity_figure, fidelity_section, load_fidelity
    from cclab.report.figures import all_figures, run_figure
    from cclab.report.html_page import render
    from cclab.report.sweep import load_sweep, sweep_figures

    if is_calibration(Path(directory)):  # a calibration directory: its own page
        page, figures = render_calibration(Path(directory))
        try:
            if figures_dir is not None:
                _save_figures(figures, Path(figures_dir))
        finally:
            for figure in figures:
                plt.close(figure.figure)
        target = Path(out) if out is not None else Path(directory) / REPORT_FILE
        _write_atomically(target, page)
        return target
    study = load_study(directory)
    fidelity_table = load_fidelity(study)
    if fidelity_table is not None:
        # A fidelity suite's runs span many scenarios: pooling them per scheme means nothing,
        # so its page has the suite's table and figure, and each run directory its own report.
        figure = fidelity_figure(fidelity_table)
        try:
            page = render(study, [figure], {}, fidelity=fidelity_section(fidelity_table))
            if figures_dir is not None:
                _save_figures([figure], Path(figures_dir))
        finally:
            plt.close(figure.figure)
        target = Path(out) if out is not None else study.path / REPORT_FILE
        _write_atomically(target, page)
        return target
    sweep = load_sweep(study)
    figures = all_figures(study)
    if sweep is not None:
        # A sweep's runs pooled per scheme mix its points: its own figures come instead.
        pooled = [f for f in figures if f.key == "throughput-delay"]
        for figure in pooled:
            plt.close(figure.figure)
        figures = sweep_figures(sweep) + [f for f in figures if f not in pooled]
    # A single run's figures are already its own; an experiment's show each scheme's first run,
    # so every run also gets its figure (collapsed under Runs). A sweep's runs are too many for
    # one page: each run directory's own report has them.
    per_run = (
        {r.name: run_figure(r) for r in study.runs}
        if study.kind == "experiment" and sweep is None
        else {}
    )
    try:
        page = render(study, figures, per_run, sweep=sweep)
        if figures_dir is not None:
            _save_figures([*figures, *per_run.values()], Path(figures_dir))
    finally:
        for figure in [*figures, *per_run.values()]:
            plt.close(figure.figure)
    target = Path(out) if out is not None else study.path / REPORT_FILE
    _write_atomically(target, page)
    return target
