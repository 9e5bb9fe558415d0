"""`cclab experiment`: every scheme over the same path, repeated, as one experiment directory."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cclab.archive import is_complete
from cclab.experiment import (
    ExperimentError,
    PlannedRun,
    flows_for_scheme,
    plan_runs,
    run_experiment,
)

#: Two Cubic flows with a Cubic option, 2 s on a 12 Mbit/s link: seconds of wall time per run.
SHORT = """\
    name = "short"
    duration = "2s"
    seed = 11

    [link]
    rate = "12Mbps"
    delivery = "poisson"
    delay = "10ms"
    queue = "1bdp"

    [[flows]]
    scheme = "cubic"
    count = 2
    every = "500ms"
    beta = 0.6
"""


def test_two_schemes_two_runs_in_parallel(write_scenario, tmp_path, cli):
    scenario = write_scenario(SHORT)
    out = tmp_path / "exp"
    code, stdout, stderr = cli(
        "experiment",
        scenario,
        "--schemes",
        "cubic,newreno",
        "--runs",
        "2",
        "--jobs",
        "2",
        "--random-order",
        "--order-seed",
        "3",
        "--out",
        out,
    )
    assert code == 0, stderr
    assert f"experiment directory: {out}" in stdout
    assert "cubic" in stdout and "newreno" in stdout  # the per-scheme summary
    assert stderr.count("done ") == 4  # one status line per run

    meta = json.loads((out / "experiment.json").read_text())
    assert meta["complete"] is True
    assert meta["schemes"] == ["cubic", "newreno"]
    assert meta["runs_per_scheme"] == 2
    assert meta["base_seed"] == 11
    assert meta["random_order"] is True and meta["order_seed"] == 3
    assert meta["jobs"] == 2
    runs = meta["runs"]
    assert [r["order"] for r in runs] == [0, 1, 2, 3]
    expected_order = [
        (p.scheme, p.repetition)
        for p in plan_runs(["cubic", "newreno"], 2, 11, random_order=True, order_seed=3)
    ]
    assert [(r["scheme"], r["repetition"]) for r in runs] == expected_order
    assert {(r["scheme"], r["repetition"], r["seed"]) for r in runs} == {
        ("cubic", 1, 11),
        ("cubic", 2, 12),
        ("newreno", 1, 11),
        ("newreno", 2, 12),
    }
    for r in runs:
        assert r["status"] == "ok"
        run_dir = out / r["dir"]
        assert is_complete(run_dir)
        flows = pd.read_parquet(run_dir / "flows.parquet")
        assert list(flows["scheme"]) == [r["scheme"]] * 2
        run_meta = json.loads((run_dir / "meta.json").read_text())
        assert run_meta["seed"] == r["seed"]
        assert run_meta["command"][0] == "cclab"
    # Same seed, same scheme → the same run; different seeds give different Poisson paths.
    s1 = pd.read_parquet(out / "runs/cubic-r1/summary.parquet")
    s2 = pd.read_parquet(out / "runs/cubic-r2/summary.parquet")
    assert not s1.equals(s2)
    assert (out / "scenario.toml").read_text().startswith('name = "short"')
    assert not list(tmp_path.glob(".*partial*"))


def test_plan_orders():
    plain = plan_runs(["a", "b"], 3, 5)
    assert [(p.scheme, p.repetition, p.seed) for p in plain] == [
        ("a", 1, 5),
        ("a", 2, 6),
        ("a", 3, 7),
        ("b", 1, 5),
        ("b", 2, 6),
        ("b", 3, 7),
    ]
    shuffled = plan_runs(["a", "b"], 3, 5, random_order=True, order_seed=1)
    assert shuffled == plan_runs(["a", "b"], 3, 5, random_order=True, order_seed=1)
    assert sorted((p.scheme, p.repetition) for p in shuffled) == sorted(
        (p.scheme, p.repetition) for p in plain
    )
    assert [p.order for p in shuffled] == list(range(6))
    assert PlannedRun(0, "copa", 2, 9).name == "copa-r2"
    assert PlannedRun(0, "kernel:cubic", 1, 9).name == "kernel_cubic-r1"


def test_scheme_options_do_not_follow_a_scheme_change(write_scenario):
    scenario = write_scenario(SHORT)
    (cubic,) = flows_for_scheme(scenario, "cubic")
    assert cubic["beta"] == 0.6
    (newreno,) = flows_for_scheme(scenario, "newreno")
    assert newreno["scheme"] == "newreno"
    assert "beta" not in newreno
    assert newreno["count"] == 2 and newreno["every"] == "500ms"


def test_bad_input_fails_before_anything_runs(write_scenario, tmp_path, cli):
    scenario = write_scenario(SHORT)
    out = tmp_path / "exp"
    code, _, stderr = cli("experiment", scenario, "--schemes", "cubic,nosuch", "--out", out)
    assert code == 2
    assert "nosuch" in stderr
    assert not out.exists()
    code, _, stderr = cli("experiment", scenario, "--schemes", "cubic,cubic")
    assert code == 2
    assert "more than once" in stderr
    code, _, stderr = cli("experiment", scenario, "--schemes", "cubic", "--runs", "0")
    assert code == 2


def test_an_interrupted_experiment_leaves_nothing(write_scenario, tmp_path):
    class StopAfterFirst:
        def started(self, planned):
            pass

        def progress(self, planned, sim_ns, duration_ns):
            pass

        def finished(self, outcome):
            raise KeyboardInterrupt

    out = tmp_path / "exp"
    with pytest.raises(KeyboardInterrupt):
        run_experiment(
            write_scenario(SHORT),
            ["cubic", "newreno"],
            runs=1,
            jobs=1,
            out=out,
            observer=StopAfterFirst(),
        )
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["scenario.toml"]


def test_emulator_engine_is_refused_when_absent(write_scenario, tmp_path, monkeypatch):
    import cclab.experiment as experiment

    monkeypatch.setattr(experiment, "_emu_supported", lambda: False)
    with pytest.raises(ExperimentError, match="no emulator engine"):
        run_experiment(write_scenario(SHORT), ["cubic"], runs=1, engine="emu", out=tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_emulator_runs_are_delegated_one_at_a_time(write_scenario, tmp_path, monkeypatch):
    # The emulator needs root and network namespaces; here its entry point is replaced by the
    # simulator, to check what the experiment hands it: engine="emu", in this process, in turn.
    import os

    import cclab.experiment as experiment

    real_run, real_validate = experiment.run, experiment.validate
    calls = []

    def fake_run(*args, engine="sim", **kwargs):
        calls.append((engine, os.getpid()))
        return real_run(*args, **kwargs)

    def fake_validate(*args, engine="sim", **kwargs):
        return real_validate(*args, **kwargs)

    monkeypatch.setattr(experiment, "_emu_supported", lambda: True)
    monkeypatch.setattr(experiment, "run", fake_run)
    monkeypatch.setattr(experiment, "validate", fake_validate)
    out = run_experiment(
        write_scenario(SHORT),
        ["cubic", "newreno"],
        runs=1,
        engine="emu",
        jobs=4,
        out=tmp_path / "x",
    )
    assert calls == [("emu", os.getpid())] * 2
    meta = json.loads((out / "experiment.json").read_text())
    assert meta["engine"] == "emu" and meta["jobs"] == 1


def test_failed_runs_are_recorded(write_scenario, tmp_path, monkeypatch):
    import cclab.experiment as experiment

    real_execute = experiment._execute

    def flaky(task, events=None):
        if task.planned.scheme == "newreno":
            raise RuntimeError("disk on fire")
        return real_execute(task, events)

    monkeypatch.setattr(experiment, "_execute", flaky)
    out = run_experiment(
        write_scenario(SHORT), ["cubic", "newreno"], runs=1, jobs=1, out=tmp_path / "x"
    )
    runs = {r["scheme"]: r for r in json.loads((out / "experiment.json").read_text())["runs"]}
    assert runs["cubic"]["status"] == "ok"
    assert runs["newreno"]["status"] == "failed"
    assert runs["newreno"]["error"] == "disk on fire"
    assert not Path(out / runs["newreno"]["dir"]).exists()


def test_a_scenario_given_as_a_dict(tmp_path):
    scenario = {
        "name": "inline",
        "duration": "1s",
        "link": {"rate": "12Mbps", "delay": "5ms", "queue": "1bdp"},
        "flows": [{"scheme": "cubic", "count": 2}],
    }
    out = run_experiment(scenario, ["newreno", "cubic"], runs=1, jobs=1, out=tmp_path / "x")
    meta = json.loads((out / "experiment.json").read_text())
    assert meta["scenario"] == "<scenario dict>"
    flows = pd.read_parquet(out / "runs" / "newreno-r1" / "flows.parquet")
    assert list(flows["scheme"]) == ["newreno", "newreno"]
