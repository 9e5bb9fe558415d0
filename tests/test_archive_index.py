"""The archive's DuckDB index: listing, filters, SQL, rebuilding, and never listing an
incomplete run."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import cclab
from cclab.archive import make_staging_dir
from cclab.archive_index import INDEX_FILE, IndexQueryError, experiments, runs
from cclab.experiment import run_experiment

SCENARIO = {
    "name": "idx",
    "duration": "1s",
    "link": {"rate": "12Mbps", "delay": "5ms", "queue": "1bdp"},
    "flows": [{"scheme": "cubic"}],
}


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An archive with three top-level runs (cubic at 12 and 46 Mbit/s, newreno at 46)."""
    root = tmp_path / "archive"
    monkeypatch.setenv("CCLAB_RUNS", str(root))
    cclab.run(SCENARIO, seed=1, out=root / "cubic-12")
    cclab.run(SCENARIO, seed=2, link__rate="46Mbps", out=root / "cubic-46")
    newreno = [{"scheme": "newreno"}]
    cclab.run(SCENARIO, seed=3, link__rate="46Mbps", flows=newreno, out=root / "newreno-46")
    return root


def test_lists_filters_and_queries(archive):
    listed = runs()
    assert set(listed["run_id"]) == {"cubic-12", "cubic-46", "newreno-46"}
    row = listed.set_index("run_id").loc["cubic-46"]
    assert row["rate_mbps"] == 46.0
    assert row["delay_ms"] == 5.0
    assert row["scheme"] == "cubic"
    assert row["engine"] == "sim"
    assert row["seed"] == 2
    assert row["throughput_mbps"] > 0
    assert bool(row["complete"]) is True

    assert set(runs(scheme="cubic")["run_id"]) == {"cubic-12", "cubic-46"}
    assert set(runs(where="rate_mbps=46")["run_id"]) == {"cubic-46", "newreno-46"}
    assert set(runs(scheme="cubic", where="rate_mbps = 46")["run_id"]) == {"cubic-46"}
    counts = runs(sql="SELECT scheme, count(*) AS n FROM runs GROUP BY scheme ORDER BY scheme")
    assert counts.to_dict("records") == [{"scheme": "cubic", "n": 2}, {"scheme": "newreno", "n": 1}]
    flows = runs(sql="SELECT run_id, flow, scheme FROM flows ORDER BY run_id")
    assert flows["flow"].tolist() == [0, 0, 0]
    with pytest.raises(IndexQueryError, match="rate_mbs"):
        runs(where="rate_mbs = 46")
    assert (archive / INDEX_FILE).exists()


def test_incomplete_runs_never_appear(archive):
    # A run killed before meta.json was written, one whose meta.json does not say complete,
    # and a staging directory: none is a run.
    shutil.copytree(archive / "cubic-12", archive / "no-meta")
    (archive / "no-meta" / "meta.json").unlink()
    shutil.copytree(archive / "cubic-12", archive / "not-complete")
    meta_path = archive / "not-complete" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["complete"] = False
    meta_path.write_text(json.dumps(meta))
    shutil.copytree(archive / "cubic-12", archive / ".cubic-99.partial-abc")
    assert set(runs()["run_id"]) == {"cubic-12", "cubic-46", "newreno-46"}
    assert set(runs(rebuild=True)["run_id"]) == {"cubic-12", "cubic-46", "newreno-46"}

    # Once its meta.json says complete, it is listed; once removed, it goes.
    meta["complete"] = True
    meta_path.write_text(json.dumps(meta))
    assert "not-complete" in set(runs()["run_id"])
    shutil.rmtree(archive / "not-complete")
    assert "not-complete" not in set(runs()["run_id"])


def test_rebuild_from_the_directories(archive):
    before = runs().sort_values("run_id").reset_index(drop=True)
    (archive / INDEX_FILE).unlink()
    rebuilt = runs().sort_values("run_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(before, rebuilt)
    # A corrupt index file is replaced, not trusted.
    (archive / INDEX_FILE).write_bytes(b"not a database")
    assert len(runs()) == 3
    assert (archive / INDEX_FILE).read_bytes()[:16] != b"not a database"[:16]
    assert len(runs(rebuild=True)) == 3


def test_experiment_runs_are_indexed_with_their_experiment(archive, write_scenario):
    scenario = write_scenario(
        """
        name = "exp"
        duration = "1s"
        [link]
        rate = "24Mbps"
        delay = "5ms"
        queue = "1bdp"
        [[flows]]
        scheme = "cubic"
        """
    )
    out = run_experiment(scenario, ["cubic", "newreno"], runs=2, jobs=1, out=archive / "e1")
    rows = runs(where="experiment = 'e1'")
    assert len(rows) == 4
    assert set(rows["run_id"]) == {
        f"e1/runs/{s}-r{k}" for s in ("cubic", "newreno") for k in (1, 2)
    }
    assert set(rows["repetition"]) == {1, 2}
    assert set(rows["rate_mbps"]) == {24.0}
    assert set(rows["status"]) == {"ok"}
    listed = experiments()
    assert listed["experiment"].tolist() == ["e1"]
    assert listed.iloc[0]["runs"] == 4
    assert list(listed.iloc[0]["schemes"]) == ["cubic", "newreno"]
    assert out == archive / "e1"


def test_cli(archive, cli):
    code, stdout, stderr = cli("runs", "--scheme", "newreno", "--csv")
    assert code == 0, stderr
    frame = pd.read_csv(io.StringIO(stdout))
    assert frame["run_id"].tolist() == ["newreno-46"]
    code, stdout, _ = cli("runs", "--where", "rate_mbps=46")
    assert code == 0
    assert "2 runs" in stdout and "cubic-46" in stdout and "cubic-12" not in stdout
    code, stdout, _ = cli("runs", "--sql", "SELECT count(*) AS n FROM runs", "--csv")
    assert stdout.split() == ["n", "3"]
    code, stdout, _ = cli("runs", "--rebuild")
    assert code == 0 and "3 runs" in stdout
    code, _, stderr = cli("runs", "--where", "nonsense >")
    assert code == 2
    assert "query failed" in stderr


def test_queries_cannot_change_the_index(archive):
    with pytest.raises(IndexQueryError, match="read-only"):
        runs(sql="DROP TABLE runs")
    with pytest.raises(IndexQueryError):
        runs(where="true); DROP TABLE runs; SELECT (1")
    assert len(runs()) == 3


def test_runs_of_an_unfinished_experiment_never_appear(archive, write_scenario):
    scenario = write_scenario(
        """
        name = "exp"
        duration = "1s"
        [link]
        rate = "24Mbps"
        delay = "5ms"
        [[flows]]
        scheme = "cubic"
        """
    )
    run_experiment(scenario, ["cubic"], runs=2, jobs=1, out=archive / "e1")
    assert len(runs(where="experiment = 'e1'")) == 2
    # The experiment's record no longer says complete: neither it nor its runs are listed,
    # though the runs' own directories did not change; once it says so again, they are back.
    record_path = archive / "e1" / "experiment.json"
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({**record, "complete": False}))
    assert len(runs(where="experiment = 'e1'")) == 0
    assert experiments().empty
    record_path.write_text(json.dumps(record))
    assert len(runs(where="experiment = 'e1'")) == 2
    assert experiments()["experiment"].tolist() == ["e1"]


def test_a_damaged_directory_leaves_the_others_listed(archive):
    # A meta.json cut off mid-write and a complete-looking run without its summary: neither is
    # a run, and neither keeps the whole runs from being indexed.
    shutil.copytree(archive / "cubic-12", archive / "cut-off")
    meta_path = archive / "cut-off" / "meta.json"
    meta_path.write_text(meta_path.read_text()[:40])
    shutil.copytree(archive / "cubic-12", archive / "no-summary")
    (archive / "no-summary" / "summary.parquet").unlink()
    assert set(runs()["run_id"]) == {"cubic-12", "cubic-46", "newreno-46"}
    assert len(runs(sql="SELECT * FROM flows")) == 3


def test_sql_from_the_command_line_cannot_drop_a_table(archive, cli):
    code, _, stderr = cli("runs", "--sql", "DROP TABLE runs")
    assert code == 2 and "read-only" in stderr
    code, stdout, _ = cli("runs", "--sql", "SELECT count(*) AS n FROM runs", "--csv")
    assert (code, stdout.split()) == (0, ["n", "3"])


def test_gc_removes_a_dead_writers_partial_dir_but_not_a_live_ones(archive, cli):
    # A writer that has exited (its pid is free) and this live test process.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = make_staging_dir(archive / "killed-run")
    dead = dead.rename(dead.with_name(dead.name.replace(f".{os.getpid()}.", f".{gone.pid}.")))
    (dead / "summary.parquet").write_bytes(b"half")
    live = make_staging_dir(archive / "running-run")
    code, _, stderr = cli("runs", "--gc")
    assert code == 0 and "1 removed, 1 kept" in stderr
    assert not dead.exists() and live.exists()
    assert len(runs()) == 3  # finished runs are never touched


def test_runs_written_with_loss_as_a_fraction_index_in_percent(archive):
    # Before issue 9 a run's summary stored `loss` as a fraction and had no `jain_counted`; the
    # index reads such a run with the unit every table uses now, beside the new ones.
    path = archive / "cubic-12" / "summary.parquet"
    summary = pd.read_parquet(path)
    old = summary.drop(columns=["jain_counted"]).rename(columns={"loss_pct": "loss"})
    old["loss"] = old["loss"] / 100
    old.to_parquet(path)
    listed = runs(rebuild=True).set_index("run_id")
    assert listed.loc["cubic-12", "loss_pct"] == pytest.approx(summary["loss_pct"].iloc[-1])
    assert listed.loc["cubic-46", "jain_counted"] > 0
    flows = runs(sql="SELECT run_id, loss_pct FROM flows ORDER BY run_id")
    assert flows["loss_pct"].iloc[0] == pytest.approx(summary["loss_pct"].iloc[0])
