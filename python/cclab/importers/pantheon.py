"""`cclab import pantheon DIR`: a Pantheon data directory → one cclab experiment.

Each `<cc>_datalink_run<N>.log` (the merged tunnel log the Pantheon's analysis reads, §1.7)
becomes the run `runs/<cc>-r<N>` of scheme `<cc>`; `pantheon_metadata.json`, when present, gives
the schemes' order, the runtime and the rest of the test's description. Flow k of a Pantheon log
is cclab flow k - 1. As the Pantheon's `plot.py` does, a run whose departures span less than
0.8 x runtime is not valid: it is imported but marked `invalid` and left out of reports. When a
run's `<cc>_stats_run<N>.log` holds the Pantheon's own printed statistics, the import checks
that cclab's numbers agree with them to the printed precision and records the outcome.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

from cclab.experiment_dir import (
    RUNS_SUBDIR,
    finish,
    new_archive_dir,
    staged_experiment,
)
from cclab.importers.link_log import (
    LogFormatError,
    check_readable,
    read_link_log,
    require_packets,
)
from cclab.importers.log_run import import_log, save_imported_run, to_run_result
from cclab.importers.pantheon_stats import compare, read_stats
from cclab.provenance import environment

ENGINE = "import:pantheon"
METADATA_FILE = "pantheon_metadata.json"
DATALINK = re.compile(r"^(?P<cc>.+)_datalink_run(?P<run>\d+)\.log$")
#: plot.py's validity rule: departures must span at least this share of the runtime.
VALID_SPAN = 0.8


def _logs(directory: Path) -> list[tuple[str, int, Path]]:
    found = []
    for path in sorted(directory.iterdir()):
        if match := DATALINK.match(path.name):
            found.append((match["cc"], int(match["run"]), path))
    return found


#: The largest metadata file read (the Pantheon's is a few hundred bytes).
MAX_METADATA_BYTES = 1 << 20


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is out of range")
    return value


def _metadata(directory: Path) -> dict[str, Any]:
    """The metadata, {} when there is no file; a LogFormatError when there is one that is not
    a JSON object of finite numbers (it is recorded with the experiment, which must stay JSON)."""
    path = directory / METADATA_FILE
    if not path.exists():
        return {}
    check_readable(path, MAX_METADATA_BYTES)
    try:
        data = json.loads(
            path.read_text(encoding="utf-8", errors="replace"),
            parse_float=_finite,
            parse_constant=_finite,
        )
    except json.JSONDecodeError as e:
        raise LogFormatError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None
    except (ValueError, RecursionError) as e:
        raise LogFormatError(f"{path}: {e}") from None
    if not isinstance(data, dict):
        raise LogFormatError(f"{path}: expected a JSON object (the Pantheon's metadata)")
    return data


def _scheme_order(metadata: dict[str, Any], found: list[str]) -> list[str]:
    listed = metadata.get("cc_schemes") or []
    if isinstance(listed, str):
        listed = listed.split()
    ordered = [cc for cc in listed if cc in found]
    return ordered + sorted(cc for cc in set(found) if cc not in ordered)


def import_pantheon(
    directory: str | Path,
    *,
    out: str | Path | None = None,
    keep_packets: bool = True,
    command: list[str] | None = None,
) -> Path:
    """Imports every datalink log of a Pantheon data directory as one experiment directory
    (default: a new one in the archive) and returns its path."""
    directory = Path(directory)
    if not directory.is_dir():
        raise LogFormatError(f"{directory} is not a directory (a Pantheon data directory is)")
    logs = _logs(directory)
    if not logs:
        raise LogFormatError(
            f"{directory}: no `<scheme>_datalink_run<N>.log` file; the Pantheon writes them "
            "in its data directory (src/experiments/data by default)"
        )
    metadata = _metadata(directory)
    runtime_s = metadata.get("runtime")
    schemes = _scheme_order(metadata, [cc for cc, _, _ in logs])
    name = directory.resolve().name
    target = Path(out) if out is not None else new_archive_dir(name, "pantheon")
    started = time.perf_counter()
    entries = []
    with staged_experiment(target) as staging:
        for cc, run_number, path in logs:
            entries.append(
                _import_run(
                    staging, cc, run_number, path, runtime_s, metadata, keep_packets, command
                )
            )
        entries.sort(key=lambda e: (schemes.index(e["scheme"]), e["repetition"]))
        (staging / "scenario.toml").write_text(
            (staging / entries[0]["dir"] / "scenario.toml").read_text()
        )
        finish(
            staging,
            {
                "kind": ENGINE,
                "name": name,
                "description": f"Pantheon results imported from {directory.resolve()}",
                "scenario": str(directory.resolve()),
                "engine": ENGINE,
                "schemes": schemes,
                "runs_per_scheme": max(e["repetition"] for e in entries),
                "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "wall_secs": time.perf_counter() - started,
                "command": command or [],
                "import": {"format": "pantheon", "directory": str(directory.resolve())},
                "pantheon_metadata": metadata,
                **environment(),
                "runs": entries,
            },
        )
    return target


def _import_run(
    staging: Path,
    cc: str,
    run_number: int,
    path: Path,
    runtime_s: Any,
    metadata: dict[str, Any],
    keep_packets: bool,
    command: list[str] | None,
) -> dict[str, Any]:
    t0 = time.perf_counter()
    log = read_link_log(path)
    require_packets(log)
    n_flows = max(log.flows) + 1 if log.flows else 1
    imported = import_log(log, [cc] * n_flows)
    result = to_run_result(
        imported,
        name=f"{cc} run {run_number}",
        description=f"Pantheon datalink log {path.name}",
        wall_secs=time.perf_counter() - t0,
        keep_packets=keep_packets,
    )
    entry: dict[str, Any] = {
        "dir": f"{RUNS_SUBDIR}/{cc}-r{run_number}",
        "scheme": cc,
        "repetition": run_number,
        "seed": None,
        "status": "ok",
        "log": path.name,
    }
    total = result.summary[result.summary["flow"].isna()].iloc[0]
    span_s = (total["last_delivery_ns"] - total["first_delivery_ns"]) / 1e9
    if isinstance(runtime_s, int | float) and span_s < VALID_SPAN * runtime_s:
        entry["status"] = "invalid"
        entry["error"] = (
            f"departures span {span_s:.1f} s, under {VALID_SPAN:g} x the {runtime_s:g} s "
            "runtime (the Pantheon's plot.py discards such runs)"
        )
    details: dict[str, Any] = {
        "format": "pantheon",
        "log": str(path.resolve()),
        "scheme": cc,
        "run": run_number,
        "flow_ids": "cclab flow k is Pantheon flow k + 1" if log.has_flow_ids else "one flow",
    }
    stats = read_stats(path.with_name(f"{cc}_stats_run{run_number}.log"))
    if stats is not None:
        differences = compare(
            stats,
            result.summary,
            imported.capacity_mbps,
            first_flow_id=1 if log.has_flow_ids else 0,
        )
        details["pantheon_stats"] = {"printed": stats, "agrees": not differences}
        if differences:
            details["pantheon_stats"]["differences"] = differences
        entry["pantheon_stats_agree"] = not differences
    save_imported_run(
        result,
        imported,
        staging / entry["dir"],
        engine=ENGINE,
        details={**details, "metadata": metadata},
        command=command,
    )
    return entry
