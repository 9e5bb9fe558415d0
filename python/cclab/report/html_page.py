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

import pandas as pd

from cclab.report.figures import ReportFigure
from cclab.report.loading import RunData, Study
from cclab.report.tables import METRICS, run_table, scheme_summary

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1d1f;
       max-width: 1000px; margin: 2em auto; padding: 0 1.2em; }
h1 { font-size: 1.7em; margin-bottom: 0.1em; } h2 { margin-top: 1.8em; font-size: 1.25em; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.6em 0; font-variant-numeric: tabular-nums; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #e3e3e3; text-align: right; }
th { background: #f5f5f7; } td:first-child, th:first-child { text-align: left; }
figure { margin: 1.2em 0 2em; } figure img { width: 100%; height: auto; display: block; }
figcaption { color: #444; font-size: 0.9em; border-left: 3px solid #ddd; padding-left: 0.8em; }
pre { background: #f5f5f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
details { margin: 0.3em 0; } summary { cursor: pointer; }
.failed { color: #b00020; } .meta td { text-align: left; }
"""

#: Marks each figure with the size its image rendered at (`data-rendered="WxH"`, or
#: "failed"), so a reader (or a headless browser) can tell that every figure is really drawn.
SCRIPT = """
document.querySelectorAll("figure.plot img").forEach(function (img) {
  function mark() {
    var ok = img.complete && img.naturalWidth > 0 && img.naturalHeight > 0;
    img.closest("figure").dataset.rendered =
      ok ? img.naturalWidth + "x" + img.naturalHeight : "failed";
  }
  if (img.complete) { mark(); } else { img.addEventListener("load", mark);
                                      img.addEventListener("error", mark); }
});
"""


def svg_data_uri(figure: ReportFigure) -> str:
    buffer = io.BytesIO()
    figure.figure.savefig(buffer, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _e(value: Any) -> str:
    return html.escape(str(value))


def _number(value: Any, digits: int, scale: float = 1.0) -> str:
    try:
        number = float(value) * scale
    except (TypeError, ValueError):
        return "-"
    return f"{number:.{digits}f}" if math.isfinite(number) else "-"


def _table(headers: list[str], rows: list[list[str]], css: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _scheme_section(study: Study) -> str:
    summary = scheme_summary(study)
    headers = ["scheme", "runs"] + [heading for _, heading, _, _ in METRICS]
    rows = []
    for row in summary.to_dict("records"):
        cells = [_e(row["scheme"]), _e(row["runs"])]
        for column, _, _, _ in METRICS:
            short = column.removesuffix("_mbps").removesuffix("_ms")
            cells.append(_e(row[short]))
        rows.append(cells)
    note = (
        "Mean ± sample standard deviation over the scheme's runs of each run's total: "
        "throughput = bits delivered by all flows / (last - first delivery); p95 one-way delay "
        "= nearest-rank 95th percentile over every delivered data packet; loss = 1 - delivered "
        "bytes / sent bytes (byte-weighted); utilisation = throughput / link capacity over the "
        "same span."
    )
    failed = ""
    if study.failed:
        items = "".join(
            f"<li>{_e(f.get('scheme', '?'))} #{_e(f.get('repetition', '?'))} "
            f"(seed {_e(f.get('seed', '?'))}): {_e(f.get('error', f.get('status', '')))}</li>"
            for f in study.failed
        )
        failed = f'<p class="failed">Runs that failed and are left out:</p><ul>{items}</ul>'
    return f"<h2>Summary per scheme</h2>{_table(headers, rows)}<p class='sub'>{note}</p>{failed}"


def _figure_html(figure: ReportFigure) -> str:
    return (
        f'<figure class="plot" id="fig-{_e(figure.key)}" data-figure="{_e(figure.key)}">'
        f"<h2>{_e(figure.title)}</h2>"
        f'<img alt="{_e(figure.title)}" src="{svg_data_uri(figure)}">'
        f"<figcaption>{_e(figure.definition)}</figcaption></figure>"
    )


def _runs_section(study: Study) -> str:
    runs = run_table(study)
    headers = [
        "scheme",
        "run",
        "seed",
        "flows",
        "throughput (Mbit/s)",
        "p95 delay (ms)",
        "p95 queueing (ms)",
        "loss (%)",
        "util. (%)",
        "Jain median",
    ]
    rows = [
        [
            _e(r["scheme"]),
            _e(r["run"]),
            _e(r["seed"]),
            _e(r["flows"]),
            _number(r["throughput_mbps"], 2),
            _number(r["delay_p95_ms"], 1),
            _number(r["queueing_p95_ms"], 1),
            _number(r["loss"], 2, 100),
            _number(r["utilisation"], 1, 100),
            _number(r["jain_median"], 3),
        ]
        for r in runs.to_dict("records")
    ]
    details = "".join(_flows_details(run) for run in study.runs)
    return f"<h2>Runs</h2>{_table(headers, rows)}{details}"


def _flows_details(run: RunData) -> str:
    headers = ["flow", "scheme", "throughput (Mbit/s)", "p95 delay (ms)", "loss (%)", "packets"]
    rows = []
    for r in run.summary.to_dict("records"):
        total = pd.isna(r["flow"])
        rows.append(
            [
                "total" if total else _e(r["flow"]),
                "" if total else _e(r["scheme"]),
                _number(r["throughput_mbps"], 2),
                _number(r["delay_p95_ms"], 1),
                _number(r["loss"], 2, 100),
                _e(r["packets_sent"]),
            ]
        )
    return f"<details><summary>{_e(run.name)}: per flow</summary>{_table(headers, rows)}</details>"


def _meta_rows(study: Study) -> list[list[str]]:
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
        ("host", meta.get("host", first.get("host"))),
        ("platform", meta.get("platform", first.get("platform"))),
        ("python", meta.get("python", first.get("python"))),
        ("cores", meta.get("cpus")),
        ("jobs", meta.get("jobs")),
        ("import", json.dumps(meta["import"]) if "import" in meta else None),
    ]
    return [[_e(k), _e(v)] for k, v in keys if v not in (None, "", [])]


def render(study: Study, figures: list[ReportFigure]) -> str:
    generated = datetime.now().astimezone().isoformat(timespec="seconds")
    what = f"experiment of {len(study.runs)} runs" if study.kind == "experiment" else "single run"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>cclab report: {_e(study.title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_e(study.title)}</h1>",
        f'<p class="sub">{_e(what)} · {_e(study.path)} · report generated {_e(generated)}</p>',
    ]
    description = study.meta.get("description")
    if description:
        parts.append(f"<p>{_e(description)}</p>")
    parts.append(_scheme_section(study))
    parts.extend(_figure_html(figure) for figure in figures)
    parts.append(_runs_section(study))
    parts.append(f"<h2>Scenario</h2><pre>{_e(study.scenario_toml)}</pre>")
    parts.append(f"<h2>Environment</h2>{_table(['', ''], _meta_rows(study), 'meta')}")
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts)
