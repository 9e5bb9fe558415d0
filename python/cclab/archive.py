"""Run directories: one directory per run, written atomically.

A run directory holds `scenario.toml` (as run, every default filled), the results as Parquet
(zstd) — `summary`, `timeseries`, `jain`, `flows`; `requests` and `fct` for a run with request
workloads, `middlebox` for one with a middlebox; when packets were logged, `packets`; with a
sender trace, `trace` — and
`meta.json` (its `fct` holds the `fct` table by size bucket, for the archive index). Everything
is first written into a hidden sibling `.<name>.partial-<random>`;
`meta.json` (with `"complete": true`) is written last, then the directory is renamed into place
in one step. A run that is killed therefore leaves either nothing or a hidden `.partial-`
directory without a complete `meta.json`, never something that looks like a finished run.
The staging name carries the writer's host and process id (`.<name>.partial-<host>.<pid>.<random>`),
so `collect_partials` (`cclab runs --gc`) can remove those whose process is gone.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from cclab.provenance import environment
from cclab.sender_trace import TRACE_FILE

if TYPE_CHECKING:
    from cclab.result import RunResult


def fct_by_bucket(fct: Any) -> dict[str, dict[str, Any]]:
    """The `fct` table (a DataFrame) as {bucket: {column: value}}, for meta.json and the
    archive index; empty for a run without requests."""
    if fct.empty or not int(fct["requests"].sum()):
        return {}
    rows = fct.set_index("bucket").to_dict(orient="index")
    return {str(k): {c: float(v) for c, v in r.items()} for k, r in rows.items()}


#: Environment variable naming the folder where runs go by default.
RUNS_ENV = "CCLAB_RUNS"
DEFAULT_RUNS_DIR = "cclab-runs"
META_FILE = "meta.json"
COMPRESSION = "zstd"


def runs_root() -> Path:
    return Path(os.environ.get(RUNS_ENV) or DEFAULT_RUNS_DIR)


def default_run_dir(name: str, seed: int, when: datetime | None = None) -> Path:
    """`<runs root>/<timestamp>-<scenario name>-s<seed>`, with a numeric suffix if taken."""
    stamp = (when or datetime.now()).strftime("%Y%m%d-%H%M%S")
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "run"
    base = runs_root() / f"{stamp}-{safe_name}-s{seed}"
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def _json_safe(value: Any) -> Any:
    """NaN and infinities become null, so that meta.json is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    return value


def _meta(result: RunResult, command: list[str] | None, files: list[str]) -> dict[str, Any]:
    return _json_safe(
        {
            "complete": True,
            **environment(),
            "engine": result.engine,
            "name": result.name,
            "seed": result.seed,
            "source": result.source,
            "started_at": result.started_at.isoformat(timespec="seconds"),
            "wall_secs": result.wall_secs,
            "command": command if command is not None else list(sys.argv),
            "events": result.stats.get("events"),
            "events_per_sec": result.events_per_sec,
            "simulated_secs": result.duration_s,
            "metrics": result.metrics,
            "fct": fct_by_bucket(result.fct),
            "stats": result.stats,
            "files": files,
        }
    )


def _write_packets(columns: dict[str, Any], path: Path) -> None:
    """The packet log straight from the core's numpy columns (no DataFrame in between); a
    coded column (one the core hands over with its `<name>_names`) becomes a dictionary."""
    arrays = {}
    for key, values in columns.items():
        if f"{key}_names" in columns:
            names = pa.array(columns[f"{key}_names"], type=pa.string())
            arrays[key] = pa.DictionaryArray.from_arrays(pa.array(values), names)
        elif not key.endswith("_names"):
            arrays[key] = pa.array(values)
    pq.write_table(pa.table(arrays), path, compression=COMPRESSION)


def _write_contents(result: RunResult, folder: Path, command: list[str] | None) -> None:
    (folder / "scenario.toml").write_text(result.scenario_toml)
    frames = {
        "summary": result.summary,
        "timeseries": result.timeseries,
        "jain": result.jain,
        "flows": result.flows,
    }
    for stem, frame in frames.items():
        frame.to_parquet(folder / f"{stem}.parquet", compression=COMPRESSION, index=False)
    # Request workloads and the middlebox only where the run had them.
    for stem, frame in (
        ("requests", result.requests),
        ("fct", result.fct),
        ("middlebox", result.middlebox),
    ):
        if len(frame) and (stem != "fct" or len(result.requests)):
            frame.to_parquet(folder / f"{stem}.parquet", compression=COMPRESSION, index=False)
    if result.packet_columns is not None:
        _write_packets(result.packet_columns, folder / "packets.parquet")
    if result.trace is not None:
        result.trace.to_parquet(folder / TRACE_FILE, compression=COMPRESSION, index=False)
    files = [*sorted(p.name for p in folder.iterdir()), META_FILE]
    # Last: the marker that the directory is whole.
    with (folder / META_FILE).open("w") as f:
        json.dump(_meta(result, command, files), f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())


def write_run_dir(result: RunResult, target: Path, *, command: list[str] | None = None) -> Path:
    """Writes `result` as the run directory `target`, which must not exist yet."""
    if target.exists():
        raise FileExistsError(f"{target} already exists; choose another output directory")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = make_staging_dir(target)
    except FileExistsError:
        raise  # a file where a parent directory goes: the CLI says so
    except OSError as e:
        raise write_error(e, target) from None
    try:
        staging.chmod(0o777 & ~_umask())  # mkdtemp makes it private; a run dir is not
        _write_contents(result, staging, command)
        staging.rename(target)
    except OSError as e:
        shutil.rmtree(staging, ignore_errors=True)
        raise write_error(e, target) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def write_error(error: OSError, target: Path) -> OSError:
    """An error writing `target` that names it and the system's reason, whoever raised it
    (pyarrow's write errors carry neither a file name nor, always, an errno)."""
    text = str(error)
    number = error.errno
    if number is None:
        found = re.search(r"errno (\d+)", text, re.IGNORECASE)
        number = int(found.group(1)) if found else None
    reason = os.strerror(number) if number else (error.strerror or text)
    return OSError(number, f"{reason} (writing {target})", str(target.parent))


#: What names a hidden staging directory, and the host and process id of its writer.
PARTIAL_MARK = ".partial-"
_PARTIAL_NAME = re.compile(
    r"^\.(?P<name>.+)\.partial-(?:(?P<host>[A-Za-z0-9-]+)\.(?P<pid>\d+)\.)?[^.]*$"
)


def _host_tag() -> str:
    """This host's name in a form that parses back out of a directory name."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def make_staging_dir(target: Path) -> Path:
    """A new hidden sibling of `target` to build it in, named for its writer (host and pid)."""
    prefix = f".{target.name}{PARTIAL_MARK}{_host_tag()}.{os.getpid()}."
    return Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def abandoned_partial(directory: Path) -> bool:
    """Whether `directory` is a staging directory whose writer is gone: written on this host by
    a process that no longer runs. One from another host, or of the older unnamed form, is
    never judged (its writer cannot be checked from here)."""
    found = _PARTIAL_NAME.match(directory.name)
    if not found or found["pid"] is None or found["host"] != _host_tag():
        return False
    return not _pid_alive(int(found["pid"]))


def collect_partials(root: Path) -> tuple[list[Path], list[Path]]:
    """Removes the abandoned staging directories under the archive `root` (a killed run or
    experiment leaves one). Returns (removed, kept): kept are staging directories still being
    written, or whose writer cannot be checked from this host."""
    removed: list[Path] = []
    kept: list[Path] = []
    for folder, subdirs, files in os.walk(root):
        if META_FILE in files:
            subdirs.clear()  # a finished run holds no staging directories
            continue
        for sub in list(subdirs):
            if PARTIAL_MARK not in sub or not sub.startswith("."):
                continue
            subdirs.remove(sub)  # nothing inside a staging directory is the archive's
            path = Path(folder) / sub
            if abandoned_partial(path):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
            else:
                kept.append(path)
    return removed, kept


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def is_complete(directory: Path) -> bool:
    """Whether `directory` is a finished run (its meta.json says complete)."""
    try:
        meta = json.loads((directory / META_FILE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("complete") is True
