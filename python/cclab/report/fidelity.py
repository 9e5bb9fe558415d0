"""The report of a fidelity directory (`cclab fidelity`): the suite's table (each scenario and
scheme on both engines, the errors and the targets' verdict) and a figure that puts each
scheme's simulated and emulated throughput and delay side by side, scenario by scenario."""

from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cclab.engines import EMU, SIM
from cclab.fidelity import KIND, TARGETS, UNDECIDED, interval_text, read_table, undecided
from cclab.report.figures import COLOURS, WIDTH_IN, ReportFigure
from cclab.report.loading import Study

#: Panels per row of the figure.
COLUMNS = 4


def load_fidelity(study: Study) -> pd.DataFrame | None:
    """The fidelity table behind a study, or None when the study is not a fidelity suite."""
    if study.kind != "experiment" or study.meta.get("kind") != KIND:
        return None
    return read_table(study.path)


def _num(value: Any, digits: int, scale: float = 1.0) -> str:
    try:
        number = float(value) * scale
    except (TypeError, ValueError):
        return "-"
    return f"{number:.{digits}f}" if math.isfinite(number) else "-"


HEADINGS = [
    "scenario",
    "scheme (sim / emu)",
    "Mbit/s sim",
    "Mbit/s emu",
    "p95 ms sim",
    "p95 ms emu",
    "Jain sim",
    "Jain emu",
    "share sim",
    "share emu",
    "emu late p99 (ms)",
    "Δ tput (%)",
    "Δ p95 (%)",
    "replication error (%)",
    "share error (%)",
    "95% interval: share sim/emu (mix), replication error (scheme test)",
    "spread factor",
    "Δ Jain",
    "target",
    "verdict",
]


def fidelity_rows(table: pd.DataFrame) -> list[list[str]]:
    """One row per scenario and scheme, both engines side by side (the CLI's summary)."""
    emu = table[table["engine"] == EMU.name].set_index(["scenario", "scheme"])
    rows = []
    for row in table[table["engine"] == SIM.name].to_dict("records"):
        key = (row["scenario"], row["scheme"])
        other = emu.loc[key].to_dict() if key in emu.index else None
        passed = row["passed"]
        cells = [
            row["scenario"],
            row["scheme"] if other is None else f"{row['scheme']} / {other['runs_as']}",
        ]
        for column, digits in (
            ("throughput_mbps", 2),
            ("delay_p95_ms", 1),
            ("jain_median", 3),
            ("share", 3),
        ):
            emu_cell = "sim only" if other is None else _num(other[column], digits)
            cells += [_num(row[column], digits), emu_cell]
        cells += [
            "-" if other is None else _num(other["late_p99_ms"], 2),
            _num(row["throughput_error"], 1, 100),
            _num(row["delay_error"], 1, 100),
            _num(row["replication_error"], 1, 100),
            _num(row["share_error"], 1, 100),
            interval_text(row),
            _num(row["spread_factor"], 2),
            _num(row["jain_error"], 3),
            row["target"] or row["note"],
            ("" if pd.isna(passed) else ("met" if passed else "NOT MET"))
            + (" (undecided)" if undecided(row) else ""),
        ]
        rows.append(cells)
    return rows


#: What the table's columns mean, printed under it.
DEFINITION = (
    "Each figure is the median over the runs of a scenario and scheme on one engine: the "
    "simulator running cclab's scheme, the emulator running the kernel's (kernel:cubic, "
    "kernel:bbr, kernel:reno for cclab's newreno), the reference. Throughput = the scheme's "
    "flows' delivered bits over the run's delivery span; p95 = the 95th-percentile one-way "
    "delay over every delivered packet (in a mix: the mean of the scheme's flows' own p95s); "
    "Jain = the run's median per-bucket Jain index over all its flows; share = the scheme's "
    "bytes delivered / all bytes delivered; emu late p99 = the 99th percentile of how late the "
    "emulator delivered packets against its link model (a busy machine's mark on the "
    "reference). Δ tput and Δ p95 = |sim - emu| / emu; replication "
    "error = their mean (the Pantheon's emulation score); share error = |sim - emu| / emu of "
    "the share; the 95% interval bounds sim / emu of the median shares in a mix and the "
    "replication error in a scheme test (a bootstrap over each engine's runs), and a verdict is "
    "undecided where it straddles the target's bound: "
    + UNDECIDED
    + "; spread factor = the larger ratio of the engines' run-to-run standard deviations of the "
    "share; Δ Jain = |sim - emu|. "
    "Targets: "
    + "; ".join(f"{t.text} ({t.column})" for t in TARGETS)
    + " — the replication target for Cubic and BBR in every scheme test, the share target in "
    "every mix, the Jain target for BBR on Copa's fairness test. A scheme the kernel lacks runs "
    "in the simulator only and is not compared."
)


def fidelity_figure(table: pd.DataFrame) -> ReportFigure:
    """One panel per scenario: each scheme's throughput against p95 delay, a hollow circle for
    the simulator and a filled square for the emulator, joined by a line."""
    scenarios = list(dict.fromkeys(table["scenario"]))
    schemes = list(dict.fromkeys(table["scheme"]))
    colour = {s: COLOURS[i % len(COLOURS)] for i, s in enumerate(schemes)}
    rows = max(1, math.ceil(len(scenarios) / COLUMNS))
    fig, axes = plt.subplots(
        rows,
        COLUMNS,
        figsize=(WIDTH_IN * 1.3, 2.6 * rows + 0.6),
        layout="constrained",
        squeeze=False,
    )
    for ax, scenario in zip(axes.flat, scenarios, strict=False):
        mine = table[table["scenario"] == scenario]
        for scheme in dict.fromkeys(mine["scheme"]):
            rows_of = mine[mine["scheme"] == scheme].set_index("engine")
            points = []
            for engine, marker, face in ((SIM.name, "o", "none"), (EMU.name, "s", None)):
                if engine not in rows_of.index:
                    continue
                x = float(rows_of.loc[engine, "delay_p95_ms"])
                y = float(rows_of.loc[engine, "throughput_mbps"])
                points.append((x, y))
                ax.scatter(
                    [x],
                    [y],
                    marker=marker,
                    s=36,
                    facecolors=face if face else colour[scheme],
                    edgecolors=colour[scheme],
                    linewidths=1.3,
                    zorder=3,
                )
            if len(points) == 2:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, color=colour[scheme], linewidth=0.9, alpha=0.7)
        # From zero, so that a line's length reads as the relative error it is.
        ax.set_ylim(0, float(np.nanmax(mine["throughput_mbps"])) * 1.1 or 1.0)
        ax.set_xlim(float(np.nanmax(mine["delay_p95_ms"])) * 1.1 or 1.0, 0)
        ax.set_title(scenario, fontsize="small")
        ax.tick_params(labelsize="x-small")
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(scenarios) :]:
        ax.set_visible(False)
    fig.supxlabel("p95 one-way delay (ms, reversed)", fontsize="small")
    fig.supylabel("throughput (Mbit/s)", fontsize="small")
    handles = [
        plt.Line2D([], [], color=colour[s], marker="s", linestyle="", label=s) for s in schemes
    ]
    handles += [
        plt.Line2D(
            [], [], color="grey", marker="o", markerfacecolor="none", linestyle="", label=SIM.name
        ),
        plt.Line2D([], [], color="grey", marker="s", linestyle="", label=EMU.name),
    ]
    fig.legend(
        handles=handles, loc="outside upper center", ncols=min(len(handles), 8), fontsize="small"
    )
    definition = (
        "One panel per scenario of the suite, both axes from zero; per scheme, its median "
        "throughput (y; in a mix, the scheme's flows together) against its median p95 "
        "one-way delay (x, reversed: better is up and right) on the simulator (hollow "
        "circle) and on the emulator running the kernel's twin (filled square), joined by a "
        "line: the longer the line, the further the simulator is from Linux. A scheme with a "
        "circle alone runs in the simulator only."
    )
    return ReportFigure("fidelity", "Simulator against emulator", definition, fig)


def fidelity_section(table: pd.DataFrame) -> dict[str, Any]:
    """What the page's fidelity section shows."""
    sim = table[table["engine"] == SIM.name]
    checked = sim[sim["passed"].notna()]
    met = int(np.sum(checked["passed"].astype(bool)))
    return {
        "headings": HEADINGS,
        "rows": fidelity_rows(table),
        "definition": DEFINITION,
        "verdict": f"{met} of {len(checked)} targets met",
    }
