"""Request workloads, the FCT tables, the middlebox and `cclab reproduce bundler` from Python."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import cclab
from cclab import reproduce
from cclab.archive_index import runs
from cclab.data import package_data
from cclab.report import write_report
from cclab.report.loading import load_run

REPO = Path(__file__).resolve().parent.parent

REQUESTS = {
    "name": "requests",
    "duration": "4s",
    "link": {"rate": "48Mbps", "delay": "10ms", "queue": 200},
    "flows": [
        {
            "scheme": "cubic",
            "traffic": "requests",
            "requests": {"cdf": "CAIDA_CDF", "load": "36Mbps", "connections": 20},
        }
    ],
}


def test_cdfs_ship_inside_the_package() -> None:
    data = Path(cclab.__file__).parent / "data" / "cdfs"
    for name in ("CAIDA_CDF", "MIXED_CDF", "TINY_CDF", "BIG_CDF"):
        assert (data / name).read_text().strip().splitlines()[-1].split()[-1] == "1"


def test_run_result_has_requests_fct_and_middlebox(tmp_path) -> None:
    result = cclab.run({**REQUESTS, "middlebox": {}}, out=tmp_path / "run")
    req = result.requests
    assert len(req) > 100 and req["completed"].mean() > 0.9
    assert set(req["bucket"].astype(str)) <= {"small", "medium", "large"}
    done = req[req["completed"]]
    assert (done["slowdown"] > 0.99).all(), "no request beats its ideal time"
    fct = result.fct.set_index("bucket")
    assert list(fct.index) == ["small", "medium", "large", "all"]
    assert fct.loc["all", "requests"] == len(req)
    assert math.isclose(
        fct.loc["all", "slowdown_median"], done["slowdown"].quantile(0.5, interpolation="nearest")
    )
    # One sample per 10 ms control interval over the 4 s run.
    assert 398 <= len(result.middlebox) <= 400
    run = load_run(tmp_path / "run")
    assert run.requests is not None and len(run.requests) == len(req)
    assert run.middlebox is not None and run.fct is not None
    assert run.meta["fct"]["all"]["completed"] == fct.loc["all", "completed"]


def test_runs_without_requests_write_no_request_tables(tmp_path) -> None:
    plain = {"duration": "1s", "link": {"rate": "12Mbps"}, "flows": [{"scheme": "cubic"}]}
    result = cclab.run(plain, out=tmp_path / "run")
    assert result.requests.empty and result.middlebox.empty
    assert not (tmp_path / "run" / "requests.parquet").exists()
    assert load_run(tmp_path / "run").requests is None


def test_index_has_fct_columns(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CCLAB_RUNS", str(tmp_path))
    cclab.run(REQUESTS, out=tmp_path / "a")
    rows = runs(
        sql="SELECT slowdown_median, fct_p99_ms, requests_completed FROM runs", root=tmp_path
    )
    assert len(rows) == 1
    assert rows["slowdown_median"].iloc[0] >= 1.0 and rows["requests_completed"].iloc[0] > 100


def test_bad_request_keys_name_the_field() -> None:
    bad = {**REQUESTS, "flows": [{"scheme": "cubic", "traffic": "requests"}]}
    with pytest.raises(cclab.ScenarioError, match=r"flows\[0\]\.traffic"):
        cclab.validate(bad)
    bad = {
        **REQUESTS,
        "flows": [
            {"scheme": "cubic", "traffic": "requests", "requests": {"cdf": "NOPE", "load": "1Mbps"}}
        ],
    }
    with pytest.raises(cclab.ScenarioError, match="CAIDA_CDF"):
        cclab.validate(bad)


def test_reproduce_bundler_on_a_short_scenario(tmp_path) -> None:
    # The repository's scenario, shortened: 2,000 requests on the same path.
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    text = (REPO / "scenarios" / "repro" / "bundler.toml").read_text()
    text = text.replace('duration = "215s"', 'duration = "6s"').replace("100000", "2000")
    (scenarios / "bundler.toml").write_text(text)
    rep = reproduce.bundler(seeds=1, out=tmp_path / "out", workers=1, scenario_dir=scenarios)
    table = rep.table.set_index("configuration")
    assert {"status-quo", "bundler", "fifo-at-inbox"} <= set(table.index)
    assert table.loc["status-quo", "paper_median"] == 1.76
    assert table.loc["bundler", "paper_p99"] == 41.38
    for _, row in table.iterrows():
        assert row["slowdown_median"] >= 1.0 and row["completed_pct"] > 90
    saved = pd.read_csv(tmp_path / "out" / "bundler.csv")
    assert list(saved["configuration"]) == list(rep.table["configuration"])
    # The report of the experiment draws the FCT CDFs and the middlebox over time.
    page = write_report(tmp_path / "out", figures_dir=tmp_path / "figs")
    html = page.read_text()
    assert 'data-figure="fct-cdf"' in html and 'data-figure="middlebox-time"' in html
    assert (tmp_path / "figs" / "fct-cdf.png").stat().st_size > 0


def test_quick_bundler_reproduction_holds_qualitatively(tmp_path) -> None:
    """`cclab reproduce bundler --quick`, as CI runs it, against issue 11's targets: Bundler
    (Copa + SFQ at the inbox) cuts the status quo's median slowdown by at least 20%, and
    in-network SFQ is at least as good as Bundler (2% slack: one seed of a random workload)."""
    rep = reproduce.bundler(quick=True, out=tmp_path / "out")
    table = rep.table.set_index("configuration")["slowdown_median"]
    assert table["bundler"] <= 0.8 * table["status-quo"], table
    assert table["in-network"] <= table["bundler"] * 1.02, table


def test_reproduce_finds_the_shipped_scenarios() -> None:
    # The package's own copy (a wheel ships it), which the checkout's scenarios/ links to.
    found = reproduce.scenario_path("bundler")
    assert found == package_data("scenarios", "repro", "bundler.toml")
    assert found.samefile(REPO / "scenarios" / "repro" / "bundler.toml")
