"""The batch runner (`cclab.batch`) and the engine descriptors: a plan of runs becomes one
archived experiment directory, whoever builds it (an experiment, a reproduction, a comparison)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cclab import reproduce
from cclab.archive_index import experiments, runs
from cclab.batch import (
    Plan,
    PlanError,
    RunSpec,
    SerialExecutor,
    execution_order,
    resolved_overrides,
    run_batch,
)
from cclab.compare import compare, parse_scheme_pairs
from cclab.engines import EMU, ENGINES, SIM, UnknownEngineError, engine_help, engine_named
from cclab.report import load_study, write_report

#: One Cubic flow with a Cubic option, 1 s on a 12 Mbit/s Poisson link.
ONE_FLOW = {
    "name": "batch",
    "duration": "1s",
    "seed": 4,
    "link": {"rate": "12Mbps", "delivery": "poisson", "delay": "5ms", "queue": "1bdp"},
    "flows": [{"scheme": "cubic", "beta": 0.6}],
}


def _plan(*specs: RunSpec, **kwargs) -> Plan:
    return Plan(kind="experiment", name="batch", runs=list(specs), **kwargs)


def test_engine_descriptors_hold_what_callers_used_to_branch_on():
    assert list(ENGINES) == ["sim", "emu"]
    assert engine_named("emu") is EMU and engine_named("sim") is SIM
    assert EMU.serial and EMU.real_time and EMU.needs_root
    assert not (SIM.serial or SIM.real_time or SIM.needs_root)
    assert SIM.available()
    with pytest.raises(UnknownEngineError, match="unknown engine 'ns3'; the engines are sim, emu"):
        engine_named("ns3")
    assert engine_help() == (
        "sim: the deterministic simulator (default); emu: the real-time emulator with real "
        "Linux TCP and programs (needs root)"
    )


def test_scheme_substitution_with_options():
    spec = RunSpec(name="x", scenario=ONE_FLOW, scheme="copa", scheme_options={"mode": "default"})
    # Cubic's `beta` means nothing to Copa; Copa's mode is added to every entry.
    assert resolved_overrides(spec)["flows"] == [{"scheme": "copa", "mode": "default"}]
    assert "flows" not in resolved_overrides(RunSpec(name="y", scenario=ONE_FLOW))


def test_execution_order_is_the_plan_or_a_seeded_shuffle():
    assert execution_order(5, None) == [0, 1, 2, 3, 4]
    shuffled = execution_order(5, 7)
    assert sorted(shuffled) == [0, 1, 2, 3, 4] and shuffled == execution_order(5, 7)


def test_bad_plans_fail_before_anything_runs(tmp_path):
    out = tmp_path / "b"
    twice = [RunSpec(name="same", scenario=ONE_FLOW, seed=s) for s in (1, 2)]
    with pytest.raises(PlanError, match="same repeat"):
        run_batch(_plan(*twice), out)
    with pytest.raises(PlanError, match="unknown engine 'ns3'"):
        run_batch(_plan(RunSpec(name="a", scenario=ONE_FLOW, engine="ns3")), out)
    with pytest.raises(ValueError, match="nosuch"):
        run_batch(_plan(RunSpec(name="a", scenario=ONE_FLOW, scheme="nosuch")), out)
    assert not out.exists() and list(tmp_path.iterdir()) == []


class _Recording(SerialExecutor):
    """An executor plugged in from outside, as a distributed one would be."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def run(self, execute, tasks, observer):
        self.names = [t.planned.name for t in tasks]
        return super().run(execute, tasks, observer)


def test_a_plan_runs_on_the_executor_given_in_its_order_and_records_tags(tmp_path):
    specs = [
        RunSpec(
            name=f"{scheme}-s{seed}",
            scenario=ONE_FLOW,
            seed=seed,
            scheme=scheme,
            tags={"configuration": "c"},
        )
        for scheme in ("cubic", "newreno")
        for seed in (1, 2)
    ]
    executor = _Recording()
    result = run_batch(
        _plan(*specs, random_order=True, order_seed=5, scenario_toml="name = 'batch'\n"),
        tmp_path / "b",
        executor=executor,
    )
    expected = [specs[i].name for i in execution_order(4, 5)]
    assert executor.names == expected
    meta = json.loads((tmp_path / "b" / "experiment.json").read_text())
    assert meta["order_seed"] == 5 and meta["jobs"] == 1
    assert [r["dir"] for r in meta["runs"]] == [f"runs/{n}" for n in expected]
    cubic = next(r for r in meta["runs"] if r["dir"] == "runs/cubic-s2")
    assert (cubic["scheme"], cubic["seed"], cubic["configuration"]) == ("cubic", 2, "c")
    assert (cubic["engine"], cubic["status"]) == ("sim", "ok")
    assert [o.run.name for o in result.outcomes] == expected
    flows = pd.read_parquet(tmp_path / "b" / "runs" / "newreno-s1" / "flows.parquet")
    assert list(flows["scheme"]) == ["newreno"]
    assert (tmp_path / "b" / "scenario.toml").read_text() == "name = 'batch'\n"


def test_an_analysis_that_fails_keeps_the_runs(tmp_path):
    def analyse(batch):
        assert (batch.run_dir(batch.outcomes[0]) / "meta.json").exists()
        (batch.directory / "table.csv").write_text("half\n")
        raise RuntimeError("no table today")

    with pytest.raises(RuntimeError, match="no table today"):
        run_batch(_plan(RunSpec(name="a", scenario=ONE_FLOW)), tmp_path / "b", analyse=analyse)
    meta = json.loads((tmp_path / "b" / "experiment.json").read_text())
    assert meta["complete"] is True and meta["analysis_error"] == "no table today"
    assert meta["runs"][0]["status"] == "ok"


def test_a_reproduction_is_an_archived_reportable_experiment(tmp_path, monkeypatch):
    root = tmp_path / "archive"
    monkeypatch.setenv("CCLAB_RUNS", str(root))
    lines = []
    rep = reproduce.copa_rtt_fairness(schemes=["copa-d"], workers=1, progress=lines.append)
    assert rep.out.parent == root and rep.out.name.endswith("-reproduce-copa-rtt-fairness")
    assert all(f.parent == rep.out and f.exists() for f in rep.files)
    assert [(line["label"], line["seed"]) for line in lines] == [("copa-d", 1)]
    assert lines[0]["jain_median"] == rep.table["jain"].iloc[0]  # one seed: its own median

    (listed,) = experiments().to_dict("records")
    assert (listed["experiment"], listed["kind"], listed["runs"]) == (
        rep.out.name,
        "reproduction",
        1,
    )
    (run,) = runs().to_dict("records")
    assert run["experiment"] == rep.out.name
    assert (run["scheme"], run["repetition"], run["seed"]) == ("copa-d", 1, 1)
    assert run["jain_median"] == pytest.approx(rep.table["jain"].iloc[0])
    flows = pd.read_parquet(rep.out / "runs" / "copa-d-r1" / "flows.parquet")
    assert set(flows["scheme"]) == {"copa"}

    study = load_study(rep.out)
    assert study.schemes == ["copa-d"] and len(study.runs) == 1
    assert write_report(rep.out).exists()


def test_a_reproduction_refuses_a_directory_with_something_in_it(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not an empty directory"):
        reproduce.copa_rtt_fairness(schemes=["copa-d"], out=tmp_path, workers=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_a_comparison_is_an_archived_reportable_experiment(tmp_path, write_scenario, cli):
    # The simulator against itself, two schemes: what `cclab compare` does without root.
    scenario = write_scenario(
        'name = "cmp"\nduration = "1s"\nseed = 3\n[link]\nrate = "12Mbps"\ndelay = "5ms"\n'
        'queue = "1bdp"\n[[flows]]\nscheme = "cubic"\n'
    )
    out = tmp_path / "cmp"
    starts = []
    comparison = compare(
        scenario,
        engines=("sim", "sim"),
        pairs=parse_scheme_pairs("cubic=newreno"),
        runs=2,
        out=out,
        on_start=lambda *a: starts.append(a),
    )
    assert comparison.directory == out
    assert starts == [
        ("sim", "cubic", 1, 2),
        ("sim", "cubic", 2, 2),
        ("sim", "newreno", 1, 2),
        ("sim", "newreno", 2, 2),
    ]
    assert json.loads((out / "compare.json").read_text()) == comparison.to_dict()
    meta = json.loads((out / "experiment.json").read_text())
    assert meta["kind"] == "comparison" and meta["engines"] == ["sim", "sim"]
    assert [r["dir"] for r in meta["runs"]] == [
        "runs/sim-cubic-r1",
        "runs/sim-cubic-r2",
        "runs/sim-newreno-r1",
        "runs/sim-newreno-r2",
    ]
    assert [r["seed"] for r in meta["runs"]] == [3, 4, 3, 4]
    (row,) = comparison.rows
    first = pd.read_parquet(out / "runs" / "sim-cubic-r1" / "summary.parquet")
    assert row.first.throughput_mbps[0] == first[first["flow"].isna()]["throughput_mbps"].iloc[0]
    study = load_study(out)
    assert study.schemes == ["cubic (sim 1)", "newreno (sim 2)"]
    assert [len(study.runs_of(s)) for s in study.schemes] == [2, 2]
    code, _, err = cli("report", out)
    assert code == 0, err
    # The command prints where the comparison went; it refuses an existing --out.
    code, _, err = cli("compare", scenario, "--engines", "sim,sim", "--schemes", "cubic=newreno")
    assert code == 0, err
    assert "comparison directory:" in err
    code, _, err = cli("compare", scenario, "--engines", "sim,sim", "--out", out)
    assert code == 2 and "already exists" in err
