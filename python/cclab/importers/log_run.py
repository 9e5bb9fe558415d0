"""A parsed link log → packet records → the Rust metrics kernel → a cclab run.

Each departure becomes a delivered packet sent at T - DELAY and arrived at T, so its one-way delay
is exactly the DELAY the log records (as in the Pantheon's `tunnel_graph.py`). Each arrival that
no departure pairs with becomes a packet that did not arrive: dropped if a packet that arrived
after it was delivered (the queue is FIFO, so it cannot still be waiting), otherwise still in
flight when the log ends. Either way it counts as sent and not delivered, so the byte-weighted
loss is 1 - Σ departure bytes / Σ arrival bytes, the Pantheon's. Sizes are the logged sizes
(the Pantheon's include its tunnel overhead; mahimahi's the 4-byte TUN header).

Capacity: the `#` delivery opportunities, averaged as the Pantheon does — Σ opportunity bits /
(last - first opportunity) — and binned like the throughput for the report's shading.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cclab.analysis import (
    FATE_DELIVERED,
    FATE_DROP_QUEUE,
    FATE_IN_FLIGHT,
    FATE_NAMES,
    KIND_NAMES,
    NEVER,
    Analysis,
    analyze_packets,
)
from cclab.archive import COMPRESSION, META_FILE, write_run_dir
from cclab.importers.link_log import LinkLog
from cclab.importers.matching import Pairing, pair_departures
from cclab.report.loading import CAPACITY_FILE
from cclab.result import RunResult, typed_frame

BIN_NS = 500_000_000
JAIN_BUCKET_NS = 100_000_000
US = 1000


@dataclass
class ImportedLog:
    """A log turned into packet columns and analysed."""

    log: LinkLog
    pairing: Pairing
    analysis: Analysis
    packets: dict[str, Any]
    capacity_mbps: float | None
    capacity: pd.DataFrame
    schemes: list[str]

    @property
    def warnings(self) -> list[str]:
        notes = []
        if self.pairing.by_order:
            notes.append(
                f"{self.pairing.by_order} departures matched no arrival at T - DELAY (±2 µs) "
                "and were paired by order within their flow and size"
            )
        if self.pairing.unpaired_departures:
            notes.append(
                f"{self.pairing.unpaired_departures} departures have no arrival at all; "
                "their bytes count as sent too, so loss is lower than 1 - departures/arrivals"
            )
        return notes


def average_capacity_mbps(log: LinkLog) -> float | None:
    """Σ opportunity bits / (last - first opportunity), as `tunnel_graph.py` computes it
    (None without opportunities; 0 when they all share one timestamp)."""
    if len(log.opportunity_us) == 0:
        return None
    span_us = int(log.opportunity_us.max() - log.opportunity_us.min())
    if span_us == 0:
        return 0.0
    return float(log.opportunity_size.sum() * 8) / span_us


def _capacity_bins(log: LinkLog, bin_ns: int) -> pd.DataFrame:
    if len(log.opportunity_us) == 0:
        return pd.DataFrame({"t_ns": np.array([], np.uint64), "capacity_mbps": np.array([])})
    bin_us = bin_ns // US
    index = (log.opportunity_us - log.first_event_us) // bin_us
    first, last = int(index.min()), int(index.max())
    bits = np.bincount(
        index - first, weights=log.opportunity_size * 8.0, minlength=last - first + 1
    )
    t_ns = (np.arange(first, last + 1, dtype=np.int64) * bin_ns).astype(np.uint64)
    return pd.DataFrame({"t_ns": t_ns, "capacity_mbps": bits / bin_us})


def _to_ns(us: np.ndarray) -> np.ndarray:
    return (np.maximum(us, 0) * US).astype(np.uint64)


def import_log(log: LinkLog, schemes: Sequence[str]) -> ImportedLog:
    pairing = pair_departures(
        log.arrival_us,
        log.arrival_size,
        log.arrival_flow,
        log.departure_us,
        log.departure_size,
        log.departure_delay_us,
        log.departure_flow,
    )
    lost = ~pairing.arrival_paired
    lost_us = log.arrival_us[lost]
    sent_us = log.departure_us - log.departure_delay_us
    latest_delivered_send = int(sent_us.max()) if len(sent_us) else -1
    lost_fate = np.where(lost_us < latest_delivered_send, FATE_DROP_QUEUE, FATE_IN_FLIGHT)
    n_delivered, n_lost = len(log.departure_us), int(lost.sum())
    paired_arrival = pairing.arrival_of_departure
    arrival_of = np.where(paired_arrival >= 0, log.arrival_us[np.maximum(paired_arrival, 0)], -1)
    packets: dict[str, Any] = {
        "uid": np.arange(n_delivered + n_lost, dtype=np.uint64),
        "flow": np.concatenate([log.departure_flow, log.arrival_flow[lost]]).astype(np.uint32),
        "kind": np.zeros(n_delivered + n_lost, dtype=np.uint8),
        "size": np.concatenate([log.departure_size, log.arrival_size[lost]]).astype(np.uint32),
        "sent_ns": _to_ns(np.concatenate([sent_us, lost_us])),
        "arrived_ns": np.concatenate(
            [_to_ns(log.departure_us), np.full(n_lost, NEVER, dtype=np.uint64)]
        ),
        "fate": np.concatenate(
            [np.full(n_delivered, FATE_DELIVERED, dtype=np.uint8), lost_fate.astype(np.uint8)]
        ),
        # The link's own times: when the packet entered its queue (the logged arrival) and left.
        "enqueued_ns": np.concatenate(
            [
                np.where(arrival_of >= 0, _to_ns(arrival_of), NEVER).astype(np.uint64),
                _to_ns(lost_us),
            ]
        ),
        "dequeued_ns": np.concatenate(
            [_to_ns(log.departure_us), np.full(n_lost, NEVER, dtype=np.uint64)]
        ),
        "retransmission": np.zeros(n_delivered + n_lost, dtype=bool),
        "kind_names": KIND_NAMES,
        "fate_names": FATE_NAMES,
    }
    capacity = average_capacity_mbps(log)
    n_flows = max(log.flows) + 1 if log.flows else 1
    names = [*schemes, *[""] * n_flows][:n_flows]
    analysis = analyze_packets(
        packets["flow"],
        packets["size"],
        packets["sent_ns"],
        packets["arrived_ns"],
        packets["fate"],
        bin_ns=BIN_NS,
        jain_bucket_ns=JAIN_BUCKET_NS,
        origin_ns=log.first_event_us * US,
        capacity_mbps=capacity,
        schemes=names,
    )
    return ImportedLog(
        log=log,
        pairing=pairing,
        analysis=analysis,
        packets=packets,
        capacity_mbps=capacity,
        capacity=_capacity_bins(log, BIN_NS),
        schemes=names,
    )


def scenario_toml(name: str, description: str, imported: ImportedLog) -> str:
    """A scenario describing what is known of an imported log's path: not a reproduction
    recipe (the log does not say enough), so it says so at the top."""
    log = imported.log
    duration_s = max(log.last_event_us - log.first_event_us, 0) / 1e6
    lines = [
        f"# Imported from {log.path} (not a simulation: the numbers come from the log).",
        "# The link is described by its measured average capacity when the log has delivery",
        "# opportunities; delay, queue and the flows' timing are not recorded in the log.",
        f"name = {json.dumps(name)}",
        f"description = {json.dumps(description)}",
        f'duration = "{duration_s:.6f}s"',
        "seed = 0",
        "",
        "[link]",
    ]
    if imported.capacity_mbps:
        lines.append(f'rate = "{imported.capacity_mbps * 1e6:.0f}bps"')
    lines.append("")
    for flow, scheme in enumerate(imported.schemes):
        lines += ["[[flows]]", f"scheme = {json.dumps(scheme or 'unknown')}", f"# flow {flow}", ""]
    lines += ["[output]", 'bin = "500ms"', 'jain_bucket = "100ms"', ""]
    return "\n".join(lines)


def _flows_frame(imported: ImportedLog) -> pd.DataFrame:
    """Each flow's first and last event; base RTTs are not in the logs (0: unknown)."""
    log = imported.log
    rows = []
    for flow, scheme in enumerate(imported.schemes):
        times = np.concatenate(
            [log.arrival_us[log.arrival_flow == flow], log.departure_us[log.departure_flow == flow]]
        )
        start = int(times.min() - log.first_event_us) * US if len(times) else 0
        stop = int(times.max() - log.first_event_us) * US if len(times) else 0
        rows.append(
            {"flow": flow, "scheme": scheme, "start_ns": start, "stop_ns": stop, "base_rtt_ns": 0}
        )
    return typed_frame("flows", rows)


def to_run_result(
    imported: ImportedLog, *, name: str, description: str, wall_secs: float, keep_packets: bool
) -> RunResult:
    log = imported.log
    fate = imported.packets["fate"]
    stats = {
        "events": float(log.lines),
        "wall_secs": wall_secs,
        "data_sent": float(len(fate)),
        "data_delivered": float((fate == FATE_DELIVERED).sum()),
        "data_dropped": float((fate == FATE_DROP_QUEUE).sum()),
        "data_in_flight_end": float((fate == FATE_IN_FLIGHT).sum()),
    }
    return RunResult(
        name=name,
        seed=0,
        duration_s=max(log.last_event_us - log.first_event_us, 0) / 1e6,
        scenario_toml=scenario_toml(name, description, imported),
        summary=imported.analysis.summary,
        timeseries=imported.analysis.timeseries,
        jain=imported.analysis.jain,
        flows=_flows_frame(imported),
        stats=stats,
        metrics=imported.analysis.metrics,
        source=str(log.path),
        started_at=datetime.now().astimezone(),
        wall_secs=wall_secs,
        packet_columns=imported.packets if keep_packets else None,
    )


def save_imported_run(
    result: RunResult,
    imported: ImportedLog,
    target: Path,
    *,
    engine: str,
    details: dict[str, Any],
    command: list[str] | None,
) -> Path:
    """Writes the run directory like any run's (atomically), with `engine` and an `import`
    section in its meta.json and the link's capacity per bin in capacity.parquet."""
    if target.exists():
        raise FileExistsError(f"{target} already exists; choose another output directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    holder = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        inner = write_run_dir(result, holder / target.name, command=command)
        imported.capacity.to_parquet(inner / CAPACITY_FILE, compression=COMPRESSION, index=False)
        meta_path = inner / META_FILE
        meta = json.loads(meta_path.read_text())
        meta["engine"] = engine
        meta["seed"] = None
        meta["import"] = {
            **details,
            # Packet times count from the log's start; bins from its first event.
            "time_origin_ns": imported.log.first_event_us * US,
            "warnings": imported.warnings,
        }
        meta["files"] = sorted({*meta.get("files", []), CAPACITY_FILE})
        with meta_path.open("w") as f:
            json.dump(meta, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        inner.rename(target)
    finally:
        shutil.rmtree(holder, ignore_errors=True)
    return target
