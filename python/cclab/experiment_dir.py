"""Experiment directories: several runs that belong together, written atomically (by the
batch runner, `cclab.batch`, for experiments, reproductions and comparisons, and by the
Pantheon importer).

An experiment directory holds `experiment.json`, the base `scenario.toml` and its runs as
ordinary run directories under `runs/` (each one written atomically by `cclab.archive`). The
whole experiment is first built in a hidden sibling named for its writer (see
`archive.make_staging_dir`); `experiment.json` (with `"complete": true`) is written last
and the directory is then renamed into place, so an experiment that is interrupted leaves
only a hidden directory that the index never lists (and `cclab runs --gc` removes).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from cclab.archive import make_staging_dir, runs_root, write_error

EXPERIMENT_FILE = "experiment.json"
RUNS_SUBDIR = "runs"


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "experiment"


def new_archive_dir(name: str, suffix: str, when: datetime | None = None) -> Path:
    """`<runs root>/<timestamp>-<name>-<suffix>`, with a numeric suffix if taken."""
    stamp = (when or datetime.now()).strftime("%Y%m%d-%H%M%S")
    base = runs_root() / f"{stamp}-{safe_name(name)}-{suffix}"
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def _write_json(path: Path, data: dict[str, Any]) -> None:
    with path.open("w") as f:
        json.dump(data, f, indent=2, allow_nan=False, default=str)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())


@contextmanager
def staged_experiment(target: Path, *, replace_empty: bool = False) -> Iterator[Path]:
    """Yields a hidden staging directory to fill; on a clean exit, renames it to `target`
    (call `finish` inside first). On any exception, including Ctrl-C, removes it. `target`
    must not exist; with `replace_empty` it may be an empty directory, which the rename
    replaces in one step."""
    if target.exists() and not (replace_empty and _is_empty_dir(target)):
        what = "is not an empty directory" if replace_empty else "already exists"
        raise FileExistsError(f"{target} {what}; choose another output directory")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = make_staging_dir(target)
    except OSError as e:
        raise write_error(e, target) from None
    try:
        mask = os.umask(0)
        os.umask(mask)
        staging.chmod(0o777 & ~mask)
        (staging / RUNS_SUBDIR).mkdir()
        yield staging
        if not is_complete_experiment(staging):
            raise RuntimeError(f"experiment in {staging} was not finished")
        staging.rename(target)
    except OSError as e:
        shutil.rmtree(staging, ignore_errors=True)
        if e.filename is not None and e.errno not in (errno.ENOSPC, errno.EROFS, errno.EDQUOT):
            raise  # an error that already names its file (e.g. a run's scenario)
        raise write_error(e, target) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _is_empty_dir(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def finish(staging: Path, meta: dict[str, Any]) -> None:
    """Writes `experiment.json` with `"complete": true`: the last file of an experiment."""
    _write_json(staging / EXPERIMENT_FILE, {"complete": True, **meta})


def read_experiment(directory: Path) -> dict[str, Any] | None:
    """The experiment's metadata, or None when `directory` is not a complete experiment."""
    try:
        meta = json.loads((directory / EXPERIMENT_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("complete") is not True:
        return None
    return meta


def is_complete_experiment(directory: Path) -> bool:
    return read_experiment(directory) is not None
