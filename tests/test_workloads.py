"""Request workloads, the FCT tables, the middlebox and `cclab reproduce bundler` from Python."""

from __future__ import annotations

import math
import os
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

import cclab
from cclab import reproduce
from cclab.archive_index import runs
from cclab.data import package_data
from cclab.report import write_report
from cclab.report.figures import run_figure
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


def _short_bundler(tmp_path: Path, requests: int, duration: str) -> Path:
    """The repository's scenario, shortened to `requests` requests on the same path."""
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    text = (REPO / "scenarios" / "repro" / "bundler.toml").read_text()
    text = text.replace('duration = "215s"', f'duration = "{duration}"')
    (scenarios / "bundler.toml").write_text(text.replace("100000", str(requests)))
    return scenarios


def test_reproduce_bundler_on_a_short_scenario(tmp_path) -> None:
    # 2,000 requests (4 s of arrivals, 2 s to drain): all six configurations in ~4 s.
    scenarios = _short_bundler(tmp_path, 2000, "6s")
    rep = reproduce.bundler(seeds=1, out=tmp_path / "out", workers=1, scenario_dir=scenarios)
    table = rep.table.set_index("configuration")
    assert {"status-quo", "bundler", "fifo-at-inbox"} <= set(table.index)
    assert table.loc["status-quo", "paper_median"] == 1.76
    assert table.loc["bundler", "paper_p99"] == 41.38
    for _, row in table.iterrows():
        assert row["slowdown_median"] >= 1.0 and row["completed_pct"] > 90
    saved = pd.read_csv(tmp_path / "out" / "bundler.csv")
    assert list(saved["configuration"]) == list(rep.table["configuration"])
    # The main comparison's findings already hold at this size (measured: 3.15, 1.35, 1.02,
    # 2.57), except FIFO at the inbox vs the status quo: with 4 s of arrivals the status quo's
    # drop-tail queue has not yet grown to its standing size (the --quick test checks that
    # one). FIFO at the inbox is still well behind SFQ there: the scheduler is what helps.
    median = table["slowdown_median"]
    assert median["bundler"] <= 0.8 * median["status-quo"], median
    assert median["in-network"] <= median["bundler"], median
    assert median["fifo-at-inbox"] >= 1.5 * median["bundler"], median


def test_bundler_report_draws_fct_and_middlebox(tmp_path) -> None:
    # The report of the experiment draws the FCT CDFs and the middlebox over time; two
    # configurations of 500 requests keep its figures (drawn three times each) cheap.
    scenarios = _short_bundler(tmp_path, 500, "2s")
    reproduce.bundler(
        seeds=1,
        out=tmp_path / "out",
        workers=1,
        scenario_dir=scenarios,
        schemes=["status-quo", "bundler"],
    )
    page = write_report(tmp_path / "out", figures_dir=tmp_path / "figs")
    html = page.read_text()
    assert 'data-figure="fct-cdf"' in html and 'data-figure="middlebox-time"' in html
    assert (tmp_path / "figs" / "fct-cdf.png").stat().st_size > 0
    # The run's 200 connections are drawn as one line, not 200 lines and legend entries.
    run = load_run(next((tmp_path / "out").glob("**/bundler-r0")))
    figure = run_figure(run)
    throughput, delay = (ax.get_legend_handles_labels()[1] for ax in figure.figure.axes[:2])
    assert throughput[1:] == ["all 200 flows"] and delay == ["all 200 flows"], figure
    plt.close(figure.figure)


def test_quick_bundler_reproduction_holds_qualitatively(tmp_path) -> None:
    """`cclab reproduce bundler --quick`, as CI runs it, against issue 11's targets: Bundler
    (Copa + SFQ at the inbox) cuts the status quo's median slowdown by at least 20%,
    in-network SFQ is at least as good as Bundler (2% slack: one seed of a random workload),
    and FIFO at the inbox is well behind SFQ there (2.08 vs 1.04). The issue's third finding,
    FIFO at the inbox worse than the status quo, holds on kernel Cubic in the emulator (3.38 vs
    2.71 at 10,000 requests) but not in the simulator since Linux's PRR and tail-loss probes
    became the transport's defaults (2.08 vs 2.82; 3.33 vs 2.66 before; at 10,000 requests it
    did not hold before either): an open fidelity gap of issue 11, not asserted here."""
    rep = reproduce.bundler(quick=True, out=tmp_path / "out")
    table = rep.table.set_index("configuration")["slowdown_median"]
    assert table["bundler"] <= 0.8 * table["status-quo"], table
    assert table["in-network"] <= table["bundler"] * 1.02, table
    assert table["fifo-at-inbox"] >= 1.5 * table["bundler"], table


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/net/tun").exists(),
    reason="the emulator needs root and /dev/net/tun",
)
def test_reproduce_bundler_on_the_emulator_with_kernel_cubic(tmp_path) -> None:
    """`--engine emu`: the end hosts are Linux's Cubic and the inbox is a stage of the emulated
    path. Two configurations of 2,000 requests (6 s each, in real time); Bundler's cut holds
    at this size in the simulator (3.15 -> 1.35) and, measured, on the emulator."""
    scenarios = _short_bundler(tmp_path, 2000, "6s")
    rep = reproduce.bundler(
        seeds=1,
        engine="emu",
        out=tmp_path / "out",
        scenario_dir=scenarios,
        schemes=["status-quo", "bundler"],
    )
    median = rep.table.set_index("configuration")["slowdown_median"]
    assert median["bundler"] <= 0.8 * median["status-quo"], median
    run = load_run(next((tmp_path / "out").glob("**/bundler-r0")))
    assert run.meta["engine"] == "emu"
    assert "kernel:cubic" in (run.path / "scenario.toml").read_text()
    # The inbox's control loop sampled every 10 ms of the 6 s.
    assert run.middlebox is not None and len(run.middlebox) >= 590, run.middlebox


def test_reproduce_finds_the_shipped_scenarios() -> None:
    # The package's own copy (a wheel ships it), which the checkout's scenarios/ links to.
    found = reproduce.scenario_path("bundler")
    assert found == package_data("scenarios", "repro", "bundler.toml")
    assert found.samefile(REPO / "scenarios" / "repro" / "bundler.toml")


def test_mixed_variant_bundler_cuts_the_median_fct(tmp_path) -> None:
    """`--schemes mixed` (the Jan-2019 draft's MIXED_CDF workload plus one backlogged
    connection), quick: Bundler cuts the status quo's median FCT by more than half (draft: 147
    -> 58 ms; measured at this size 183 -> 55 ms). FIFO at the inbox is not asserted worse than
    the status quo: the draft's +18% shrinks to +4% here (191 ms), within one seed's noise."""
    rep = reproduce.bundler(quick=True, schemes=["mixed"], out=tmp_path / "out")
    table = rep.table.set_index("configuration")
    assert list(table.index) == ["mixed-status-quo", "mixed-bundler", "mixed-fifo-at-inbox"]
    fct = table["fct_median_ms"]
    assert fct["mixed-bundler"] <= 0.5 * fct["mixed-status-quo"], fct
    assert table.loc["mixed-bundler", "paper_fct_median_ms"] == 58.0
    assert any("Jan-2019" in note for note in rep.notes), rep.notes


def test_bbr_end_hosts_bundler_stays_close_to_one(tmp_path) -> None:
    """`--schemes bbr-hosts` (B7), quick: with BBR end hosts Bundler keeps the median slowdown
    near 1 (SIGCOMM'19: 1.14; measured 1.06) and well below the status quo's (measured 2.61).
    The paper's other finding, that BBR end hosts make the status quo worse than Cubic ones
    (1.62 -> 2.68), does not hold here (2.61 vs Cubic's 2.66), so it is not asserted."""
    rep = reproduce.bundler(quick=True, schemes=["bbr-hosts"], out=tmp_path / "out")
    table = rep.table.set_index("configuration")
    median = table["slowdown_median"]
    assert median["bundler-bbr-hosts"] <= 1.3, median
    assert median["bundler-bbr-hosts"] <= 0.6 * median["status-quo-bbr-hosts"], median
    assert table.loc["status-quo-bbr-hosts", "paper_median"] == 2.68
    run = load_run(next((tmp_path / "out").glob("**/bundler-bbr-hosts-r0")))
    assert 'scheme = "bbr"' in (run.path / "scenario.toml").read_text()


def test_elastic_cross_traffic_costs_the_bundle_some_not_most(tmp_path) -> None:
    """B17 at 10 cross Cubic flows (180 s, one seed): with Nimbus (elasticity switching) at
    the inbox the bundle loses some but not most of its status-quo throughput. Measured -34%
    (paper -12%); the bounds allow for the ~20 s Nimbus spends in delay mode before it
    switches, not for a starved bundle (Copa at the inbox: -99%). At 50 cross flows the bundle
    loses nothing here (+7%; paper -22%), so that count is not run."""
    names = ["elastic-status-quo-10", "elastic-bundler-10"]
    rep = reproduce.bundler(quick=True, schemes=names, out=tmp_path / "out")
    table = rep.table.set_index("configuration")
    change = table["bundle_change_pct"]
    assert -50 <= change["elastic-bundler-10"] <= -5, change
    assert math.isnan(change["elastic-status-quo-10"])
    assert table.loc["elastic-bundler-10", "paper_change_pct"] == -12.0
    # The status quo shares the link about per flow: 20 of 30 flows get roughly 2/3 of it.
    assert 50 <= table.loc["elastic-status-quo-10", "bundle_mbps"] <= 80, table


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/net/tun").exists(),
    reason="the emulator needs root and /dev/net/tun",
)
def test_bbr_hosts_on_the_emulator_are_linux_bbr(tmp_path) -> None:
    """`--engine emu --schemes bbr-hosts`: the rows' end hosts become Linux's BBR. One run of
    2,000 requests (6 s each, in real time). The finding (B7): BBR end hosts make the status
    quo's median slowdown worse (SIGCOMM'19: 1.62 with Cubic, 2.68 with BBR) and Bundler cuts it
    by more than half (to 1.14, 57 %). Measured here, ten runs: status quo 2.86-2.93, Bundler
    1.07-1.40 (a cut of 52-63 %; Bundler's own figure moves with the host's load, as real time
    does), so the bounds are 2 and a 40 % cut."""
    scenarios = _short_bundler(tmp_path, 2000, "6s")
    rep = reproduce.bundler(
        seeds=1, engine="emu", out=tmp_path / "out", scenario_dir=scenarios, schemes=["bbr-hosts"]
    )
    median = rep.table.set_index("configuration")["slowdown_median"]
    assert median["status-quo-bbr-hosts"] > 2.0, median
    assert median["bundler-bbr-hosts"] <= 0.6 * median["status-quo-bbr-hosts"], median
    run = load_run(next((tmp_path / "out").glob("**/bundler-bbr-hosts-r0")))
    assert 'scheme = "kernel:bbr"' in (run.path / "scenario.toml").read_text()


def test_bundler_variants_are_named_and_simulator_only() -> None:
    with pytest.raises(ValueError, match=r"unknown configuration nope.*mixed, bbr-hosts, elastic"):
        reproduce.bundler(quick=True, schemes=["nope"])
    for variant in ("mixed", "elastic"):
        with pytest.raises(ValueError, match="simulator only"):
            reproduce.bundler(quick=True, engine="emu", schemes=[variant])
