"""The link capacity over time that the throughput figures shade, per bin in Mbit/s:
- from the run's `capacity.parquet` when it has one (imported logs: their delivery
  opportunities, `#` lines, in the same bins as the throughput);
- from a mahimahi trace link (each line a ms timestamp of one 1500-byte delivery opportunity,
  the file repeating), binned like the throughput;
- from a constant link rate;
- otherwise, when the run measured it, its average capacity as a constant.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cclab.report.loading import RunData
from cclab.scenario_values import duration_ms, rate_mbps

#: Bytes a mahimahi trace line lets through.
TRACE_PACKET_BYTES = 1500


@dataclass
class Capacity:
    #: Bin starts in s, and the capacity of each bin in Mbit/s.
    t_s: np.ndarray
    mbps: np.ndarray
    #: How it was obtained, for the figure's legend.
    label: str


def _bin_s(run: RunData) -> float:
    output = run.scenario.get("output", {})
    return (duration_ms(output.get("bin", "500ms")) or 500.0) / 1e3


def _duration_s(run: RunData) -> float:
    duration = duration_ms(run.scenario.get("duration"))
    if duration:
        return duration / 1e3
    series = run.timeseries
    return float(series["t_s"].max()) + _bin_s(run) if len(series) else 0.0


def _from_trace(path: Path, duration_s: float, bin_s: float) -> Capacity | None:
    try:
        stamps = np.loadtxt(path, dtype=np.int64, ndmin=1)
    except (OSError, ValueError):
        return None
    if stamps.size == 0 or stamps[-1] <= 0:
        return None
    period_ms = int(stamps[-1])
    repeats = int(np.ceil(duration_s * 1e3 / period_ms)) + 1
    times_ms = (stamps[None, :] + period_ms * np.arange(repeats)[:, None]).ravel()
    bins = int(np.ceil(duration_s / bin_s))
    index = (times_ms / 1e3 // bin_s).astype(np.int64)
    counts = np.bincount(index[index < bins], minlength=bins)
    mbps = counts * TRACE_PACKET_BYTES * 8 / (bin_s * 1e6)
    return Capacity(np.arange(bins) * bin_s, mbps, f"capacity of trace {path.name}")


def capacity_of(run: RunData) -> Capacity | None:
    bin_s = _bin_s(run)
    if run.capacity is not None and len(run.capacity):
        frame = run.capacity
        return Capacity(
            frame["t_ns"].to_numpy() / 1e9,
            frame["capacity_mbps"].to_numpy(),
            "link capacity (delivery opportunities in the log)",
        )
    link = run.scenario.get("link", {})
    duration_s = _duration_s(run)
    bins = max(int(np.ceil(duration_s / bin_s)), 1)
    rate = rate_mbps(link.get("rate"))
    if rate is not None:
        return Capacity(np.arange(bins) * bin_s, np.full(bins, rate), f"link rate {rate:g} Mbit/s")
    if link.get("trace"):
        trace = Path(str(link["trace"]))
        from_trace = _from_trace(trace, duration_s, bin_s) if trace.is_absolute() else None
        if from_trace is not None:
            return from_trace
    average = (run.meta.get("metrics") or {}).get("capacity_mbps")
    if average:
        return Capacity(
            np.arange(bins) * bin_s,
            np.full(bins, float(average)),
            f"average capacity {float(average):.2f} Mbit/s",
        )
    return None
