"""Sweeps (`cclab.sweep`, `cclab sweep`): grid expansion and its errors, the manifest, failed
runs, resuming after a kill, the Dask executor against the local pool, the index and the
report of a sweep."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import cclab
from cclab.batch import RunOutcome, Task, execute_task
from cclab.cli.sweep_command import grid_entry
from cclab.cluster import ClusterError, executor_for
from cclab.errors import ScenarioError
from cclab.sweep import (
    SweepError,
    SweepSpec,
    expand,
    make_axes,
    read_manifest,
    run_sweep,
    split_values,
    sweep_frame,
    work_dir,
)
from conftest import cclab_process

#: One flow for 1 s on a Poisson link (random, so seeds matter): runs of a few ms.
BASE = {
    "name": "sw",
    "duration": "1s",
    "seed": 3,
    "link": {"rate": "12Mbps", "delivery": "poisson", "delay": "10ms", "queue": "1bdp"},
    "flows": [{"scheme": "cubic"}],
}
GRID = {"link.rate": ["10Mbps", "20Mbps"], "link.delay": ["5ms", "20ms"]}


def test_grid_expands_row_major_and_reads_command_line_values():
    axes = make_axes({"link.rate": ["10Mbps", "20Mbps"], "link__delay": ["5ms", "20ms", "40ms"]})
    assert [a.key for a in axes] == ["link.rate", "link.delay"]
    points = expand(axes)
    assert len(points) == 6
    assert points[0].values == {"link.rate": "10Mbps", "link.delay": "5ms"}
    assert points[1].values == {"link.rate": "10Mbps", "link.delay": "20ms"}
    assert points[5].values == {"link.rate": "20Mbps", "link.delay": "40ms"}
    assert points[4].label == "link.rate=20Mbps, link.delay=20ms"
    # One value (not a list) is held fixed: one point, and no axis to plot.
    assert len(expand(make_axes({"link.rate": "10Mbps"}))) == 1
    # On the command line each value is read as --set reads one; commas inside brackets or
    # quotes belong to one value.
    assert grid_entry("link.loss=0.01,0.02") == ("link.loss", [0.01, 0.02])
    assert grid_entry("link.rate=10Mbps, 50Mbps") == ("link.rate", ["10Mbps", "50Mbps"])
    assert split_values('[1, 2],[3],"a,b"') == ["[1, 2]", "[3]", '"a,b"']


def test_grid_errors_say_what_is_wrong():
    with pytest.raises(SweepError, match=r"grid key link\.rate: empty list of values"):
        make_axes({"link.rate": []})
    with pytest.raises(SweepError, match=r"grid key link\.rate is given twice"):
        make_axes([("link.rate", ["1Mbps"]), ("link__rate", ["2Mbps"])])
    with pytest.raises(SweepError, match=r'grid key link\.rate: "1Mbps" given more than once'):
        make_axes({"link.rate": ["1Mbps", "1Mbps"]})
    with pytest.raises(SweepError, match="seed cannot be swept"):
        make_axes({"seed": [1, 2]})
    for bad in ("link.rate=", "link.rate=1Mbps,,2Mbps"):
        with pytest.raises(Exception, match=r"no values|an empty value"):
            grid_entry(bad)


def test_an_unknown_key_and_a_bad_value_name_the_grid_point(tmp_path):
    with pytest.raises(ScenarioError) as unknown:
        cclab.sweep(BASE, grid={"link.rat": ["10Mbps", "20Mbps"]}, out=tmp_path / "a")
    assert str(unknown.value).startswith("grid point 0 (link.rat=10Mbps): link.rat: unknown key")
    assert "did you mean `rate`?" in str(unknown.value)
    with pytest.raises(ScenarioError) as bad:
        cclab.sweep(
            BASE, grid={"link.rate": ["10Mbps", "fast"], "link.delay": ["5ms"]}, out=tmp_path / "b"
        )
    assert str(bad.value).startswith(
        'grid point 1 (link.rate=fast, link.delay=5ms): link.rate: cannot read "fast" as a rate'
    )
    with pytest.raises(ScenarioError, match=r"^scheme nope: unknown scheme `nope`"):
        cclab.sweep(BASE, grid=GRID, schemes=["cubic", "nope"], out=tmp_path / "c")
    # Nothing ran, nothing was written.
    assert not any(tmp_path.iterdir())


def test_the_sweep_frame_and_manifest(tmp_path):
    out = tmp_path / "sweep"
    frame = cclab.sweep(BASE, grid=GRID, schemes=["cubic", "bbr"], runs=2, out=out, jobs=2)
    # 4 points x 2 schemes x 2 runs, each one flow + the total row.
    assert len(frame) == 4 * 2 * 2 * 2
    assert frame.attrs["directory"] == str(out)
    assert set(frame["link.rate"]) == {"10Mbps", "20Mbps"}
    assert set(frame["status"]) == {"ok"}
    # Common random numbers: repetition k has seed 3 + k - 1 at every point and scheme.
    assert (frame["seed"] == 3 + frame["repetition"] - 1).all()
    totals = frame[frame["flow"].isna()]
    assert len(totals) == 16 and (totals["flow_scheme"] == "total").all()
    # The swept rate shows in the throughput (a 1-flow Cubic run nearly fills the link).
    by_rate = totals.groupby("link.rate")["throughput_mbps"].mean()
    assert 8 < by_rate["10Mbps"] < 10.5 and 16 < by_rate["20Mbps"] < 21
    manifest = read_manifest(out)
    assert manifest["axes"] == ["link.rate", "link.delay"]
    assert manifest["grid"] == GRID
    assert [p["values"] for p in manifest["points"]][1] == {
        "link.rate": "10Mbps",
        "link.delay": "20ms",
    }
    runs = manifest["points"][3]["runs"]
    assert [r["dir"] for r in runs] == [
        "runs/p3-cubic-r1",
        "runs/p3-cubic-r2",
        "runs/p3-bbr-r1",
        "runs/p3-bbr-r2",
    ]
    # Each run is an ordinary run directory that runs the point's values.
    scenario = (out / "runs/p3-bbr-r2/scenario.toml").read_text()
    assert 'rate = "20Mbps"' in scenario and 'delay = "20ms"' in scenario
    assert 'scheme = "bbr"' in scenario and "seed = 4" in scenario
    experiment = json.loads((out / "experiment.json").read_text())
    assert experiment["kind"] == "sweep" and experiment["complete"] is True
    entry = next(r for r in experiment["runs"] if r["dir"] == "runs/p3-bbr-r2")
    assert entry["point"] == 3 and entry["swept"] == {"link.rate": "20Mbps", "link.delay": "20ms"}
    assert not work_dir(out).exists()
    with pytest.raises(SweepError, match="already exists; pass --resume"):
        cclab.sweep(BASE, grid=GRID, schemes=["cubic", "bbr"], runs=2, out=out)


def _flaky(task: Task, events=None) -> RunOutcome:
    """Fails every run of point 1 while $SWEEP_FAIL is set."""
    if os.environ.get("SWEEP_FAIL") and task.planned.spec.tags["point"] == 1:
        raise RuntimeError("the engine fell over")
    return execute_task(task, events)


def test_a_failed_run_is_recorded_and_resume_runs_only_it(tmp_path, monkeypatch):
    spec = SweepSpec(scenario=BASE, axes=make_axes(GRID), schemes=["cubic"], runs=1)
    out = tmp_path / "sweep"
    monkeypatch.setenv("SWEEP_FAIL", "1")
    first = run_sweep(spec, out, jobs=1, execute=_flaky)
    assert [o.run.name for o in first.failed] == ["p1-cubic-r1"]
    manifest = read_manifest(out)
    failed = manifest["points"][1]["runs"][0]
    assert failed["status"] == "failed" and failed["error"] == "the engine fell over"
    frame = sweep_frame(out)
    row = frame[frame["run"] == "p1-cubic-r1"]
    assert len(row) == 1 and row["error"].iloc[0] == "the engine fell over"
    assert row["throughput_mbps"].isna().all()
    kept = (out / "runs/p0-cubic-r1/meta.json").stat().st_ino

    monkeypatch.delenv("SWEEP_FAIL")
    second = run_sweep(spec, out, jobs=1, execute=_flaky, resume=True)
    assert not second.failed
    runs = {r["dir"]: r for p in read_manifest(out)["points"] for r in p["runs"]}
    assert [d for d, r in runs.items() if not r["reused"]] == ["runs/p1-cubic-r1"]
    assert all(r["status"] == "ok" for r in runs.values())
    # The reused run is the same file, linked, not run again.
    assert (out / "runs/p0-cubic-r1/meta.json").stat().st_ino == kept
    assert not work_dir(out).exists()


def test_resume_does_not_reuse_a_run_of_other_input(tmp_path):
    out = tmp_path / "sweep"
    cclab.sweep(BASE, grid={"link.rate": ["10Mbps", "20Mbps"]}, out=out, jobs=1)
    # Same run names, another delay: nothing fits, everything runs again.
    cclab.sweep(
        BASE,
        grid={"link.rate": ["10Mbps", "20Mbps"]},
        out=out,
        resume=True,
        **{"link.delay": "30ms"},
    )
    runs = [r for p in read_manifest(out)["points"] for r in p["runs"]]
    assert not any(r["reused"] for r in runs)
    assert 'delay = "30ms"' in (out / "runs/p1-r1/scenario.toml").read_text()


#: Runs of about half a second each, so that a sweep can be killed between runs.
SLOW = """\
    name = "slow"
    duration = "3s"
    seed = 1

    [link]
    rate = "400Mbps"
    delay = "10ms"
    queue = "1bdp"

    [[flows]]
    scheme = "cubic"
    count = 4
"""


def _complete_runs(runs: Path) -> list[str]:
    if not runs.is_dir():
        return []
    # A hidden staging directory may hold its meta.json for a moment before its rename.
    return sorted(
        p.name for p in runs.iterdir() if not p.name.startswith(".") and (p / "meta.json").is_file()
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_resume_after_a_killed_sweep(write_scenario, tmp_path, sig):
    scenario = write_scenario(SLOW)
    out = tmp_path / "sweep"
    args = ["sweep", scenario, "--set", "link.rate=300Mbps,400Mbps,500Mbps,600Mbps", "--runs", "2"]
    process = cclab_process(*args, "--out", out, "--jobs", "1")
    work_runs = work_dir(out) / "runs"
    deadline = time.monotonic() + 60
    while len(_complete_runs(work_runs)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(sig)
    process.communicate(timeout=30)
    finished = _complete_runs(work_runs)
    assert 2 <= len(finished) < 8, finished
    # Nothing looks complete: no sweep directory, only the hidden work directory.
    assert not out.exists()
    assert cclab.runs(root=tmp_path).empty

    resumed = cclab_process(*args, "--out", out, "--jobs", "1", "--resume")
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    runs = {Path(r["dir"]).name: r for p in read_manifest(out)["points"] for r in p["runs"]}
    assert len(runs) == 8 and all(r["status"] == "ok" for r in runs.values())
    # Only the runs that had not finished ran again.
    assert sorted(n for n, r in runs.items() if r["reused"]) == finished
    assert not work_dir(out).exists()


def test_cluster_needs_dask(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with (
        pytest.raises(ClusterError, match=r"pip install 'cclab\[cluster\]'"),
        executor_for("sim", cluster="tcp://127.0.0.1:8786"),
    ):
        pass
    # $CCLAB_CLUSTER stands for --cluster; without either, the local pool (None) is used.
    monkeypatch.setenv("CCLAB_CLUSTER", "tcp://127.0.0.1:8786")
    with pytest.raises(ClusterError, match="needs Dask"), executor_for("sim"):
        pass
    monkeypatch.delenv("CCLAB_CLUSTER")
    with executor_for("sim") as executor:
        assert executor is None


def test_emulator_sweeps_stay_off_a_cluster():
    with (
        pytest.raises(ClusterError, match="one run at a time per machine"),
        executor_for("emu", cluster="tcp://127.0.0.1:8786"),
    ):
        pass


def test_dask_cluster_gives_the_pool_s_results(tmp_path, write_scenario):
    distributed = pytest.importorskip("distributed")
    scenario = write_scenario(
        """\
        name = "sw"
        duration = "1s"
        seed = 3

        [link]
        rate = "12Mbps"
        delivery = "poisson"
        delay = "10ms"
        queue = "1bdp"

        [[flows]]
        scheme = "cubic"
        """
    )
    grid = {"link.rate": ["10Mbps", "20Mbps"], "link.loss": [0.0, 0.01]}
    pool = cclab.sweep(scenario, grid=grid, schemes=["cubic", "bbr"], runs=2, out=tmp_path / "p")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dask = cclab.sweep(
            scenario,
            grid=grid,
            schemes=["cubic", "bbr"],
            runs=2,
            out=tmp_path / "d",
            cluster=client,
        )
    pd.testing.assert_frame_equal(pool, dask)
    # The run directories were written here, from what the workers sent back, and name the
    # scenario as this machine does.
    meta = json.loads((tmp_path / "d/runs/p3-bbr-r2/meta.json").read_text())
    assert meta["complete"] is True and meta["source"] == str(scenario)
    for name in ("summary", "timeseries", "jain", "flows"):
        a = pd.read_parquet(tmp_path / f"p/runs/p3-bbr-r2/{name}.parquet")
        b = pd.read_parquet(tmp_path / f"d/runs/p3-bbr-r2/{name}.parquet")
        pd.testing.assert_frame_equal(a, b)


def test_the_index_lists_sweeps_and_their_swept_values(tmp_path):
    root = tmp_path / "archive"
    cclab.sweep(BASE, grid=GRID, schemes=["cubic"], out=root / "s1", jobs=1)
    cclab.sweep(BASE, grid={"link.loss": [0.0, 0.02]}, out=root / "s2", jobs=1)
    sweeps = cclab.runs(root=root, sql="SELECT * FROM sweeps ORDER BY sweep")
    assert list(sweeps["sweep"]) == ["s1", "s2"]
    assert list(sweeps["axes"].iloc[0]) == ["link.rate", "link.delay"]
    assert list(sweeps["points"]) == [4, 2] and list(sweeps["runs"]) == [4, 2]
    assert json.loads(sweeps["grid"].iloc[1]) == {"link.loss": [0.0, 0.02]}
    # Swept values: in `runs` as a map, and as columns of `sweep_runs`.
    fast = cclab.runs(root=root, where="swept['link.rate'] = '20Mbps'")
    assert sorted(fast["run_id"]) == ["s1/runs/p2-cubic-r1", "s1/runs/p3-cubic-r1"]
    assert set(fast["rate_mbps"]) == {20.0}
    joined = cclab.runs(
        root=root,
        sql='SELECT run_id, point, "link.delay", "link.loss" FROM sweep_runs ORDER BY run_id',
    )
    joined = joined.astype(object).where(joined.notna(), None)
    assert list(joined["link.delay"]) == ["5ms", "20ms", "5ms", "20ms", None, None]
    assert list(joined["link.loss"]) == [None] * 4 + ["0.0", "0.02"]
    assert list(joined["point"]) == [0, 1, 2, 3, 0, 1]


def test_the_report_of_a_sweep(tmp_path):
    out = tmp_path / "sweep"
    grid = {"link.rate": ["10Mbps", "20Mbps"], "link.queue": ["1bdp", "2bdp"]}
    cclab.sweep(BASE, grid=grid, schemes=["cubic", "bbr"], runs=2, out=out, jobs=2)
    figures = tmp_path / "figures"
    page = cclab.write_report(out, figures_dir=figures).read_text()
    # Each metric against each axis (a numeric one and one of categories), the points.
    for key in ("sweep-link-rate", "sweep-link-queue", "sweep-points"):
        assert f'id="fig-{key}"' in page
        assert (figures / f"{key}.png").stat().st_size > 10_000
    # The pooled per-scheme throughput-delay plot and summary would mix the points.
    assert 'id="fig-throughput-delay"' not in page
    assert "Summary per scheme" not in page
    assert "sweep of 16 runs over link.rate, link.queue" in page
    assert "Grid: link.rate = 10Mbps, 20Mbps; link.queue = 1bdp, 2bdp." in page
    # One row per point and scheme, with the swept values.
    assert page.count("<td>1bdp</td>") == 4 and page.count("<td>20Mbps</td>") == 4


def test_the_command_line_errors(write_scenario, tmp_path, cli, monkeypatch):
    scenario = write_scenario(SLOW)
    code, _, err = cli("sweep", scenario, "--set", "link.rat=1Mbps,2Mbps", "--out", tmp_path / "a")
    assert code == 2
    assert "error: grid point 0 (link.rat=1Mbps): link.rat: unknown key `rat`" in err
    assert "did you mean `rate`?" in err
    code, _, err = cli("sweep", scenario, "--set", "link.rate=1Mbps", "--runs", "0")
    assert code == 2 and "error: --runs must be at least 1, not 0" in err
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, _, err = cli("sweep", scenario, "--set", "link.rate=1Mbps", "--cluster", "tcp://h:1")
    assert code == 2 and "pip install 'cclab[cluster]'" in err
    code, _, err = cli("sweep", scenario, "--engine", "emu", "--cluster", "tcp://h:1")
    assert code == 2 and "emulator engine runs one run at a time per machine" in err
    assert not any(p.name != "scenario.toml" for p in tmp_path.iterdir())
