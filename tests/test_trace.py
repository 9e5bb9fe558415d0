"""The sender trace from the outside: `cclab run --trace` writes trace.parquet with the columns
the core declares, `cclab.run(trace=...)` samples at the interval asked for, bad intervals are
clear errors, and the report draws the congestion window. The emulator's kernel flows (root
and /dev/net/tun) trace TCP_INFO, and BBR's TCP_CC_INFO, into the same columns."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cclab
from cclab.result import SCHEMA
from cclab.sender_trace import DEFAULT_INTERVAL_NS, TRACE_FILE, VAR_PREFIX

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/net/tun").exists(),
    reason="the emulator needs root and /dev/net/tun",
)

#: 3 s of Cubic and BBR sharing 24 Mbit/s, 20 ms RTT, 1 BDP.
TWO = """\
    name = "trace-two"
    duration = "3s"

    [link]
    rate = "24Mbps"
    delay = "10ms"
    queue = "1bdp"

    [[flows]]
    scheme = "cubic"

    [[flows]]
    scheme = "bbr"
"""

FIXED = [name for name, *_ in SCHEMA["trace"] if not name.endswith("*")]


def test_run_trace_writes_the_declared_columns_and_the_report_draws_cwnd(
    cli, write_scenario, tmp_path
) -> None:
    out = tmp_path / "run"
    code, _, err = cli("run", write_scenario(TWO), "--trace", "--out", out)
    assert code == 0, err
    trace = pd.read_parquet(out / TRACE_FILE)
    assert list(trace.columns[: len(FIXED)]) == FIXED
    # Both controllers' own variables, NaN in the other's rows.
    assert {"cc_w_max", "cc_k", "cc_bw", "cc_pacing_gain"} <= set(trace.columns)
    assert all(c.startswith(VAR_PREFIX) for c in trace.columns[len(FIXED) :])
    cubic, bbr = trace[trace["flow"] == 0], trace[trace["flow"] == 1]
    assert cubic["cc_bw"].isna().all() and bbr["cc_w_max"].isna().all()
    assert set(bbr["mode"].astype(str)) >= {"startup", "probe_bw"}
    # The transport's congestion state, by Linux's names: Cubic's own "recovery" mode is the
    # transport's recovery, and no other state shows there.
    assert set(trace["ca_state"].astype(str)) <= {"open", "recovery", "loss"}
    cubic_recovering = cubic["mode"].astype(str) == "recovery"
    assert cubic_recovering.any()  # the 1-BDP queue overflows within the 3 s
    assert (cubic.loc[cubic_recovering, "ca_state"].astype(str) == "recovery").all()
    # At most one sample per flow per 10 ms: 3 s → at most 300 each.
    assert 100 < len(cubic) <= 300 and 100 < len(bbr) <= 300
    assert (trace["cwnd_bytes"] > 0).all()
    # The base RTT is 20 ms; one 1500-byte packet takes 0.5 ms at 24 Mbit/s, and the hosts'
    # jitter ("auto": one packet time, at most 1 ms) may hold the data packet and its ACK 0.5 ms
    # each.
    assert 20.0 <= trace["min_rtt_ms"].min() <= 20.5 + 2 * 0.5 + 0.1
    assert "trace.parquet" in json.loads((out / "meta.json").read_text())["files"]

    code, _, err = cli("report", out)
    assert code == 0, err
    html = (out / "report.html").read_text()
    assert "Congestion window and pacing rate over time" in html
    assert 'id="sender-trace"' in html or "sender-trace" in html


def test_run_without_trace_keeps_none(cli, write_scenario, tmp_path) -> None:
    out = tmp_path / "run"
    code, _, err = cli("run", write_scenario(TWO), "--out", out)
    assert code == 0, err
    assert not (out / TRACE_FILE).exists()
    code, _, err = cli("report", out)
    assert code == 0, err
    assert "Congestion window and pacing rate" not in (out / "report.html").read_text()


def test_the_interval_bounds_the_samples(write_scenario) -> None:
    scenario = write_scenario(TWO)
    assert cclab.run(scenario).trace is None
    default = cclab.run(scenario, trace=True).trace
    coarse = cclab.run(scenario, trace="100ms").trace
    every = cclab.run(scenario, trace="ack").trace
    assert default is not None and coarse is not None and every is not None
    assert DEFAULT_INTERVAL_NS == 10_000_000
    for frame, interval in ((default, 10_000_000), (coarse, 100_000_000)):
        for _, rows in frame.groupby("flow"):
            bins = rows["t_ns"].to_numpy() // interval
            assert (bins[1:] > bins[:-1]).all(), "two samples in one interval"
    # 3 s / 100 ms = 30 per flow at most; every ACK is far more than one per 10 ms.
    assert len(coarse) <= 60
    assert len(every) > 5 * len(default)
    # The simulator is deterministic, and so is its trace.
    again = cclab.run(scenario, trace=True).trace
    pd.testing.assert_frame_equal(default, again)


def test_a_notebook_plots_an_in_memory_trace(write_scenario) -> None:
    view = cclab.run(write_scenario(TWO), trace=True).plot("trace")
    assert view.title == "Congestion window and pacing rate over time"
    cwnd_axes = view.figure.axes[0]
    assert len(cwnd_axes.lines) == 2, "one line per flow"


def test_bad_trace_options_are_clear_errors(cli, write_scenario) -> None:
    scenario = write_scenario(TWO)
    code, _, err = cli("run", scenario, "--trace", "--trace-interval", "often")
    assert code == 2
    assert "--trace-interval" in err and "often" in err and "'ack'" in err
    code, _, err = cli("run", scenario, "--trace-interval", "1ms")
    assert code == 2
    assert "--trace-interval needs --trace" in err
    with pytest.raises(ValueError, match="trace interval"):
        cclab.run(scenario, trace="soon")


def test_experiment_trace_keeps_one_per_run(cli, write_scenario, tmp_path) -> None:
    out = tmp_path / "x"
    code, _, err = cli(
        "experiment",
        write_scenario(TWO),
        "--schemes",
        "copa,vegas",
        "--runs",
        "1",
        "--jobs",
        "1",
        "--trace",
        "--out",
        out,
    )
    assert code == 0, err
    traces = sorted((out / "runs").glob(f"*/{TRACE_FILE}"))
    assert len(traces) == 2
    copa = pd.read_parquet(next(t for t in traces if "copa" in t.parent.name))
    assert {"cc_velocity", "cc_delta"} <= set(copa.columns)


#: 3 s of one Linux flow on 12 Mbit/s, 20 ms RTT, 1 BDP.
KERNEL = """\
    name = "emu-trace"
    duration = "3s"

    [link]
    rate = "12Mbps"
    delay = "10ms"
    queue = "1bdp"

    [[flows]]
    scheme = "{scheme}"
"""


@needs_root
def test_kernel_bbr_traces_tcp_info_and_tcp_cc_info(write_scenario) -> None:
    result = cclab.run(write_scenario(KERNEL.format(scheme="kernel:bbr")), engine="emu", trace=True)
    trace = result.trace
    assert trace is not None and len(trace) > 100
    assert list(trace.columns[: len(FIXED)]) == FIXED
    assert set(trace["mode"].astype(str)) <= {"open", "disorder", "cwr", "recovery", "loss"}
    # tcpi_ca_state, in the column both engines fill (and, for kernel flows, also the mode).
    assert (trace["ca_state"].astype(str) == trace["mode"].astype(str)).all()
    # The kernel's min RTT: the 20 ms base, plus the emulator's and the stacks' own sub-ms costs.
    assert 20.0 <= trace["min_rtt_ms"].min() < 23.0
    # TCP_CC_INFO (struct tcp_bbr_info): BBR's gains cycle through 1.25 and 0.75 in PROBE_BW
    # (tcp_bbr.c bbr_pacing_gain[]), and its bandwidth estimate is within the link's rate.
    gains = set(trace["cc_pacing_gain"].round(3))
    assert {1.25, 0.75, 1.0} <= gains, gains
    bw_mbps = trace["cc_bw"].iloc[-1] * 8 / 1e6
    assert 6.0 < bw_mbps <= 12.5
    assert (trace["cc_min_rtt"].iloc[-1] * 1e3) >= 20.0
    # tcpi_snd_wnd: the receiver's advertised window, which its autotuning grows from the
    # initial ~64 KB (tcp_rmem[1] = 128 KiB at the 50 % scaling ratio a connection starts with).
    rwnd = trace["rwnd_bytes"]
    assert 30_000 < rwnd.iloc[0] < 100_000 and rwnd.max() > 2 * rwnd.iloc[0], rwnd.describe()
    # tcpi_rwnd_limited: cumulative, and never most of the run on a 12 Mbit/s path.
    limited = trace["rwnd_limited_ms"].to_numpy()
    assert (np.diff(limited) >= 0).all() and 0 <= limited[-1] < 1500


#: The same path with requests over four Linux Cubic connections: they sit idle between requests.
KERNEL_REQUESTS = (
    KERNEL.format(scheme="kernel:cubic")
    + """\
    traffic = "requests"

    [flows.requests]
    cdf = "MIXED_CDF"
    load = "4Mbps"
    connections = 4
"""
)


@needs_root
def test_kernel_request_connections_trace_tcp_info(write_scenario) -> None:
    """A request workload's persistent connections are traced as bulk kernel senders are."""
    result = cclab.run(write_scenario(KERNEL_REQUESTS), engine="emu", trace=True)
    trace = result.trace
    assert trace is not None
    assert list(trace.columns[: len(FIXED)]) == FIXED
    # Every connection, from its handshake on, at the default interval (~3 s / 10 ms each).
    per_flow = trace.groupby("flow").size()
    assert len(per_flow) == 4 and per_flow.min() > 100, per_flow
    assert 20.0 <= trace["min_rtt_ms"].min() < 23.0
    # The connections carried the requests: their windows grew past the initial 10 segments.
    assert trace["cwnd_bytes"].max() > 10 * 1448


@needs_root
def test_compare_trace_draws_both_engines(cli, write_scenario, tmp_path) -> None:
    scenario = write_scenario(KERNEL.format(scheme="cubic"))
    out = tmp_path / "cmp"
    code, _, err = cli(
        "compare", scenario, "--schemes", "cubic=kernel:cubic", "--trace", "--out", out
    )
    assert code == 0, err
    traces = {p.parent.name: pd.read_parquet(p) for p in (out / "runs").glob(f"*/{TRACE_FILE}")}
    assert len(traces) == 2
    emu = next(t for name, t in traces.items() if name.startswith("emu"))
    sim = next(t for name, t in traces.items() if name.startswith("sim"))
    # Both engines see the same base RTT.
    for t in (emu, sim):
        assert 20.0 <= t["min_rtt_ms"].min() < 23.0
        assert (t["cwnd_bytes"] > 0).all()
    code, _, err = cli("report", out)
    assert code == 0, err
    html = (out / "report.html").read_text()
    assert "solid the first engine, dashed the second" in html


@needs_root
def test_cclab_senders_on_the_emulator_trace_as_in_the_simulator(write_scenario) -> None:
    scenario = write_scenario(KERNEL.format(scheme="bbr"))
    emu = cclab.run(scenario, engine="emu", trace=True).trace
    sim = cclab.run(scenario, trace=True).trace
    assert emu is not None and sim is not None
    # The same sender code, so the same columns: the controller's variables included.
    assert list(emu.columns) == list(sim.columns)
    assert set(emu["mode"].astype(str)) >= {"startup", "probe_bw"}
    assert 20.0 <= emu["min_rtt_ms"].min() < 23.0
    # At most one sample per 10 ms of the run's clock, as in the simulator.
    bins = emu["t_ns"].to_numpy() // DEFAULT_INTERVAL_NS
    assert (bins[1:] > bins[:-1]).all()
