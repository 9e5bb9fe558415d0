"""Metrics of a packet log given as columns, through the Rust kernel (`cclab._core.analyze`).

This is what the importers use and what `benches/analyze_10m.py` times: the same accumulator
that the engines feed while they run, so a log from the Pantheon, mahimahi or a simulator run
gets the same numbers from the same definitions (DESIGN.md "Metrics"). Python only converts the
columns to the kernel's dtypes; it never loops over packets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from cclab import _core
from cclab.result import summary_frame, timeseries_frame

#: `arrived_ns` of a packet that never arrived.
NEVER: int = _core.NEVER

#: Fate and kind names indexed by their codes, and the codes this package uses by name; all
#: from the core (`cclab_core::record`).
FATE_NAMES: list[str] = list(_core.FATE_NAMES)
KIND_NAMES: list[str] = list(_core.KIND_NAMES)
FATE_DELIVERED: int = _core.FATE["delivered"]
FATE_DROP_QUEUE: int = _core.FATE["queue"]
FATE_DROP_LOSS: int = _core.FATE["loss"]
FATE_DROP_DEVICE: int = _core.FATE["device"]
FATE_IN_FLIGHT: int = _core.FATE["in_flight"]


@dataclass
class Analysis:
    """What the kernel computed: frames with the same columns as a run's (see `RunResult`)."""

    summary: pd.DataFrame
    timeseries: pd.DataFrame
    jain: pd.DataFrame
    #: capacity_mbps, utilisation, jain_median.
    metrics: dict[str, float]


def _column(values: npt.ArrayLike, dtype: type[np.generic]) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=dtype)


def analyze_packets(
    flow: npt.ArrayLike,
    size: npt.ArrayLike,
    sent_ns: npt.ArrayLike,
    arrived_ns: npt.ArrayLike,
    fate: npt.ArrayLike,
    *,
    kind: npt.ArrayLike | None = None,
    retransmission: npt.ArrayLike | None = None,
    bin_ns: int = 500_000_000,
    jain_bucket_ns: int = 100_000_000,
    origin_ns: int = 0,
    capacity_mbps: float | None = None,
    schemes: Sequence[str] | None = None,
) -> Analysis:
    """Analyses a packet log: one entry per packet in every column.

    `flow` ids from 0; `size` in bytes; `sent_ns`/`arrived_ns` in ns (`arrived_ns` is `NEVER`
    for a packet that did not arrive); `fate` a code from `FATE_NAMES`; `kind` 0 data / 1 ACK
    (ACKs are skipped). Bins and Jain buckets start at `origin_ns`. `capacity_mbps` is the
    link's average capacity (None when unknown: utilisation is then NaN). `schemes[i]` names
    flow i in the summary.
    """
    raw: dict[str, Any] = _core.analyze(
        _column(flow, np.uint32),
        _column(size, np.uint32),
        _column(sent_ns, np.uint64),
        _column(arrived_ns, np.uint64),
        _column(fate, np.uint8),
        kind=None if kind is None else _column(kind, np.uint8),
        retransmission=None if retransmission is None else _column(retransmission, np.bool_),
        bin_ns=int(bin_ns),
        jain_bucket_ns=int(jain_bucket_ns),
        origin_ns=int(origin_ns),
        capacity_mbps=capacity_mbps,
    )
    metrics = {key: float(value) for key, value in raw["metrics"].items()}
    columns = dict(raw["summary"])
    if capacity_mbps is None:
        metrics["capacity_mbps"] = float("nan")
        metrics["utilisation"] = float("nan")
        columns["utilisation"] = np.full(len(columns["utilisation"]), np.nan)
    # The core names the total row and leaves the flows' schemes empty; name those we know.
    names = list(schemes or [])
    columns["scheme"] = [
        names[f] if 0 <= f < len(names) else scheme
        for f, scheme in zip(columns["flow"].tolist(), columns["scheme"], strict=True)
    ]
    return Analysis(
        summary=summary_frame(columns),
        timeseries=timeseries_frame(raw["timeseries"]),
        jain=pd.DataFrame(raw["jain"]),
        metrics=metrics,
    )
