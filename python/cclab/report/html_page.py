"""The report as one self-contained HTML page: styles and the little script inline, every
figure an SVG embedded as a data URI (so each keeps its own ids), no external resource at all —
it opens offline, from an e-mail attachment or an archive years later."""

from __future__ import annotations

import base64
import html
import io
import json
import math
from datetime import datetime
from typing import Any

import jinja2
import markupsafe
import pandas as pd

from cclab.report.figures import ReportFigure
from cclab.report.loading import RunData, Study
from cclab.report.sweep import SweepData, point_rows
from cclab.report.tables import (
    FLOW_METRIC_NAMES,
    FLOW_METRICS,
    METRICS,
    flow_summary,
    run_table,
    scheme_summary,
)


def _escaped(value: Any) -> Any:
    """Every value a template prints, escaped as `html.escape` does (`&quot;`, `&#x27;`), so
    that the page's source reads as it always has; what is already markup (a macro's table)
    is kept. Autoescape stays on behind it."""
    return (
        value
        if isinstance(value, markupsafe.Markup)
        else markupsafe.Markup(html.escape(str(value)))
    )


#: The page's templates, shipped in the package (`templates/`): the page, its table macro, its
#: style sheet and script (inlined, so the page stays one file).
_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("cclab.report", "templates"),
    autoescape=True,
    finalize=_escaped,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def svg_data_uri(figure: ReportFigure) -> str:
    buffer = io.BytesIO()
    figure.figure.savefig(buffer, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _number(value: Any, digits: int, scale: float = 1.0) -> str:
    try:
        number = float(value) * scale
    except (TypeError, ValueError):
        return "-"
    return f"{number:.{digits}f}" if math.isfinite(number) else "-"


def _scheme_rows(study: Study) -> list[list[Any]]:
    rows = []
    for row in scheme_summary(study).to_dict("records"):
        cells = [row["scheme"], row["runs"]]
        for column, _, _, _ in METRICS:
            cells.append(row[column.removesuffix("_mbps").removesuffix("_ms")])
        rows.append(cells)
    return rows


def _run_rows(study: Study) -> list[list[Any]]:
    return [
        [
            r["scheme"],
            r["run"],
            r["seed"],
            r["flows"],
            _number(r["throughput_mbps"], 2),
            _number(r["delay_p95_ms"], 1),
            _number(r["queueing_p95_ms"], 1),
            _number(r["loss_pct"], 2),
            _number(r["utilisation"], 1, 100),
            _number(r["jain_median"], 3),
            _number(r["jain_counted"], 0, 100),
        ]
        for r in run_table(study).to_dict("records")
    ]


def _flow_summary_rows(study: Study) -> list[list[Any]]:
    return [
        [r["scheme"], r["flow"], r["runs"], *(r[short] for short in FLOW_METRIC_NAMES)]
        for r in flow_summary(study).to_dict("records")
    ]


def _flow_rows(run: RunData) -> list[list[Any]]:
    rows = []
    for r in run.summary.to_dict("records"):
        total = pd.isna(r["flow"])
        rows.append(
            [
                "total" if total else r["flow"],
                "" if total else r["scheme"],
                _number(r["throughput_mbps"], 2),
                _number(r["delay_p95_ms"], 1),
                _number(r["loss_pct"], 2),
                r["packets_sent"],
            ]
        )
    return rows


def _commit(meta: dict[str, Any]) -> str | None:
    """The source commit, marked when the tracked files differed from it."""
    commit = meta.get("git_commit")
    if not commit:
        return None
    if meta.get("git_dirty"):
        return f"{commit} (with uncommitted changes)"
    return commit if meta.get("git_dirty") is False else f"{commit} (clean state unknown)"


def _meta_rows(study: Study) -> list[list[Any]]:
    meta = dict(study.meta)
    first = study.runs[0].meta if study.runs else {}
    keys = [
        ("kind", study.kind),
        ("engine", meta.get("engine", first.get("engine"))),
        ("schemes", ", ".join(study.schemes)),
        ("runs", len(study.runs)),
        ("seeds", ", ".join(str(s) for s in sorted({r.seed for r in study.runs if r.seed}))),
        ("random order", meta.get("random_order")),
        ("order seed", meta.get("order_seed")),
        ("started", meta.get("started_at", first.get("started_at"))),
        ("wall time (s)", _number(meta.get("wall_secs", first.get("wall_secs")), 1)),
        ("command", " ".join(meta.get("command") or first.get("command") or [])),
        ("source", meta.get("scenario", meta.get("source", first.get("source")))),
        ("cclab version", meta.get("cclab_version", first.get("cclab_version"))),
        ("commit", _commit(meta if "git_commit" in meta else first)),
        ("rust compiler", meta.get("rustc", first.get("rustc"))),
        ("host", meta.get("host", first.get("host"))),
        ("platform", meta.get("platform", first.get("platform"))),
        ("python", meta.get("python", first.get("python"))),
        ("cores", meta.get("cpus")),
        ("jobs", meta.get("jobs")),
        ("import", json.dumps(meta["import"]) if "import" in meta else None),
    ]
    return [[k, v] for k, v in keys if v not in (None, "", [])]


def _warnings(study: Study) -> list[dict[str, str]]:
    """Each emulator run's warnings (`stats["emu_warnings"]` in its meta.json: it fell behind
    its link, or the kernels dropped packets the model never saw), with the run's name."""
    return [
        {"run": run.name, "text": text}
        for run in study.runs
        for text in (run.meta.get("stats") or {}).get("emu_warnings") or []
    ]


def _figure_data(figure: ReportFigure) -> dict[str, str]:
    return {
        "key": figure.key,
        "title": figure.title,
        "definition": figure.definition,
        "src": svg_data_uri(figure),
    }


def render(
    study: Study,
    figures: list[ReportFigure],
    run_figures: dict[str, ReportFigure],
    sweep: SweepData | None = None,
    fidelity: dict[str, Any] | None = None,
) -> str:
    """The page: `figures` in the body, and under Runs each run's collapsed section with its
    own time-series figure (`run_figures`, by run name) and per-flow table. A fidelity suite
    (`fidelity`: its section, `cclab.report.fidelity.fidelity_section`) shows its table in
    place of the per-scheme and per-flow summaries."""
    generated = datetime.now().astimezone().isoformat(timespec="seconds")
    what = f"experiment of {len(study.runs)} runs" if study.kind == "experiment" else "single run"
    sweep_table = None
    if sweep is not None:
        what = f"sweep of {len(study.runs)} runs over {', '.join(sweep.axes) or 'no axis'}"
        headings, rows = point_rows(sweep)
        sweep_table = {"headings": headings, "rows": rows, "grid": sweep.manifest["grid"]}
    if fidelity is not None:
        what = f"fidelity suite of {len(study.runs)} runs"
    return _TEMPLATES.get_template("report.html.j2").render(
        study=study,
        what=what,
        generated=generated,
        metric_headings=[heading for _, heading, _, _ in METRICS],
        flow_metric_headings=[heading for _, heading, _, _ in FLOW_METRICS],
        scheme_rows=_scheme_rows(study),
        figures=[_figure_data(figure) for figure in figures],
        flow_summary_rows=_flow_summary_rows(study),
        run_rows=_run_rows(study),
        run_sections=[
            {
                "name": run.name,
                "figure": _figure_data(run_figures[run.name]) if run.name in run_figures else None,
                "rows": _flow_rows(run),
            }
            for run in study.runs
        ],
        environment=_meta_rows(study),
        warnings=_warnings(study),
        sweep=sweep_table,
        fidelity=fidelity,
    )
