"""Per-run and per-scheme tables: each run's totals, and mean ± sd over a scheme's runs."""

from __future__ import annotations

import math

import pandas as pd

from cclab.report.loading import Study

#: (column of the per-run table, heading, scale, decimals) of the figures summarised per scheme.
METRICS = [
    ("throughput_mbps", "throughput (Mbit/s)", 1.0, 2),
    ("delay_p95_ms", "p95 one-way delay (ms)", 1.0, 1),
    ("loss_pct", "loss (%)", 1.0, 2),
    ("utilisation", "utilisation (%)", 100.0, 1),
]


#: The same for the per-flow summary (a flow's own figures; utilisation is the link's).
FLOW_METRICS = [m for m in METRICS if m[0] != "utilisation"]


def _short(column: str) -> str:
    return column.removesuffix("_mbps").removesuffix("_ms")


#: The printed column of each per-flow figure in `flow_summary`.
FLOW_METRIC_NAMES = [_short(column) for column, _, _, _ in FLOW_METRICS]


def run_table(study: Study) -> pd.DataFrame:
    """One row per run: its scheme, repetition, seed and whole-run figures (the total row)."""
    rows = []
    for run in study.runs:
        total = run.total
        rows.append(
            {
                "scheme": run.scheme,
                "run": run.name,
                "repetition": run.repetition,
                "seed": run.seed,
                "flows": int(run.summary["flow"].notna().sum()),
                "throughput_mbps": float(total["throughput_mbps"]),
                "delay_p95_ms": float(total["delay_p95_ms"]),
                "queueing_p95_ms": float(total["queueing_p95_ms"]),
                "loss_pct": float(total["loss_pct"]),
                "utilisation": float(total["utilisation"]),
                "jain_median": float(total["jain_median"]),
                "jain_counted": float(total["jain_counted"]),
            }
        )
    return pd.DataFrame(rows)


def _mean_sd(values: pd.Series, scale: float, digits: int) -> str:
    values = values.dropna() * scale
    if values.empty:
        return "-"
    mean = values.mean()
    if len(values) < 2:
        return f"{mean:.{digits}f}"
    sd = values.std(ddof=1)
    return f"{mean:.{digits}f} ± {sd:.{digits}f}" if math.isfinite(sd) else f"{mean:.{digits}f}"


def scheme_summary(study: Study) -> pd.DataFrame:
    """One row per scheme: the number of runs and, for each figure, "mean ± sd" over runs
    (sample sd, n - 1), as text ready to print; `<metric>_mean`/`_sd` hold the numbers."""
    runs = run_table(study)
    rows = []
    for scheme in study.schemes:
        of_scheme = runs[runs["scheme"] == scheme] if not runs.empty else runs
        row: dict[str, object] = {"scheme": scheme, "runs": len(of_scheme)}
        for column, _, scale, digits in METRICS:
            values = of_scheme[column] if column in of_scheme else pd.Series(dtype=float)
            row[_short(column)] = _mean_sd(values, scale, digits)
            row[f"{column}_mean"] = float(values.mean()) if len(values) else math.nan
            row[f"{column}_sd"] = float(values.std(ddof=1)) if len(values) > 1 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def flow_summary(study: Study) -> pd.DataFrame:
    """One row per scheme and flow index: how many runs had the flow and, for each of its own
    figures, "mean ± sd" over those runs (as `scheme_summary`), so that a flow that starves
    in every repetition shows even where the scheme's totals look fine."""
    rows = []
    for scheme in study.schemes:
        flows = [run.summary[run.summary["flow"].notna()] for run in study.runs_of(scheme)]
        per_flow = pd.concat(flows, ignore_index=True) if flows else pd.DataFrame()
        if per_flow.empty:
            continue
        for flow, of_flow in per_flow.groupby("flow", sort=True):
            row: dict[str, object] = {"scheme": scheme, "flow": int(flow), "runs": len(of_flow)}
            for column, _, scale, digits in FLOW_METRICS:
                row[_short(column)] = _mean_sd(of_flow[column], scale, digits)
            rows.append(row)
    return pd.DataFrame(rows, columns=["scheme", "flow", "runs", *FLOW_METRIC_NAMES])
