"""Shared fixtures: scenario files written on the fly, the CLI in-process and as a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from cclab.cli import main

REPO = Path(__file__).resolve().parent.parent

# A shell without job control starts background jobs (`make test &`, `nohup ... &`) with SIGINT
# ignored, and Python then keeps it ignored: the Ctrl-C tests would hang (in-process) or fail
# (children inherit the ignore). They test cclab's handling of Ctrl-C, so give it back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
SCENARIOS = REPO / "scenarios"

#: A small valid scenario: 3 Cubic flows on a 12 Mbit/s, 20 ms RTT, 1-BDP link for 3 s.
SMALL = """\
    name = "small"
    duration = "3s"
    seed = 5

    [link]
    rate = "12Mbps"
    delivery = "poisson"
    delay = "10ms"
    queue = "1bdp"

    [[flows]]
    scheme = "cubic"
    count = 3
    every = "500ms"
"""

#: A scenario that takes many seconds of wall time, for stopping runs part-way.
LONG = """\
    name = "long"
    duration = "120s"

    [link]
    rate = "10Gbps"
    delay = "10ms"
    queue = "1bdp"

    [[flows]]
    scheme = "cubic"
    count = 100
"""

#: The same small scenario as a dict, for the Python API.
SMALL_DICT = {
    "name": "small",
    "duration": "3s",
    "seed": 5,
    "link": {"rate": "12Mbps", "delivery": "poisson", "delay": "10ms", "queue": "1bdp"},
    "flows": [{"scheme": "cubic", "count": 3, "every": "500ms"}],
}

WriteScenario = Callable[..., Path]


@pytest.fixture(autouse=True)
def _archive_outside_the_checkout(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commands that archive by default (`cclab run`, `cclab compare`, `cclab reproduce`
    without --out) write to a temporary archive, not ./cclab-runs of the checkout. A test that
    needs its own archive sets CCLAB_RUNS itself."""
    monkeypatch.setenv("CCLAB_RUNS", str(tmp_path_factory.mktemp("archive")))


@pytest.fixture
def write_scenario(tmp_path: Path) -> WriteScenario:
    """write_scenario(text, name="scenario.toml") → path of a scenario file in tmp_path."""

    def write(text: str, name: str = "scenario.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """cli("run", "x.toml") → (exit code, stdout, stderr), running `cclab` in this process."""

    def run(*args: str | Path) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def cclab_process(*args: str | Path, cwd: Path | None = None) -> subprocess.Popen[str]:
    """`cclab ARGS` as a child process (the real entry point, with real signals)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="100")
    return subprocess.Popen(
        [sys.executable, "-m", "cclab", *(str(a) for a in args)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
