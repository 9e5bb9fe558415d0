"""Reproduces the defects of issue 16, one check per case, and says for each whether cclab now
behaves (a clear error naming the field or file, exit 1/2/130, no abort, panic, traceback, hang
or orphan) or the defect is still there.

    .venv/bin/python scripts/repro_issue16.py          # every case
    .venv/bin/python scripts/repro_issue16.py 1 6 11   # only defects 1, 6 and 11

Every command runs under a 3 GB address-space limit (so an out-of-memory abort cannot take the
machine) and a time limit (so a hang is a finding, not a stuck script). Exit status: the number
of cases that still show their defect. Defects 3, 4 and 9 are also pytest cases
(tests/test_faults.py); this script is the hostile user's view of all eleven.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
CCLAB = str(Path(sys.executable).parent / "cclab")
#: Address-space limit of every command: large enough for any sane run, small enough that an
#: unguarded allocation aborts instead of swapping the host to death.
AS_LIMIT = 3 * 1024**3


@dataclass
class Outcome:
    rc: int | None  # None: timed out
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err

    def flaws(self) -> list[str]:
        """What a hostile user would call a crash in this outcome."""
        found = []
        if self.rc is None:
            found.append("hang")
        elif self.rc < 0 or self.rc in (134, 137, 139):
            found.append(f"abort (status {self.rc})")
        if "Traceback (most recent call last)" in self.text:
            found.append("traceback")
        if "panicked" in self.text or "PanicException" in self.text:
            found.append("panic")
        if "memory allocation of" in self.text:
            found.append("rust out-of-memory")
        return found


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def cclab(
    args: Sequence[str],
    *,
    timeout: float = 60,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
) -> Outcome:
    try:
        p = subprocess.run(
            [CCLAB, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "COLUMNS": "200", **(env or {})},
            cwd=cwd,
            preexec_fn=_limit_memory,
            stdin=subprocess.DEVNULL,
        )
        return Outcome(p.returncode, p.stdout, p.stderr)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return Outcome(None, out, err)


SCENARIO = """
name = "{name}"
duration = "{duration}"
[link]
rate = "{rate}"
delay = "20ms"
queue = {queue}
[[flows]]
scheme = "{scheme}"
{flow_extra}
[output]
bin = "{bin}"
jain_bucket = "{jain}"
"""


def scenario(tmp: Path, filename: str = "s.toml", **values: str) -> Path:
    fields = {
        "name": "x",
        "duration": "2s",
        "rate": "12Mbps",
        "queue": '"1bdp"',
        "scheme": "cubic",
        "flow_extra": "",
        "bin": "500ms",
        "jain": "100ms",
    }
    fields.update(values)
    path = tmp / filename
    path.write_text(SCENARIO.format(**fields))
    return path


Case = Callable[[Path], list[str]]
CASES: dict[int, list[tuple[str, Case]]] = {}


def case(defect: int, title: str) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        CASES.setdefault(defect, []).append((title, fn))
        return fn

    return register


def clean_error(o: Outcome, *needles: str, codes: tuple[int, ...] = (1, 2)) -> list[str]:
    """Flaws unless the command failed with a clear message containing every needle."""
    found = o.flaws()
    if o.rc is not None and o.rc not in codes and not found:
        found.append(f"exit status {o.rc}, expected {codes}")
    for needle in needles:
        if needle.lower() not in o.text.lower():
            found.append(f"message lacks {needle!r}: {o.text.strip()[-300:]!r}")
    return found


# --- 1: valid scenarios that abort with a Rust out-of-memory error --------------------------


@case(1, "[output] jain_bucket = 1ns")
def _jain_1ns(tmp: Path) -> list[str]:
    return clean_error(
        cclab(["run", str(scenario(tmp, jain="1ns")), "--out", str(tmp / "r")]), "jain_bucket"
    )


@case(1, "[output] bin = 1ns")
def _bin_1ns(tmp: Path) -> list[str]:
    return clean_error(
        cclab(["run", str(scenario(tmp, bin="1ns")), "--out", str(tmp / "r")]), "bin"
    )


@case(1, 'link.rate = "1000Tbps"')
def _rate_1000t(tmp: Path) -> list[str]:
    return clean_error(
        cclab(["run", str(scenario(tmp, rate="1000Tbps")), "--out", str(tmp / "r")]), "link.rate"
    )


@case(1, "fixed cwnd = 1000000000 (the documented maximum)")
def _fixed_cwnd(tmp: Path) -> list[str]:
    s = scenario(tmp, scheme="fixed", flow_extra="cwnd = 1000000000", queue='"infinite"')
    return clean_error(cclab(["run", str(s), "--out", str(tmp / "r")]), "cwnd")


@case(1, 'fixed rate = "1Tbps"')
def _fixed_rate(tmp: Path) -> list[str]:
    s = scenario(
        tmp, scheme="fixed", flow_extra='rate = "1Tbps"', queue='"infinite"', duration="5s"
    )
    o = cclab(["run", str(s), "--out", str(tmp / "r")], timeout=120)
    return o.flaws() if o.rc == 0 else clean_error(o, "flows[0]")


# --- 2: memory that grows with simulated time -------------------------------------------------


@case(2, "1 flow, unbounded queue, 100000 s, a 1 GB memory cap")
def _long_run(tmp: Path) -> list[str]:
    s = scenario(tmp, duration="100000s", queue='"infinite"')
    o = cclab(
        ["run", str(s), "--out", str(tmp / "r")], env={"CCLAB_MAX_MEMORY": "1GB"}, timeout=240
    )
    if o.rc is None:
        return []  # still within its memory after 4 minutes: slow, not a crash
    return o.flaws() if o.rc == 0 else clean_error(o, "memory")


# --- 3 and 4: the process pool ---------------------------------------------------------------


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid`."""
    with contextlib.suppress(psutil.NoSuchProcess):
        return {child.pid for child in psutil.Process(pid).children(recursive=True)}
    return set()


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has finished; only its exit status waits to be read)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@case(3, "SIGKILL of `cclab experiment` leaves no workers")
def _kill_experiment(tmp: Path) -> list[str]:
    s = scenario(tmp, duration="60s")
    p = subprocess.Popen(
        [
            CCLAB,
            "experiment",
            str(s),
            "--schemes",
            "cubic,bbr",
            "--runs",
            "2",
            "--jobs",
            "2",
            "--out",
            str(tmp / "e"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    workers: set[int] = set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(workers) < 3:  # the manager and two workers
        workers = _descendants(p.pid)
        time.sleep(0.2)
    time.sleep(1.0)
    workers |= _descendants(p.pid)
    p.send_signal(signal.SIGKILL)
    p.wait()
    time.sleep(3.0)
    orphans = [w for w in workers if _alive(w)]
    for w in orphans:
        os.kill(w, signal.SIGKILL)
    return [f"{len(orphans)} orphaned worker(s) after SIGKILL"] if orphans else []


@case(4, "one crashing run fails alone; the others complete")
def _one_crash(tmp: Path) -> list[str]:
    helper = tmp / "crash_helper.py"
    helper.write_text(
        "import os, signal\n"
        "from cclab.batch import execute_task\n"
        "def execute(task, events):\n"
        "    if task.planned.spec.name == 'crash':\n"
        "        os.kill(os.getpid(), signal.SIGSEGV)\n"
        "    return execute_task(task, events)\n"
    )
    driver = tmp / "driver.py"
    driver.write_text(
        "import json, sys\n"
        f"sys.path.insert(0, {str(tmp)!r})\n"
        "from crash_helper import execute\n"
        "from cclab.batch import Plan, RunSpec, run_batch, LocalPoolExecutor\n"
        "if __name__ == '__main__':\n"
        f"    s = {str(scenario(tmp))!r}\n"
        "    runs = [RunSpec(name=n, scenario=s) for n in ('a', 'crash', 'b', 'c')]\n"
        f"    r = run_batch(Plan('experiment', 'x', runs), {str(tmp / 'e')!r},\n"
        "                  executor=LocalPoolExecutor(2), execute=execute)\n"
        "    print(json.dumps({o.run.name: [o.ok, o.error] for o in r.outcomes}))\n"
    )
    try:
        p = subprocess.run(
            [sys.executable, str(driver)], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        return ["hang"]
    o = Outcome(p.returncode, p.stdout, p.stderr)
    if o.rc != 0:
        return o.flaws() or [f"driver failed: {o.err[-300:]}"]
    status = json.loads(o.out.strip().splitlines()[-1])
    found = [f"{n} failed: {status[n][1]}" for n in ("a", "b", "c") if not status[n][0]]
    if status["crash"][0]:
        found.append("the crashing run is marked ok")
    elif "SIGSEGV" not in (status["crash"][1] or ""):
        found.append(f"the crash's error does not name its signal: {status['crash'][1]!r}")
    return found


# --- 5: importers ----------------------------------------------------------------------------

MM_HEADER = "# mahimahi mm-link [uplink] --once\n# init timestamp: 0\n# base timestamp: 0\n"


def _import_mahimahi(tmp: Path, body: str) -> list[str]:
    log = tmp / "link.log"
    log.write_text(MM_HEADER + body)
    o = cclab(["import", "mahimahi", str(log), "--out", str(tmp / "imp")])
    if o.rc == 0:
        return ["imported with status ok (garbage import)"]
    return clean_error(o, str(log))


for _title, _body in {
    "negative timestamps": "-5 + 1504\n-4 - 1504 1\n",
    "inf timestamps": "inf + 1504\ninf - 1504 1\n",
    "1e300 timestamps": "1e300 + 1504\n1e300 - 1504 1\n",
    "a log of only `-` lines": "- - -\n- - -\n",
    "negative sizes": "1 + -1504\n2 - -1504 1\n",
    "negative delays": "1 + 1504\n2 - 1504 -7\n",
    "1e30 sizes": "1 + 1e30\n2 - 1e30 1\n",
}.items():
    case(5, f"mahimahi log with {_title}")(lambda tmp, body=_body: _import_mahimahi(tmp, body))


def _pantheon_dir(
    tmp: Path, datalink: str, metadata: str | None = None, stats: str | None = None
) -> Path:
    d = tmp / "pantheon"
    d.mkdir(exist_ok=True)
    (d / "cubic_datalink_run1.log").write_text(datalink)
    if metadata is not None:
        (d / "pantheon_metadata.json").write_text(metadata)
    if stats is not None:
        (d / "cubic_stats_run1.log").write_text(stats)
    return d


def _import_pantheon(tmp: Path, **files: str) -> list[str]:
    d = _pantheon_dir(tmp, **files)
    o = cclab(["import", "pantheon", str(d), "--out", str(tmp / "imp")])
    if o.rc == 0:
        return ["imported with status ok (garbage import)"]
    return clean_error(o, str(d))


GOOD_DATALINK = "# init timestamp: 0\n# base timestamp: 0\n1.000 + 1500 1\n30.000 - 1500 29.000 1\n"
case(5, "Pantheon flow id 10^9")(
    lambda tmp: _import_pantheon(
        tmp, datalink="# base timestamp: 0\n1.0 + 1500 1000000000\n3.0 - 1500 2.0 1000000000\n"
    )
)
case(5, "Pantheon metadata with 1e999")(
    lambda tmp: _import_pantheon(
        tmp, datalink=GOOD_DATALINK, metadata='{"runtimes": 1e999, "flows": 1}'
    )
)
STATS_UNDEFINED = (
    "# Datalink statistics\n-- Flow 1:\nAverage throughput: ---.- Mbit/s\n"
    "95th percentile per-packet one-way delay: 10.000 ms\n"
)


@case(5, "Pantheon stats with ---.- (a figure the Pantheon could not compute)")
def _stats(tmp: Path) -> list[str]:
    d = _pantheon_dir(tmp, datalink=GOOD_DATALINK, stats=STATS_UNDEFINED)
    o = cclab(["import", "pantheon", str(d), "--out", str(tmp / "imp")])
    # The datalink log is good: the import stands, the undefined figure is not compared.
    return o.flaws() or ([] if o.rc == 0 else [f"refused: {o.err.strip()[-200:]}"])


case(5, "empty Pantheon datalink log")(lambda tmp: _import_pantheon(tmp, datalink=""))


# --- 6: validate checks link.trace -----------------------------------------------------------


def _trace_case(tmp: Path, make: Callable[[Path], Path]) -> list[str]:
    trace = make(tmp)
    s = tmp / "t.toml"
    s.write_text(f'[link]\ntrace = "{trace}"\n[[flows]]\nscheme = "cubic"\n')
    return clean_error(cclab(["validate", str(s)]), "link.trace", codes=(1,))


def _write(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        (tmp / name).write_bytes(data)
        return tmp / name

    return make


case(6, "missing trace")(lambda tmp: _trace_case(tmp, lambda t: t / "nope.trace"))
case(6, "trace is a directory")(lambda tmp: _trace_case(tmp, lambda t: t))
case(6, "binary trace")(lambda tmp: _trace_case(tmp, _write("bin.trace", bytes(range(256)) * 4)))
case(6, "empty trace")(lambda tmp: _trace_case(tmp, _write("empty.trace", b"")))
case(6, "decreasing trace")(lambda tmp: _trace_case(tmp, _write("dec.trace", b"5\n3\n9\n")))


# --- 7: full disk ----------------------------------------------------------------------------


def _tmpfs(tmp: Path, size: str) -> Path | None:
    mount = tmp / "small"
    mount.mkdir()
    if (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True
        ).returncode
        != 0
    ):
        return None
    return mount


def _fill(mount: Path) -> None:
    """Writes until the file system is full (closing the file may fail too)."""
    with contextlib.suppress(OSError), (mount / "filler").open("wb") as f:
        while True:
            f.write(b"\0" * 4096)
            f.flush()


def _umount(mount: Path) -> None:
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@case(7, "`cclab runs` on a full disk")
def _runs_full_disk(tmp: Path) -> list[str]:
    mount = _tmpfs(tmp, "8m")
    if mount is None:
        return []  # not root: cannot mount; the pytest suite skips it too
    try:
        archive = mount / "runs"
        env = {"CCLAB_RUNS": str(archive)}
        cclab(["run", str(scenario(tmp, duration="1s"))], env=env)
        cclab(["runs"], env=env)  # the index exists ...
        cclab(["run", str(scenario(tmp, duration="1s")), "--seed", "2"], env=env)  # ... stale
        _fill(mount)
        o = cclab(["runs"], env=env)
        # Listed from the directories, with a warning naming the reason and the directory.
        return clean_error(o, "No space left on device", str(archive), codes=(0,))
    finally:
        _umount(mount)


@case(7, "`cclab run` onto a full disk names the directory")
def _run_full_disk(tmp: Path) -> list[str]:
    mount = _tmpfs(tmp, "64k")
    if mount is None:
        return []
    try:
        _fill(mount)
        o = cclab(["run", str(scenario(tmp, duration="2s")), "--out", str(mount / "r")])
        return clean_error(o, "No space left on device", str(mount))
    finally:
        _umount(mount)


# --- 8: unbounded reads ----------------------------------------------------------------------


@case(8, "scenario /dev/zero")
def _dev_zero(tmp: Path) -> list[str]:
    return clean_error(cclab(["validate", "/dev/zero"], timeout=30), "/dev/zero", codes=(1,))


@case(8, "scenario FIFO")
def _fifo(tmp: Path) -> list[str]:
    fifo = tmp / "s.fifo"
    os.mkfifo(fifo)
    return clean_error(cclab(["validate", str(fifo)], timeout=20), str(fifo), codes=(1,))


@case(8, "trace /dev/zero")
def _trace_zero(tmp: Path) -> list[str]:
    return _trace_case(tmp, lambda t: Path("/dev/zero"))


# --- 9: Ctrl-C during start-up ---------------------------------------------------------------


@case(9, "SIGINT at random moments of start-up: exit 130, no traceback or panic")
def _ctrl_c(tmp: Path) -> list[str]:
    s = scenario(tmp, duration="30s")
    found = []
    for i in range(12):
        p = subprocess.Popen(
            [CCLAB, "run", str(s), "--out", str(tmp / f"r{i}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.3 + 0.08 * i)  # after CPython's own start-up (see tests/test_faults.py)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        o = Outcome(p.returncode, out, err)
        flaws = o.flaws()
        # 130, or 0 when the run was written before the signal came (a late Ctrl-C is ignored).
        finished = p.returncode == 0 and (tmp / f"r{i}" / "meta.json").exists()
        if p.returncode != 130 and not finished:
            flaws.append(f"exit {p.returncode}")
        if flaws:
            found.append(f"after {0.3 + 0.08 * i:.2f}s: {', '.join(flaws)} {err.strip()[-200:]!r}")
    return found


# --- 10: names and durations that overflow ---------------------------------------------------


@case(10, "a 400-character name is refused at validation")
def _long_name(tmp: Path) -> list[str]:
    return clean_error(cclab(["validate", str(scenario(tmp, name="n" * 400))]), "name", codes=(1,))


@case(10, 'duration = "99999999999999999999h" is refused, not clamped')
def _huge_duration(tmp: Path) -> list[str]:
    return clean_error(
        cclab(["validate", str(scenario(tmp, duration="99999999999999999999h"))]),
        "duration",
        codes=(1,),
    )


# --- 11: misleading messages -----------------------------------------------------------------


@case(11, "a non-string `delivery`")
def _delivery(tmp: Path) -> list[str]:
    s = tmp / "d.toml"
    s.write_text('[link]\nrate = "12Mbps"\ndelivery = 1\n[[flows]]\nscheme = "cubic"\n')
    o = cclab(["validate", str(s)])
    found = clean_error(o, "link.delivery", "constant", codes=(1,))
    if "unit variant" in o.text:
        found.append("says `unit variant`")
    return found


@case(11, "--seed -1 is the command line's error, not the file's")
def _seed(tmp: Path) -> list[str]:
    s = scenario(tmp)
    s.write_text("seed = 1\n" + s.read_text())
    o = cclab(["run", str(s), "--seed", "-1", "--out", str(tmp / "r")])
    found = clean_error(o, "--seed")
    if f"{s}:" in o.err:
        found.append("blamed on the scenario file")
    return found


@case(11, "--out /etc/passwd/x")
def _out_under_file(tmp: Path) -> list[str]:
    o = cclab(["run", str(scenario(tmp)), "--out", "/etc/passwd/x"])
    found = clean_error(o, "/etc/passwd", "not a directory")
    if "File exists" in o.err:
        found.append("says `File exists`")
    return found


@case(11, "a bad trace's error does not echo the file's content")
def _trace_echo(tmp: Path) -> list[str]:
    secret = "Z" * 5000
    trace = tmp / "bad.trace"
    trace.write_text(secret + "\n")
    s = tmp / "t.toml"
    s.write_text(f'[link]\ntrace = "{trace}"\n[[flows]]\nscheme = "cubic"\n')
    o = cclab(["validate", str(s)])
    found = clean_error(o, f"{trace}:1", codes=(1,))
    if secret[:200] in o.text:
        found.append("echoes the line whole")
    return found


def main(argv: Sequence[str]) -> int:
    wanted = {int(a) for a in argv} or set(CASES)
    still = 0
    for defect in sorted(wanted):
        for title, fn in CASES[defect]:
            with tempfile.TemporaryDirectory(prefix="cclab-repro-") as tmp:
                t0 = time.monotonic()
                flaws = fn(Path(tmp))
            verdict = "FIXED" if not flaws else "DEFECT"
            still += bool(flaws)
            print(f"[{defect:2}] {verdict:6} {title} ({time.monotonic() - t0:.1f}s)")
            for flaw in flaws:
                print(f"          {flaw}")
            sys.stdout.flush()
    print(f"{still} case(s) still show their defect")
    return min(still, 100)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
