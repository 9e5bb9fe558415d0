"""Every run and experiment records the exact tool version (git commit and dirty flag of the
source, or what the build recorded), the Rust compiler and the host; the report shows them."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

import cclab
from cclab import _core, provenance
from cclab.experiment import run_experiment
from conftest import REPO, SMALL, SMALL_DICT


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _expected_source() -> tuple[str, bool | None]:
    """What the running code's commit is: the checkout's now, or else what the build saw."""
    if (REPO / ".git").exists():
        return _git("rev-parse", "HEAD"), bool(_git("status", "--porcelain", "-uno"))
    info = _core.BUILD_INFO
    return info["git_commit"], {"true": True, "false": False}.get(info["git_dirty"])


def _check_environment(meta: dict) -> None:
    commit, dirty = _expected_source()
    assert meta["git_commit"] == commit
    assert meta["git_dirty"] is dirty
    assert meta["rustc"].startswith("rustc 1.")
    assert meta["cclab_version"] == cclab.__version__
    assert meta["host"] == socket.gethostname()


def test_run_meta_records_the_exact_version(tmp_path: Path) -> None:
    target = cclab.run(SMALL_DICT).save(tmp_path / "run")
    _check_environment(json.loads((target / "meta.json").read_text()))


def test_experiment_and_its_report_record_the_exact_version(tmp_path: Path, cli) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SMALL.replace("    ", ""))
    folder = run_experiment(scenario, ["cubic"], runs=1, jobs=1, out=tmp_path / "exp")
    _check_environment(json.loads((folder / "experiment.json").read_text()))
    code, _, err = cli("report", str(folder))
    assert code == 0, err
    html = next(folder.rglob("*.html")).read_text()
    commit, _ = _expected_source()
    assert commit in html
    assert "rust compiler" in html and _core.BUILD_INFO["rustc"] in html


def test_outside_a_checkout_the_build_is_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As from a wheel: no .git beside the package, so the commit the build saw is what counts.
    monkeypatch.setattr(provenance, "_SOURCE_ROOT", tmp_path)
    provenance.source_version.cache_clear()
    try:
        found = provenance.source_version()
    finally:
        provenance.source_version.cache_clear()
    assert found["git_commit"] == (_core.BUILD_INFO["git_commit"] or None)
    assert found["version_from"] in {"build", "package"}
