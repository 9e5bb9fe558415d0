"""The report's figures, drawn with matplotlib (Agg). Each comes with the definition of what it
plots, which the report prints under it: a figure never shows a number without saying what it
is (DESIGN.md "Metrics")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from cclab.report.capacity import capacity_of
from cclab.report.ellipse import one_sigma_ellipse
from cclab.report.loading import RunData, Study
from cclab.report.tables import run_table

#: Above this max/min ratio an axis switches to a log scale.
WIDE_RANGE = 4.0
PANEL_HEIGHT_IN = 2.6
WIDTH_IN = 9.0
COLOURS = plt.get_cmap("tab10").colors
#: Most per-packet dots a delay panel draws (the SVG grows with them).
PACKET_DOTS = 20_000


@dataclass
class ReportFigure:
    key: str
    title: str
    #: What is plotted, in words, with the metric definitions.
    definition: str
    figure: Figure


def scheme_colour(study: Study) -> Callable[[str], tuple[float, ...]]:
    index = {scheme: i for i, scheme in enumerate(study.schemes)}
    return lambda scheme: COLOURS[index.get(scheme, len(index)) % len(COLOURS)]


def representative(study: Study, scheme: str) -> RunData | None:
    """The run a scheme's time-series panels show: its first repetition."""
    runs = sorted(study.runs_of(scheme), key=lambda r: (r.repetition or 0, r.name))
    return runs[0] if runs else None


#: What the per-scheme time-series figures show of an experiment, said under each.
FIRST_RUN_ONLY = (
    "One panel per scheme, showing its first run; every run's own panels are under Runs."
)


def _plain_number(value: float, _position: object = None) -> str:
    return f"{value:g}"


def _use_log(axis_values: np.ndarray) -> bool:
    values = axis_values[np.isfinite(axis_values) & (axis_values > 0)]
    return len(values) > 1 and values.max() / values.min() >= WIDE_RANGE


def log_subdivisions(low: float, high: float) -> tuple[float, ...]:
    """The mantissas that get a labelled tick on a log axis from `low` to `high`: powers of ten
    alone leave a span like 50-250 ms with one label (100), so narrower spans label more of
    each decade, enough that every span of a factor WIDE_RANGE carries at least three."""
    decades = np.log10(high / low) if low > 0 and high > low else 0.0
    if decades < 1.5:
        return (1.0, 2.0, 3.0, 5.0, 7.0)
    if decades < 3.0:
        return (1.0, 2.0, 5.0)
    return (1.0,)


def _log_axis(ax: Axes, which: str, values: np.ndarray) -> None:
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    shown = values[np.isfinite(values) & (values > 0)]
    subs = log_subdivisions(float(shown.min()), float(shown.max()))
    axis.set_major_locator(LogLocator(base=10.0, subs=subs))
    axis.set_major_formatter(FuncFormatter(_plain_number))
    axis.set_minor_formatter(NullFormatter())


def throughput_delay(study: Study) -> ReportFigure:
    runs = run_table(study)
    colour = scheme_colour(study)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 5.2), layout="constrained")
    delays = runs["delay_p95_ms"].to_numpy(dtype=float) if len(runs) else np.array([])
    tputs = runs["throughput_mbps"].to_numpy(dtype=float) if len(runs) else np.array([])
    for scheme in study.schemes:
        of_scheme = runs[runs["scheme"] == scheme] if len(runs) else runs
        if of_scheme.empty:
            continue
        c = colour(scheme)
        x = of_scheme["delay_p95_ms"].to_numpy(dtype=float)
        y = of_scheme["throughput_mbps"].to_numpy(dtype=float)
        ax.scatter(x, y, s=22, color=c, alpha=0.55, linewidths=0)
        # Identical runs (a deterministic path) have no spread: say so rather than draw a
        # zero-size ellipse that reads as a drawing error.
        identical = len(of_scheme) > 1 and np.ptp(x) == 0 and np.ptp(y) == 0
        ellipse = None if identical else one_sigma_ellipse(x, y)
        if ellipse is not None:
            ax.plot(ellipse.delay, ellipse.throughput, color=c, linewidth=1.4)
            cx, cy = ellipse.centre_delay, ellipse.centre_throughput
            delays = np.concatenate([delays, ellipse.delay])
            tputs = np.concatenate([tputs, ellipse.throughput])
        else:
            cx, cy = float(np.nanmean(x)), float(np.nanmean(y))
        ax.scatter([cx], [cy], s=90, color=c, edgecolors="black", linewidths=0.8, zorder=3)
        ax.annotate(
            f"{scheme} ({len(of_scheme)}{', all identical' if identical else ''})",
            (cx, cy),
            xytext=(7, 7),
            textcoords="offset points",
            fontsize=10,
            fontweight="bold",
            color=c,
        )
    if _use_log(delays):
        _log_axis(ax, "x", delays)
    if _use_log(tputs):
        _log_axis(ax, "y", tputs)
    ax.invert_xaxis()
    ax.set_xlabel("95th-percentile one-way delay (ms)  ← worse · better →")
    ax.set_ylabel("average throughput (Mbit/s)")
    ax.grid(True, which="major", alpha=0.35)
    ax.set_title("throughput and delay, one dot per run")
    definition = (
        "One small dot per run: y = the run's total average throughput (bits delivered by all "
        "flows / (last delivery - first delivery of any flow)), x = the 95th percentile "
        "(nearest rank) of the one-way delays of every delivered data packet of the run, "
        "pooled over its flows. The delay axis is reversed, so better is up and to the right; "
        f"an axis is logarithmic when its values span a factor of {WIDE_RANGE:g} or more. "
        "Large dots: each scheme's centre, the mean of the runs in log space (geometric mean "
        "of throughput and of delay); outlines: the 1-\N{GREEK SMALL LETTER SIGMA} ellipse of "
        "the runs in "
        "(log delay, log throughput), from the eigenvectors and square-rooted eigenvalues of "
        "their sample covariance, as in the Pantheon's calibrated-emulator comparison. The "
        'number after a scheme\'s name is its count of runs; "all identical" marks a scheme '
        "whose runs gave the same throughput and delay (no spread, so no ellipse)."
    )
    return ReportFigure("throughput-delay", "Throughput and delay", definition, fig)


def _panels(study: Study) -> tuple[Figure, list[tuple[str, RunData, Axes]]]:
    shown = [(s, r) for s in study.schemes if (r := representative(study, s)) is not None]
    fig, axes = plt.subplots(
        max(len(shown), 1),
        1,
        figsize=(WIDTH_IN, PANEL_HEIGHT_IN * max(len(shown), 1) + 0.6),
        sharex=True,
        squeeze=False,
        layout="constrained",
    )
    panels = [(scheme, run, axes[i][0]) for i, (scheme, run) in enumerate(shown)]
    if not panels:
        axes[0][0].text(0.5, 0.5, "no complete run", ha="center", transform=axes[0][0].transAxes)
    return fig, panels


def _outside_legend(ax: Axes) -> None:
    """The panel's legend to the right of it, in two columns when there are many flows."""
    entries = len(ax.get_legend_handles_labels()[1])
    ax.legend(
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
        ncols=2 if entries > 12 else 1,
    )


def _panel_title(ax: Axes, scheme: str, run: RunData) -> None:
    seed = f", seed {run.seed}" if run.seed is not None else ""
    ax.set_title(f"{scheme} — {run.name}{seed}", fontsize=10, loc="left")


def _bin_width_s(run: RunData) -> float:
    t = np.unique(run.timeseries["t_s"].to_numpy())
    return float(np.min(np.diff(t))) if len(t) > 1 else 0.5


#: Above this many flows, a run's time-series panels draw all its flows as one (summed
#: throughput, byte-weighted mean delay): 200 request connections as lines are unreadable, and
#: their 200-entry legends took matplotlib minutes to lay out (a Bundler experiment's report
#: took 270 s).
MAX_FLOW_LINES = 12


def _flow_count(run: RunData) -> int:
    return int(run.timeseries["flow"].nunique())


def _all_flows(run: RunData) -> pd.DataFrame:
    """The run's flows as one per time bin: throughputs summed, the mean delay weighted by
    each flow's delivered bytes, the maximum delay over flows."""
    ts = run.timeseries
    weight = ts["throughput_mbps"].where(ts["delay_mean_ms"].notna(), 0.0)
    g = ts.assign(_w=weight, _wd=weight * ts["delay_mean_ms"].fillna(0.0)).groupby("t_s")
    w = g["_w"].sum()
    return pd.DataFrame(
        {
            "throughput_mbps": g["throughput_mbps"].sum(),
            "sending_mbps": g["sending_mbps"].sum(),
            "delay_mean_ms": (g["_wd"].sum() / w).where(w > 0),
            "delay_max_ms": g["delay_max_ms"].max(),
        }
    ).reset_index()


def _draw_throughput(ax: Axes, run: RunData) -> None:
    capacity = capacity_of(run)
    width = _bin_width_s(run)
    if capacity is not None:
        edges = np.append(capacity.t_s, capacity.t_s[-1] + width)
        ax.stairs(capacity.mbps, edges, fill=True, color="linen", ec="tan", label=capacity.label)
    if (n := _flow_count(run)) > MAX_FLOW_LINES:
        both = _all_flows(run)
        edges = np.append(both["t_s"].to_numpy(), both["t_s"].to_numpy()[-1] + width)
        c = COLOURS[0]
        ax.stairs(both["sending_mbps"].to_numpy(), edges, color=c, linestyle="--", lw=0.8)
        ax.stairs(
            both["throughput_mbps"].to_numpy(), edges, color=c, lw=1.4, label=f"all {n} flows"
        )
    groups = run.timeseries.groupby("flow", sort=True) if n <= MAX_FLOW_LINES else ()
    for i, (flow, rows) in enumerate(groups):
        c = COLOURS[i % len(COLOURS)]
        edges = np.append(rows["t_s"].to_numpy(), rows["t_s"].to_numpy()[-1] + width)
        ax.stairs(rows["sending_mbps"].to_numpy(), edges, color=c, linestyle="--", lw=0.8)
        mean = run.summary.loc[run.summary["flow"] == flow, "throughput_mbps"]
        label = f"flow {flow} ({float(mean.iloc[0]):.2f} Mbit/s)" if len(mean) else None
        ax.stairs(rows["throughput_mbps"].to_numpy(), edges, color=c, lw=1.4, label=label)
    ax.set_ylabel("Mbit/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    _outside_legend(ax)


THROUGHPUT_TIME = (
    "Per flow, solid: delivered (egress) throughput = bits of the flow's data packets that "
    "arrived in each time bin / bin width; dashed: sending (ingress) rate = bits the flow "
    "sent in the bin / bin width. Bins (500 ms unless the scenario says otherwise) start at "
    "the run's first event. The legend gives each flow's average throughput = delivered "
    "bits / (last - first delivery of the flow). Shaded: the link's capacity per bin "
    "(constant rate, trace delivery opportunities, or the opportunities logged in an "
    f"imported log). A run of more than {MAX_FLOW_LINES} flows is drawn as one: the sum over "
    "its flows per bin."
)


def throughput_over_time(study: Study) -> ReportFigure:
    fig, panels = _panels(study)
    for scheme, run, ax in panels:
        _draw_throughput(ax, run)
        _panel_title(ax, scheme, run)
    if panels:
        panels[-1][2].set_xlabel("time (s)")
    definition = f"{THROUGHPUT_TIME} {FIRST_RUN_ONLY}"
    return ReportFigure("throughput-time", "Throughput over time", definition, fig)


def _packet_delays(run: RunData) -> pd.DataFrame | None:
    """Delivered data packets of a run that kept its packet log: flow, arrival time (s, from
    the run's time origin) and one-way delay (ms), evenly thinned to PACKET_DOTS at most."""
    if run.packets_path is None:
        return None
    table = pq.read_table(
        run.packets_path, columns=["flow", "kind", "fate", "sent_ns", "arrived_ns"]
    ).to_pandas()
    delivered = table[(table["kind"] == "data") & (table["fate"] == "delivered")]
    if len(delivered) > PACKET_DOTS:
        delivered = delivered.iloc[:: -(-len(delivered) // PACKET_DOTS)]
    origin_ns = int((run.meta.get("import") or {}).get("time_origin_ns", 0))
    arrived = delivered["arrived_ns"].to_numpy(dtype=np.int64)
    return pd.DataFrame(
        {
            "flow": delivered["flow"].to_numpy(),
            "t_s": (arrived - origin_ns) / 1e9,
            "delay_ms": (arrived - delivered["sent_ns"].to_numpy(dtype=np.int64)) / 1e6,
        }
    )


def _draw_delay(ax: Axes, run: RunData) -> None:
    width = _bin_width_s(run)
    dots = _packet_delays(run)
    if (n := _flow_count(run)) > MAX_FLOW_LINES:
        c = COLOURS[0]
        if dots is not None:
            ax.scatter(
                dots["t_s"], dots["delay_ms"], s=1, color=c, alpha=0.25, lw=0, rasterized=True
            )
        both = _all_flows(run)
        t = both["t_s"].to_numpy() + width / 2
        ax.plot(t, both["delay_mean_ms"].to_numpy(), color=c, lw=1.4, label=f"all {n} flows")
        ax.plot(t, both["delay_max_ms"].to_numpy(), color=c, lw=0.7, alpha=0.6, ls=":")
    groups = run.timeseries.groupby("flow", sort=True) if n <= MAX_FLOW_LINES else ()
    for i, (flow, rows) in enumerate(groups):
        c = COLOURS[i % len(COLOURS)]
        if dots is not None:
            mine = dots[dots["flow"] == flow]
            ax.scatter(
                mine["t_s"], mine["delay_ms"], s=1, color=c, alpha=0.25, lw=0, rasterized=True
            )
        t = rows["t_s"].to_numpy() + width / 2
        p95 = run.summary.loc[run.summary["flow"] == flow, "delay_p95_ms"]
        value = float(p95.iloc[0]) if len(p95) else float("nan")
        label = f"flow {flow} (p95 {value:.1f} ms)" if np.isfinite(value) else f"flow {flow}"
        ax.plot(t, rows["delay_mean_ms"].to_numpy(), color=c, lw=1.4, label=label)
        ax.plot(t, rows["delay_max_ms"].to_numpy(), color=c, lw=0.7, alpha=0.6, ls=":")
    ax.set_ylabel("one-way delay (ms)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    _outside_legend(ax)


DELAY_TIME = (
    "One-way delay of a delivered data packet = arrival time - send time (for imported "
    "Pantheon and mahimahi logs, the DELAY the log records). Per flow and time bin (by "
    "arrival): solid, the mean over the packets delivered in the bin; dotted, the maximum. "
    "Bins without deliveries are gaps. When the run kept its packet log, each faint dot is "
    f"one delivered packet (evenly thinned to {PACKET_DOTS:,} per panel), as in the "
    "Pantheon's delay graphs. The legend gives each flow's 95th-percentile delay (nearest "
    "rank over all its delivered packets). A run of more than "
    f"{MAX_FLOW_LINES} flows is drawn as one: per bin, the flows' means weighted by their "
    "delivered bytes, and the maximum over them."
)


def delay_over_time(study: Study) -> ReportFigure:
    fig, panels = _panels(study)
    for scheme, run, ax in panels:
        _draw_delay(ax, run)
        _panel_title(ax, scheme, run)
    if panels:
        panels[-1][2].set_xlabel("time (s)")
    definition = f"{DELAY_TIME} {FIRST_RUN_ONLY}"
    return ReportFigure("delay-time", "One-way delay over time", definition, fig)


def _draw_jain(ax: Axes, run: RunData) -> None:
    jain = run.jain
    t = jain["t_ns"].to_numpy() / 1e9 if len(jain) else np.array([])
    counted = jain["counted"].to_numpy(dtype=bool) if len(jain) else np.array([], bool)
    values = jain["jain"].to_numpy(dtype=float) if len(jain) else np.array([])
    ax.plot(t, np.where(counted, values, np.nan), color=COLOURS[0], lw=1.1, label="counted")
    ax.scatter(t[~counted], values[~counted], s=10, color="grey", marker="x", label="skipped")
    if len(jain):
        ax2 = ax.twinx()
        ax2.step(t, jain["active_flows"], where="post", color="tab:orange", lw=0.8, alpha=0.6)
        ax2.set_ylabel("active flows", color="tab:orange", fontsize=8)
        ax2.set_ylim(bottom=0)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("Jain's index")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")


JAIN_TIME = (
    "Jain's fairness index per bucket (100 ms unless the scenario says otherwise) = "
    "(Σ xᵢ)² / (n · Σ xᵢ²), where xᵢ is the bytes flow i delivered in the bucket and n the "
    "number of flows that delivered any (the active flows, orange, right axis). As in the "
    "Copa authors' script, a bucket whose active-flow count differs from the previous "
    "bucket's is skipped (grey x): a flow arriving or leaving mid-bucket makes it "
    "meaningless."
)


def jain_over_time(study: Study) -> ReportFigure:
    fig, panels = _panels(study)
    for scheme, run, ax in panels:
        _draw_jain(ax, run)
        _panel_title(ax, scheme, run)
    if panels:
        panels[-1][2].set_xlabel("time (s)")
    definition = f"{JAIN_TIME} {FIRST_RUN_ONLY}"
    return ReportFigure("jain-time", "Jain's fairness index over time", definition, fig)


def jain_cdf(study: Study) -> ReportFigure:
    colour = scheme_colour(study)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 4.0), layout="constrained")
    drawn = False
    for scheme in study.schemes:
        values = [
            r.jain.loc[r.jain["counted"].astype(bool), "jain"].to_numpy(dtype=float)
            for r in study.runs_of(scheme)
            if len(r.jain)
        ]
        pooled = np.sort(np.concatenate(values)) if values else np.array([])
        pooled = pooled[np.isfinite(pooled)]
        if len(pooled) == 0:
            continue
        cdf = np.arange(1, len(pooled) + 1) / len(pooled)
        median = float(np.median(pooled))
        ax.step(
            np.concatenate([[0.0], pooled]),
            np.concatenate([[0.0], cdf]),
            where="post",
            color=colour(scheme),
            lw=1.5,
            label=f"{scheme} (median {median:.3f}, {len(pooled)} buckets)",
        )
        drawn = True
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("Jain's index")
    ax.set_ylabel("fraction of buckets ≤ x")
    ax.grid(True, alpha=0.3)
    if drawn:
        ax.legend(fontsize=9, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no counted bucket", ha="center", transform=ax.transAxes)
    definition = (
        "Empirical CDF of Jain's index over the counted buckets (see the previous figure) of "
        "every run of a scheme, pooled; the legend gives the median and the number of buckets. "
        "A single-flow run has index 1 in every bucket."
    )
    return ReportFigure("jain-cdf", "Distribution of Jain's index", definition, fig)


def run_figure(run: RunData) -> ReportFigure:
    """One run's time series in one figure: throughput, one-way delay and Jain's index."""
    fig, axes = plt.subplots(
        3, 1, figsize=(WIDTH_IN, PANEL_HEIGHT_IN * 3 + 0.6), sharex=True, layout="constrained"
    )
    _draw_throughput(axes[0], run)
    _draw_delay(axes[1], run)
    _draw_jain(axes[2], run)
    seed = f", seed {run.seed}" if run.seed is not None else ""
    axes[0].set_title(f"{run.scheme} — {run.name}{seed}", fontsize=10, loc="left")
    axes[2].set_xlabel("time (s)")
    definition = f"Top: {THROUGHPUT_TIME} Middle: {DELAY_TIME} Bottom: {JAIN_TIME}"
    return ReportFigure(f"run-{run.name}", f"{run.name}: time series", definition, fig)


#: The request-size buckets, in the core's order (its `requests.bucket` codes).
FCT_BUCKETS = ("small", "medium", "large")
FCT_BUCKET_TITLES = {"small": "< 10 KB", "medium": "10 KB - 1 MB", "large": "> 1 MB"}


def _completed_requests(study: Study, scheme: str) -> pd.DataFrame:
    frames = [r.requests for r in study.runs_of(scheme) if r.requests is not None]
    if not frames:
        return pd.DataFrame(columns=["bucket", "fct_ms", "slowdown", "completed"])
    pooled = pd.concat(frames, ignore_index=True)
    return pooled[pooled["completed"].astype(bool)]


def fct_cdfs(study: Study) -> ReportFigure:
    """CDFs of FCT (top row) and slowdown (bottom row) per size bucket, one line per scheme."""
    colour = scheme_colour(study)
    fig, axes = plt.subplots(
        2, 3, figsize=(WIDTH_IN + 1.5, 6.0), layout="constrained", squeeze=False
    )
    for scheme in study.schemes:
        done = _completed_requests(study, scheme)
        for col, bucket in enumerate(FCT_BUCKETS):
            mine = done[done["bucket"].astype(str) == bucket]
            for row, key in enumerate(("fct_ms", "slowdown")):
                ax = axes[row][col]
                values = np.sort(mine[key].to_numpy(dtype=float))
                if len(values) == 0:
                    continue
                cdf = np.arange(1, len(values) + 1) / len(values)
                median = float(np.median(values))
                ax.step(
                    values,
                    cdf,
                    where="post",
                    color=colour(scheme),
                    lw=1.3,
                    label=f"{scheme} (median {median:.3g}, n={len(values)})",
                )
    for col, bucket in enumerate(FCT_BUCKETS):
        for row, label in enumerate(("FCT (ms)", "slowdown")):
            ax = axes[row][col]
            ax.set_ylim(0, 1.02)
            ax.grid(True, alpha=0.3)
            ax.set_xlabel(label)
            if ax.lines:
                _log_axis(ax, "x", np.concatenate([line.get_xdata() for line in ax.lines]))
                ax.legend(fontsize=7, loc="lower right")
            else:
                ax.text(0.5, 0.5, "no request", ha="center", transform=ax.transAxes)
        axes[0][col].set_title(FCT_BUCKET_TITLES[bucket], fontsize="medium")
    axes[0][0].set_ylabel("fraction of requests ≤ x")
    axes[1][0].set_ylabel("fraction of requests ≤ x")
    definition = (
        "Empirical CDFs over the completed requests of every run of a scheme, pooled, by "
        "response size (small < 10 KB, medium 10 KB-1 MB, large > 1 MB). FCT runs from the "
        "request's arrival at the sending application to the acknowledgement of its last byte; "
        "slowdown = FCT / (size / link rate + base RTT), Bundler's definition, so 1 is an "
        "uncontended request. Requests still open when the run ended are left out (the "
        "`requests` table keeps them)."
    )
    return ReportFigure(
        "fct-cdf", "Flow-completion time and slowdown by request size", definition, fig
    )


def middlebox_over_time(study: Study) -> ReportFigure:
    """The inbox's rate (left axis) and queue (right axis) over time, a panel per scheme."""
    fig, panels = _panels(study)
    for scheme, run, ax in panels:
        mb = run.middlebox
        if mb is None or mb.empty:
            ax.text(0.5, 0.5, "no middlebox", ha="center", transform=ax.transAxes)
            _panel_title(ax, scheme, run)
            continue
        t = mb["t_s"].to_numpy()
        ax.plot(t, mb["rate_mbps"], color=COLOURS[0], lw=1.0, label="inbox rate")
        ax.plot(
            t, mb["receive_mbps"], color=COLOURS[2], lw=0.8, alpha=0.7, label="received at outbox"
        )
        ax.set_ylabel("Mbit/s")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax2 = ax.twinx()
        ax2.plot(t, mb["queue_bytes"] / 1e3, color="tab:orange", lw=0.8, alpha=0.8)
        ax2.set_ylabel("inbox queue (KB)", color="tab:orange", fontsize=8)
        ax2.set_ylim(bottom=0)
        _panel_title(ax, scheme, run)
    if panels:
        panels[-1][2].set_xlabel("time (s)")
    definition = (
        "Bundler's inbox every control interval (10 ms unless the scenario says otherwise): the "
        "token-bucket rate its aggregate controller set (blue), the bundle's receive rate the "
        "outbox reported (green), and the bytes waiting in the inbox's queue (orange, right axis). "
        "One panel per scheme, its first run."
    )
    return ReportFigure(
        "middlebox-time", "The middlebox's rate and queue over time", definition, fig
    )


#: Most flows a sender-trace panel draws, and most points per flow (the SVG grows with them).
TRACE_FLOWS = 8
TRACE_POINTS = 4_000
#: A window at least this large is no window (rate-based controllers report u64::MAX).
NO_WINDOW = 2**62
#: Line styles of a comparison's two engines, first then second (the reference).
ENGINE_STYLES = ("-", "--")


def _trace_groups(study: Study) -> list[tuple[str, list[RunData]]]:
    """What each row of the sender-trace figure overlays: in a comparison, the first run of
    each engine for one scheme pair; otherwise the first run of each scheme alone."""
    traced = [r for r in study.runs if r.has_trace]
    if traced and all("pair" in r.tags and "side" in r.tags for r in traced):
        groups: dict[int, dict[int, RunData]] = {}
        for r in sorted(traced, key=lambda r: (r.repetition or 0, r.name)):
            groups.setdefault(int(r.tags["pair"]), {}).setdefault(int(r.tags["side"]), r)
        out = []
        for pair in sorted(groups):
            sides = [groups[pair][side] for side in sorted(groups[pair])]
            out.append((" vs ".join(r.scheme for r in sides), sides))
        return out
    out = []
    for scheme in study.schemes:
        runs = [r for r in traced if r.scheme == scheme]
        if runs:
            out.append((scheme, [min(runs, key=lambda r: (r.repetition or 0, r.name))]))
    return out


def _read_trace(run: RunData) -> pd.DataFrame:
    return run.read_trace(["flow", "t_ns", "cwnd_bytes", "pacing_rate_mbps"])


def sender_trace(study: Study) -> ReportFigure:
    """Per flow, the congestion window (left) and pacing rate (right) over time; in a
    comparison both engines on the same axes."""
    groups = _trace_groups(study)
    rows = max(len(groups), 1)
    fig, axes = plt.subplots(
        rows,
        2,
        figsize=(WIDTH_IN + 2.0, PANEL_HEIGHT_IN * rows + 0.6),
        sharex=True,
        squeeze=False,
        layout="constrained",
    )
    comparing = any(len(runs) > 1 for _, runs in groups)
    for row, (title, runs) in enumerate(groups):
        cwnd_ax, rate_ax = axes[row]
        for side, run in enumerate(runs):
            trace = _read_trace(run)
            style = ENGINE_STYLES[side % len(ENGINE_STYLES)]
            for i, (flow, rows_of) in enumerate(trace.groupby("flow", sort=True)):
                if i >= TRACE_FLOWS:
                    break
                if len(rows_of) > TRACE_POINTS:
                    rows_of = rows_of.iloc[:: -(-len(rows_of) // TRACE_POINTS)]
                t = rows_of["t_ns"].to_numpy(dtype=float) / 1e9
                cwnd = rows_of["cwnd_bytes"].to_numpy(dtype=float)
                cwnd[cwnd >= NO_WINDOW] = np.nan
                c = COLOURS[i % len(COLOURS)]
                label = f"flow {flow} ({run.engine})" if comparing else f"flow {flow}"
                cwnd_ax.plot(t, cwnd / 1e3, color=c, ls=style, lw=1.0, label=label)
                rate_ax.plot(t, rows_of["pacing_rate_mbps"], color=c, ls=style, lw=1.0)
        cwnd_ax.set_title(title, fontsize=10, loc="left")
        cwnd_ax.set_ylabel("cwnd (KB)")
        rate_ax.set_ylabel("pacing rate (Mbit/s)")
        for ax in (cwnd_ax, rate_ax):
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
        if cwnd_ax.lines:
            # One legend for both panels, to the right of the rates.
            handles, labels = cwnd_ax.get_legend_handles_labels()
            rate_ax.legend(
                handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)
            )
    if not groups:
        axes[0][0].text(
            0.5, 0.5, "no run kept a trace", ha="center", transform=axes[0][0].transAxes
        )
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    engines = (
        " In a comparison, each row overlays the first run of both engines for one scheme "
        "pair: solid the first engine, dashed the second (the reference)."
        if comparing
        else f" {FIRST_RUN_ONLY}"
    )
    definition = (
        "The sender trace (--trace): each flow's sender sampled after the ACKs it processed, "
        "at most once per flow per sampling interval (10 ms unless the run asked otherwise). "
        "Left: the congestion window in kilobytes (controllers that keep no window are left "
        "out); right: the pacing rate in Mbit/s (gaps: the sender did not pace). For kernel "
        "TCP in the emulator, both are the kernel's own (TCP_INFO: tcpi_snd_cwnd times "
        "tcpi_snd_mss, tcpi_pacing_rate), read every interval. At most "
        f"{TRACE_FLOWS} flows per run, each thinned evenly to {TRACE_POINTS:,} points; "
        "trace.parquet has every sample and the controllers' own variables." + engines
    )
    return ReportFigure(
        "sender-trace", "Congestion window and pacing rate over time", definition, fig
    )


def all_figures(study: Study) -> list[ReportFigure]:
    figures = [
        throughput_delay(study),
        throughput_over_time(study),
        delay_over_time(study),
        jain_over_time(study),
        jain_cdf(study),
    ]
    if any(r.requests is not None and len(r.requests) for r in study.runs):
        figures.append(fct_cdfs(study))
    if any(r.middlebox is not None and len(r.middlebox) for r in study.runs):
        figures.append(middlebox_over_time(study))
    if any(r.has_trace for r in study.runs):
        figures.append(sender_trace(study))
    return figures
