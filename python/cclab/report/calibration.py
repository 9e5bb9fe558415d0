"""The report of a calibration directory (`cclab calibrate`): its figures (the Pantheon's
Figure 3, real against emulated per scheme, and the optimisation history) and its HTML page.

A directory is a calibration when it holds `calibration.json` with `"kind": "calibration"`.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from cclab.report.figures import COLOURS, ReportFigure

CALIBRATION_FILE = "calibration.json"
TRIALS_FILE = "trials.csv"
BEST_SCENARIO = "best.toml"


def is_calibration(directory: Path) -> bool:
    path = Path(directory) / CALIBRATION_FILE
    if not path.is_file():
        return False
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return data.get("kind") == "calibration" and data.get("complete") is True


def read_trials(directory: Path) -> list[dict[str, Any]]:
    with (Path(directory) / TRIALS_FILE).open(newline="") as f:
        return [
            {k: (v if k == "delivery" else float(v)) for k, v in row.items()}
            for row in csv.DictReader(f)
        ]


def real_vs_emulated(manifest: dict[str, Any]) -> ReportFigure:
    """Each scheme's mean throughput against its mean p95 one-way delay on the real path (filled)
    and on the best emulator (hollow), joined by a line: the Pantheon's Figure 3."""
    figure = Figure(figsize=(7, 4.5), layout="constrained")
    ax = figure.subplots()
    for i, row in enumerate(manifest["best"]["schemes"]):
        colour = COLOURS[i % len(COLOURS)]
        real = (row["real_delay_p95_ms"], row["real_throughput_mbps"])
        emu = (row["emulated_delay_p95_ms"], row["emulated_throughput_mbps"])
        ax.plot([real[0], emu[0]], [real[1], emu[1]], color=colour, linewidth=0.8, alpha=0.6)
        ax.plot(*real, "o", color=colour, markersize=8, label=f"{row['scheme']} (real)")
        ax.plot(
            *emu,
            "o",
            markerfacecolor="none",
            markeredgecolor=colour,
            markeredgewidth=1.6,
            markersize=8,
            label=f"{row['scheme']} (emulated, {100 * row['replication_error']:.1f}%)",
        )
    delays = [
        d
        for r in manifest["best"]["schemes"]
        for d in (r["real_delay_p95_ms"], r["emulated_delay_p95_ms"])
    ]
    if min(delays) > 0 and max(delays) / min(delays) > 4:
        ax.set_xscale("log")
    ax.invert_xaxis()  # better is up and to the right, as the Pantheon draws it
    ax.set_xlabel("mean p95 one-way delay (ms)")
    ax.set_ylabel("mean throughput (Mbit/s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    best = manifest["best"]
    return ReportFigure(
        "real_vs_emulated",
        "Real path against the calibrated emulator",
        "Per scheme: the target's mean throughput and mean p95 one-way delay (filled) and the "
        f"best emulator's ({best['delivery']} deliveries; hollow), means over its seeds; in the "
        "legend each scheme's replication error (|Δ throughput| / real + |Δ p95 delay| / real) "
        f"/ 2. Overall: {100 * best['replication_error']:.1f}%.",
        figure,
    )


def history(manifest: dict[str, Any], trials: Sequence[dict[str, Any]]) -> ReportFigure:
    """Each study's replication error per trial and its best so far."""
    figure = Figure(figsize=(7, 4), layout="constrained")
    ax = figure.subplots()
    for i, delivery in enumerate(sorted({str(t["delivery"]) for t in trials})):
        colour = COLOURS[i % len(COLOURS)]
        mine = sorted((t for t in trials if t["delivery"] == delivery), key=lambda t: t["trial"])
        xs = [int(t["trial"]) for t in mine]
        ys = [100 * float(t["error"]) for t in mine]
        ax.plot(xs, ys, ".", color=colour, alpha=0.5, label=f"{delivery}: trial")
        best, running = math.inf, []
        for y in ys:
            best = min(best, y)
            running.append(best)
        ax.step(xs, running, where="post", color=colour, label=f"{delivery}: best so far")
    ax.set_yscale("log")
    ax.set_xlabel("trial")
    ax.set_ylabel("replication error (%)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")
    return ReportFigure(
        "history",
        "Optimisation history",
        "The replication error of every finished trial of each study (constant and Poisson "
        "deliveries; Optuna's TPE sampler), and the lowest so far.",
        figure,
    )


def calibration_figures(
    manifest: dict[str, Any], trials: Sequence[dict[str, Any]]
) -> list[ReportFigure]:
    return [real_vs_emulated(manifest), history(manifest, trials)]


def write_figures(directory: Path, manifest: dict[str, Any], records: Sequence[Any]) -> None:
    """The figures as SVG and PNG files in the calibration directory (called by the
    calibration with its trial records)."""
    trials = [{"delivery": r.delivery, "trial": r.number, "error": r.error} for r in records]
    for figure in calibration_figures(manifest, trials):
        figure.figure.savefig(directory / f"{figure.key}.svg", metadata={"Date": None})
        figure.figure.savefig(directory / f"{figure.key}.png", dpi=150)


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * float(value):.1f}"


def render_calibration(directory: Path) -> tuple[str, list[ReportFigure]]:
    """The HTML page of a calibration directory, and its figures (for `--figures`)."""
    from cclab.report.html_page import _TEMPLATES, svg_data_uri

    directory = Path(directory)
    manifest = json.loads((directory / CALIBRATION_FILE).read_text())
    figures = calibration_figures(manifest, read_trials(directory))
    best = manifest["best"]
    link = best["link"]
    studies = [
        [
            d,
            _pct(s["replication_error"]),
            f"{s['link']['rate_mbps']:.3f}",
            f"{s['link']['delay_ms']:.2f}",
            s["link"]["queue_packets"],
            f"{100 * s['link']['loss']:.3f}",
        ]
        for d, s in manifest["studies"].items()
    ]
    schemes = [
        [
            r["scheme"],
            f"{r['real_throughput_mbps']:.3f}",
            f"{r['emulated_throughput_mbps']:.3f}",
            _pct(r["throughput_error"]),
            f"{r['real_delay_p95_ms']:.1f}",
            f"{r['emulated_delay_p95_ms']:.1f}",
            _pct(r["delay_error"]),
            _pct(r["replication_error"]),
        ]
        for r in best["schemes"]
    ]
    loo = [
        [r["held_out"], r["method"], _pct(r["fit_error"]), _pct(r["held_out_error"])]
        for r in manifest.get("leave_one_out") or []
    ]
    scenario = directory / BEST_SCENARIO
    page = _TEMPLATES.get_template("calibration.html.j2").render(
        manifest=manifest,
        directory=str(directory),
        generated=datetime.now().astimezone().isoformat(timespec="seconds"),
        best_error=_pct(best["replication_error"]),
        link=link,
        studies=studies,
        schemes=schemes,
        loo=loo,
        loo_error=_pct(manifest.get("leave_one_out_error")),
        figures=[
            {
                "key": f.key,
                "title": f.title,
                "definition": f.definition,
                "src": svg_data_uri(f),
            }
            for f in figures
        ],
        scenario_toml=scenario.read_text() if scenario.exists() else "",
    )
    return page, figures
