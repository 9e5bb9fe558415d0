"""Throughput models (cclab.models) on hand-checked cases, and the model CLI."""

from __future__ import annotations

import math
import subprocess
import sys

import pandas as pd
import pytest

from cclab.models import MSS_BYTES, PACKET_BYTES, bbr_share, mathis_fit
from cclab.reproduce_scale import jain, settings


def test_ware_model_hand_computed() -> None:
    # 10 Mbit/s, 40 ms, 32 BDP (Ware et al.'s Fig. 1c setting): BDP = 50 000 B = 33.3 packets,
    # q = 1.6 MB = 1066.7 packets, X = 32: p = 1/2 - 1/64 - 4/1066.7 = 0.480625.
    rate, rtt, q = 10e6, 0.04, 1.6e6
    assert PACKET_BYTES == 1500
    no_probe = bbr_share(rate_bps=rate, base_rtt_s=rtt, buffer_bytes=q, probe_rtt=False)
    assert no_probe == pytest.approx(1 - 0.480625)
    # ProbeRTT: (q/c + 0.2 + l)/10 = (1.28 + 0.2 + 0.04)/10 = 0.152 of the time.
    share = bbr_share(rate_bps=rate, base_rtt_s=rtt, buffer_bytes=q)
    assert share == pytest.approx((1 - 0.480625) * 0.848)
    # At most half however deep the buffer (eq. 5), before ProbeRTT.
    deep = bbr_share(rate_bps=rate, base_rtt_s=rtt, buffer_bytes=1e9, probe_rtt=False)
    assert 0.5 < deep < 0.501
    # A 1-BDP buffer: p < 0, BBR takes everything (eq. 9).
    shallow = bbr_share(rate_bps=rate, base_rtt_s=rtt, buffer_bytes=50_000, probe_rtt=False)
    assert shallow == 1.0
    with pytest.raises(ValueError):
        bbr_share(rate_bps=0, base_rtt_s=rtt, buffer_bytes=q)


def _run_tables(c_halving: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Flows whose throughput follows Mathis with C = c_halving on the halving rate exactly,
    while the loss rate is 4 or 9 losses per halving (so the loss-based fit is off)."""
    rows, flows = [], []
    for i, (rtt_ms, events, losses_per) in enumerate([(20, 100, 4), (40, 50, 9), (80, 400, 4)]):
        sent = 1_000_000
        p = events / sent
        throughput = MSS_BYTES * c_halving / (rtt_ms / 1e3 * math.sqrt(p))  # bytes/s
        rows.append(
            {
                "flow": i,
                "throughput_mbps": throughput * 8 / 1e6,
                "packets_sent": sent,
                "packets_dropped": events * losses_per,
                "congestion_events": float(events),
                "delay_mean_ms": 10.0,
                "delay_min_ms": 10.0,  # no queueing: RTT = base RTT
            }
        )
        flows.append({"flow": i, "scheme": "newreno", "base_rtt_ns": rtt_ms * 1_000_000})
    rows.append({"flow": None, "throughput_mbps": 0.0, "packets_sent": 0, "packets_dropped": 0})
    summary = pd.DataFrame(rows)
    summary["flow"] = summary["flow"].astype("Int64")
    return summary, pd.DataFrame(flows)


def test_mathis_fit_recovers_c_and_its_errors() -> None:
    summary, flows = _run_tables(1.36)
    fits = mathis_fit(summary, flows)
    assert fits["halving"].c == pytest.approx(1.36)
    assert fits["halving"].median_error == pytest.approx(0.0, abs=1e-12)
    assert fits["halving"].flows == 3
    # p_loss = k·p_halving: the loss-based model predicts T/√k · C_loss/C, so C_loss lies
    # between 1.36·√4 and 1.36·√9 and its errors are not zero.
    assert 1.36 * 2 < fits["loss"].c < 1.36 * 3
    assert fits["loss"].median_error > 0.05
    # A scheme filter with no flows gives NaN, not an exception.
    assert math.isnan(mathis_fit(summary, flows, scheme="bbr")["loss"].c)


def test_jain_and_scaled_settings() -> None:
    assert jain([1, 1, 1]) == 1.0
    assert jain([1, 0]) == 0.5
    assert math.isnan(jain([0, 0]))
    edge, core = settings(0.1)
    assert (edge.rate_bps, edge.flow_counts) == (100e6, (10, 30, 50))
    assert (core.rate_bps, core.buffer_bytes, core.flow_counts) == (1e9, 37.5e6, (100, 300, 500))
    with pytest.raises(ValueError):
        settings(0)


CLI = [sys.executable, "-m", "cclab", "model"]


def test_model_cli_bbr_share() -> None:
    out = subprocess.run(
        [*CLI, "bbr-share", "--rate", "10Mbps", "--rtt", "40ms", "--buffer", "1600000B"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "44.0%" in out and "51.9%" in out
    bad = subprocess.run(
        [*CLI, "bbr-share", "--rate", "10Mbps"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "--rtt" in bad.stderr
