"""A build without the emulator (the `emu` Cargo feature off, or not Linux) still runs the
simulator, and asking for the emulator says why it is missing."""

from __future__ import annotations

import types

import pytest

import cclab
from cclab import _core, engines
from conftest import SMALL_DICT


def test_this_linux_build_has_every_engine():
    assert _core.UNAVAILABLE_ENGINES == {}
    assert all(e.available() and e.unavailable() == "" for e in engines.ENGINES.values())


@pytest.fixture
def core_without_emulator(monkeypatch):
    """`cclab._core` as a build without the `emu` feature presents itself."""
    stub = types.SimpleNamespace(
        **{k: getattr(_core, k) for k in dir(_core) if not k.endswith("_emu")},
    )
    stub.UNAVAILABLE_ENGINES = {"emu": "this build was compiled without the `emu` Cargo feature"}
    monkeypatch.setattr(engines, "_core", stub)


def test_the_simulator_runs_and_the_emulator_says_why_not(core_without_emulator, cli):
    assert cclab.run(SMALL_DICT, duration="2s").summary is not None
    assert not engines.EMU.available()
    with pytest.raises(cclab.SimulationError, match="no emulator engine \\(emu\\): this build"):
        cclab.run(SMALL_DICT, engine="emu")
    code, _, err = cli("run", "pantheon-1flow", "--engine", "emu")
    assert code == 2
    assert "compiled without the `emu` Cargo feature" in err
