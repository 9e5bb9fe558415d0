"""Importers of Pantheon and mahimahi logs: small logs written by hand, and the numbers the
Pantheon's `tunnel_graph.py` would print for them, worked out by hand from its definitions
(reference/pantheon-and-mahimahi.md §1.8):
- throughput = Σ departure bits / (1000 · (last - first departure)), Mbit/s;
- p95 delay = numpy.percentile(DELAYs of `-` lines, 95, interpolation='nearest');
- loss = 1 - Σ departure bytes / Σ arrival bytes (byte-weighted);
- capacity = Σ `#` bits / (1000 · (last - first `#`)); utilisation = bits delivered after the
  first delivery / capacity over the delivery span (issue 9: the same span for both).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cclab.analysis import FATE_DELIVERED, analyze_packets
from cclab.archive_index import runs
from cclab.importers import LogFormatError, import_mahimahi, import_pantheon

# Two flows (Pantheon flow ids 1 and 2 → cclab flows 0 and 1) and a delivery opportunity of
# 1500 bytes every ms from 0 to 16 ms.
#
# flow 1: arrivals 0.000, 1.000, 2.000, 5.000 (1500 B each); departures at 10.500 (delay
#         10.500), 11.001 (delay 10.000: T - DELAY = 1.001 misses the arrival at 1.000 by the
#         µs the Pantheon's separate rounding can cost), 16.000 (delay 11.000). The 1500 B sent
#         at 2.000 never leaves.
# flow 2: arrivals 3.000 (1000 B) and 4.000 (500 B); one departure at 13.250 (delay 10.250).
PANTHEON_LOG = """\
# init timestamp: 1500000000000.000
0.000 # 1500
0.000 + 1500 1
1.000 # 1500
1.000 + 1500 1
2.000 # 1500
2.000 + 1500 1
3.000 # 1500
3.000 + 1000 2
4.000 # 1500
4.000 + 500 2
5.000 # 1500
5.000 + 1500 1
6.000 # 1500
7.000 # 1500
8.000 # 1500
9.000 # 1500
10.000 # 1500
10.500 - 1500 10.500 1
11.000 # 1500
11.001 - 1500 10.000 1
12.000 # 1500
13.000 # 1500
13.250 - 1000 10.250 2
14.000 # 1500
15.000 # 1500
16.000 # 1500
16.000 - 1500 11.000 1
"""

# Flow 1: 3 x 1500 B = 36 000 bits over 16.000 - 10.500 = 5.5 ms → 6.545454… Mbit/s;
#         delays sorted [10.0, 10.5, 11.0], index round(0.95 · 2) = 2 → 11.000 ms;
#         loss 1 - 4500 / 6000 = 25 %.
# Flow 2: a single departure: first = last, so the Pantheon prints 0 Mbit/s; p95 10.250 ms;
#         loss 1 - 1000 / 1500 = 33.33 %.
# Total:  44 000 bits over 5.5 ms = 8.0 Mbit/s; delays [10.0, 10.25, 10.5, 11.0], index
#         round(0.95 · 3) = 3 → 11.000 ms; loss 1 - 5500 / 7500 = 26.67 %.
# Capacity: 17 x 12 000 bits over 16 ms = 12.75 Mbit/s; utilisation: the 32 000 bits delivered
#         after the first delivery / 12.75 Mbit/s over the 5.5 ms delivery span = 45.63 %.
# Jain (one 100 ms bucket, both flows scheduled): 5500² / (2 · (4500² + 1000²)) = 0.711 764 7…;
#         without a schedule each flow is scheduled from its first send to its last, shifted
#         by its minimum delay (flow 1 [10, 15] ms, flow 2 [13.25, 14.25] ms), both in it.
EXPECTED_FLOWS = {
    0: {"throughput_mbps": 36_000 / 5_500, "delay_p95_ms": 11.0, "loss_pct": 25.0},
    1: {"throughput_mbps": 0.0, "delay_p95_ms": 10.25, "loss_pct": 100 / 3},
}
EXPECTED_TOTAL = {"throughput_mbps": 8.0, "delay_p95_ms": 11.0, "loss_pct": 400 / 15}
EXPECTED_CAPACITY = 12.75
EXPECTED_JAIN = 5_500**2 / (2 * (4_500**2 + 1_000**2))

# What the Pantheon's analyze.py writes into cubic_stats_run1.log for that log.
PANTHEON_STATS = """\
Start at: Mon Jan  1 00:00:00 2018
End at: Mon Jan  1 00:00:30 2018
# Datalink statistics
-- Total of 2 flows:
Average capacity: 12.75 Mbit/s
Average throughput: 8.00 Mbit/s (62.7% utilization)
95th percentile per-packet one-way delay: 11.000 ms
Loss rate: 26.67%
-- Flow 1:
Average throughput: 6.55 Mbit/s
95th percentile per-packet one-way delay: 11.000 ms
Loss rate: 25.00%
-- Flow 2:
Average throughput: 0.00 Mbit/s
95th percentile per-packet one-way delay: 10.250 ms
Loss rate: 33.33%
"""

# An mm-link uplink log (whole ms, no flow ids, 1504-byte packets with the TUN header). The
# queue holds 2 packets: of the two packets arriving at 2 ms one is dropped (`d`), and the
# packet arriving at 5 ms is still queued when the log ends.
MAHIMAHI_LOG = """\
# mahimahi mm-link (Uplink) [12mbps.trace] > uplink.log
# command line: mm-link 12mbps.trace 12mbps.trace --uplink-log=uplink.log
# queue: droptail [packets=2]
# init timestamp: 1520000000000
# base timestamp: 0
0 # 1504
0 + 1504
1 + 1504
1 # 1504
1 - 1504 1
2 + 1504
2 + 1504
2 d 1 1504
2 # 1504
2 - 1504 1
3 # 1504
3 - 1504 1
4 + 100
4 # 1504
4 - 100 0
5 # 1504
5 + 1504
"""
# Departures: 3 x 1504 + 100 = 4612 B = 36 896 bits over 4 - 1 = 3 ms → 12.298 666… Mbit/s.
# Delays [1, 1, 1, 0] sorted [0, 1, 1, 1], index round(0.95 · 3) = 3 → 1 ms.
# Loss: arrivals 5 x 1504 + 100 = 7620 B → 1 - 4612 / 7620 = 0.394 750 6…
# Capacity: 6 x 1504 x 8 = 72 192 bits over 5 ms = 14.4384 Mbit/s.


def _summary(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "summary.parquet")


def _row(summary: pd.DataFrame, flow: int | None) -> pd.Series:
    if flow is None:
        return summary[summary["flow"].isna()].iloc[0]
    return summary[summary["flow"] == flow].iloc[0]


@pytest.fixture
def pantheon_dir(tmp_path: Path) -> Path:
    data = tmp_path / "pantheon-data"
    data.mkdir()
    (data / "cubic_datalink_run1.log").write_text(PANTHEON_LOG)
    (data / "cubic_stats_run1.log").write_text(PANTHEON_STATS)
    return data


def test_pantheon_import_agrees_with_the_pantheons_numbers(pantheon_dir, tmp_path, cli):
    out = tmp_path / "imported"
    code, stdout, stderr = cli("import", "pantheon", pantheon_dir, "--out", out)
    assert code == 0, stderr
    assert str(out) in stdout
    experiment = json.loads((out / "experiment.json").read_text())
    assert experiment["complete"] is True
    assert experiment["engine"] == "import:pantheon"
    assert experiment["schemes"] == ["cubic"]
    (entry,) = experiment["runs"]
    assert entry["status"] == "ok"
    assert entry["pantheon_stats_agree"] is True

    run_dir = out / entry["dir"]
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["complete"] is True
    assert meta["engine"] == "import:pantheon"
    assert meta["import"]["pantheon_stats"]["agrees"] is True
    summary = _summary(run_dir)
    assert list(summary["scheme"]) == ["cubic", "cubic", "total"]
    for flow, expected in EXPECTED_FLOWS.items():
        row = _row(summary, flow)
        for key, value in expected.items():
            assert row[key] == pytest.approx(value, abs=1e-12), (flow, key)
    total = _row(summary, None)
    for key, value in EXPECTED_TOTAL.items():
        assert total[key] == pytest.approx(value, abs=1e-12), key
    assert meta["metrics"]["capacity_mbps"] == pytest.approx(EXPECTED_CAPACITY)
    assert meta["metrics"]["utilisation"] == pytest.approx(32_000 / (EXPECTED_CAPACITY * 5_500))
    assert meta["metrics"]["jain_median"] == pytest.approx(EXPECTED_JAIN)
    assert meta["metrics"]["jain_counted"] == 1.0
    # Sent/delivered counts: the two arrivals no departure matches did not get through.
    assert (total["packets_sent"], total["packets_delivered"]) == (6, 4)
    assert (total["bytes_sent"], total["bytes_delivered"]) == (7_500, 5_500)

    # The per-packet records keep the logged delay exactly (T - DELAY, not the arrival time).
    packets = pd.read_parquet(run_dir / "packets.parquet")
    delivered = packets[packets["fate"] == "delivered"]
    delays_ms = (delivered["arrived_ns"] - delivered["sent_ns"]) / 1e6
    assert sorted(delays_ms) == [10.0, 10.25, 10.5, 11.0]
    # The capacity per 500 ms bin, from the `#` lines, for the report's shading.
    capacity = pd.read_parquet(run_dir / "capacity.parquet")
    assert capacity["capacity_mbps"].tolist() == [17 * 12_000 / 500_000]
    assert meta["import"]["time_origin_ns"] == 0

    # Reports work on imports as on simulations, per-packet delay dots included.
    code, stdout, stderr = cli("report", out)
    assert code == 0, stderr
    html = (out / "report.html").read_text()
    assert 'data-figure="delay-time"' in html and "import:pantheon" in html


def test_a_disagreement_with_the_pantheons_stats_is_recorded(pantheon_dir, tmp_path):
    stats = PANTHEON_STATS.replace("Loss rate: 25.00%", "Loss rate: 24.00%")
    (pantheon_dir / "cubic_stats_run1.log").write_text(stats)
    out = import_pantheon(pantheon_dir, out=tmp_path / "x")
    experiment = json.loads((out / "experiment.json").read_text())
    assert experiment["runs"][0]["pantheon_stats_agree"] is False
    meta = json.loads((out / "runs" / "cubic-r1" / "meta.json").read_text())
    (difference,) = meta["import"]["pantheon_stats"]["differences"]
    assert "loss_percent" in difference
    assert "24.0" in difference


def test_short_pantheon_runs_are_invalid_as_in_plot_py(pantheon_dir, tmp_path):
    # Departures span 5.5 ms, far under 0.8 x the 30 s runtime.
    metadata = {"runtime": 30, "cc_schemes": "vegas cubic", "flows": 2, "interval": 0}
    (pantheon_dir / "pantheon_metadata.json").write_text(json.dumps(metadata))
    (pantheon_dir / "vegas_datalink_run2.log").write_text(PANTHEON_LOG)
    out = import_pantheon(pantheon_dir, out=tmp_path / "x")
    experiment = json.loads((out / "experiment.json").read_text())
    assert experiment["schemes"] == ["vegas", "cubic"]  # the metadata's order
    assert [(r["scheme"], r["repetition"]) for r in experiment["runs"]] == [
        ("vegas", 2),
        ("cubic", 1),
    ]
    assert {r["status"] for r in experiment["runs"]} == {"invalid"}
    assert "0.8" in experiment["runs"][0]["error"]
    assert experiment["pantheon_metadata"]["runtime"] == 30
    # The index lists them, marked, under the engine that made them.
    indexed = runs(root=tmp_path)
    assert set(indexed["status"]) == {"invalid"}
    assert set(indexed["engine"]) == {"import:pantheon"}
    assert set(indexed["scheme"]) == {"vegas", "cubic"}


def test_single_flow_pantheon_log_without_flow_ids(tmp_path):
    # merge_tunnel_logs.py single mode: no flow ids; tunnel_graph.py calls the flow 0.
    log = "# init timestamp: 1.000\n0.000 + 1000\n0.500 + 1000\n20.000 - 1000 20.000\n"
    log += "20.250 - 1000 19.750\n"
    data = tmp_path / "d"
    data.mkdir()
    (data / "bbr_datalink_run3.log").write_text(log)
    out = import_pantheon(data, out=tmp_path / "x")
    summary = _summary(out / "runs" / "bbr-r3")
    row = _row(summary, 0)
    # 16 000 bits over 0.25 ms = 64 Mbit/s; delays [19.75, 20.0] → index round(0.95) = 1.
    assert row["throughput_mbps"] == pytest.approx(64.0)
    assert row["delay_p95_ms"] == pytest.approx(20.0)
    assert row["loss_pct"] == 0.0
    meta = json.loads((out / "runs" / "bbr-r3" / "meta.json").read_text())
    assert np.isnan(meta["metrics"]["capacity_mbps"] or np.nan)  # no `#` lines: unknown


def test_mahimahi_import(tmp_path, cli):
    log = tmp_path / "uplink.log"
    log.write_text(MAHIMAHI_LOG)
    out = tmp_path / "mm-run"
    code, stdout, stderr = cli("import", "mahimahi", log, "--scheme", "cubic", "--out", out)
    assert code == 0, stderr
    # The summary table `cclab run` and `cclab experiment` print, so an import reads the same.
    assert "mean ± sd over runs" in stdout and "cubic" in stdout
    meta = json.loads((out / "meta.json").read_text())
    assert meta["complete"] is True
    assert meta["engine"] == "import:mahimahi"
    assert meta["import"]["drops_logged"] == {"packets": 1, "bytes": 1504}
    row = _row(_summary(out), None)
    assert row["throughput_mbps"] == pytest.approx(36_896 / 3_000, abs=1e-12)
    assert row["delay_p95_ms"] == pytest.approx(1.0)
    assert row["loss_pct"] == pytest.approx(100 * (1 - 4_612 / 7_620), abs=1e-10)
    assert meta["metrics"]["capacity_mbps"] == pytest.approx(72_192 / 5_000)
    # One of the two packets arriving at 2 ms was dropped (a later arrival got through); the
    # packet arriving at 5 ms is still queued at the end.
    assert (row["packets_sent"], row["packets_delivered"], row["packets_dropped"]) == (6, 4, 1)
    flow = _row(_summary(out), 0)
    assert flow["scheme"] == "cubic"


def test_a_pantheon_log_is_not_a_mahimahi_log(pantheon_dir):
    with pytest.raises(LogFormatError, match="Pantheon"):
        import_mahimahi(pantheon_dir / "cubic_datalink_run1.log")


def test_malformed_logs_are_clear_errors(tmp_path, cli):
    bad = tmp_path / "bad.log"
    bad.write_text("# header\n0 + 1504\n1 x 1504\n")
    code, _, stderr = cli("import", "mahimahi", bad, "--out", tmp_path / "o")
    assert code == 2
    assert f"{bad}:3: unknown event 'x'" in stderr
    assert not (tmp_path / "o").exists()

    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, stderr = cli("import", "pantheon", empty)
    assert code == 2
    assert "_datalink_run<N>.log" in stderr


def test_p95_is_numpys_nearest_with_ties_to_even():
    # 31 delays of 1..31 ms: 0.95 · 30 = 28.5 rounds to even, index 28 → 29 ms (rounding half
    # up would give 30 ms). numpy 'nearest', as tunnel_graph.py uses, agrees.
    delays_ms = np.arange(1, 32)
    n = len(delays_ms)
    sent = np.zeros(n, dtype=np.uint64)
    analysis = analyze_packets(
        np.zeros(n),
        np.full(n, 1500),
        sent,
        delays_ms * 1_000_000,
        np.full(n, FATE_DELIVERED),
    )
    p95 = analysis.summary.iloc[-1]["delay_p95_ms"]
    assert p95 == 29.0
    assert p95 == np.percentile(delays_ms, 95, method="nearest")


def test_analysis_skips_acks_and_checks_columns():
    flow = np.zeros(3)
    size = np.array([1500, 60, 1500])
    sent = np.array([0, 0, 1_000_000])
    arrived = np.array([10_000_000, 5_000_000, 11_000_000])
    fate = np.zeros(3)
    analysis = analyze_packets(flow, size, sent, arrived, fate, kind=np.array([0, 1, 0]))
    total = analysis.summary.iloc[-1]
    assert total["packets_sent"] == 2
    assert total["bytes_delivered"] == 3000
    with pytest.raises(ValueError, match="same length"):
        analyze_packets(flow, size[:2], sent, arrived, fate)


def test_pantheon_stats_parser_reads_every_block(tmp_path):
    from cclab.importers.pantheon_stats import read_stats

    path = tmp_path / "cubic_stats_run1.log"
    path.write_text(PANTHEON_STATS + "# Acklink statistics\n-- Total of 2 flows:\nLoss rate: 9%\n")
    assert read_stats(path) == {
        "total": {
            "capacity_mbps": 12.75,
            "throughput_mbps": 8.0,
            "delay_p95_ms": 11.0,
            "loss_percent": 26.67,
        },
        "1": {"throughput_mbps": 6.55, "delay_p95_ms": 11.0, "loss_percent": 25.0},
        "2": {"throughput_mbps": 0.0, "delay_p95_ms": 10.25, "loss_percent": 33.33},
    }
    assert read_stats(tmp_path / "missing.log") is None


def test_an_imported_log_refuses_a_pcap_by_name(tmp_path):
    """An mm-link log records no TCP header, so an imported run has no sequence numbers to
    capture: a clear refusal, not a missing-column KeyError."""
    from cclab.importers.link_log import read_link_log
    from cclab.importers.log_run import import_log, to_run_result

    log = tmp_path / "uplink.log"
    log.write_text(MAHIMAHI_LOG)
    imported = import_log(read_link_log(log), ["cubic"])
    result = to_run_result(imported, name="x", description="", wall_secs=0.0, keep_packets=True)
    assert result.packet_columns is not None
    with pytest.raises(ValueError, match="no TCP sequence numbers"):
        result.write_pcap(tmp_path / "x.pcap")
