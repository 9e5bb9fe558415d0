"""The result of one run: the core's columns as pandas DataFrames, plus what the archive needs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: Arrival time of a packet that never arrived (dropped or still in flight), in `packets`.
NEVER = np.iinfo(np.uint64).max

#: Columns of `summary`, in display order (the core's per-flow and total summaries).
SUMMARY_COLUMNS = [
    "flow",
    "scheme",
    "throughput_mbps",
    "delay_p95_ms",
    "queueing_p95_ms",
    "delay_mean_ms",
    "delay_min_ms",
    "loss",
    "packets_sent",
    "packets_delivered",
    "packets_dropped",
    "bytes_sent",
    "bytes_delivered",
    "retransmissions",
    "first_delivery_ns",
    "last_delivery_ns",
    "utilisation",
    "jain_median",
]


def summary_frame(rows: list[dict[str, Any]], metrics: dict[str, float]) -> pd.DataFrame:
    """One row per flow and a last row for the total (`flow` is <NA>, `scheme` is "total").
    Utilisation and the Jain median describe the whole run, so only the total row has them."""
    frame = pd.DataFrame(rows)
    frame["flow"] = frame["flow"].astype("Int64")
    is_total = frame["flow"].isna()
    for key in ("utilisation", "jain_median"):
        frame[key] = np.where(is_total, metrics[key], np.nan)
    return frame[SUMMARY_COLUMNS]


def timeseries_frame(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    frame = pd.DataFrame(columns)
    frame.insert(2, "t_s", frame["t_ns"] / 1e9)
    return frame


def packets_frame(columns: dict[str, Any]) -> pd.DataFrame:
    """The packet log, with `kind` and `fate` as categoricals (their names come from the core)."""
    data = {k: v for k, v in columns.items() if not k.endswith("_names")}
    data["kind"] = pd.Categorical.from_codes(data["kind"], categories=columns["kind_names"])
    data["fate"] = pd.Categorical.from_codes(data["fate"], categories=columns["fate_names"])
    return pd.DataFrame(data, copy=False)


@dataclass
class RunResult:
    """Everything one simulator run produced.

    `summary` has one row per flow and a total row; `timeseries` one row per flow and bin;
    `jain` one row per Jain bucket; `flows` one row per flow; `packets` (when the run was asked
    to log packets) one row per data or ACK packet, times in ns since the start of the run
    (`arrived_ns` is `cclab.NEVER` for packets that did not arrive).
    """

    name: str
    seed: int
    duration_s: float
    scenario_toml: str
    summary: pd.DataFrame
    timeseries: pd.DataFrame
    jain: pd.DataFrame
    flows: pd.DataFrame
    #: Engine counters: events, wall_secs, data_sent, data_delivered, data_dropped, ...
    stats: dict[str, float]
    #: Whole-run figures: capacity_mbps, utilisation, jain_median.
    metrics: dict[str, float]
    #: Where the scenario came from: its path, or "<scenario dict>".
    source: str
    started_at: datetime
    wall_secs: float
    packet_columns: dict[str, Any] | None = field(default=None, repr=False)
    #: "sim" or "emu": the engine that produced the result.
    engine: str = "sim"

    @classmethod
    def from_core(
        cls, raw: dict[str, Any], *, source: str, started_at: datetime, wall_secs: float
    ) -> RunResult:
        """Builds a result from the dict `cclab._core.run` returns."""
        return cls(
            name=raw["name"],
            seed=raw["seed"],
            duration_s=raw["duration_ns"] / 1e9,
            scenario_toml=raw["scenario_toml"],
            summary=summary_frame(raw["summary"], raw["metrics"]),
            timeseries=timeseries_frame(raw["timeseries"]),
            jain=pd.DataFrame(raw["jain"]),
            flows=pd.DataFrame(raw["flows"]),
            stats=dict(raw["stats"]),
            metrics=dict(raw["metrics"]),
            source=source,
            started_at=started_at,
            wall_secs=wall_secs,
            packet_columns=raw["packets"],
            engine=raw.get("engine", "sim"),
        )

    @cached_property
    def packets(self) -> pd.DataFrame | None:
        """The packet log, or None when the run did not log packets."""
        if self.packet_columns is None:
            return None
        return packets_frame(self.packet_columns)

    @property
    def events_per_sec(self) -> float:
        secs = self.stats.get("wall_secs", 0.0)
        return self.stats["events"] / secs if secs > 0 else math.nan

    def save(self, directory: str | Path, *, command: list[str] | None = None) -> Path:
        """Writes the run directory atomically (see `cclab.archive`); returns its path."""
        from cclab.archive import write_run_dir

        return write_run_dir(self, Path(directory), command=command)
