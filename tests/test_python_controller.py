"""Congestion controllers in Python (`cclab.Controller`, `cclab.register_scheme`): a Python
NewReno gives the Rust NewReno's results bit for bit, runs are deterministic, schemes are listed,
validated and run in experiments' worker processes, and a controller's exception stops the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import cclab
from cclab import _core

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))  # spawned workers inherit sys.path, so they import it too

import aimd  # noqa: E402  (registers "aimd")
import newreno  # noqa: E402  (registers "py-newreno")

#: Two flows over a lossy 12 Mbit/s path with a small buffer: slow start, congestion
#: avoidance, fast recovery (queue drops and random loss) and, with 1% loss, timeouts.
LOSSY = {
    "name": "lossy",
    "duration": "8s",
    "seed": 3,
    "link": {"rate": "12Mbps", "delay": "20ms", "queue": "0.5bdp", "loss": 0.01},
    "flows": [
        {"scheme": "newreno", "count": 2, "every": "1s"},
    ],
}


def _with_scheme(scheme: str) -> dict:
    scenario = json.loads(json.dumps(LOSSY))
    scenario["flows"][0]["scheme"] = scheme
    return scenario


def test_python_newreno_equals_rust_newreno_bit_for_bit():
    rust = cclab.run(_with_scheme("newreno"), log_packets=True)
    python = cclab.run(_with_scheme("py-newreno"), log_packets=True)
    assert rust.packets is not None and python.packets is not None
    assert len(rust.packets) > 3_000
    # The run exercised recovery: packets were lost and retransmitted.
    assert rust.summary["loss_pct"].iloc[-1] > 1.0
    assert rust.packets["retransmission"].sum() > 30
    pd.testing.assert_frame_equal(rust.packets, python.packets)
    pd.testing.assert_frame_equal(
        rust.summary.drop(columns=["scheme"]), python.summary.drop(columns=["scheme"])
    )
    pd.testing.assert_frame_equal(rust.timeseries, python.timeseries)
    pd.testing.assert_frame_equal(rust.jain, python.jain)
    assert list(python.summary["scheme"][:2]) == ["py-newreno", "py-newreno"]


#: Requests over four persistent connections at a third of the link, up to 1 MB (MIXED_CDF): a
#: connection falls silent between requests for longer than its RTO with a window grown past
#: the initial one, so the window restarts (tcp_cwnd_restart) before large requests.
IDLE = {
    "name": "idle",
    "duration": "6s",
    "seed": 1,
    "link": {"rate": "24Mbps", "delay": "50ms", "queue": 100},
    "flows": [
        {
            "scheme": "newreno",
            "traffic": "requests",
            "requests": {"cdf": "MIXED_CDF", "load": "8Mbps", "connections": 4},
        }
    ],
}


class _NoRestart(newreno.NewReno):
    def on_idle_restart(self, now: int, idle_for: int, rto: int) -> None:
        pass


cclab.register_scheme("py-newreno-no-restart", _NoRestart, init_cwnd=0)


def _idle_with(scheme: str) -> dict:
    return {**IDLE, "flows": [{**IDLE["flows"][0], "scheme": scheme}]}


def test_python_newreno_restarts_idle_windows_as_rust_newreno():
    """The idle restart gets the sender's RTO, so the twin can follow Linux's rule exactly."""
    rust = cclab.run(_idle_with("newreno"), log_packets=True)
    python = cclab.run(_idle_with("py-newreno"), log_packets=True)
    assert rust.packets is not None and python.packets is not None
    pd.testing.assert_frame_equal(rust.packets, python.packets)
    # The restarts mattered: without them the same requests go out differently.
    unrestarted = cclab.run(_idle_with("py-newreno-no-restart"), log_packets=True)
    assert not rust.packets.equals(unrestarted.packets)


def test_the_rust_twin_differs_when_the_python_one_does():
    """The comparison above can fail: a NewReno with another initial window differs."""
    rust = cclab.run(_with_scheme("newreno"), log_packets=True)
    scenario = _with_scheme("py-newreno")
    scenario["flows"][0]["init_cwnd"] = 4
    python = cclab.run(scenario, log_packets=True)
    assert not rust.packets.equals(python.packets)


def test_python_controller_runs_are_deterministic():
    a = cclab.run(_with_scheme("aimd"), log_packets=True)
    b = cclab.run(_with_scheme("aimd"), log_packets=True)
    pd.testing.assert_frame_equal(a.packets, b.packets)
    assert a.summary["throughput_mbps"].iloc[-1] > 5.0


def test_options_are_typed_by_their_defaults_and_reach_the_controller():
    gentle = _with_scheme("aimd")
    gentle["flows"][0]["decrease"] = 0.9
    harsh = _with_scheme("aimd")
    harsh["flows"][0]["decrease"] = 0.2
    a = cclab.run(gentle).summary["delay_p95_ms"].iloc[-1]
    b = cclab.run(harsh).summary["delay_p95_ms"].iloc[-1]
    assert a > b  # a gentler cut keeps the queue fuller

    wrong = _with_scheme("aimd")
    wrong["flows"][0]["decrease"] = "half"
    with pytest.raises(cclab.ScenarioError, match=r"flows\[0\]\.decrease.*expected a number"):
        cclab.run(wrong)
    unknown = _with_scheme("aimd")
    unknown["flows"][0]["decraese"] = 0.5
    with pytest.raises(cclab.ScenarioError, match="did you mean `decrease`"):
        cclab.run(unknown)


def test_schemes_lists_python_schemes_with_options():
    schemes = {s["name"]: s for s in _core.schemes()}
    assert "aimd" in schemes
    assert schemes["aimd"]["summary"].startswith("AIMD")
    options = {o["name"]: o["default"] for o in schemes["aimd"]["options"]}
    assert options == {"increase": "1", "decrease": "0.5"}


def test_cclab_schemes_command_loads_controllers_from_the_environment():
    env = dict(os.environ, CCLAB_CONTROLLERS=str(EXAMPLES / "aimd.py"))
    out = subprocess.run(
        [sys.executable, "-m", "cclab", "schemes"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "aimd" in out.stdout


def test_a_built_in_name_cannot_be_taken():
    with pytest.raises(ValueError, match="built-in scheme"):
        cclab.register_scheme("cubic", aimd.AIMD)
    with pytest.raises(TypeError, match=r"not a cclab\.Controller"):
        cclab.register_scheme("x", dict)  # type: ignore[arg-type]


class Broken(cclab.Controller):
    def on_ack(self, ack):
        if ack.now > 1_000_000_000:
            raise ZeroDivisionError("boom")
        self.cwnd += ack.newly_acked_bytes


def test_an_exception_in_a_hook_stops_the_run_and_names_the_scheme():
    cclab.register_scheme("broken", Broken)
    try:
        with pytest.raises(RuntimeError, match=r"Python scheme `broken`: ZeroDivisionError: boom"):
            cclab.run(_with_scheme("broken"))
        # The next run is not affected by the previous failure.
        assert cclab.run(_with_scheme("aimd"), duration="2s").summary is not None
    finally:
        cclab.unregister_scheme("broken")
    assert "broken" not in {s["name"] for s in _core.schemes()}


def test_experiment_workers_register_the_schemes_again(tmp_path):
    out = cclab.run_experiment(
        _with_scheme("newreno"),
        ["newreno", "py-newreno"],
        runs=2,
        jobs=2,
        out=tmp_path / "exp",
    )
    meta = json.loads((Path(out) / "experiment.json").read_text())
    assert meta["complete"] is True
    assert {r["status"] for r in meta["runs"]} == {"ok"}, meta["runs"]
    summaries = {
        d.name: pd.read_parquet(d / "summary.parquet") for d in (Path(out) / "runs").iterdir()
    }
    for k in (1, 2):
        a = summaries[f"newreno-r{k}"].drop(columns=["scheme"])
        b = summaries[f"py-newreno-r{k}"].drop(columns=["scheme"])
        pd.testing.assert_frame_equal(a, b)


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/net/tun").exists(),
    reason="the emulator needs root and /dev/net/tun",
)


class Counting(cclab.Controller):
    """NewReno-like growth that counts its calls, to show the hooks ran in the emulator."""

    calls = 0

    def on_ack(self, ack: cclab.controller.Ack) -> None:
        Counting.calls += 1
        self.cwnd += ack.newly_acked_bytes if ack.ca_state == "open" else 0

    def on_congestion_event(self, event: cclab.controller.Congestion) -> None:
        self.cwnd = max(self.cwnd // 2, 2 * self.mss)


@needs_root
def test_python_controllers_run_on_the_emulator():
    # The emulator's UDP endpoints are threads of this process (crates/emu/src/run.rs), so
    # they build the registered scheme as the simulator does and take the GIL for each hook.
    cclab.register_scheme("counting", Counting)
    try:
        Counting.calls = 0
        scenario = {
            "duration": "3s",
            "link": {"rate": "12Mbps", "delay": "10ms", "queue": "1bdp"},
            "flows": [{"scheme": "counting"}],
        }
        result = cclab.run(scenario, engine="emu", log_packets=True)
        total = result.summary[result.summary["flow"].isna()].iloc[0]
        # A window-based sender fills a 12 Mbit/s link within the first second (the slow
        # start from 10 packets reaches the 20-packet BDP in about two RTTs), so over 3 s it
        # gets most of the link; the link caps it (12 Mbit/s plus the measurement's 1/n).
        assert 9.0 < total["throughput_mbps"] <= 12.05
        acks = result.packets[
            (result.packets["kind"] == "ack") & (result.packets["fate"] == "delivered")
        ]
        # One on_ack per ACK the sender read (not one per packet): at least most of them.
        assert 0.9 * len(acks) <= Counting.calls <= len(acks)
    finally:
        cclab.unregister_scheme("counting")


@needs_root
def test_an_exception_on_the_emulator_stops_the_run_and_names_the_scheme():
    cclab.register_scheme("broken", Broken)
    try:
        with pytest.raises(RuntimeError, match=r"Python scheme `broken`: ZeroDivisionError: boom"):
            cclab.run(_with_scheme("broken"), engine="emu", duration="3s")
    finally:
        cclab.unregister_scheme("broken")
