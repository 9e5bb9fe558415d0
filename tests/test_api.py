"""The Python API: `cclab.run` on dicts and files, overrides, errors, determinism."""

from __future__ import annotations

import textwrap
import time
import tomllib

import numpy as np
import pandas as pd
import pytest

import cclab
from conftest import LONG, SCENARIOS, SMALL, SMALL_DICT


def test_run_a_dict() -> None:
    result = cclab.run(SMALL_DICT)
    s = result.summary
    assert len(s) == 4  # three flows and the total
    assert list(s["flow"][:3]) == [0, 1, 2]
    assert pd.isna(s["flow"].iloc[-1])
    assert list(s["scheme"]) == ["cubic", "cubic", "cubic", "total"]
    total = s.iloc[-1]
    assert 9.0 < total["throughput_mbps"] <= 12.0
    assert 0.75 < total["utilisation"] <= 1.0
    assert 0.0 <= total["jain_median"] <= 1.0
    assert s["utilisation"].iloc[:3].isna().all()
    assert result.name == "small"
    assert result.seed == 5
    assert result.duration_s == 3.0
    assert result.source == "<scenario dict>"
    assert len(result.flows) == 3
    assert list(result.flows["start_ns"]) == [0, 500_000_000, 1_000_000_000]
    assert set(result.timeseries["flow"]) == {0, 1, 2}
    assert result.timeseries["t_s"].max() < 3.0
    assert len(result.jain) > 0
    assert result.stats["events"] > 0
    assert result.packets is None


def test_run_a_file_with_seed_and_overrides(write_scenario) -> None:
    path = write_scenario(SMALL)
    result = cclab.run(path, seed=11, link__rate="24Mbps", **{"output.bin": "250ms"})
    assert result.seed == 11
    assert result.source == str(path)
    assert 'rate = "24Mbps"' in result.scenario_toml
    assert "seed = 11" in result.scenario_toml
    assert 18.0 < result.summary["throughput_mbps"].iloc[-1] <= 24.0
    # 250 ms bins: bin starts are multiples of 0.25 s.
    assert np.allclose(result.timeseries["t_s"] % 0.25, 0.0)


def test_shipped_scenario_runs() -> None:
    result = cclab.run(SCENARIOS / "copa-fairness.toml", duration="20s")
    assert len(result.summary) == 11
    assert result.summary["utilisation"].iloc[-1] > 0.9


def test_invalid_dict_raises_scenario_error_with_every_location() -> None:
    bad = dict(SMALL_DICT, link={"rate": "12Mbps", "queu": 10})
    with pytest.raises(cclab.ScenarioError) as caught:
        cclab.run(bad)
    [error] = caught.value.errors
    assert error["file"] == "<scenario dict>"
    assert error["field"] == "link.queu"
    assert error["line"] is None
    assert "did you mean `queue`?" in error["message"]
    assert str(caught.value).startswith("<scenario dict>: field `link.queu`: unknown key")
    assert isinstance(caught.value, ValueError)


def test_bad_override_and_none_values_are_scenario_errors(write_scenario) -> None:
    path = write_scenario(SMALL)
    with pytest.raises(cclab.ScenarioError, match=r"link\.rate"):
        cclab.run(path, link__rate="fast")
    with pytest.raises(cclab.ScenarioError, match=r"link\.delay"):
        cclab.run(SMALL_DICT, link__delay=None)


def test_validate_returns_the_filled_scenario() -> None:
    text = cclab.validate(SMALL_DICT, seed=9)
    assert "seed = 9" in text
    assert 'min_rto = "200ms"' in text
    # The filled scenario is itself a valid scenario.
    assert cclab.validate(tomllib.loads(text)) == text


def test_same_seed_same_results_different_seed_different_results() -> None:
    a = cclab.run(SMALL_DICT, log_packets=True)
    b = cclab.run(SMALL_DICT, log_packets=True)
    pd.testing.assert_frame_equal(a.summary, b.summary)
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)
    pd.testing.assert_frame_equal(a.jain, b.jain)
    pd.testing.assert_frame_equal(a.packets, b.packets)
    # The Poisson link draws from the seed, so another seed changes the results.
    c = cclab.run(SMALL_DICT, seed=6)
    assert not a.summary.equals(c.summary)


def test_packet_log_accounts_for_every_data_packet() -> None:
    result = cclab.run(SMALL_DICT, log_packets=True)
    packets = result.packets
    assert list(packets["kind"].cat.categories) == ["data", "ack"]
    data = packets[packets["kind"] == "data"]
    fates = data["fate"].value_counts()
    stats = result.stats
    assert len(data) == stats["data_sent"]
    assert fates["delivered"] == stats["data_delivered"]
    assert fates["queue"] + fates["loss"] == stats["data_dropped"]
    assert fates["in_flight"] == stats["data_in_flight_end"]
    delivered = data[data["fate"] == "delivered"]
    assert (delivered["arrived_ns"] > delivered["sent_ns"]).all()
    dropped = data[data["fate"] != "delivered"]
    assert (dropped["arrived_ns"] == cclab.NEVER).all()
    total = result.summary.iloc[-1]
    assert total["packets_delivered"] == stats["data_delivered"]


def test_progress_callback_sees_time_and_can_stop_the_run() -> None:
    calls: list[tuple[int, int]] = []

    class StopRunError(Exception):
        pass

    def progress(sim_ns: int, duration_ns: int) -> None:
        calls.append((sim_ns, duration_ns))
        if len(calls) == 3:
            raise StopRunError

    long = tomllib.loads(textwrap.dedent(LONG))
    start = time.monotonic()
    with pytest.raises(StopRunError):
        cclab.run(long, progress=progress)
    elapsed = time.monotonic() - start
    assert len(calls) == 3
    assert [d for _, d in calls] == [120_000_000_000] * 3
    assert calls[0][0] < calls[1][0] < calls[2][0] < 120_000_000_000
    # Calls come about every 250 ms of wall time: three of them, then the stop.
    assert 0.7 < elapsed < 5.0
