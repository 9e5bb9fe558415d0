"""Throughput models for congestion control at scale (issue 12; reproduction-targets.md §3).

- The Mathis model, throughput = MSS · C / (RTT · √p): `mathis_fit` fits C by least squares
  over a run's flows (as IMC'21 does per setting), once with p from the path's loss rate
  (packets dropped / packets sent) and once from the sender's congestion-event ("cwnd
  halving") rate (congestion events / packets sent), and reports each fit's per-flow prediction
  errors. IMC'21 found the loss-based C drifting with scale and flow count, the halving-based C
  steady (Table 1).
- Ware et al.'s model of one or more BBR flows against loss-based flows in a deep buffer (IMC'19
  §5.4-5.5): `bbr_share` gives BBR's fraction of the link, `bbr_share_of_run` compares it with
  a run.

Reads runs as DataFrames (`RunResult` or a run directory's Parquet files); declares no column:
the names are the core's summary and flows columns.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from cclab import _core

#: Payload bytes per full-sized packet, the core's (`scenario::MSS`).
MSS_BYTES: int = _core.MSS
#: Wire bytes of a full packet, the core's (`scenario::PACKET_BYTES`).
PACKET_BYTES: int = _core.PACKET_BYTES

#: ProbeRTT keeps BBRv1 at 4 packets for 200 ms every 10 s (Ware et al. eq. 11).
PROBE_RTT_S = 0.2
PROBE_RTT_INTERVAL_S = 10.0
#: Packets each BBR flow keeps queued beyond its estimate (the 4N of Ware et al. eqs. 6-9).
BBR_QUEUE_PACKETS = 4


@dataclass(frozen=True)
class MathisFit:
    """C fitted over flows, for one choice of p."""

    p_source: str
    c: float
    #: Median and 90th percentile of |predicted - measured| / measured over the flows.
    median_error: float
    p90_error: float
    flows: int


def _flow_rows(summary: pd.DataFrame, flows: pd.DataFrame) -> pd.DataFrame:
    """Per-flow rows with the flow's RTT: base RTT plus its mean queueing delay (mean one-way
    delay - the flow's minimum), the RTT a sender of a busy path sees on average."""
    per_flow = summary[summary["flow"].notna()].copy()
    per_flow["flow"] = per_flow["flow"].astype(int)
    merged = per_flow.merge(
        flows[["flow", "scheme", "base_rtt_ns"]], on="flow", suffixes=("", "_f")
    )
    queueing_s = (merged["delay_mean_ms"] - merged["delay_min_ms"]) / 1e3
    merged["rtt_s"] = merged["base_rtt_ns"] / 1e9 + queueing_s.fillna(0.0)
    return merged


def mathis_fit(
    summary: pd.DataFrame, flows: pd.DataFrame, *, scheme: str | None = None
) -> dict[str, MathisFit]:
    """C fitted from the loss rate and from the congestion-event rate (keys "loss" and
    "halving"), over the flows of `scheme` (all when None) that sent, delivered and saw at
    least one loss and one event. Least squares through the origin: with x = MSS/(RTT·√p) and
    T the measured throughput, C = Σ x·T / Σ x²."""
    rows = _flow_rows(summary, flows)
    if scheme is not None:
        rows = rows[rows["scheme"] == scheme]
    sent = rows["packets_sent"].astype(float)
    rates = {
        "loss": rows["packets_dropped"].astype(float) / sent,
        "halving": rows["congestion_events"].astype(float) / sent,
    }
    throughput = rows["throughput_mbps"].astype(float) * 1e6 / 8  # bytes/s
    fits = {}
    for source, p in rates.items():
        ok = (p > 0) & (throughput > 0) & (rows["rtt_s"] > 0) & p.notna()
        if not ok.any():
            fits[source] = MathisFit(source, math.nan, math.nan, math.nan, 0)
            continue
        x = MSS_BYTES / (rows["rtt_s"][ok] * np.sqrt(p[ok]))
        t = throughput[ok]
        c = float((x * t).sum() / (x * x).sum())
        err = ((c * x - t).abs() / t).to_numpy()
        fits[source] = MathisFit(
            source, c, float(np.median(err)), float(np.percentile(err, 90)), int(ok.sum())
        )
    return fits


def bbr_share(
    *,
    rate_bps: float,
    base_rtt_s: float,
    buffer_bytes: float,
    n_bbr: int = 1,
    probe_rtt: bool = True,
) -> float:
    """BBR's fraction of the link against loss-based flows (any number of them), Ware et al.
    IMC'19: p = 1/2 - 1/(2X) - 4N/q with X = q/(c·l) (eq. 9, q and c·l in packets) is the
    loss-based flows' share; BBR takes 1 - p (all of it when p < 0), times the time it is not
    in ProbeRTT, 1 - (q/c + 0.2 s + l)/10 s (eqs. 10-11)."""
    if rate_bps <= 0 or base_rtt_s <= 0 or buffer_bytes <= 0 or n_bbr < 1:
        raise ValueError(
            "bbr_share needs a positive rate, RTT and buffer and at least one BBR flow"
        )
    q = buffer_bytes / PACKET_BYTES
    bdp = rate_bps / 8 * base_rtt_s / PACKET_BYTES
    x = q / bdp
    p = 0.5 - 1 / (2 * x) - BBR_QUEUE_PACKETS * n_bbr / q
    share = 1.0 - max(p, 0.0)
    if probe_rtt:
        queue_s = buffer_bytes * 8 / rate_bps
        share *= max(0.0, 1 - (queue_s + PROBE_RTT_S + base_rtt_s) / PROBE_RTT_INTERVAL_S)
    return share


@dataclass(frozen=True)
class BbrComparison:
    rate_bps: float
    base_rtt_s: float
    buffer_bytes: float
    n_bbr: int
    n_other: int
    model: float
    measured: float


def _scenario_numbers(scenario_toml: str) -> tuple[float, float, float | None]:
    """The link rate (bit/s), the link's base RTT (s) and the buffer (bytes, None if unbounded
    or unreadable) of a filled scenario, through the core's unit parsers."""
    doc = tomllib.loads(scenario_toml)
    link = doc["link"]
    rate = float(_core.parse_rate(str(link["rate"])))
    rtt = 2 * _core.parse_duration(str(link.get("delay", "0ms"))) / 1e9
    queue = str(link.get("queue", "infinite"))
    buffer: float | None
    if queue.endswith("bdp"):
        buffer = float(queue[:-3]) * rate / 8 * rtt
    elif queue.endswith("pkts"):
        buffer = float(queue[:-4]) * PACKET_BYTES
    else:
        try:
            buffer = float(_core.parse_size(queue))
        except ValueError:
            buffer = None
    return rate, rtt, buffer


def bbr_share_of_run(
    summary: pd.DataFrame, flows: pd.DataFrame, scenario_toml: str
) -> BbrComparison:
    """Ware et al.'s prediction for a run's link, buffer and flow mix beside the BBR flows'
    measured share of the delivered throughput. The RTT is the flows' smallest base RTT."""
    rate, link_rtt, buffer = _scenario_numbers(scenario_toml)
    if buffer is None:
        raise ValueError("the run's queue is unbounded: Ware et al.'s model needs a finite buffer")
    rows = _flow_rows(summary, flows)
    bbr = rows["scheme"].str.startswith("bbr")
    if not bbr.any() or bbr.all():
        raise ValueError("the run needs both BBR and loss-based flows to compare BBR's share")
    base_rtt = float(rows["base_rtt_ns"].min()) / 1e9 or link_rtt
    total = float(rows["throughput_mbps"].sum())
    measured = float(rows["throughput_mbps"][bbr].sum()) / total if total > 0 else math.nan
    n_bbr = int(bbr.sum())
    model = bbr_share(rate_bps=rate, base_rtt_s=base_rtt, buffer_bytes=buffer, n_bbr=n_bbr)
    return BbrComparison(rate, base_rtt, buffer, n_bbr, int((~bbr).sum()), model, measured)


def read_run(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """A run directory's summary, flows and filled scenario."""
    summary = pd.read_parquet(directory / "summary.parquet")
    flows = pd.read_parquet(directory / "flows.parquet")
    return summary, flows, (directory / "scenario.toml").read_text()
