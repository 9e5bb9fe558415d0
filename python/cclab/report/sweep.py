"""The report of a sweep (`cclab sweep`): each metric against each swept axis (a line per
scheme, error bars over the runs) and the throughput-delay plot of every grid point, with a
table of the points."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cclab.report.figures import (
    COLOURS,
    WIDTH_IN,
    ReportFigure,
    _log_axis,
    _use_log,
)
from cclab.report.loading import Study
from cclab.report.tables import METRICS
from cclab.sweep import axis_numbers, read_manifest, sweep_frame

#: Most columns (combinations of the other axes' values) a metric-vs-axis figure draws apart;
#: beyond it the other axes are averaged over, and the caption says so.
MAX_FACETS = 4
#: Most grid points that get their own throughput-delay panel.
MAX_POINT_PANELS = 24


@dataclass
class SweepData:
    """A sweep's manifest and the total row of each of its finished runs."""

    manifest: dict[str, Any]
    totals: pd.DataFrame

    @property
    def axes(self) -> list[str]:
        return list(self.manifest["axes"])

    @property
    def schemes(self) -> list[str]:
        return list(dict.fromkeys(str(s) for s in self.totals["scheme"]))


def load_sweep(study: Study) -> SweepData | None:
    """The sweep behind a study, or None when the study is not a sweep."""
    manifest = read_manifest(study.path)
    if manifest is None:
        return None
    frame = sweep_frame(study.path)
    totals = frame[frame["flow"].isna() & (frame["status"] == "ok")].reset_index(drop=True)
    return SweepData(manifest, totals)


def _positions(data: SweepData, axis: str) -> tuple[dict[str, float], str, bool]:
    """Where each value of `axis` goes on the x axis (keyed by its text), the axis label, and
    whether the values are categories (evenly spaced, in the order given)."""
    values = list(data.manifest["grid"][axis])
    numbers = axis_numbers(values)
    keys = [_text(v) for v in values]
    if numbers is None:
        return {k: float(i) for i, k in enumerate(keys)}, axis, True
    read, unit = numbers
    return dict(zip(keys, read, strict=True)), f"{axis} ({unit})" if unit else axis, False


def _text(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _facets(data: SweepData, axis: str) -> tuple[list[dict[str, Any]], bool]:
    """The combinations of the other axes' values, one column of panels each; or one column
    averaging over them (True) when there are more than MAX_FACETS."""
    others = [a for a in data.axes if a != axis]
    combos = [
        dict(zip(others, combo, strict=True))
        for combo in itertools.product(*(data.manifest["grid"][a] for a in others))
    ]
    if len(combos) > MAX_FACETS:
        return [{}], True
    return combos, False


def metric_against_axis(data: SweepData, axis: str) -> ReportFigure:
    positions, label, categorical = _positions(data, axis)
    facets, averaged = _facets(data, axis)
    fig, axes = plt.subplots(
        len(METRICS),
        len(facets),
        figsize=(max(WIDTH_IN, 3.2 * len(facets)), 2.3 * len(METRICS) + 0.6),
        squeeze=False,
        sharex=True,
        layout="constrained",
    )
    totals = data.totals.assign(_x=data.totals[axis].map(lambda v: positions.get(_text(v))))
    for col, facet in enumerate(facets):
        rows = totals
        for key, value in facet.items():
            rows = rows[rows[key].map(_text) == _text(value)]
        for row, (column, heading, scale, _) in enumerate(METRICS):
            ax = axes[row][col]
            for i, scheme in enumerate(data.schemes):
                mine = rows[rows["scheme"] == scheme]
                if mine.empty:
                    continue
                stats = mine.groupby("_x")[column].agg(["mean", "std", "count"]).sort_index()
                ax.errorbar(
                    stats.index.to_numpy(dtype=float),
                    stats["mean"].to_numpy(dtype=float) * scale,
                    yerr=np.nan_to_num(stats["std"].to_numpy(dtype=float) * scale),
                    color=COLOURS[i % len(COLOURS)],
                    marker="o",
                    markersize=4,
                    capsize=3,
                    lw=1.3,
                    label=scheme,
                )
            if row == 0:
                title = ", ".join(f"{k}={_text(v)}" for k, v in facet.items())
                ax.set_title(
                    title or ("averaged over the other axes" if averaged else ""), fontsize=9
                )
            if col == 0:
                ax.set_ylabel(heading, fontsize=9)
            ax.grid(True, alpha=0.3)
            if row == len(METRICS) - 1:
                ax.set_xlabel(label)
                if categorical:
                    ax.set_xticks(list(positions.values()), list(positions))
                elif _use_log(np.array(list(positions.values()))):
                    _log_axis(ax, "x", np.array(list(positions.values())))
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    definition = (
        f"Each metric of a run's total (as in the run table) against the swept key {axis}: per "
        "scheme, the mean over the runs at each value (line and dots) and the sample standard "
        "deviation over them (error bars; none for a single run). "
        + (
            f"The other axes ({', '.join(a for a in data.axes if a != axis)}) have more than "
            f"{MAX_FACETS} combinations, so each mean and standard deviation is taken over "
            "all of them too (the error bars then hold their spread as well). "
            if averaged
            else "Columns: one per combination of the other swept keys' values. "
            if len(facets) > 1
            else ""
        )
        + (
            "The values are not numbers, so they are spaced evenly in the order given."
            if categorical
            else "Rates are in Mbit/s and durations in ms on the x axis; it is logarithmic when "
            "the values span a factor of 4 or more."
        )
    )
    return ReportFigure(f"sweep-{_slug(axis)}", f"Metrics against {axis}", definition, fig)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text)


def throughput_delay_per_point(data: SweepData) -> ReportFigure:
    points = data.manifest["points"][:MAX_POINT_PANELS]
    columns = min(len(points), 3) or 1
    rows_n = math.ceil(len(points) / columns) or 1
    fig, axes = plt.subplots(
        rows_n,
        columns,
        figsize=(WIDTH_IN, 2.9 * rows_n + 0.6),
        squeeze=False,
        layout="constrained",
    )
    for ax in axes.flat[len(points) :]:
        ax.set_visible(False)
    for ax, point in zip(axes.flat, points, strict=False):
        mine = data.totals[data.totals["point"] == point["point"]]
        for i, scheme in enumerate(data.schemes):
            runs = mine[mine["scheme"] == scheme]
            if runs.empty:
                continue
            x = runs["delay_p95_ms"].to_numpy(dtype=float)
            y = runs["throughput_mbps"].to_numpy(dtype=float)
            colour = COLOURS[i % len(COLOURS)]
            ax.scatter(x, y, s=14, color=colour, alpha=0.55, linewidths=0)
            ax.scatter(
                [np.nanmean(x)],
                [np.nanmean(y)],
                s=50,
                color=colour,
                edgecolors="black",
                linewidths=0.7,
                label=scheme,
                zorder=3,
            )
        ax.invert_xaxis()
        ax.grid(True, alpha=0.3)
        values = "\n".join(f"{k} = {_text(point['values'][k])}" for k in data.axes)
        ax.set_title(f"point {point['point']}\n{values}", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    fig.supxlabel("95th-percentile one-way delay (ms)  ← worse · better →", fontsize=9)
    fig.supylabel("average throughput (Mbit/s)", fontsize=9)
    shown = len(points)
    total = len(data.manifest["points"])
    definition = (
        "One panel per grid point: each small dot is a run (y = its total average throughput, "
        "x = the 95th percentile of the one-way delays of all its delivered data packets), "
        "each large dot a scheme's mean over its runs at that point. The delay axis is reversed, "
        "so better is up and to the right; each panel has its own scales."
        + (f" The first {shown} of the {total} points are shown." if shown < total else "")
    )
    return ReportFigure("sweep-points", "Throughput and delay at each point", definition, fig)


def sweep_figures(data: SweepData) -> list[ReportFigure]:
    return [metric_against_axis(data, axis) for axis in data.axes] + [
        throughput_delay_per_point(data)
    ]


def _mean_sd(values: pd.Series, scale: float, digits: int) -> str:
    values = values.dropna() * scale
    if values.empty:
        return "-"
    if len(values) < 2:
        return f"{values.mean():.{digits}f}"
    return f"{values.mean():.{digits}f} ± {values.std(ddof=1):.{digits}f}"


def point_rows(data: SweepData) -> tuple[list[str], list[list[Any]]]:
    """The table of points: each point and scheme's values and mean ± sd of every metric."""
    headings = ["point", *data.axes, "scheme", "runs", *(h for _, h, _, _ in METRICS)]
    rows = []
    for (point, scheme), runs in data.totals.groupby(["point", "scheme"], sort=False):
        first = runs.iloc[0]
        rows.append(
            [
                point,
                *(_text(first[a]) for a in data.axes),
                scheme,
                len(runs),
                *(_mean_sd(runs[c], scale, d) for c, _, scale, d in METRICS),
            ]
        )
    return headings, rows
