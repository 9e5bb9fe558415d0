"""Run directories: complete ones have every file and a complete meta.json; a failed write or a
killed run leaves nothing that looks complete."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import cclab
from cclab import archive
from conftest import LONG, SMALL, SMALL_DICT, cclab_process

EXPECTED_FILES = {
    "scenario.toml",
    "meta.json",
    "summary.parquet",
    "timeseries.parquet",
    "jain.parquet",
    "flows.parquet",
}


def complete_runs(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_dir() and archive.is_complete(p)]


def test_save_writes_every_file_and_meta_last(tmp_path: Path) -> None:
    result = cclab.run(SMALL_DICT, log_packets=True)
    target = result.save(tmp_path / "runs" / "one", command=["cclab", "test"])
    assert {p.name for p in target.iterdir()} == EXPECTED_FILES | {"packets.parquet"}
    meta = json.loads((target / "meta.json").read_text())
    assert meta["complete"] is True
    assert meta["engine"] == "sim"
    assert meta["seed"] == 5
    assert meta["cclab_version"] == cclab.__version__
    assert meta["command"] == ["cclab", "test"]
    assert meta["host"]
    assert meta["events"] == result.stats["events"]
    assert meta["events_per_sec"] > 0
    assert set(meta["files"]) == EXPECTED_FILES | {"packets.parquet"}
    assert archive.is_complete(target)
    # What was saved reads back as it was.
    pd.testing.assert_frame_equal(pd.read_parquet(target / "summary.parquet"), result.summary)
    pd.testing.assert_frame_equal(pd.read_parquet(target / "timeseries.parquet"), result.timeseries)
    packets = pq.read_table(target / "packets.parquet")
    assert packets.num_rows == len(result.packets)
    assert packets.schema.field("fate").type.value_type == "string"
    assert (target / "scenario.toml").read_text() == result.scenario_toml
    # The saved scenario reproduces the run.
    again = cclab.run(target / "scenario.toml")
    pd.testing.assert_frame_equal(again.summary, result.summary)
    # No staging directory is left beside it.
    assert [p.name for p in target.parent.iterdir()] == ["one"]


def test_packets_file_only_when_logged(tmp_path: Path) -> None:
    cclab.run(SMALL_DICT, out=tmp_path / "run")
    assert {p.name for p in (tmp_path / "run").iterdir()} == EXPECTED_FILES


def test_existing_directory_is_never_overwritten(tmp_path: Path) -> None:
    result = cclab.run(SMALL_DICT)
    target = tmp_path / "run"
    target.mkdir()
    (target / "mine.txt").write_text("keep")
    with pytest.raises(FileExistsError):
        result.save(target)
    assert [p.name for p in target.iterdir()] == ["mine.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = cclab.run(SMALL_DICT, log_packets=True)

    def broken(columns: object, path: Path) -> None:
        path.write_bytes(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(archive, "_write_packets", broken)
    with pytest.raises(OSError, match="disk full"):
        result.save(tmp_path / "run")
    assert list(tmp_path.iterdir()) == []


def test_default_directory_under_cclab_runs(
    cli, write_scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CCLAB_RUNS", str(tmp_path / "archive"))
    path = write_scenario(SMALL)
    code, out, _ = cli("run", path, "--seed", "7")
    assert code == 0
    [run_dir] = (tmp_path / "archive").iterdir()
    assert run_dir.name.endswith("-small-s7")
    assert f"run directory: {run_dir}" in out.replace("\n", "")
    assert archive.is_complete(run_dir)
    # A second run in the same second gets its own directory.
    assert cli("run", path, "--seed", "7")[0] == 0
    assert len(complete_runs(tmp_path / "archive")) == 2


def _start_long_run(write_scenario, out: Path) -> object:
    """Starts `cclab run` on a long scenario and returns once the simulation is under way."""
    path = write_scenario(LONG)
    proc = cclab_process("run", path, "--out", out)
    line = proc.stderr.readline()
    assert line.startswith("running"), line + proc.stderr.read()
    time.sleep(1.0)  # well inside the simulation, which takes many seconds
    assert proc.poll() is None, "the run ended before it could be stopped"
    return proc


def test_killed_run_leaves_nothing_complete(write_scenario, tmp_path: Path) -> None:
    out = tmp_path / "runs" / "killed"
    proc = _start_long_run(write_scenario, out)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not out.exists()
    assert complete_runs(tmp_path) == []


def test_ctrl_c_stops_cleanly(write_scenario, tmp_path: Path) -> None:
    out = tmp_path / "runs" / "interrupted"
    proc = _start_long_run(write_scenario, out)
    stopped = time.monotonic()
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=30)
    err = proc.stderr.read()
    assert code == 130
    assert time.monotonic() - stopped < 5.0
    assert "interrupted" in err
    assert "Traceback" not in err
    assert not out.exists()
    assert complete_runs(tmp_path) == []
    assert not any(p.name.startswith(".") for p in tmp_path.rglob("*"))


#: Saves a run but stalls inside the write (after packets.parquet), so the test can kill it there.
SLOW_SAVE = """
import sys, time
import cclab
from cclab import archive

real_write = archive._write_packets

def stalling_write(columns, path):
    real_write(columns, path)
    print("writing", flush=True)
    time.sleep(60)

archive._write_packets = stalling_write
cclab.run(sys.argv[1], log_packets=True).save(sys.argv[2])
"""


def test_run_killed_while_saving_leaves_nothing_complete(write_scenario, tmp_path: Path) -> None:
    path = write_scenario(SMALL)
    out = tmp_path / "runs" / "half-written"
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_SAVE, str(path), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    assert line == "writing\n", line + proc.stderr.read()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not out.exists()
    assert complete_runs(tmp_path) == []
    # What is left is the hidden staging directory, with some files but no meta.json.
    [staging] = (tmp_path / "runs").iterdir()
    assert staging.name.startswith(".half-written.partial-")
    assert (staging / "packets.parquet").exists()
    assert not (staging / "meta.json").exists()
