"""`cclab run`: the summary table, the run directory, errors without tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import SMALL, cclab_process


def test_prints_the_summary_and_the_directory(cli, write_scenario, tmp_path: Path) -> None:
    path = write_scenario(SMALL)
    out_dir = tmp_path / "run"
    code, out, err = cli("run", path, "--out", out_dir, "--log-packets", "--set", "duration=2s")
    assert code == 0, err
    for header in ("flow", "scheme", "throughput", "delay", "queue", "loss", "util", "Jain"):
        assert header in out
    rows = [line.split() for line in out.splitlines()]
    flow_rows = [r for r in rows if r[:2] in (["0", "cubic"], ["1", "cubic"], ["2", "cubic"])]
    assert len(flow_rows) == 3
    [total] = [r for r in rows if r[:1] == ["total"]]
    assert len(total) == 7  # throughput, delay, queue, loss, utilisation, Jain
    # Issue 9: the share of buckets the Jain median counts is printed beside it.
    assert "Jain median over " in " ".join(out.split())
    # Issue 9: the summary says in one line what "loss" counts.
    assert "still in flight at the end" in " ".join(out.split())
    assert f"run directory: {out_dir}" in out.replace("\n", "")
    assert (out_dir / "packets.parquet").exists()
    assert 'duration = "2s"' in (out_dir / "scenario.toml").read_text()
    assert json.loads((out_dir / "meta.json").read_text())["complete"] is True


def test_existing_out_is_refused_before_running(cli, write_scenario, tmp_path: Path) -> None:
    path = write_scenario(SMALL)
    code, out, err = cli("run", path, "--out", tmp_path)
    assert code == 2
    assert out == ""
    assert err == f"error: {tmp_path} already exists; give --out a new directory\n"


def test_invalid_scenario_is_one_line_per_error_without_traceback(write_scenario) -> None:
    path = write_scenario(SMALL.replace('queue = "1bdp"', 'queue = "1bdp"\nspeed = 3'))
    proc = cclab_process("run", path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in err
    assert f"error: {path}:10: field `link.speed`: unknown key `speed`" in err


def test_malformed_set_is_a_usage_error(cli, write_scenario) -> None:
    path = write_scenario(SMALL)
    try:
        cli("run", path, "--set", "duration")
    except SystemExit as e:
        assert e.code == 2
    else:
        raise AssertionError("argparse accepted --set without '='")
