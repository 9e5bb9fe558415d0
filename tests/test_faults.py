"""Fault injection: kills at random moments, a crashing worker, SIGTERM, Ctrl-C while the
command starts, a full disk (a small tmpfs) and a read-only target. What must hold every time:
no orphaned worker, nothing half-written marked complete, a clear message and the right exit
status, never a traceback or a panic."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from cclab.batch import LocalPoolExecutor, Plan, RunSpec, run_batch
from cclab.experiment_dir import is_complete_experiment
from fault_helpers import ABORT, CRASH, crash_one, sleep_long

ONE_FLOW = {
    "name": "faults",
    "duration": "1s",
    "link": {"rate": "12Mbps", "delay": "5ms", "queue": "1bdp"},
    "flows": [{"scheme": "cubic"}],
}
#: Long enough to be killed mid-run on any machine.
SLOW_SCENARIO = """
name = "slow"
duration = "300s"
[link]
rate = "1Gbps"
delay = "10ms"
queue = "1bdp"
[[flows]]
scheme = "cubic"
count = 4
"""


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`."""
    with contextlib.suppress(psutil.NoSuchProcess):
        return {child.pid for child in psutil.Process(pid).children(recursive=True)}
    return set()


def pool_workers(pid: int) -> set[int]:
    """The pool workers below `pid` (not multiprocessing's resource tracker, which lives as
    long as the process that started it)."""
    found = set()
    for child in descendants(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "spawn_main" in cmdline:
            found.add(child)
    return found


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has finished; only its exit status waits to be read)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = {p for p in pids if alive(p)}
        if not left:
            return left
        time.sleep(0.1)
    return {p for p in pids if alive(p)}


pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def test_a_crashing_run_fails_alone_with_its_signal_and_output(tmp_path):
    names = ["a", CRASH, "b", ABORT, "c"]
    plan = Plan("experiment", "faults", [RunSpec(name=n, scenario=ONE_FLOW) for n in names])
    result = run_batch(plan, tmp_path / "e", executor=LocalPoolExecutor(2), execute=crash_one)
    by_name = {o.run.name: o for o in result.outcomes}
    assert [n for n in names if by_name[n].ok] == ["a", "b", "c"]
    assert "killed by SIGSEGV" in by_name[CRASH].error
    assert "killed by SIGABRT" in by_name[ABORT].error
    # The tail of what the worker wrote before it died.
    assert "memory allocation of 9663676416 bytes failed" in by_name[ABORT].error
    assert is_complete_experiment(result.directory)
    for name in ("a", "b", "c"):
        assert (result.directory / "runs" / name / "meta.json").exists()


def _experiment(tmp_path: Path, jobs: int = 2) -> subprocess.Popen[str]:
    scenario = tmp_path / "slow.toml"
    scenario.write_text(SLOW_SCENARIO)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cclab",
            "experiment",
            str(scenario),
            "--schemes",
            "cubic,bbr",
            "--runs",
            "2",
            "--jobs",
            str(jobs),
            "--out",
            str(tmp_path / "e"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _workers_of(p: subprocess.Popen[str], n: int, timeout: float = 60) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = descendants(p.pid)
        if len(found) >= n:
            return found
        time.sleep(0.05)
    pytest.fail(f"the experiment did not start {n} workers")


@pytest.mark.parametrize("delay", [0.0, 0.5, 2.0])
def test_sigkill_of_an_experiment_leaves_no_worker_and_no_complete_directory(tmp_path, delay):
    p = _experiment(tmp_path)
    workers = _workers_of(p, 2)
    time.sleep(delay + random.random() * 0.3)
    workers |= descendants(p.pid)
    p.kill()
    p.communicate()
    assert wait_gone(workers, 5) == set(), "workers outlived their parent"
    assert not (tmp_path / "e").exists()


def test_sigterm_stops_the_pool_at_once(tmp_path):
    p = _experiment(tmp_path)
    workers = _workers_of(p, 2)
    time.sleep(1.0)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=20)
    assert time.monotonic() - t0 < 10
    assert p.returncode == 128 + signal.SIGTERM
    assert "Traceback" not in err
    assert wait_gone(workers, 5) == set()
    assert not (tmp_path / "e").exists()
    assert not any(tmp_path.glob(".e.partial-*")), "the staging directory was left behind"


def test_ctrl_c_stops_the_pool_at_once(tmp_path):
    p = _experiment(tmp_path)
    workers = _workers_of(p, 2)
    time.sleep(1.0)
    os.killpg(p.pid, signal.SIGINT)  # as a terminal does: the whole foreground group
    _, err = p.communicate(timeout=20)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert wait_gone(workers, 5) == set()
    assert not (tmp_path / "e").exists()


def test_a_pool_killed_mid_task_from_python_leaves_nothing(tmp_path):
    """The API's view: Ctrl-C in a notebook or script kills the sleeping workers at once and
    removes the staging directory."""
    plan = Plan("experiment", "faults", [RunSpec(name=n, scenario=ONE_FLOW) for n in "ab"])
    me = os.getpid()
    timer = threading.Timer(3.0, lambda: os.kill(me, signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_batch(plan, tmp_path / "e", executor=LocalPoolExecutor(2), execute=sleep_long)
    timer.cancel()
    assert time.monotonic() - t0 < 15
    assert wait_gone(pool_workers(me), 5) == set()
    assert not (tmp_path / "e").exists()


# From 0.3 s: a SIGINT in the first tens of ms lands in CPython's own start-up (before any
# cclab code), which ends with "Fatal Python error: init_sys_streams" whatever cclab does.
@pytest.mark.parametrize("moment", [0.3, 0.5, 0.8, 1.2, 1.8])
def test_ctrl_c_while_the_command_starts_exits_130_quietly(tmp_path, moment):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SLOW_SCENARIO)
    p = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "cclab"),
            "run",
            str(scenario),
            "--out",
            str(tmp_path / "r"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(moment)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    assert "Traceback" not in err and "panicked" not in err, err
    assert not (tmp_path / "r").exists()


def test_ctrl_c_after_the_command_returned_does_not_kill_it(tmp_path):
    """The interpreter's shutdown resets Python's SIGINT handler to the default, so a Ctrl-C
    landing after a command succeeded killed it by signal (status -2; the campaign's find).
    The command's tail ignores it: the process exits with the command's own status."""
    script = tmp_path / "cclab"  # quiet_end acts only in the `cclab` command
    script.write_text(
        "import os, signal\n"
        "from cclab._startup import quiet_end\n"
        "quiet_end()\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "print('exited normally')\n"
    )
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert (p.returncode, p.stdout.strip()) == (0, "exited normally"), p.stderr


def _mount(path: Path, *options: str) -> Iterator[Path]:
    path.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(path)],
        capture_output=True,
    )
    if done.returncode != 0:
        pytest.skip("needs root to mount a tmpfs")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    yield from _mount(tmp_path / "small", "size=1m")


@pytest.fixture
def roomier_disk(tmp_path) -> Iterator[Path]:
    """Room for a DuckDB index (it takes about 1.5 MB) and two runs, before it is filled."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    yield from _mount(tmp_path / "roomier", "size=8m")


@pytest.fixture
def read_only(tmp_path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    yield from _mount(tmp_path / "ro", "size=1m", "ro")


def _fill(directory: Path) -> None:
    """Writes until the file system is full (closing the file may fail too)."""
    with contextlib.suppress(OSError), (directory / "filler").open("wb") as f:
        while True:
            f.write(b"\0" * 65536)
            f.flush()


def _cclab(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cclab", *(str(a) for a in args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_a_run_onto_a_full_disk_names_the_reason_and_the_directory(tmp_path, small_disk):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SLOW_SCENARIO.replace("300s", "2s"))
    _fill(small_disk)
    done = _cclab("run", scenario, "--out", small_disk / "r")
    assert done.returncode == 2, done.stderr
    assert "No space left on device" in done.stderr
    assert str(small_disk) in done.stderr
    assert "Traceback" not in done.stderr
    assert not (small_disk / "r").exists()
    assert [p.name for p in small_disk.iterdir()] == ["filler"], "a staging directory was left"


def test_the_archive_index_on_a_full_disk_names_the_reason_and_the_directory(
    tmp_path, roomier_disk
):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SLOW_SCENARIO.replace("300s", "1s").replace("1Gbps", "12Mbps"))
    archive = roomier_disk / "runs"
    env = {"CCLAB_RUNS": str(archive)}
    assert _cclab("run", scenario, env=env).returncode == 0
    assert _cclab("runs", env=env).returncode == 0  # the index now exists
    assert _cclab("run", scenario, "--seed", "2", env=env).returncode == 0  # and is stale
    _fill(roomier_disk)
    done = _cclab("runs", env=env)
    # The index is a cache: the listing comes from the directories, with a warning that says
    # why the index could not be written, and where.
    assert done.returncode == 0, done.stderr
    assert "2 runs" in done.stdout
    assert "No space left on device" in done.stderr
    assert str(archive) in done.stderr
    assert "Traceback" not in done.stderr


def test_a_read_only_target_is_a_clear_error(tmp_path, read_only):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SLOW_SCENARIO.replace("300s", "1s"))
    done = _cclab("run", scenario, "--out", read_only / "r")
    assert done.returncode == 2
    assert "Read-only file system" in done.stderr, done.stderr
    assert str(read_only) in done.stderr
    assert "Traceback" not in done.stderr
    done = _cclab("runs", env={"CCLAB_RUNS": str(read_only)})
    assert "Traceback" not in done.stderr
