"""The package's data (`cclab.data`): the shipped scenarios are found inside the package, by
name, from any working directory, so an installed wheel runs them without a checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import cclab
from cclab import data, reproduce
from cclab.scenario_source import resolve

PACKAGE = Path(cclab.__file__).resolve().parent


def test_data_lives_inside_the_package():
    root = data.package_data().resolve()
    assert root == PACKAGE / "data"
    assert data.package_data("scenarios").is_dir()


def test_shipped_scenarios_include_the_examples_and_reproductions():
    names = {p.stem for p in data.shipped_scenarios()}
    assert {"pantheon-1flow", "copa-fairness", "calibrated-mexico-cellular"} <= names
    repro = {p.stem for p in data.shipped_scenarios("repro")}
    assert set(reproduce.REPRODUCTIONS) <= repro
    # The reproductions read their scenarios from the package, not from a checkout.
    assert reproduce.SCENARIO_DIR.resolve().is_relative_to(PACKAGE)


@pytest.mark.parametrize("name", ["pantheon-1flow", "pantheon-1flow.toml", "repro/copa-fairness"])
def test_a_bare_name_means_the_shipped_scenario(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no scenarios/ folder here
    path = resolve(name)
    assert isinstance(path, Path)
    assert path.is_file() and path.resolve().is_relative_to(PACKAGE)


def test_an_existing_file_wins_over_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pantheon-1flow.toml").write_text("x")
    assert resolve("pantheon-1flow.toml") == "pantheon-1flow.toml"


@pytest.mark.parametrize("name", ["no-such-scenario", "../scenarios/pantheon-1flow", "/etc/passwd"])
def test_other_names_are_left_for_the_core_to_report(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve(name) == name


def test_every_shipped_scenario_validates():
    folders = ("", "repro", "fidelity")
    for path in [p for folder in folders for p in data.shipped_scenarios(folder)]:
        assert "[[flows]]" in cclab.validate(path), path


def test_a_shipped_scenario_runs_by_name_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cclab.run("pantheon-1flow", duration="1s")
    assert result.summary["throughput_mbps"].iloc[-1] > 1.0
    assert os.fspath(tmp_path) not in str(data.package_data())
