"""Where and with what a run was made: the exact tool version (git commit and dirty flag of the
checkout, or of the source a wheel was built from), the Rust compiler that built the core, and
the host — recorded in every run's `meta.json` and experiment's `experiment.json`, and shown in
the report's environment section, as the Pantheon recorded each scheme's git summary."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

from cclab._core import BUILD_INFO, __version__

#: The checkout an editable install runs from (python/cclab/ → the repository root).
_SOURCE_ROOT = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(_SOURCE_ROOT), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def source_version() -> dict[str, Any]:
    """The commit the running code comes from. From a git checkout (an editable install) it is
    read now, so Python edits since the last build count; otherwise (a wheel) it is what the
    build recorded. `git_dirty` says whether tracked files differed from the commit."""
    commit = _git("rev-parse", "HEAD") if (_SOURCE_ROOT / ".git").exists() else None
    if commit:
        status = _git("status", "--porcelain", "--untracked-files=no")
        return {
            "git_commit": commit,
            "git_dirty": None if status is None else bool(status),
            "version_from": "checkout",
        }
    built = BUILD_INFO.get("git_commit") or None
    dirty = BUILD_INFO.get("git_dirty")
    return {
        "git_commit": built,
        "git_dirty": None if not dirty else dirty == "true",
        "version_from": "build" if built else "package",
    }


def environment() -> dict[str, Any]:
    """The tool's version and the host a run or experiment ran on, for its metadata."""
    return {
        "cclab_version": __version__,
        **source_version(),
        "rustc": BUILD_INFO.get("rustc") or None,
        "build_profile": BUILD_INFO.get("profile") or None,
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
