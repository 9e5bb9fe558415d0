"""Experiments: the Pantheon's scripted comparison. Every scheme runs over the same path (each
`[[flows]]` entry of the scenario gets the scheme), repeated with seeds, optionally in random
order, in parallel on local cores, and the runs land in one experiment directory
(`cclab.experiment_dir`).

Seeds: repetition k (from 1) of every scheme uses seed `base + k - 1`, where `base` is the
scenario's seed unless one is given, so the schemes of one repetition see the same random path
(common random numbers).
"""

from __future__ import annotations

import concurrent.futures as cf
import inspect
import multiprocessing
import os
import queue
import random
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from cclab import _core
from cclab.api import run, validate
from cclab.experiment_dir import (
    RUNS_SUBDIR,
    environment,
    finish,
    new_archive_dir,
    safe_name,
    staged_experiment,
)
from cclab.scenario_source import ScenarioSource, describe

ENGINES = ("sim", "emu")


class ExperimentError(Exception):
    """An experiment cannot be set up (bad schemes, an engine that is not there, ...)."""


@dataclass(frozen=True)
class PlannedRun:
    """One run of an experiment. `order` is its place in the execution order (from 0)."""

    order: int
    scheme: str
    repetition: int
    seed: int

    @property
    def name(self) -> str:
        """The run directory's name under `runs/` (`kernel:cubic` → `kernel_cubic-r1`)."""
        return f"{safe_name(self.scheme)}-r{self.repetition}"

    @property
    def label(self) -> str:
        return f"{self.scheme} #{self.repetition} (seed {self.seed})"


@dataclass
class RunOutcome:
    run: PlannedRun
    ok: bool
    wall_secs: float
    throughput_mbps: float | None = None
    delay_p95_ms: float | None = None
    loss: float | None = None
    error: str | None = None


class Observer(Protocol):
    """What an experiment reports while it runs (the CLI draws it; tests may record it)."""

    def started(self, planned: PlannedRun) -> None: ...

    def progress(self, planned: PlannedRun, sim_ns: int, duration_ns: int) -> None: ...

    def finished(self, outcome: RunOutcome) -> None: ...


class _Silent:
    def started(self, planned: PlannedRun) -> None:
        pass

    def progress(self, planned: PlannedRun, sim_ns: int, duration_ns: int) -> None:
        pass

    def finished(self, outcome: RunOutcome) -> None:
        pass


def plan_runs(
    schemes: Sequence[str],
    runs: int,
    base_seed: int,
    *,
    random_order: bool = False,
    order_seed: int | None = None,
) -> list[PlannedRun]:
    """Scheme-major order (every run of the first scheme, then the next ...), or a shuffle of
    it drawn from `order_seed` when `random_order`."""
    pairs = [(scheme, k) for scheme in schemes for k in range(1, runs + 1)]
    if random_order:
        random.Random(order_seed).shuffle(pairs)
    return [
        PlannedRun(order=i, scheme=scheme, repetition=k, seed=base_seed + k - 1)
        for i, (scheme, k) in enumerate(pairs)
    ]


def _scheme_options() -> dict[str, set[str]]:
    return {s["name"]: {o["name"] for o in s["options"]} for s in _core.schemes()}


def flows_for_scheme(scenario: ScenarioSource, scheme: str) -> list[dict[str, Any]]:
    """The scenario's `[[flows]]` tables with `scheme` in every entry. An entry's options for
    its own scheme (e.g. cubic's `beta`) are dropped when the scheme changes: they would mean
    nothing, or something else, to another scheme."""
    if isinstance(scenario, Mapping):
        table = dict(scenario)
    else:
        with Path(scenario).open("rb") as f:
            table = tomllib.load(f)
    entries = table.get("flows")
    if not isinstance(entries, list) or not entries:
        raise ExperimentError(
            f"{describe(scenario)}: an experiment needs at least one [[flows]] entry"
        )
    options = _scheme_options()
    flows = []
    for entry in entries:
        flow = dict(entry)
        if flow.get("scheme") != scheme:
            for option in options.get(str(flow.get("scheme")), set()):
                flow.pop(option, None)
        flow["scheme"] = scheme
        flows.append(flow)
    return flows


def parse_schemes(text: str) -> list[str]:
    """`cubic,bbr, copa` → ["cubic", "bbr", "copa"]; duplicates are an error."""
    schemes = [s.strip() for s in text.split(",") if s.strip()]
    if not schemes:
        raise ExperimentError("--schemes needs at least one scheme, e.g. --schemes cubic,newreno")
    duplicates = sorted({s for s in schemes if schemes.count(s) > 1})
    if duplicates:
        raise ExperimentError(f"--schemes names {', '.join(duplicates)} more than once")
    return schemes


def _emu_supported() -> bool:
    return "engine" in inspect.signature(run).parameters


@dataclass(frozen=True)
class _Task:
    """Everything a worker process needs for one run (picklable)."""

    planned: PlannedRun
    scenario: ScenarioSource
    overrides: dict[str, Any]
    out: str
    engine: str
    log_packets: bool
    command: list[str]


def _execute(task: _Task, events: Any = None) -> RunOutcome:
    """Runs one planned run and writes its run directory. In a worker process, `events` is a
    queue for start and progress messages."""
    planned = task.planned
    if events is not None:
        events.put(("started", planned.order, 0, 0))

    def progress(sim_ns: int, duration_ns: int) -> None:
        if events is not None:
            events.put(("progress", planned.order, sim_ns, duration_ns))

    t0 = time.perf_counter()
    engine_args: dict[str, Any] = {"engine": task.engine} if task.engine != "sim" else {}
    result = run(
        task.scenario,
        seed=planned.seed,
        log_packets=task.log_packets,
        progress=progress,
        **engine_args,
        **task.overrides,
    )
    result.save(task.out, command=task.command)
    total = result.summary.iloc[-1]
    return RunOutcome(
        run=planned,
        ok=True,
        wall_secs=time.perf_counter() - t0,
        throughput_mbps=float(total["throughput_mbps"]),
        delay_p95_ms=float(total["delay_p95_ms"]),
        loss=float(total["loss"]),
    )


def _failed(planned: PlannedRun, error: BaseException, wall_secs: float) -> RunOutcome:
    message = str(error) or type(error).__name__
    return RunOutcome(run=planned, ok=False, wall_secs=wall_secs, error=message)


def _run_serially(tasks: list[_Task], observer: Observer) -> list[RunOutcome]:
    outcomes = []
    for task in tasks:
        observer.started(task.planned)
        t0 = time.perf_counter()
        local = _LocalEvents(task.planned, observer)
        try:
            outcome = _execute(task, local)
        except Exception as e:  # a failed run is recorded; Ctrl-C is not an Exception
            outcome = _failed(task.planned, e, time.perf_counter() - t0)
        observer.finished(outcome)
        outcomes.append(outcome)
    return outcomes


class _LocalEvents:
    """The worker's event queue, for runs in this process: progress goes to the observer."""

    def __init__(self, planned: PlannedRun, observer: Observer) -> None:
        self._planned = planned
        self._observer = observer

    def put(self, event: tuple[str, int, int, int]) -> None:
        kind, _, sim_ns, duration_ns = event
        if kind == "progress":
            self._observer.progress(self._planned, sim_ns, duration_ns)


def _drain(events: Any, by_order: Mapping[int, PlannedRun], observer: Observer) -> None:
    while True:
        try:
            kind, order, sim_ns, duration_ns = events.get_nowait()
        except queue.Empty:
            return
        planned = by_order[order]
        if kind == "started":
            observer.started(planned)
        else:
            observer.progress(planned, sim_ns, duration_ns)


def _run_in_pool(tasks: list[_Task], jobs: int, observer: Observer) -> list[RunOutcome]:
    """Runs the tasks on `jobs` worker processes, submitted in plan order (a pool takes work
    first in, first out, so the plan's order is the order runs start)."""
    context = multiprocessing.get_context("spawn")  # no fork of a process that has threads
    by_order = {t.planned.order: t.planned for t in tasks}
    outcomes: list[RunOutcome] = []
    with context.Manager() as manager:
        events = manager.Queue()
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = {pool.submit(_execute, task, events): task for task in tasks}
            submitted_at = time.perf_counter()
            pending = set(futures)
            try:
                while pending:
                    done, pending = cf.wait(pending, timeout=0.1, return_when=cf.FIRST_COMPLETED)
                    _drain(events, by_order, observer)
                    for future in done:
                        planned = futures[future].planned
                        try:
                            outcome = future.result()
                        except Exception as e:
                            outcome = _failed(planned, e, time.perf_counter() - submitted_at)
                        observer.finished(outcome)
                        outcomes.append(outcome)
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    return outcomes


def run_experiment(
    scenario: ScenarioSource,
    schemes: Sequence[str],
    *,
    runs: int = 5,
    seed: int | None = None,
    random_order: bool = False,
    order_seed: int | None = None,
    engine: str = "sim",
    jobs: int | None = None,
    out: str | os.PathLike[str] | None = None,
    log_packets: bool = False,
    observer: Observer | None = None,
    command: list[str] | None = None,
    **overrides: Any,
) -> Path:
    """Runs every scheme `runs` times over the scenario's path (a scenario file, or a dict as
    `cclab.run` takes) and returns the experiment directory. `jobs` worker processes (default:
    one per core) run the simulator; the emulator runs one run at a time, in this process.
    `overrides` as for `cclab.run`. A run that fails is recorded as failed in
    `experiment.json`; invalid input raises before anything runs.

    The workers are started fresh ("spawn"), so a script that calls this at its top level must
    do so under `if __name__ == "__main__":` (as with any Python process pool); notebooks and
    the `cclab` command need nothing."""
    if not isinstance(scenario, Mapping):
        scenario = Path(scenario)
    if engine not in ENGINES:
        raise ExperimentError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    if engine == "emu" and not _emu_supported():
        raise ExperimentError(
            "--engine emu: this cclab build has no emulator engine (cclab.run takes no "
            "`engine`); run the experiment with --engine sim"
        )
    if runs < 1:
        raise ExperimentError(f"--runs must be at least 1, not {runs}")
    schemes = list(schemes)
    if not schemes:
        raise ExperimentError("an experiment needs at least one scheme")
    observer = observer or _Silent()
    # The emulator validates its own schemes too (kernel:<name>, wrapper:<file>).
    engine_args: dict[str, Any] = {"engine": engine} if engine != "sim" else {}
    base_toml = validate(scenario, seed=seed, **engine_args, **overrides)
    base = tomllib.loads(base_toml)
    base_seed = int(base["seed"])
    if random_order and order_seed is None:
        order_seed = random.SystemRandom().randrange(2**31)
    planned = plan_runs(schemes, runs, base_seed, random_order=random_order, order_seed=order_seed)
    flows = {scheme: flows_for_scheme(scenario, scheme) for scheme in schemes}
    for scheme in schemes:  # every scheme's scenario is checked before any run starts
        validate(scenario, seed=base_seed, flows=flows[scheme], **engine_args, **overrides)

    target = Path(out) if out is not None else new_archive_dir(str(base["name"]), "x")
    command = command or ["cclab.run_experiment"]
    started_at = datetime.now().astimezone()
    t0 = time.perf_counter()
    with staged_experiment(target) as staging:
        (staging / "scenario.toml").write_text(base_toml)
        tasks = [
            _Task(
                planned=p,
                scenario=scenario if isinstance(scenario, Mapping) else str(scenario),
                overrides={**overrides, "flows": flows[p.scheme]},
                out=str(staging / RUNS_SUBDIR / p.name),
                engine=engine,
                log_packets=log_packets,
                command=command,
            )
            for p in planned
        ]
        workers = min(jobs or os.cpu_count() or 1, len(tasks))
        if engine == "emu" or workers == 1:
            outcomes = _run_serially(tasks, observer)
        else:
            outcomes = _run_in_pool(tasks, workers, observer)
        outcomes.sort(key=lambda o: o.run.order)
        finish(
            staging,
            {
                "kind": "experiment",
                "name": base["name"],
                "description": base.get("description", ""),
                "scenario": describe(scenario),
                "engine": engine,
                "schemes": schemes,
                "runs_per_scheme": runs,
                "base_seed": base_seed,
                "random_order": random_order,
                "order_seed": order_seed,
                "jobs": 1 if engine == "emu" else workers,
                "overrides": overrides,
                "started_at": started_at.isoformat(timespec="seconds"),
                "wall_secs": time.perf_counter() - t0,
                "command": command,
                **environment(),
                "runs": [_run_entry(o) for o in outcomes],
            },
        )
    return target


def _run_entry(outcome: RunOutcome) -> dict[str, Any]:
    planned = asdict(outcome.run)
    entry = {
        "dir": f"{RUNS_SUBDIR}/{outcome.run.name}",
        **planned,
        "status": "ok" if outcome.ok else "failed",
        "wall_secs": outcome.wall_secs,
    }
    if outcome.error is not None:
        entry["error"] = outcome.error
    return entry
