"""The real path's measurements a calibration fits: per scheme, the mean throughput (Mbit/s)
and the mean p95 one-way delay (ms), as the Pantheon grades its emulators.

Three sources are accepted:

- a CSV file whose header is exactly the columns `scheme,throughput_mbps,delay_p95_ms` (in any
  order), one row per scheme;
- a JSON file `{"schemes": [{"scheme": "cubic", "throughput_mbps": 2.1, "delay_p95_ms": 240},
  ...]}` (optionally with a "description");
- a cclab experiment directory (`cclab experiment`, an emulator experiment with kernel TCP, an
  imported Pantheon data directory): each scheme's figures are the means over its complete runs
  of the run's figures, read as `cclab compare` reads them (`compare.scheme_figures`).

Throughput must be positive and the delay positive (a p95 one-way delay of zero or less is not
a measurement); a scheme may appear once.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cclab.compare import scheme_figures
from cclab.experiment_dir import EXPERIMENT_FILE

#: The columns (and JSON keys) of a target file: the summary table's own column names.
COLUMNS = ("scheme", "throughput_mbps", "delay_p95_ms")


class TargetError(ValueError):
    """A target that cannot be read: the message names the file, the line or field, and what
    would be accepted."""


@dataclass(frozen=True)
class SchemeTarget:
    """One scheme's measured figures on the real path."""

    throughput_mbps: float
    delay_p95_ms: float
    #: How many runs the figures average (None when the file does not say).
    runs: int | None = None


@dataclass
class Target:
    """The real path: per scheme (in the file's order) its figures."""

    source: str
    schemes: dict[str, SchemeTarget]
    description: str = ""
    #: The base scenario the target's runs had (an experiment directory's scenario.toml).
    scenario_toml: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def max_throughput(self) -> float:
        return max(s.throughput_mbps for s in self.schemes.values())

    @property
    def min_delay(self) -> float:
        return min(s.delay_p95_ms for s in self.schemes.values())

    @property
    def max_delay(self) -> float:
        return max(s.delay_p95_ms for s in self.schemes.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "description": self.description,
            "schemes": [
                {
                    "scheme": name,
                    "throughput_mbps": s.throughput_mbps,
                    "delay_p95_ms": s.delay_p95_ms,
                    **({"runs": s.runs} if s.runs is not None else {}),
                }
                for name, s in self.schemes.items()
            ],
        }


_ACCEPTED = (
    "a CSV file with the header `scheme,throughput_mbps,delay_p95_ms`, a JSON file "
    '{"schemes": [{"scheme": ..., "throughput_mbps": ..., "delay_p95_ms": ...}]}, '
    "or a cclab experiment directory"
)


def _number(where: str, key: str, value: Any) -> float:
    """A positive finite number, or a TargetError naming where it was read."""
    if isinstance(value, bool):
        value = None  # JSON true is not a measurement
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TargetError(
            f"{where}: `{key}` is {value!r}; expected a number in "
            f"{'Mbit/s' if key.endswith('_mbps') else 'ms'}, greater than 0"
        ) from None
    if not math.isfinite(number) or number <= 0:
        what = "throughput" if key.endswith("_mbps") else "p95 one-way delay"
        raise TargetError(f"{where}: `{key}` is {value}; a {what} must be greater than 0")
    return number


def _add(schemes: dict[str, SchemeTarget], where: str, record: dict[str, Any]) -> None:
    name = str(record.get("scheme") or "").strip()
    if not name:
        raise TargetError(f"{where}: `scheme` is missing or empty; give the scheme's name")
    if name in schemes:
        raise TargetError(f"{where}: scheme `{name}` appears twice; give each scheme once")
    schemes[name] = SchemeTarget(
        _number(where, "throughput_mbps", record.get("throughput_mbps")),
        _number(where, "delay_p95_ms", record.get("delay_p95_ms")),
    )


def _read_csv(path: Path) -> Target:
    text = path.read_text(encoding="utf-8-sig")
    if not text.strip():
        raise TargetError(f"{path}: the file is empty; expected {_ACCEPTED}")
    rows = csv.reader(text.splitlines())
    header = [h.strip() for h in next(rows)]
    if sorted(header) != sorted(COLUMNS):
        unknown = [h for h in header if h not in COLUMNS]
        missing = [c for c in COLUMNS if c not in header]
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if unknown:
            parts.append(f"unknown {', '.join(unknown)}")
        raise TargetError(
            f"{path}:1: wrong columns ({'; '.join(parts) or 'a column repeats'}); the header "
            f"must be exactly {','.join(COLUMNS)} (in any order)"
        )
    schemes: dict[str, SchemeTarget] = {}
    for line, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise TargetError(
                f"{path}:{line}: {len(row)} fields, the header has {len(header)} "
                f"({','.join(header)})"
            )
        _add(schemes, f"{path}:{line}", dict(zip(header, (c.strip() for c in row), strict=True)))
    if not schemes:
        raise TargetError(f"{path}: no schemes below the header; give one row per scheme")
    return Target(str(path), schemes)


def _read_json(path: Path) -> Target:
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise TargetError(f"{path}: the file is empty; expected {_ACCEPTED}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise TargetError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("schemes"), list):
        raise TargetError(
            f"{path}: expected an object with a list `schemes`, e.g. "
            '{"schemes": [{"scheme": "cubic", "throughput_mbps": 2.1, "delay_p95_ms": 240}]}'
        )
    unknown = sorted(set(data) - {"schemes", "description", "source"})
    if unknown:
        raise TargetError(
            f"{path}: unknown key(s) {', '.join(unknown)}; accepted: schemes, description, source"
        )
    schemes: dict[str, SchemeTarget] = {}
    for i, record in enumerate(data["schemes"]):
        where = f"{path}: field `schemes[{i}]`"
        if not isinstance(record, dict):
            raise TargetError(f"{where}: expected an object with {', '.join(COLUMNS)}")
        extra = sorted(set(record) - {*COLUMNS, "runs"})
        if extra:
            raise TargetError(
                f"{where}: unknown key(s) {', '.join(extra)}; accepted: {', '.join(COLUMNS)}, runs"
            )
        _add(schemes, where, record)
    if not schemes:
        raise TargetError(f"{path}: `schemes` is empty; give one entry per scheme")
    return Target(str(path), schemes, description=str(data.get("description", "")))


def _read_experiment(path: Path) -> Target:
    # The report's reader: it keeps complete runs only, and knows each run's scheme.
    from cclab.report.loading import NotARunError, load_study

    try:
        study = load_study(path)
    except NotARunError as e:
        raise TargetError(f"{path}: {e}; expected {_ACCEPTED}") from None
    if study.kind != "experiment" or not study.runs:
        raise TargetError(f"{path}: not an experiment directory with complete runs")
    figures: dict[str, list[tuple[float, float]]] = {}
    for run in study.runs:
        scheme = None if "+" in run.scheme else run.scheme
        if scheme is None:
            raise TargetError(
                f"{run.path}: the run mixes schemes ({run.scheme}); a calibration target "
                "needs one scheme per run"
            )
        # Every flow runs the scheme: the run's total row, as `cclab compare` reads it.
        figures.setdefault(scheme, []).append(scheme_figures(run, None))
    schemes = {}
    for name, values in figures.items():
        tput = statistics.fmean(t for t, _ in values)
        delay = statistics.fmean(d for _, d in values)
        where = f"{path}: scheme `{name}`"
        schemes[name] = SchemeTarget(
            _number(where, "throughput_mbps", tput),
            _number(where, "delay_p95_ms", delay),
            runs=len(values),
        )
    return Target(
        str(path),
        schemes,
        description=str(study.meta.get("description", "")),
        scenario_toml=study.scenario_toml or None,
        meta={"engine": study.meta.get("engine"), "experiment": study.meta.get("name")},
    )


def load_target(path: str | Path) -> Target:
    """Reads a target (see the module comment) or raises `TargetError`."""
    path = Path(path)
    if path.is_dir():
        if not (path / EXPERIMENT_FILE).exists():
            raise TargetError(
                f"{path}: a directory without {EXPERIMENT_FILE}; expected {_ACCEPTED}"
            )
        return _read_experiment(path)
    if not path.exists():
        raise TargetError(f"{path}: no such file; expected {_ACCEPTED}")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _read_csv(path)
    if suffix == ".json":
        return _read_json(path)
    raise TargetError(
        f"{path}: unknown kind of file ({suffix or 'no suffix'}); expected {_ACCEPTED}"
    )
