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

from cclab import _core
from cclab.sender_trace import trace_frame

#: Arrival time of a packet that never arrived (dropped or still in flight), in `packets`.
NEVER: int = _core.NEVER

#: Columns of every result table, in order, from the core's one declaration of them:
#: table → [(name, dtype, unit, doc)] (`cclab_core::schema`; `flows` and `stats` beside the
#: engines' result types).
SCHEMA: dict[str, list[tuple[str, str, str, str]]] = _core.SCHEMA

#: Columns of `summary`, in display order (the core's per-flow and total summaries).
SUMMARY_COLUMNS = [name for name, *_ in SCHEMA["summary"]]


def typed_frame(table: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows built in Python (by the importers) as a frame with the table's columns, in the
    core's order and with its dtypes."""
    columns = SCHEMA[table]
    frame = pd.DataFrame(rows, columns=[name for name, *_ in columns])
    return frame.astype({name: dtype for name, dtype, *_ in columns if dtype != "str"})


def summary_frame(columns: dict[str, Any]) -> pd.DataFrame:
    """One row per flow and a last row for the total (`flow` is <NA>, `scheme` is "total").
    Utilisation and the Jain median describe the whole run, so only the total row has them.
    The core marks the total row's flow with a negative id (numpy has no missing integers)."""
    frame = pd.DataFrame(columns)
    flow = frame["flow"]
    frame["flow"] = flow.astype("Int64").mask(flow < 0)
    return frame[SUMMARY_COLUMNS]


def table_frame(table: str, columns: dict[str, Any] | None) -> pd.DataFrame:
    """A table the core may leave out (an engine without request workloads or a middlebox):
    its columns, coded ones as categoricals; empty with the declared columns when absent."""
    if columns is None:
        return typed_frame(table, [])
    return packets_frame(columns)


def timeseries_frame(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    return pd.DataFrame(columns)


def packets_frame(columns: dict[str, Any]) -> pd.DataFrame:
    """The packet log, with its coded columns (those the core sends `<name>_names` for, i.e.
    `kind` and `fate`) as categoricals."""
    data = {k: v for k, v in columns.items() if not k.endswith("_names")}
    for name in data:
        if f"{name}_names" in columns:
            data[name] = pd.Categorical.from_codes(data[name], categories=columns[f"{name}_names"])
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
    #: One row per request of a request workload: size, size bucket, FCT and slowdown
    #: (empty without one).
    requests: pd.DataFrame = field(default_factory=lambda: typed_frame("requests", []))
    #: FCT and slowdown medians and p99 per size bucket, then over all requests.
    fct: pd.DataFrame = field(default_factory=lambda: typed_frame("fct", []))
    #: The middlebox's inbox every control interval: rate, queue, RTT (empty without one).
    middlebox: pd.DataFrame = field(default_factory=lambda: typed_frame("middlebox", []))
    #: Every flow's sender over time (`trace=`): one row per sample, None without a trace.
    trace: pd.DataFrame | None = field(default=None, repr=False)

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
            summary=summary_frame(raw["summary"]),
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
            requests=table_frame("requests", raw.get("requests")),
            fct=table_frame("fct", raw.get("fct")),
            middlebox=table_frame("middlebox", raw.get("middlebox")),
            trace=trace_frame(raw.get("trace")),
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

    def _repr_html_(self) -> str:
        """Jupyter shows a result as its summary table."""
        from cclab.notebook import run_html

        return run_html(self)

    def plot(self, which: str = "throughput") -> Any:
        """One of the report's figures of this run, shown inline in Jupyter (a
        `cclab.notebook.FigureView`; `.figure` is the matplotlib figure). `which`: a key of
        `cclab.notebook.FIGURES` (throughput, delay, jain, jain_cdf, throughput_delay, trace)."""
        from cclab.notebook import plot, study_of_run

        return plot(study_of_run(self), which)

    def write_pcap(self, path: str | Path) -> int:
        """Writes the packet log as a pcapng capture at the senders (`cclab_core::pcap`):
        synthetic IPv4 + TCP headers, data when sent, with its stream offset as the TCP
        sequence number, and delivered ACKs when they arrived, with their cumulative
        acknowledgment, so Wireshark's TCP sequence analysis works. Returns the number of
        packets written. Needs a run that logged packets (`log_packets=True`). (An emulator
        run captures its real packets itself: `cclab.run(..., pcap=path)`.)"""
        cols = self.packet_columns
        if cols is None:
            raise ValueError("this run kept no packet log; run it with log_packets=True")
        if "seq" not in cols:
            # Importers read mm-link logs, which record no TCP header.
            raise ValueError(
                "this run's packet log has no TCP sequence numbers (an imported link log "
                "records none); a capture needs a run of cclab's engines"
            )
        return _core.write_pcap(
            Path(path),
            cols["uid"],
            cols["flow"],
            cols["kind"],
            cols["size"],
            cols["sent_ns"],
            cols["arrived_ns"],
            cols["fate"],
            cols["seq"],
            cols.get("push"),
        )

    def save(self, directory: str | Path, *, command: list[str] | None = None) -> Path:
        """Writes the run directory atomically (see `cclab.archive`); returns its path."""
        from cclab.archive import write_run_dir

        return write_run_dir(self, Path(directory), command=command)
