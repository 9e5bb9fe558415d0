"""The fidelity suite (`cclab fidelity`, cclab.fidelity): its scenarios are the issue's, its
table's arithmetic and verdicts are right, and its quick form runs on both engines (root: CI
has it) and writes the table, the report and a sanity-bounded comparison."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from cclab import _core
from cclab.api import validate
from cclab.data import SCENARIOS, package_data, shipped_scenarios
from cclab.experiment_dir import read_experiment
from cclab.fidelity import (
    COPA_FAIRNESS,
    FIDELITY_DIR,
    KERNEL_TWIN,
    MIXES,
    QUICK,
    REFEREE_TOLERANCE_US,
    SCHEMES,
    SIM_ONLY,
    SIM_ONLY_MIX,
    SUITE_FILE,
    TABLE_COLUMNS,
    TABLE_FILE,
    emulator_flows,
    fidelity_table,
    interval_text,
    pooled_table,
    replication_interval,
    share_ratio_interval,
    suite,
    undecided,
)

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/net/tun").exists(),
    reason="the emulator needs root and /dev/net/tun",
)

#: The table's columns, in order (the Parquet file's schema).
COLUMNS = [name for name, _ in TABLE_COLUMNS]


def _flows(name: str) -> list[dict]:
    with package_data(SCENARIOS, FIDELITY_DIR, f"{name}.toml").open("rb") as f:
        return tomllib.load(f)["flows"]


def _counts(name: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in _flows(name):
        counts[entry["scheme"]] = counts.get(entry["scheme"], 0) + int(entry.get("count", 1))
    return counts


def test_the_suite_is_every_shipped_scenario_and_the_issues_mixes() -> None:
    names = [sc.name for sc in suite()]
    shipped = [p.stem for p in shipped_scenarios()]
    assert names[: len(shipped)] == shipped
    assert names[len(shipped) :] == [f"{FIDELITY_DIR}/{m}" for m in MIXES]
    # Every file of scenarios/fidelity/ is in the suite (none forgotten, none stale).
    assert sorted(p.stem for p in shipped_scenarios(FIDELITY_DIR)) == sorted(MIXES)
    # The issue's mixes, flow for flow.
    assert _counts("bbr-vs-cubic-1bdp") == {"bbr": 1, "cubic": 10}
    assert _counts("bbr-vs-cubic-8bdp") == {"bbr": 1, "cubic": 50}
    assert _counts("cubic-vs-newreno-deep") == {"cubic": 10, "newreno": 10}
    assert _counts("rtt-mix") == {"newreno": 2, "cubic": 2}
    three = _flows("three-staggered")
    assert three[0]["count"] == 3 and three[0]["every"] == "10s"
    # 1 BDP and 8 BDP as the issue says.
    filled = {m: tomllib.loads(validate(f"{FIDELITY_DIR}/{m}")) for m in MIXES}
    assert filled["bbr-vs-cubic-1bdp"]["link"]["queue"] == "1bdp"
    assert filled["bbr-vs-cubic-8bdp"]["link"]["queue"] == "8bdp"
    # RTTs of the RTT mix: 20 ms (the link's 2 x 10 ms) and 80 ms (+ 60 ms), each scheme both.
    extra = _core.parse_duration
    rtts = {(e["scheme"], extra(e.get("extra_rtt", "0ms"))) for e in _flows("rtt-mix")}
    assert rtts == {(s, x) for s in ("newreno", "cubic") for x in (0, 60_000_000)}
    links = {
        "single-constant": ("constant", None),
        "single-poisson": ("poisson", None),
        "single-cellular": (None, "Verizon-LTE-short.down"),
    }
    for name, (delivery, trace) in links.items():
        link = filled[name]["link"]
        if trace is None:
            assert link["delivery"] == delivery
        else:
            assert Path(link["trace"]).name == trace
        assert len(_flows(name)) == 1


def test_only_keeps_the_scenarios_named_in_the_suites_order() -> None:
    only = suite(only=["fidelity/rtt-mix", "copa-fairness"])
    assert [sc.name for sc in only] == ["copa-fairness", "fidelity/rtt-mix"]
    assert only[0].schemes == SCHEMES and only[1].is_mix
    quick = suite(quick=True, schemes=["cubic"], only=["fidelity/single-constant"])
    assert [(sc.name, sc.schemes) for sc in quick] == [("fidelity/single-constant", ("cubic",))]


def test_every_run_of_the_suite_validates_on_its_engine() -> None:
    """Each scheme test's schemes and each mix's kernel twins are what the emulator accepts
    (validation reads the kernel's list of congestion controls; no root needed)."""
    for sc in suite():
        for scheme in sc.schemes:
            validate(sc.path, **{"flows": [{**f, "scheme": scheme} for f in _raw(sc.path)]})
            if scheme in KERNEL_TWIN:
                twin = [{**f, "scheme": KERNEL_TWIN[scheme]} for f in _raw(sc.path)]
                validate(sc.path, engine="emu", flows=twin)
        if sc.is_mix:
            flows = emulator_flows(sc.path)
            assert flows is not None, sc.name
            assert {f["scheme"] for f in flows} <= set(KERNEL_TWIN.values())
            validate(sc.path, engine="emu", flows=flows)


def _raw(path: Path) -> list[dict]:
    with path.open("rb") as f:
        return tomllib.load(f)["flows"]


def _record(scenario: str, scheme: str, engine: str, **figures: float) -> dict:
    return {
        "scenario": scenario,
        "scheme": scheme,
        "engine": engine,
        "runs_as": KERNEL_TWIN.get(scheme, scheme) if engine == "emu" else scheme,
        "repetition": 1,
        "seed": 1,
        "run": "r",
        "late_p99_ms": 0.1 if engine == "emu" else math.nan,
        **figures,
    }


def test_the_table_computes_the_errors_and_the_verdicts() -> None:
    rec = _record
    CF = COPA_FAIRNESS  # noqa: N806
    records = [
        # A scheme test: sim 10 % faster, 20 % less delay → replication error 15 %.
        rec("a", "cubic", "sim", throughput_mbps=11, delay_p95_ms=8, jain_median=1, share=1),
        rec("a", "cubic", "emu", throughput_mbps=10, delay_p95_ms=10, jain_median=1, share=1),
        # Two runs of BBR: the medians of (10, 20) and (10, 30).
        rec("a", "bbr", "sim", throughput_mbps=10, delay_p95_ms=10, jain_median=1, share=1),
        rec("a", "bbr", "sim", throughput_mbps=20, delay_p95_ms=10, jain_median=1, share=1),
        rec("a", "bbr", "emu", throughput_mbps=10, delay_p95_ms=10, jain_median=1, share=1),
        rec("a", "bbr", "emu", throughput_mbps=30, delay_p95_ms=10, jain_median=1, share=1),
        # A scheme the kernel lacks: one simulator row, no verdict.
        rec("a", "copa", "sim", throughput_mbps=9, delay_p95_ms=5, jain_median=1, share=1),
        # A mix: shares 0.6/0.4 against 0.52/0.48 (15 % and 17 % off), Jain 0.9 vs 0.86.
        rec("m", "bbr", "sim", throughput_mbps=60, delay_p95_ms=20, jain_median=0.9, share=0.6),
        rec("m", "cubic", "sim", throughput_mbps=40, delay_p95_ms=20, jain_median=0.9, share=0.4),
        rec("m", "bbr", "emu", throughput_mbps=52, delay_p95_ms=20, jain_median=0.86, share=0.52),
        rec("m", "cubic", "emu", throughput_mbps=48, delay_p95_ms=20, jain_median=0.86, share=0.48),
        # Copa's fairness test: BBR's Jain within 0.05 but a 5.6 % replication error.
        rec(CF, "bbr", "sim", throughput_mbps=4, delay_p95_ms=20, jain_median=0.7, share=1),
        rec(CF, "bbr", "emu", throughput_mbps=4, delay_p95_ms=18, jain_median=0.74, share=1),
        # A mix with a scheme the kernel lacks: simulator rows only, each saying why.
        rec("n", "copa", "sim", throughput_mbps=50, delay_p95_ms=20, jain_median=0.9, share=0.5),
        rec("n", "cubic", "sim", throughput_mbps=50, delay_p95_ms=20, jain_median=0.9, share=0.5),
    ]  # fmt: skip
    table = fidelity_table(records, mixes={"m", "n"})
    assert list(table.columns) == COLUMNS
    # The emulator's timing error is the emulator's alone.
    assert table[table["engine"] == "emu"]["late_p99_ms"].eq(0.1).all()
    assert table[table["engine"] == "sim"]["late_p99_ms"].isna().all()
    by = table.set_index(["scenario", "scheme", "engine"])
    cubic = by.loc[("a", "cubic", "sim")]
    assert math.isclose(cubic["throughput_error"], 0.1)
    assert math.isclose(cubic["delay_error"], 0.2)
    assert math.isclose(cubic["replication_error"], 0.15)
    assert not cubic["passed"] and cubic["target"] == "replication ≤ 3%"
    assert by.loc[("a", "cubic", "emu")]["replication_error"] == cubic["replication_error"]
    bbr = by.loc[("a", "bbr", "sim")]
    assert bbr["runs"] == 2 and bbr["throughput_mbps"] == 15
    assert by.loc[("a", "bbr", "emu")]["throughput_mbps"] == 20
    assert math.isclose(bbr["throughput_error"], 0.25)
    copa = table[(table["scenario"] == "a") & (table["scheme"] == "copa")]
    assert list(copa["engine"]) == ["sim"]
    assert copa["note"].iloc[0] == SIM_ONLY.format(scheme="copa")
    assert pd.isna(copa["passed"].iloc[0]) and math.isnan(copa["replication_error"].iloc[0])
    sim_only_mix = table[table["scenario"] == "n"]
    assert list(sim_only_mix["engine"]) == ["sim", "sim"]
    assert list(sim_only_mix["note"]) == [SIM_ONLY.format(scheme="copa"), SIM_ONLY_MIX]
    assert sim_only_mix["passed"].isna().all()
    mix = by.loc[("m", "bbr", "sim")]
    assert mix["test"] == "mix" and mix["target"] == "share error ≤ 5%"
    assert math.isclose(mix["share_error"], 0.08 / 0.52) and not mix["passed"]
    assert math.isclose(mix["share_diff"], 0.08)
    # One run each: no spread to compare, so no spread target.
    assert math.isnan(mix["share_sd"]) and math.isnan(mix["spread_factor"])
    assert math.isclose(by.loc[("m", "cubic", "sim")]["share_diff"], -0.08)
    assert math.isclose(mix["jain_error"], 0.04)
    fair = by.loc[(COPA_FAIRNESS, "bbr", "sim")]
    assert fair["target"] == "replication ≤ 3%; Jain within 0.05"
    assert math.isclose(fair["jain_error"], 0.04)
    assert fair["replication_error"] > 0.03 and not fair["passed"]


def test_the_spread_target_compares_the_engines_run_to_run_spread() -> None:
    def mix(name: str, sim: list[float], emu: list[float]) -> list[dict]:
        return [
            _record(name, scheme, engine, throughput_mbps=1, delay_p95_ms=1, jain_median=1, share=x)
            for engine, shares in (("sim", sim), ("emu", emu))
            for share in shares
            for scheme, x in (("bbr", share), ("cubic", 1 - share))
        ]

    # BBR's shares: sd 0.02 in the simulator, 0.03 on the kernel (a factor 1.5: met); medians
    # 0.50 against 0.51 (2 % off: met).
    alike = mix("alike", [0.48, 0.50, 0.52], [0.48, 0.51, 0.54])
    # The simulator's runs all alike (phase-locked) against a kernel that varies.
    locked = mix("locked", [0.5, 0.5, 0.5], [0.48, 0.50, 0.52])
    # Two runs: too few for a spread.
    two = mix("two", [0.4, 0.6], [0.5, 0.5])
    table = fidelity_table(alike + locked + two, mixes={"alike", "locked", "two"})
    by = table.set_index(["scenario", "scheme", "engine"])
    row = by.loc[("alike", "bbr", "sim")]
    assert math.isclose(row["share_sd"], 0.02) and math.isclose(
        by.loc[("alike", "bbr", "emu")]["share_sd"], 0.03
    )
    assert math.isclose(row["spread_factor"], 1.5)
    assert row["target"] == "share error ≤ 5%; spread within 2x" and row["passed"]
    row = by.loc[("locked", "bbr", "sim")]
    assert row["share_sd"] == 0 and row["spread_factor"] == math.inf
    assert row["share_error"] == 0 and not row["passed"]
    row = by.loc[("two", "bbr", "sim")]
    assert row["target"] == "share error ≤ 5%" and row["passed"]


def test_a_share_verdict_says_whether_the_runs_could_tell_it() -> None:
    def mix(name: str, sim: list[float], emu: list[float]) -> list[dict]:
        return [
            _record(
                name, "cubic", engine, throughput_mbps=1, delay_p95_ms=1, jain_median=1, share=x
            )
            for engine, shares in (("sim", sim), ("emu", emu))
            for x in shares
        ]

    # The RTT mix's race on both engines: each run ends near 0.37 or near 0.50, and the medians
    # fall on whichever mode three of five runs drew (0.37 against 0.49: 24 % off).
    raced = mix("raced", [0.36, 0.36, 0.37, 0.50, 0.52], [0.37, 0.38, 0.49, 0.50, 0.51])
    # Runs that vary by a thousandth: the interval is tight, inside 5 % or well outside it.
    tight = mix("tight", [0.499, 0.500, 0.501], [0.500, 0.501, 0.502])
    off = mix("off", [0.599, 0.600, 0.601], [0.499, 0.500, 0.501])
    two = mix("two", [0.4, 0.6], [0.5, 0.5])
    table = fidelity_table(raced + tight + off + two, mixes={"raced", "tight", "off", "two"})
    by = table.set_index(["scenario", "engine"])
    row = by.loc[("raced", "sim")]
    assert math.isclose(row["share_error"], 0.12 / 0.49) and not row["passed"]
    # Either mode's median against either: from 0.36/0.51 to 0.52/0.37.
    assert row["share_ratio_low"] < 0.8 and row["share_ratio_high"] > 1.3
    assert not row["decided"]  # pd.NA would raise here
    row = by.loc[("tight", "sim")]
    assert 0.99 < row["share_ratio_low"] <= row["share_ratio_high"] < 1.01
    assert row["passed"] and row["decided"]
    row = by.loc[("off", "sim")]
    assert 1.19 < row["share_ratio_low"] <= row["share_ratio_high"] < 1.21
    assert not row["passed"] and row["decided"]
    # Too few runs for an interval: no verdict on the runs either.
    row = by.loc[("two", "sim")]
    assert math.isnan(row["share_ratio_low"]) and pd.isna(row["decided"])
    # The same runs give the same interval (a fixed generator): a table is reproducible.
    assert share_ratio_interval([0.36, 0.37, 0.5], [0.4, 0.5, 0.38]) == share_ratio_interval(
        [0.36, 0.37, 0.5], [0.4, 0.5, 0.38]
    )


def test_a_replication_verdict_says_whether_the_runs_could_tell_it() -> None:
    def scheme_test(name: str, sim: list[float], emu: list[float]) -> list[dict]:
        # Throughput alike on both engines; the p95 delays as given.
        return [
            _record(
                name, "cubic", engine, throughput_mbps=5.4, delay_p95_ms=p95, jain_median=1, share=1
            )
            for engine, delays in (("sim", sim), ("emu", emu))
            for p95 in delays
        ]

    # Cubic on the cellular trace: the simulator's seeds all in the kernel's low mode (363
    # ms), the kernel's runs in three modes (360, 410, 440 ms). As three kernel runs fall, the
    # medians' p95 error moves from under 1 % to 17 %, the replication error (its mean with
    # the throughput's 0) to ~9 %: no verdict either way.
    modes = scheme_test("modes", [363, 363, 363], [361, 410, 440])
    # Runs that vary by a millisecond, 1 % apart: met whatever the next runs give.
    tight = scheme_test("tight", [101, 102, 101.5], [100, 100.5, 101])
    # 20 % apart: missed whatever they give.
    off = scheme_test("off", [120, 121, 120.5], [100, 100.5, 101])
    two = scheme_test("two", [100, 120], [100, 100])
    table = fidelity_table(modes + tight + off + two, mixes=set())
    by = table.set_index(["scenario", "engine"])
    row = by.loc[("modes", "sim")].to_dict()
    assert row["target"] == "replication ≤ 3%"
    assert row["replication_low"] < 0.01 and row["replication_high"] > 0.08
    assert not row["decided"] and interval_text(row).endswith("%")
    row = by.loc[("tight", "sim")].to_dict()
    assert 0 <= row["replication_low"] <= row["replication_error"] <= row["replication_high"] < 0.03
    assert row["passed"] and row["decided"]
    row = by.loc[("off", "sim")].to_dict()
    assert row["replication_low"] > 0.03 and not row["passed"] and row["decided"]
    row = by.loc[("two", "sim")].to_dict()
    assert math.isnan(row["replication_low"]) and pd.isna(row["decided"])
    assert interval_text(row) == "-"
    # Seed-matched runs (repetition k on both engines) that the seed moves by a third and that
    # agree seed by seed within 1 %: drawn in pairs, met for certain; drawn apart, the
    # medians' draws part by more than 3 %.
    sim, emu = [232, 257, 244, 295, 307, 231, 256, 273], [234, 255, 245, 293, 309, 233, 255, 271]
    paired = fidelity_table(
        [
            {**r, "repetition": k}
            for runs in (scheme_test("seeds", sim, []), scheme_test("seeds", [], emu))
            for k, r in enumerate(runs, 1)
        ],
        mixes=set(),
    ).set_index("engine")
    assert paired.loc["sim", "replication_high"] < 0.03 and paired.loc["sim", "decided"]
    apart = fidelity_table(scheme_test("seeds", sim, emu), mixes=set()).set_index("engine")
    assert apart.loc["sim", "replication_high"] > 0.03 and not apart.loc["sim", "decided"]
    # A table written before scheme tests had intervals: its share verdict still reads.
    old = {"share_ratio_low": 0.9, "share_ratio_high": 1.1, "share_decided": False}
    assert undecided(old) and interval_text(old) == "0.90 to 1.10"
    # A mix has no replication interval (its target is the share's).
    assert math.isnan(replication_interval([], [(1.0, 1.0)] * 3)[0])


def test_fidelity_refuses_bad_arguments(cli, tmp_path, capsys) -> None:
    code, _, err = cli("fidelity", "--runs", "0")
    assert code == 2 and "--runs must be at least 1" in err
    code, _, err = cli("fidelity", "--seed", "-1")
    assert code == 2 and "--seed must be 0 or more, not -1" in err
    code, _, err = cli("fidelity", "--pool", tmp_path, "--seed", "3")
    assert code == 2 and "drop --seed" in err
    code, _, err = cli("fidelity", "--schemes", "cubic,reno")
    assert code == 2 and "unknown scheme reno" in err and "newreno" in err
    code, _, err = cli("fidelity", "--only", "fidelity/rtt-mix,fidelity/rttmix")
    assert code == 2 and "fidelity/rttmix is not in the suite" in err
    assert "did you mean fidelity/rtt-mix?" in err and "pantheon-1flow" in err
    with pytest.raises(SystemExit) as exited:  # argparse's own error
        cli("fidelity", "--duration", "soon")
    assert exited.value.code == 2
    assert 'cannot read "soon" as a duration' in capsys.readouterr().err
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    code, _, err = cli("fidelity", "--quick", "--out", full)
    assert code == 2 and "not empty" in err


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    """`cclab fidelity --quick` once, as a child process (the real entry point)."""
    out = tmp_path_factory.mktemp("fidelity") / "quick"
    env = dict(os.environ, COLUMNS="200", CCLAB_RUNS=str(out.parent / "archive"))
    done = subprocess.run(
        [sys.executable, "-m", "cclab", "fidelity", "--quick", "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done, out


@needs_root
def test_quick_form_writes_the_fidelity_directory(quick) -> None:
    done, out = quick
    assert done.returncode == 0, done.stderr
    meta = read_experiment(out)
    assert meta is not None and meta["kind"] == "fidelity" and meta["form"] == "quick"
    assert {r["status"] for r in meta["runs"]} == {"ok"}
    assert {r["engine"] for r in meta["runs"]} == {"sim", "emu"}
    table = pd.read_parquet(out / TABLE_FILE)
    assert list(table.columns) == COLUMNS
    # Every quick scenario and scheme on both engines, Copa on the simulator only.
    for name, schemes in QUICK:
        mine = table[table["scenario"] == name]
        for scheme in schemes:
            engines = set(mine[mine["scheme"] == scheme]["engine"])
            assert engines == ({"sim"} if scheme not in KERNEL_TWIN else {"sim", "emu"}), scheme
        if not schemes:  # the mix: each scheme's share, summing to 1 on each engine
            assert set(mine["scheme"]) == {"bbr", "cubic"}
            for engine, rows in mine.groupby("engine"):
                assert math.isclose(rows["share"].sum(), 1.0, abs_tol=1e-9), engine
            assert set(mine[mine["engine"] == "emu"]["runs_as"]) == {"kernel:bbr", "kernel:cubic"}
    assert (table[table["scheme"] == "copa"]["note"] == SIM_ONLY.format(scheme="copa")).all()
    suite_file = json.loads((out / SUITE_FILE).read_text())
    checked = table[(table["engine"] == "sim") & table["passed"].notna()]
    # cubic and bbr on the constant link, cubic on the cellular one, and the mix's two schemes.
    assert suite_file["checked"] == len(checked) == 3 + 2
    # The printed summary and the report.
    assert "fidelity suite (quick)" in done.stdout
    assert "sim only" in done.stdout
    page = (out / "report.html").read_text()
    assert "Fidelity: the simulator against Linux TCP" in page and "kernel:bbr" in page


@needs_root
def test_quick_form_agrees_on_a_single_cubic_flow(quick) -> None:
    """The sanity bound: one Cubic flow alone on a constant 46 Mbit/s, 20 ms RTT, 1-BDP link
    must give the same throughput and p95 delay on both engines within 10 %. Both fill the
    link (a 1-BDP queue keeps Cubic's window above the BDP after a halving) and sit in the
    same queue, and issue 4 measured 0.1 % and 0.9 % apart over 30 s; the 5 s of the quick
    form give slow start more weight and a loaded CI machine delays the emulator's packets
    (its timing error p99 reached 1 ms here), so 10 % is loose for a faithful model but
    fails a simulator whose Cubic, queue or link are wrong (a halved window or a missing
    queue moves p95 by a third, the 1-BDP queue's share of the 30 ms)."""
    _, out = quick
    table = pd.read_parquet(out / TABLE_FILE)
    row = table[
        (table["scenario"] == "fidelity/single-constant")
        & (table["scheme"] == "cubic")
        & (table["engine"] == "sim")
    ].iloc[0]
    assert row["throughput_error"] <= 0.10, row.to_dict()
    assert row["delay_error"] <= 0.10, row.to_dict()


@needs_root
def test_pooled_suites_take_every_kernel_run_and_the_first_suites_simulator(
    quick, cli, tmp_path
) -> None:
    """`cclab fidelity --pool`: the same quick suite given three times is three kernel runs a
    row against the first directory's one simulator run, with the medians unchanged (the
    same runs), read without writing anything."""
    _, out = quick
    one = pd.read_parquet(out / TABLE_FILE).set_index(["scenario", "scheme", "engine"])
    before = sorted(p.name for p in out.iterdir())
    pooled = pooled_table([out, out, out])
    table = pooled.table.set_index(["scenario", "scheme", "engine"])
    assert set(table.index) == set(one.index)
    for key, row in table.iterrows():
        assert row["runs"] == one.loc[key, "runs"] * (3 if key[2] == "emu" else 1), key
        assert row["delay_p95_ms"] == one.loc[key, "delay_p95_ms"], key
    assert pooled.pooled_from == 3 and sorted(p.name for p in out.iterdir()) == before
    # A bound every emulator run exceeds leaves the simulator's rows alone, and says so.
    emu_runs = sum(1 for p in (out / "runs").iterdir() if p.name.startswith("emu-"))
    strict = pooled_table([out, out, out], max_late_ms=-1.0)
    assert set(strict.table["engine"]) == {"sim"}
    assert f"{3 * emu_runs} emulator run(s) left out" in " ".join(strict.notes), strict.notes
    assert pooled_table([out], max_late_ms=1e9).table.equals(pooled_table([out]).table)
    code, stdout, _ = cli("fidelity", "--pool", out, out)
    assert code == 0 and "fidelity runs of 2 directories pooled" in stdout
    code, _, err = cli("fidelity", "--pool", out, "--runs", "3")
    assert code == 2 and "drop --runs" in err
    code, _, err = cli("fidelity", "--max-late", "1")
    assert code == 2 and "give it with --pool" in err
    code, _, err = cli("fidelity", "--pool", out, tmp_path)
    assert code == 2 and f"{tmp_path} is not a finished fidelity directory" in err
    # The simulator's side alone (`--sim-only`), pooled first with the quick suite's kernel
    # runs: the same seeds give the same simulator runs, so the same table as the suite's own.
    sims = tmp_path / "sims"
    code, _, err = cli("fidelity", "--quick", "--sim-only", "--out", sims)
    assert code == 0, err
    alone = pd.read_parquet(sims / TABLE_FILE)
    assert set(alone["engine"]) == {"sim"} and alone["note"].str.startswith("sim only").all()
    pooled = pooled_table([sims, out])
    both = pooled.table.set_index(["scenario", "scheme", "engine"])
    columns = ["throughput_mbps", "delay_p95_ms", "replication_error", "passed"]
    assert both[columns].equals(one[columns].loc[both.index])
    assert not any("different seeds" in note for note in pooled.notes)
    # Two simulator seeds against the kernel's one: the note says the sets differ.
    code, _, err = cli(
        "fidelity", "--quick", "--sim-only", "--runs", "2", "--out", tmp_path / "sims2"
    )
    assert code == 0, err
    notes = pooled_table([tmp_path / "sims2", out]).notes
    assert any("seeds 1-2 against seed 1" in note for note in notes), notes
    # From another seed (`--seed`): new seeds, recorded in the suite's settings.
    code, _, err = cli("fidelity", "--quick", "--sim-only", "--seed", "7", "--out", tmp_path / "s7")
    assert code == 0, err
    assert json.loads((tmp_path / "s7" / SUITE_FILE).read_text())["first_seed"] == 7
    notes = pooled_table([tmp_path / "s7", out]).notes
    assert any("seed 7 against seed 1" in note for note in notes), notes


def test_the_plan_caps_durations_seeds_repetitions_and_maps_to_kernel_twins() -> None:
    from cclab.fidelity import _pairs, _specs

    specs, notes = _specs(_pairs(suite(schemes=["cubic", "copa"])), 2, "5s")
    by_name = {s.name: s for s in specs}
    assert len(by_name) == len(specs)  # run names are unique
    # A schedule that fits is capped; staggered ones keep their length and say so.
    assert by_name["sim-fidelity-single-constant-cubic-r1"].overrides == {"duration": "5s"}
    assert by_name["sim-copa-fairness-cubic-r1"].overrides == {}
    kept = {n.split(" ")[0] for n in notes}
    assert kept == {"copa-fairness", "pantheon-3flows", "fidelity/three-staggered"}
    # Repetition k runs seed + k - 1 on both engines; from --seed S, S + k - 1 (new seeds for
    # a second suite to pool with the first).
    later, _ = _specs(_pairs(suite(schemes=["cubic"])), 2, "5s", first_seed=41)
    for engine in ("sim", "emu"):
        seeds = [by_name[f"{engine}-fidelity-single-constant-cubic-r{k}"].seed for k in (1, 2)]
        assert seeds == [1, 2]
        named = {s.name: s.seed for s in later}
        assert [named[f"{engine}-fidelity-single-constant-cubic-r{k}"] for k in (1, 2)] == [41, 42]
    # The emulator referees with every packet on time; the simulator has no tolerance.
    assert {s.tolerance_us for s in specs if s.engine == "emu"} == {REFEREE_TOLERANCE_US}
    assert {s.tolerance_us for s in specs if s.engine == "sim"} == {None}
    # The kernel's twin on the emulator; Copa only on the simulator.
    assert by_name["emu-pantheon-1flow-cubic-r1"].scheme == "kernel:cubic"
    assert "sim-pantheon-1flow-copa-r1" in by_name
    assert not [s for s in specs if s.engine == "emu" and s.tags["row"] == "copa"]
    # A mix runs as written on the simulator and with every flow's twin on the emulator.
    mix = by_name["emu-fidelity-rtt-mix-mix-r1"]
    assert mix.scheme is None and by_name["sim-fidelity-rtt-mix-mix-r1"].overrides == {
        "duration": "5s"
    }
    flows = mix.overrides["flows"]
    assert [f["scheme"] for f in flows] == ["kernel:reno"] * 2 + ["kernel:cubic"] * 2
    assert [f.get("extra_rtt", "0ms") for f in flows] == ["0ms", "60ms", "0ms", "60ms"]
