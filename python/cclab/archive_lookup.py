"""Finding runs and experiments in the archive by what a user types: a path, a directory name
under the archive root (or a unique prefix of one), or `latest`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from cclab.archive import META_FILE, is_complete, runs_root
from cclab.experiment_dir import EXPERIMENT_FILE, RUNS_SUBDIR, is_complete_experiment

LATEST = "latest"


class ArchiveLookupError(LookupError):
    """Nothing (or more than one thing) in the archive matches."""


def archive_entries(root: Path | None = None) -> Iterator[Path]:
    """Complete experiments and complete top-level runs under the root; hidden (staging)
    directories are never entries."""
    root = root or runs_root()
    if not root.is_dir():
        return
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        if is_complete_experiment(entry) or is_complete(entry):
            yield entry


def experiment_runs(experiment: Path) -> Iterator[Path]:
    runs = experiment / RUNS_SUBDIR
    if runs.is_dir():
        for entry in sorted(runs.iterdir()):
            if not entry.name.startswith(".") and entry.is_dir():
                yield entry


def _finished_at(entry: Path) -> float:
    for marker in (EXPERIMENT_FILE, META_FILE):
        path = entry / marker
        if path.exists():
            return path.stat().st_mtime
    return 0.0


def resolve(text: str, root: Path | None = None) -> Path:
    """The run or experiment directory that `text` names."""
    path = Path(text)
    if path.exists():
        return path
    root = root or runs_root()
    entries = list(archive_entries(root))
    if text == LATEST:
        if not entries:
            raise ArchiveLookupError(f"the archive {root} has no complete run or experiment yet")
        return max(entries, key=_finished_at)
    exact = [e for e in entries if e.name == text]
    if exact:
        return exact[0]
    matches = [e for e in entries if e.name.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(m.name for m in matches[:5])
        raise ArchiveLookupError(f"{text!r} matches {len(matches)} entries in {root}: {names}, ...")
    raise ArchiveLookupError(
        f"{text} is not a directory, nor a run or experiment in the archive {root} "
        f"(give a path, a directory name from `cclab runs`, or `{LATEST}`)"
    )
