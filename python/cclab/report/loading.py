"""Reading a run directory or an experiment directory back for reports and summaries.

A *study* is what a report shows: the runs of an experiment, or one run on its own. Only
complete runs are read (a run whose `meta.json` does not say complete is not a run)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cclab.archive import META_FILE, is_complete
from cclab.experiment_dir import EXPERIMENT_FILE, read_experiment
from cclab.sender_trace import TRACE_FILE

#: Optional per-bin link capacity of a run (written by the log importers).
CAPACITY_FILE = "capacity.parquet"
PACKETS_FILE = "packets.parquet"


class NotARunError(ValueError):
    """A path that is neither a complete run directory nor a complete experiment directory."""


@dataclass
class RunData:
    path: Path
    #: The scheme(s) of its flows: "cubic", or "cubic+bbr" for a mixed run.
    scheme: str
    repetition: int | None
    meta: dict[str, Any]
    scenario_toml: str
    summary: pd.DataFrame
    timeseries: pd.DataFrame
    jain: pd.DataFrame
    flows: pd.DataFrame
    capacity: pd.DataFrame | None
    #: Request workloads' per-request rows and per-bucket FCT table; the middlebox's samples
    #: (None when the run had none).
    requests: pd.DataFrame | None = None
    fct: pd.DataFrame | None = None
    middlebox: pd.DataFrame | None = None
    #: The run's entry tags in its experiment (a comparison's `pair` and `side`); {} alone.
    tags: dict[str, Any] = field(default_factory=dict)
    #: An in-memory run's sender trace (a notebook's result); a directory's is read from
    #: `trace_path` by the figures that draw it.
    trace: pd.DataFrame | None = None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def seed(self) -> int | None:
        return self.meta.get("seed")

    @property
    def total(self) -> pd.Series:
        """The summary's total row."""
        return self.summary[self.summary["flow"].isna()].iloc[0]

    @property
    def scenario(self) -> dict[str, Any]:
        try:
            return tomllib.loads(self.scenario_toml)
        except tomllib.TOMLDecodeError:
            return {}

    @property
    def packets_path(self) -> Path | None:
        path = self.path / PACKETS_FILE
        return path if path.exists() else None

    @property
    def trace_path(self) -> Path | None:
        """The run's sender trace (`--trace`), read only by the figures that draw it."""
        path = self.path / TRACE_FILE
        return path if path.exists() else None

    @property
    def has_trace(self) -> bool:
        return self.trace is not None or self.trace_path is not None

    def read_trace(self, columns: list[str]) -> pd.DataFrame:
        """`columns` of the run's sender trace (which it must have)."""
        if self.trace is not None:
            return self.trace[columns]
        assert self.trace_path is not None, "a run without a trace"
        return pd.read_parquet(self.trace_path, columns=columns)

    @property
    def engine(self) -> str:
        return str(self.meta.get("engine", "sim"))


@dataclass
class Study:
    path: Path
    #: "experiment" or "run".
    kind: str
    title: str
    meta: dict[str, Any]
    scenario_toml: str
    runs: list[RunData]
    schemes: list[str] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)

    def runs_of(self, scheme: str) -> list[RunData]:
        return [r for r in self.runs if r.scheme == scheme]


def _schemes_of(flows: pd.DataFrame) -> str:
    names = list(dict.fromkeys(str(s) for s in flows.get("scheme", pd.Series(dtype=str))))
    return "+".join(names) or "?"


def load_run(
    path: Path,
    scheme: str | None = None,
    repetition: int | None = None,
    tags: dict[str, Any] | None = None,
) -> RunData:
    if not is_complete(path):
        raise NotARunError(f"{path} is not a complete run directory (no complete {META_FILE})")
    frames = {
        stem: pd.read_parquet(path / f"{stem}.parquet")
        for stem in ("summary", "timeseries", "jain", "flows")
    }
    capacity_path = path / CAPACITY_FILE
    optional = {
        stem: pd.read_parquet(path / f"{stem}.parquet")
        if (path / f"{stem}.parquet").exists()
        else None
        for stem in ("requests", "fct", "middlebox")
    }
    return RunData(
        **optional,
        path=path,
        scheme=scheme or _schemes_of(frames["flows"]),
        repetition=repetition,
        meta=json.loads((path / META_FILE).read_text()),
        scenario_toml=(path / "scenario.toml").read_text(),
        summary=frames["summary"],
        timeseries=frames["timeseries"],
        jain=frames["jain"],
        flows=frames["flows"],
        capacity=pd.read_parquet(capacity_path) if capacity_path.exists() else None,
        tags=dict(tags or {}),
    )


def load_study(path: str | Path) -> Study:
    """The experiment or the single run in directory `path`."""
    path = Path(path)
    if not path.is_dir():
        raise NotARunError(f"{path} is not a directory")
    meta = read_experiment(path)
    if meta is not None:
        runs = []
        failed = []
        for entry in meta.get("runs", []):
            run_dir = path / entry["dir"]
            if entry.get("status", "ok") == "ok" and is_complete(run_dir):
                runs.append(load_run(run_dir, entry.get("scheme"), entry.get("repetition"), entry))
            else:
                failed.append(entry)
        schemes = list(meta.get("schemes") or dict.fromkeys(r.scheme for r in runs))
        scenario_file = path / "scenario.toml"
        return Study(
            path=path,
            kind="experiment",
            title=str(meta.get("name", path.name)),
            meta=meta,
            scenario_toml=scenario_file.read_text() if scenario_file.exists() else "",
            runs=runs,
            schemes=schemes,
            failed=failed,
        )
    if (path / EXPERIMENT_FILE).exists():
        raise NotARunError(f"{path} is an experiment that did not finish ({EXPERIMENT_FILE})")
    run = load_run(path)
    return Study(
        path=path,
        kind="run",
        title=str(run.meta.get("name", path.name)),
        meta=run.meta,
        scenario_toml=run.scenario_toml,
        runs=[run],
        schemes=[run.scheme],
    )
