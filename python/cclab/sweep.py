"""Sweeps: a scenario over the cartesian product of values of its keys (`--set
link.rate=10Mbps,50Mbps --set link.delay=10ms,40ms`) x schemes x repetitions, as one plan for
the batch runner (`cclab.batch.run_batch`) on a local process pool or a Dask cluster
(`cclab.cluster`), archived as one sweep directory.

A sweep directory is an experiment directory (`kind = "sweep"`, written atomically by the batch
runner: runs/<name>/ ordinary run directories, `experiment.json` last) with `sweep.json`, the
manifest: the grid, its axes (the keys with more than one value), and for every grid point its
values and its runs (directory, scheme, repetition, seed, status, the error of a failed run,
and whether the run was reused from an earlier attempt). Every run's entry in `experiment.json`
carries its point and swept values too, which the archive index reads.

Resuming: runs are written first into a hidden work directory beside the target
(`.<name>.sweep-work/runs/`) and hard-linked into the batch's staging directory once every run
has ended, so an interrupted sweep (Ctrl-C, a kill) keeps its finished runs there while nothing
is marked complete. `resume=True` (`cclab sweep --resume`) with the same target reuses every
finished run whose scenario (as filled by the core, seed included) and engine are those the
plan asks for — from the work directory or from the runs of a complete sweep already at the
target — and runs only the missing and the failed ones; a complete target is then replaced in
one rename.

Seeds: repetition k (from 1) of every point and scheme uses seed `base + k - 1` (`base`: the
scenario's seed unless one is given), so the schemes and points of one repetition see the same
random draws (common random numbers, as in experiments).

Note: `cclab.sweep` (the package attribute) is the API function; import this module's names
with `from cclab.sweep import ...`.

Owns: grid expansion and its errors, sweep plans, the sweep manifest, resuming and the sweep's
DataFrame. Must not import the CLI or the report.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import math
import os
import shutil
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from cclab.api import validate
from cclab.archive import META_FILE, is_complete
from cclab.batch import (
    BatchResult,
    BatchRun,
    ExecuteFn,
    Executor,
    Observer,
    Plan,
    PlanError,
    RunOutcome,
    RunSpec,
    Task,
    _numbers,
    default_executor,
    execute_task,
    resolved_overrides,
    run_batch,
)
from cclab.engines import DEFAULT_ENGINE, UnknownEngineError, engine_named
from cclab.errors import ErrorLocation, ScenarioError
from cclab.experiment_dir import RUNS_SUBDIR, new_archive_dir, read_experiment, safe_name
from cclab.scenario_source import KEYWORD_DOT, ScenarioSource, describe

SWEEP_FILE = "sweep.json"
KIND = "sweep"
#: Suffix of the hidden work directory beside a sweep's target (`.<name>.sweep-work`).
WORK_SUFFIX = ".sweep-work"
#: Scenario keys a grid may not sweep: the batch gives every run its own seed.
RESERVED_KEYS = {"seed": "repetitions get their seeds from --runs and --seed"}


class SweepError(PlanError):
    """A sweep cannot be set up: a bad grid, a target that is not a sweep, a resume that does
    not fit."""


@dataclass(frozen=True)
class Axis:
    """One key of the grid and the values it takes, in the order given."""

    key: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Point:
    """One grid point: its index (from 0, row-major over the axes in the order given) and the
    value of every key."""

    index: int
    values: Mapping[str, Any]

    @property
    def label(self) -> str:
        shown = ", ".join(f"{k}={_shown(v)}" for k, v in self.values.items())
        return shown or "the scenario as it is"


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def normalise_key(key: str) -> str:
    """`link__rate` (a keyword spelling) → `link.rate`, as `cclab.run` reads overrides."""
    return key.strip().replace(KEYWORD_DOT, ".")


def split_values(text: str) -> list[str]:
    """`10Mbps,50Mbps` → ["10Mbps", "50Mbps"]: the comma-separated values of a command-line
    grid entry. Commas inside brackets, braces or quotes belong to one value (`[1, 2],[3]` is
    two arrays); every piece is kept, so an empty one can be refused by name."""
    pieces, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    pieces.append("".join(current).strip())
    return pieces


def _as_values(key: str, values: Any) -> tuple[Any, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        return (values,)  # one value, held fixed
    values = tuple(values)
    if not values:
        raise SweepError(f"grid key {key}: empty list of values; give at least one")
    return values


def make_axes(grid: Mapping[str, Any] | Sequence[tuple[str, Any]]) -> list[Axis]:
    """The grid's axes, checked: keys named once (`link__rate` and `link.rate` are one key),
    no key that the sweep sets itself (`seed`), at least one value per key, no value twice. A
    value is a list of values; anything else (a string, a number) is one value held fixed.
    Whether a key exists and a value is valid is the core's to say (`check_points`)."""
    items = list(grid.items()) if isinstance(grid, Mapping) else list(grid)
    axes: list[Axis] = []
    seen: set[str] = set()
    for raw_key, raw_values in items:
        key = normalise_key(str(raw_key))
        if not key:
            raise SweepError("a grid key is empty; write KEY=VALUES, e.g. link.rate=10Mbps,50Mbps")
        if key in seen:
            raise SweepError(f"grid key {key} is given twice; give all its values at once")
        if key in RESERVED_KEYS:
            raise SweepError(f"grid key {key} cannot be swept: {RESERVED_KEYS[key]}")
        seen.add(key)
        values = _as_values(key, raw_values)
        shown = [json.dumps(v, sort_keys=True, default=str) for v in values]
        repeated = sorted({s for s in shown if shown.count(s) > 1})
        if repeated:
            raise SweepError(f"grid key {key}: {', '.join(repeated)} given more than once")
        axes.append(Axis(key, values))
    return axes


def expand(axes: Sequence[Axis]) -> list[Point]:
    """The cartesian product of the axes, the last axis varying fastest."""
    combos = itertools.product(*(a.values for a in axes))
    return [
        Point(i, {a.key: v for a, v in zip(axes, combo, strict=True)})
        for i, combo in enumerate(combos)
    ]


def _point_errors(point: Point, errors: list[ErrorLocation]) -> list[ErrorLocation]:
    """The core's errors of one point, each naming the point (and, for an error in a swept
    value, the key and the value, as `--set` does)."""
    where = f"grid point {point.index} ({point.label})"
    named = []
    for error in errors:
        text = error["text"]
        if error["file"] == "<overrides>" and error["field"] in point.values:
            text = f"{error['field']}: {error['message']}"
        named.append({**error, "file": where, "text": f"{where}: {text}"})
    return named


def check_points(
    scenario: ScenarioSource,
    points: Sequence[Point],
    *,
    engine: str,
    seed: int | None,
    overrides: Mapping[str, Any],
) -> str:
    """Validates every point (the base scenario with its values) before anything runs; raises
    a `ScenarioError` naming the first point that fails, with every problem of that point (an
    unknown key gets the core's did-you-mean). Returns the first point's filled scenario."""
    first = ""
    for point in points:
        try:
            text = validate(scenario, seed=seed, engine=engine, **{**overrides, **point.values})
        except ScenarioError as e:
            raise ScenarioError(_point_errors(point, e.errors)) from None
        first = first or text
    return first


def _check_scheme(spec: SweepSpec, point: Point, scheme: str) -> None:
    """Raises a `ScenarioError` naming the scheme when it cannot run on the scenario's flows
    (an unknown scheme, one the engine lacks)."""
    run = RunSpec(
        name="check",
        scenario=spec.scenario,
        seed=spec.seed,
        engine=spec.engine,
        scheme=scheme,
        overrides={**spec.overrides, **point.values},
    )
    try:
        validate(run.scenario, seed=run.seed, engine=run.engine, **resolved_overrides(run))
    except ScenarioError as e:
        where = f"scheme {scheme}"
        raise ScenarioError(
            [{**x, "file": where, "text": f"{where}: {x['message']}"} for x in e.errors]
        ) from None


@dataclass
class SweepSpec:
    """A sweep as asked for: what `plan_sweep` turns into a plan."""

    scenario: ScenarioSource
    axes: list[Axis]
    schemes: list[str] | None
    runs: int = 1
    seed: int | None = None
    engine: str = DEFAULT_ENGINE
    overrides: dict[str, Any] = field(default_factory=dict)
    log_packets: bool = False

    @property
    def swept(self) -> list[str]:
        """The axes proper: keys with more than one value."""
        return [a.key for a in self.axes if len(a.values) > 1]


def run_name(point: Point, scheme: str | None, repetition: int, width: int) -> str:
    """`p03-cubic-r2`: the run's directory under runs/ (the point's values are in the
    manifest)."""
    middle = f"-{safe_name(scheme)}" if scheme is not None else ""
    return f"p{point.index:0{width}d}{middle}-r{repetition}"


def plan_sweep(spec: SweepSpec) -> tuple[Plan, list[Point]]:
    """Checks the sweep (grid, schemes, every point) and returns its plan: point-major, then
    scheme, then repetition."""
    if spec.runs < 1:
        raise SweepError(f"--runs must be at least 1, not {spec.runs}")
    try:
        engine_named(spec.engine)
    except UnknownEngineError as e:
        raise SweepError(str(e)) from None
    if spec.schemes is not None and not spec.schemes:
        raise SweepError("a sweep needs at least one scheme (or none, to keep the scenario's)")
    flows_keys = [a.key for a in spec.axes if a.key == "flows" or a.key.startswith("flows.")]
    if spec.schemes is not None and flows_keys:
        raise SweepError(
            f"grid key {flows_keys[0]}: the schemes replace the scenario's [[flows]], so a sweep "
            "with --schemes cannot also sweep flows keys; sweep the schemes with --schemes"
        )
    points = expand(spec.axes)
    base_toml = check_points(
        spec.scenario, points, engine=spec.engine, seed=spec.seed, overrides=spec.overrides
    )
    for scheme in spec.schemes or []:
        _check_scheme(spec, points[0], scheme)
    base = tomllib.loads(base_toml)
    base_seed = int(base["seed"])
    schemes: list[str | None] = list(spec.schemes) if spec.schemes is not None else [None]
    width = len(str(max(len(points) - 1, 0)))
    runs = []
    for point in points:
        swept = {k: point.values[k] for k in spec.swept}
        for scheme in schemes:
            for k in range(1, spec.runs + 1):
                runs.append(
                    RunSpec(
                        name=run_name(point, scheme, k, width),
                        scenario=spec.scenario,
                        seed=base_seed + k - 1,
                        engine=spec.engine,
                        scheme=scheme,
                        overrides={**spec.overrides, **point.values},
                        label=f"[{point.label}] {scheme or 'scenario'} #{k}",
                        tags={"repetition": k, "point": point.index, "swept": swept},
                        log_packets=spec.log_packets,
                    )
                )
    plan = Plan(
        kind=KIND,
        name=str(base["name"]),
        description=str(base.get("description", "")),
        runs=runs,
        scenario_toml=validate(spec.scenario, seed=spec.seed, engine=spec.engine, **spec.overrides),
        meta={
            "scenario": describe(spec.scenario),
            "engine": spec.engine,
            "schemes": list(spec.schemes) if spec.schemes is not None else [],
            "runs_per_point": spec.runs,
            "runs_per_scheme": spec.runs * len(points),
            "base_seed": base_seed,
            "overrides": spec.overrides,
            "grid": {a.key: list(a.values) for a in spec.axes},
            "axes": spec.swept,
            "points": len(points),
        },
    )
    return plan, points


# --- resuming -------------------------------------------------------------------------------


def work_dir(target: Path) -> Path:
    """The hidden directory beside `target` that keeps a sweep's finished runs until the sweep
    directory is complete."""
    return target.parent / f".{target.name}{WORK_SUFFIX}"


@dataclass
class Reuse:
    """Where finished runs may be taken from, and which were."""

    sources: list[Path]
    #: name → the filled scenario TOML its run must have been made from, and its engine.
    expected: dict[str, tuple[str, str, bool]]
    reused: set[str] = field(default_factory=set)

    def find(self, name: str) -> Path | None:
        want = self.expected.get(name)
        if want is None:
            return None
        for source in self.sources:
            run = source / name
            if _matches(run, *want):
                return run
        return None


def _matches(run: Path, scenario_toml: str, engine: str, packets: bool) -> bool:
    if not is_complete(run):
        return False
    try:
        meta = json.loads((run / META_FILE).read_text())
        same = (run / "scenario.toml").read_text() == scenario_toml
    except (OSError, ValueError):
        return False
    return same and meta.get("engine") == engine and (run / "packets.parquet").exists() == packets


def _link_tree(source: Path, target: Path) -> None:
    """`target` as a copy of the run directory `source` made of hard links (a copy where the
    file system cannot link), written under a hidden name and renamed into place."""
    staging = target.with_name(f".{target.name}.linking")
    shutil.rmtree(staging, ignore_errors=True)

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, staging, copy_function=link)
    staging.rename(target)


def _outcome_of(planned: BatchRun, run: Path) -> RunOutcome:
    """The outcome of a finished run read back from its directory."""
    meta = json.loads((run / META_FILE).read_text())
    summary = pd.read_parquet(run / "summary.parquet")
    total = summary[summary["flow"].isna()].iloc[0]
    return RunOutcome(
        run=planned,
        ok=True,
        wall_secs=float(meta.get("wall_secs") or 0.0),
        seed=meta.get("seed"),
        total=_numbers(total),
    )


class ResumingExecutor:
    """Wraps an executor: a task whose run is already finished (in `reuse.sources`) is linked
    into place without running; the others run on `inner` into the work directory `work`,
    which keeps them if the sweep is interrupted, and are linked into place once all have
    ended."""

    def __init__(self, inner: Executor, reuse: Reuse, work: Path) -> None:
        self.inner = inner
        self.reuse = reuse
        self.work = work

    @property
    def workers(self) -> int:
        return self.inner.workers

    def run(
        self, execute: ExecuteFn, tasks: Sequence[Task], observer: Observer
    ) -> list[RunOutcome]:
        outcomes: list[RunOutcome] = []
        pending: list[Task] = []
        for task in tasks:
            found = self.reuse.find(task.planned.name)
            if found is None:
                stale = self.work / task.planned.name
                if stale.exists():  # a run of another sweep, or of this one with other input
                    shutil.rmtree(stale)
                pending.append(replace(task, out=str(stale)))
                continue
            _link_tree(found, Path(task.out))
            self.reuse.reused.add(task.planned.name)
            outcome = _outcome_of(task.planned, found)
            observer.started(task.planned)
            observer.finished(outcome)
            outcomes.append(outcome)
        if pending:
            ran = self.inner.run(execute, pending, observer)
            originals = {t.planned.name: Path(t.out) for t in tasks}
            for outcome in ran:
                name = outcome.run.name
                if outcome.ok and not is_complete(self.work / name):
                    outcome = replace(
                        outcome, ok=False, error=f"the run wrote no complete directory ({name})"
                    )
                elif outcome.ok:
                    _link_tree(self.work / name, originals[name])
                outcomes.append(outcome)
        return outcomes


@contextlib.contextmanager
def _locked(work: Path, target: Path) -> Iterator[None]:
    """Holds the work directory's lock: two sweeps into one target would take each other's
    runs."""
    work.mkdir(parents=True, exist_ok=True)
    with (work / ".lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SweepError(f"another sweep is writing into {target}") from None
        yield


# --- running --------------------------------------------------------------------------------


def _manifest(plan: Plan, points: list[Point], result: BatchResult, reused: set[str]) -> dict:
    by_name = {o.run.name: o for o in result.outcomes}
    runs_of: dict[int, list[dict[str, Any]]] = {p.index: [] for p in points}
    for spec in plan.runs:
        outcome = by_name[spec.name]
        entry: dict[str, Any] = {
            "dir": f"{RUNS_SUBDIR}/{spec.name}",
            "scheme": spec.scheme,
            "repetition": spec.tags["repetition"],
            "seed": outcome.seed,
            "status": "ok" if outcome.ok else "failed",
            "reused": spec.name in reused,
        }
        if outcome.error is not None:
            entry["error"] = outcome.error
        runs_of[spec.tags["point"]].append(entry)
    return {
        "kind": KIND,
        "name": plan.name,
        "scenario": plan.meta["scenario"],
        "engine": plan.meta["engine"],
        "grid": plan.meta["grid"],
        "axes": plan.meta["axes"],
        "schemes": plan.meta["schemes"],
        "runs_per_point": plan.meta["runs_per_point"],
        "base_seed": plan.meta["base_seed"],
        "overrides": plan.meta["overrides"],
        "points": [
            {"point": p.index, "values": dict(p.values), "runs": runs_of[p.index]} for p in points
        ],
    }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, allow_nan=False, default=str) + "\n")


def read_manifest(directory: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The manifest of the complete sweep in `directory`, or None when it is not one."""
    directory = Path(directory)
    meta = read_experiment(directory)
    if meta is None or meta.get("kind") != KIND:
        return None
    try:
        return json.loads((directory / SWEEP_FILE).read_text())
    except (OSError, ValueError):
        return None


def _execute(task: Task, events: Any = None) -> RunOutcome:
    return execute_task(task, events)


def run_resumable(
    plan: Plan,
    target: Path,
    *,
    resume: bool = False,
    jobs: int | None = None,
    executor: Executor | None = None,
    observer: Observer | None = None,
    command: list[str] | None = None,
    execute: ExecuteFn = _execute,
    analyse: Callable[[BatchResult], Any] | None = None,
) -> BatchResult:
    """Runs `plan` into the batch directory `target` so that an interruption keeps its
    finished runs and `resume=True` completes it (see the module's doc): sweeps, and any other
    plan whose runs are worth keeping (`cclab reproduce scale`). An empty directory at the
    target counts as none. `analyse` as for `run_batch`."""
    noun = plan.kind
    if target.is_dir() and not any(target.iterdir()):
        target.rmdir()
    work = work_dir(target)
    complete = read_experiment(target) if target.exists() else None
    if target.exists() and not resume:
        raise SweepError(f"{target} already exists; pass --resume to complete it, or another --out")
    if target.exists() and (complete is None or complete.get("kind") != noun):
        raise SweepError(f"{target} exists and is not a complete {noun} directory; cannot resume")
    if work.exists() and not resume:
        raise SweepError(
            f"{work} holds the finished runs of an interrupted {noun} into {target}; pass "
            "--resume to complete it, or delete it to start over"
        )
    expected = {
        s.name: (
            validate(s.scenario, seed=s.seed, engine=s.engine, **resolved_overrides(s)),
            s.engine,
            s.log_packets,
        )
        for s in plan.runs
    }
    with _locked(work, target):
        sources = [work / RUNS_SUBDIR]
        sources += sorted(p / RUNS_SUBDIR for p in work.glob("next-*") if p.is_dir())
        if complete is not None:
            sources.append(target / RUNS_SUBDIR)
        reuse = Reuse(sources, expected)
        (work / RUNS_SUBDIR).mkdir(exist_ok=True)
        inner = executor or default_executor(plan.runs, jobs)
        wrapped = ResumingExecutor(inner, reuse, work / RUNS_SUBDIR)

        def analysis(result: BatchResult) -> Any:
            result.reused = set(reuse.reused)
            return analyse(result) if analyse is not None else None

        # A complete directory at the target stays until its replacement is whole.
        batch_out = work / f"next-{os.getpid()}-{time.time_ns()}" if complete else target
        result = run_batch(
            plan,
            batch_out,
            executor=wrapped,
            observer=observer,
            command=command or [f"cclab.{noun}"],
            execute=execute,
            analyse=analysis,
        )
        if complete is not None:
            old = work / f"old-{os.getpid()}"
            target.rename(old)
            batch_out.rename(target)
            result = BatchResult(target, result.outcomes, result.analysis, result.reused)
        shutil.rmtree(work, ignore_errors=True)
    return result


def run_sweep(
    spec: SweepSpec,
    out: str | os.PathLike[str] | None = None,
    *,
    resume: bool = False,
    jobs: int | None = None,
    executor: Executor | None = None,
    observer: Observer | None = None,
    command: list[str] | None = None,
    execute: ExecuteFn = _execute,
) -> BatchResult:
    """Runs a sweep and returns the batch's result (its directory and every run's outcome).
    `executor`: where the runs go (default: a local pool of `jobs` processes, see
    `batch.default_executor`; `cclab.cluster.DaskExecutor` for a cluster). A failed run is
    recorded in the manifest and the others go on; invalid input raises before anything runs.
    See the module's doc for `resume`."""
    plan, points = plan_sweep(spec)
    target = Path(out) if out is not None else new_archive_dir(plan.name, "sweep")

    def write_manifest(result: BatchResult) -> None:
        manifest = _manifest(plan, points, result, result.reused)
        _write_json(result.directory / SWEEP_FILE, manifest)

    return run_resumable(
        plan,
        target,
        resume=resume,
        jobs=jobs,
        executor=executor,
        observer=observer,
        command=command or ["cclab.sweep"],
        execute=execute,
        analyse=write_manifest,
    )


# --- reading ---------------------------------------------------------------------------------


def sweep_frame(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """The sweep in `directory` as one DataFrame: a row per run and flow plus the run's total
    row (`flow` is <NA>, as in `RunResult.summary`), with the point, every grid key's value
    (columns named by key, e.g. `link.rate`, the value as given), the run's scheme,
    repetition, seed, directory and status, then the summary's columns (the flow's own scheme
    as `flow_scheme`). A failed run is one row with its `error` and no figures."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    if manifest is None:
        raise SweepError(f"{directory} is not a complete sweep directory (no {SWEEP_FILE})")
    keys = list(manifest["grid"])
    frames = []
    for point in manifest["points"]:
        for run in point["runs"]:
            head = {
                "point": point["point"],
                **{k: point["values"].get(k) for k in keys},
                "scheme": run.get("scheme"),
                "repetition": run.get("repetition"),
                "seed": run.get("seed"),
                "run": Path(run["dir"]).name,
                "status": run["status"],
                "error": run.get("error"),
            }
            if run["status"] == "ok":
                summary = pd.read_parquet(directory / run["dir"] / "summary.parquet")
                summary = summary.rename(columns={"scheme": "flow_scheme"})
                if head["scheme"] is None:
                    flows = summary.loc[summary["flow"].notna(), "flow_scheme"]
                    head["scheme"] = "+".join(dict.fromkeys(str(s) for s in flows))
                block = pd.concat(
                    [pd.DataFrame([head] * len(summary)), summary.reset_index(drop=True)], axis=1
                )
            else:
                block = pd.DataFrame([{**head, "flow": pd.NA}])
            frames.append(block)
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if "flow" in frame:
        frame["flow"] = frame["flow"].astype("Int64")
    frame.attrs["directory"] = str(directory)
    frame.attrs["axes"] = list(manifest["axes"])
    return frame


def sweep(
    scenario: ScenarioSource,
    grid: Mapping[str, Any] | None = None,
    schemes: Sequence[str] | None = None,
    runs: int = 1,
    *,
    seed: int | None = None,
    engine: str = DEFAULT_ENGINE,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    jobs: int | None = None,
    cluster: Any = None,
    log_packets: bool = False,
    observer: Observer | None = None,
    **overrides: Any,
) -> pd.DataFrame:
    """Runs `scenario` over every combination of the `grid`'s values (`{"link.rate":
    ["10Mbps", "50Mbps"], "link.delay": ["10ms", "40ms"]}`; a key may be spelled
    `link__rate`), with each of `schemes` on every `[[flows]]` entry (None: the scenario's own
    flows), `runs` times each, and returns `sweep_frame` of the sweep directory (whose path is
    in the frame's `attrs["directory"]`). `out` (default: a new directory in the archive),
    `resume`: see `cclab.sweep` module. The runs go to a local process pool of `jobs`
    processes, or to the Dask cluster `cluster` (an address such as "tcp://host:8786", or a
    `distributed.Client`; default: $CCLAB_CLUSTER when set). `overrides` as for `cclab.run`,
    held fixed. As with any process pool, a script that calls this at its top level must do
    so under `if __name__ == "__main__":`."""
    from cclab.cluster import executor_for

    if not isinstance(scenario, Mapping):
        scenario = Path(scenario)
    spec = SweepSpec(
        scenario=scenario,
        axes=make_axes(grid or {}),
        schemes=list(schemes) if schemes is not None else None,
        runs=runs,
        seed=seed,
        engine=engine,
        overrides={normalise_key(k): v for k, v in overrides.items()},
        log_packets=log_packets,
    )
    with executor_for(spec.engine, jobs=jobs, cluster=cluster) as executor:
        result = run_sweep(
            spec, out, resume=resume, executor=executor, observer=observer, jobs=jobs
        )
    return sweep_frame(result.directory)


def axis_numbers(values: Sequence[Any]) -> tuple[list[float], str] | None:
    """The values of an axis as numbers and their unit, for plots and the index: plain numbers
    as they are (""), rates in Mbit/s, durations in ms; None when they are none of these
    (e.g. "1bdp", a scheme option's name)."""
    from cclab.scenario_values import duration_ms, rate_mbps

    plain = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(plain) == len(values):
        return [float(v) for v in plain], ""
    for reader, unit in ((rate_mbps, "Mbit/s"), (duration_ms, "ms")):
        read = [reader(v) for v in values]
        if all(r is not None and math.isfinite(r) for r in read):
            return [float(r) for r in read if r is not None], unit
    return None
