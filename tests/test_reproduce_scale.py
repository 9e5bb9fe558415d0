"""`cclab reproduce scale` scaled down to CI size (`--scale 0.01`: both settings at 100 Mbit/s,
3-3.75 MB, 10-50 flows; 60 s a run) through the sweep layer, every finding beside the published
value. The qualitative findings asserted are those kernel stacks confirmed at the same setting:
`cclab reproduce scale --scale 0.01 --duration 60 --kernel-runs 2` (emulator, Linux 6.18.44 reno,
cubic and bbr; 2026-11-25, load average 8-9), whose figures the comments quote as "kernel"."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from cclab.batch import BatchResult, BatchRun, RunOutcome
from cclab.reproduce_scale import analyse, plan, reproduce_scale

#: Simulated seconds a run: long enough for the shares to settle after the first third (the
#: measurement's warm-up), short enough for CI (about 10 CPU-seconds in all).
DURATION = 60


@pytest.fixture(scope="module")
def rep(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("scale") / "repro"
    rep = reproduce_scale(scale=0.01, duration=DURATION, out=out, workers=2)
    assert (Path(rep.out) / "scale.csv").is_file()
    return rep


@pytest.fixture(scope="module")
def table(rep):  # type: ignore[no-untyped-def]
    return rep.table


def _row(table, finding: str, setting: str, flows: int | None = None):  # type: ignore[no-untyped-def]
    rows = table[(table["finding"] == finding) & (table["setting"] == setting)]
    if flows is not None:
        rows = rows[rows["flows"] == flows]
    assert len(rows) >= 1, (finding, setting, flows)
    return rows.iloc[0]


def test_every_finding_has_a_row_beside_its_published_value(table) -> None:  # type: ignore[no-untyped-def]
    findings = set(table["finding"])
    for f in (
        "F1 C from loss rate",
        "F1 C from halvings",
        "F3 losses per halving",
        "F4 JFI",
        "F4/F5 JFI",
        "F6 BBR share",
        "F7 BBR share",
        "F8 Cubic share",
    ):
        assert f in findings, f
    c = _row(table, "F1 C from halvings", "edge", 10)
    assert c["paper"] == 1.47 and math.isfinite(c["ours"])
    bbr = _row(table, "F6 BBR share", "core")
    assert 0 < bbr["ours"] < 1 and 0 < bbr["model"] < 1


def test_losses_come_in_bursts_of_at_least_one_per_halving(table) -> None:  # type: ignore[no-untyped-def]
    # Every congestion event is caused by at least one drop; drop-tail drops in bursts.
    for setting in ("edge", "core"):
        for _, r in table[
            (table["finding"] == "F3 losses per halving") & (table["setting"] == setting)
        ].iterrows():
            assert r["ours"] >= 1.0, r.to_dict()


def test_kernel_twins_run_only_where_the_emulator_carries_the_setting() -> None:
    from cclab.fidelity import KERNEL_TWIN
    from cclab.reproduce_scale import KERNEL_MAX_RATE_BPS

    p, what = plan(0.01, 10, kernel_runs=2)
    sim = [r for r in p.runs if r.engine == "sim"]
    emu = [r for r in p.runs if r.engine == "emu"]
    # At scale 0.01 both settings run at 100 Mbit/s: every simulator run has two twins.
    assert len(emu) == 2 * len(sim)
    for r in emu:
        info = what[r.name]
        assert info["twin_of"] in {s.name for s in sim} and r.seed in (1, 2)
        schemes = {f["scheme"] for f in r.scenario["flows"]}  # type: ignore[index]
        assert schemes <= set(KERNEL_TWIN.values()), schemes
    # At full scale CoreScale (10 Gbit/s) is beyond the emulator: only EdgeScale has twins.
    p, what = plan(1.0, 10, kernel_runs=1)
    twins = [what[r.name] for r in p.runs if r.engine == "emu"]
    assert twins and all(t["setting"].rate_bps <= KERNEL_MAX_RATE_BPS for t in twins)
    assert all(t["setting"].name == "edge" for t in twins)
    with pytest.raises(ValueError, match="kernel-runs"):
        plan(0.01, 10, kernel_runs=-1)


def test_a_finished_reproduction_resumes_from_its_runs(rep) -> None:  # type: ignore[no-untyped-def]
    # Without --resume an existing directory is refused, naming the way out.
    with pytest.raises(ValueError, match="--resume"):
        reproduce_scale(scale=0.01, duration=DURATION, out=rep.out, workers=2)
    runs = sorted((Path(rep.out) / "runs").glob("*/summary.parquet"))
    before = {p.parent.name: p.stat().st_mtime_ns for p in runs}
    again = reproduce_scale(scale=0.01, duration=DURATION, out=rep.out, workers=2, resume=True)
    # Every run was taken over (hard links keep the files' times), none ran again, and the
    # table is the same.
    after = {
        p.parent.name: p.stat().st_mtime_ns
        for p in (Path(again.out) / "runs").glob("*/summary.parquet")
    }
    assert after == before and len(before) == len(plan(0.01, DURATION)[0].runs)
    pd.testing.assert_frame_equal(again.table, rep.table)


def test_kernel_twins_land_in_the_kernel_column(rep, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The merge of twins' findings into the table, with each twin's directory a copy of its
    simulator run (so the kernel column must equal ours wherever a twin can measure)."""
    copy = tmp_path / "batch"
    shutil.copytree(rep.out, copy)
    p, what = plan(0.01, DURATION, kernel_runs=1)
    outcomes = []
    for order, spec in enumerate(p.runs):
        if "twin_of" in what[spec.name]:
            shutil.copytree(copy / "runs" / what[spec.name]["twin_of"], copy / "runs" / spec.name)
        outcomes.append(RunOutcome(run=BatchRun(order, spec), ok=True, wall_secs=0.0))
    table = analyse(BatchResult(copy, outcomes), what, 0.01, DURATION)
    measured = table["kernel"].notna()
    assert (table.loc[measured, "kernel"] == table.loc[measured, "ours"]).all()
    # Every share and JFI has its twin's figure.
    assert measured[table["finding"].isin(["F4/F5 JFI", "F6 BBR share", "F8 Cubic share"])].all()


def _ours(table, finding: str, setting: str, flows: int | None = None, scheme: str | None = None):  # type: ignore[no-untyped-def]
    rows = table[(table["finding"] == finding) & (table["setting"] == setting)]
    if flows is not None:
        rows = rows[rows["flows"] == flows]
    if scheme is not None:
        rows = rows[rows["scheme"] == scheme]
    assert len(rows) == 1, (finding, setting, flows, scheme)
    return float(rows.iloc[0]["ours"])


def test_cubic_takes_most_of_the_link_from_as_many_newreno_flows(table) -> None:  # type: ignore[no-untyped-def]
    # IMC'21 F8: 0.70-0.80. Kernel here: 0.66 and 0.77 (median 0.72).
    assert _ours(table, "F8 Cubic share", "core") > 0.6


def test_one_bbr_flow_takes_several_fair_shares_and_less_against_cubic(table) -> None:  # type: ignore[no-untyped-def]
    # IMC'21 F6: one BBR flow takes about 40 % against thousands. Here 1 BBR among 11 flows
    # (fair share 0.09); kernel: 0.35-0.38 against NewReno, 0.20-0.24 against Cubic, whose
    # faster window growth keeps more of the deep buffer.
    vs_newreno = _ours(table, "F6 BBR share", "core", scheme="1 bbr vs newreno")
    vs_cubic = _ours(table, "F6 BBR share", "core", scheme="1 bbr vs cubic")
    assert vs_newreno > 2 / 11 and vs_cubic > 2 / 11
    assert vs_cubic < vs_newreno


def test_n_bbr_flows_share_a_deep_buffer_with_as_many_newreno_flows(table) -> None:  # type: ignore[no-untyped-def]
    # IMC'21 F7 reports BBR taking up to 99.9 % at 10 Gbit/s. In a buffer 15 BDPs deep at
    # 100 Mbit/s the kernel's BBR (in-flight capped at 2 BDP per flow) takes 0.42-0.44, not
    # most of the link: the paper's finding does not carry to this setting, and the kernel
    # decides (the table shows both).
    assert 0.3 < _ours(table, "F7 BBR share", "core") < 0.6


def test_c_from_the_loss_rate_falls_as_flows_are_added(table) -> None:  # type: ignore[no-untyped-def]
    # IMC'21 F1/Table 1: C from the loss rate depends on the flow count (3.95 -> 3.24 from 1000
    # to 5000 flows). Kernel here, 10 -> 50 flows: edge 1.69 -> 0.74, core 1.32 -> 0.80.
    for setting in ("edge", "core"):
        c10 = _ours(table, "F1 C from loss rate", setting, 10)
        c50 = _ours(table, "F1 C from loss rate", setting, 50)
        assert c10 > 1.3 * c50, (setting, c10, c50)


def test_newreno_flows_share_fairly_once_settled(table) -> None:  # type: ignore[no-untyped-def]
    # IMC'21 F4: JFI > 0.99 over hours. Kernel here over 40 s, 50 flows: 0.93-0.98.
    for setting in ("edge", "core"):
        assert _ours(table, "F4 JFI", setting, 50) > 0.9
