"""The numbers the Pantheon's own analysis printed for a run (`<cc>_stats_run<N>.log`, after
`# Datalink statistics`, written by `tunnel_graph.py`), read back to check an import against
them (reference/pantheon-and-mahimahi.md §1.8)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

MARKER = "# Datalink statistics"
_TOTAL = re.compile(r"^-- Total of \d+ flows?:")
_FLOW = re.compile(r"^-- Flow (\d+):")
_FIGURES = {
    "capacity_mbps": re.compile(r"^Average capacity: ([-\d.]+) Mbit/s"),
    "throughput_mbps": re.compile(r"^Average throughput: ([-\d.]+) Mbit/s"),
    "delay_p95_ms": re.compile(r"^95th percentile per-packet one-way delay: ([-\d.]+) ms"),
    "loss_percent": re.compile(r"^Loss rate: ([-\d.]+)%"),
}
#: Half a unit of the last digit each figure is printed with (%.2f, %.2f, %.3f, %.2f), plus
#: room for binary rounding.
_TOLERANCE = {
    "capacity_mbps": 0.005 + 1e-9,
    "throughput_mbps": 0.005 + 1e-9,
    "delay_p95_ms": 0.0005 + 1e-9,
    "loss_percent": 0.005 + 1e-9,
}


#: The largest stats file read (the Pantheon's are a few kB).
MAX_STATS_BYTES = 1 << 20


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_stats(path: Path) -> dict[str, dict[str, float]] | None:
    """{"total": {...}, "1": {...}, ...} with the figures printed in the datalink section, or
    None when the file or the section is missing. Flow keys are the Pantheon's ids."""
    if not path.is_file():  # absent, or a pipe or device that would never end
        return None
    if path.stat().st_size > MAX_STATS_BYTES:
        return None
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(MARKER))
    except StopIteration:
        return None
    stats: dict[str, dict[str, float]] = {}
    current: str | None = None
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if _TOTAL.match(line):
            current = "total"
        elif match := _FLOW.match(line):
            current = match.group(1)
        elif current is not None:
            for key, pattern in _FIGURES.items():
                figure = pattern.match(line)
                # The Pantheon prints "---.-" (or nan) for a figure it could not compute: that
                # figure is not printed, so there is nothing to check it against.
                value = _number(figure.group(1)) if figure else None
                if value is not None:
                    stats.setdefault(current, {})[key] = value
    return stats or None


def compare(
    stats: dict[str, dict[str, float]],
    summary: pd.DataFrame,
    capacity_mbps: float | None,
    *,
    first_flow_id: int,
) -> list[str]:
    """Differences between the Pantheon's printed figures and an import's summary beyond the
    printing precision (empty when they agree). Pantheon flow id k is cclab flow
    k - first_flow_id."""
    differences = []
    for key, printed in stats.items():
        if key == "total":
            row = summary[summary["flow"].isna()]
        else:
            row = summary[summary["flow"] == int(key) - first_flow_id]
        if row.empty:
            differences.append(f"{key}: flow not in the import")
            continue
        ours = {
            "capacity_mbps": capacity_mbps if key == "total" else None,
            "throughput_mbps": float(row["throughput_mbps"].iloc[0]),
            "delay_p95_ms": float(row["delay_p95_ms"].iloc[0]),
            "loss_percent": float(row["loss_pct"].iloc[0]),
        }
        for figure, value in printed.items():
            mine = ours.get(figure)
            if mine is None or not math.isfinite(mine) or abs(mine - value) > _TOLERANCE[figure]:
                differences.append(f"{key} {figure}: Pantheon printed {value}, cclab has {mine}")
    return differences
