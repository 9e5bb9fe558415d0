"""Experiments: the Pantheon's scripted comparison. Every scheme runs over the same path (each
`[[flows]]` entry of the scenario gets the scheme), repeated with seeds, optionally in random
order, in parallel on local cores. This module builds the plan; the batch runner
(`cclab.batch`) runs it and writes one experiment directory (`cclab.experiment_dir`).

Seeds: repetition k (from 1) of every scheme uses seed `base + k - 1`, where `base` is the
scenario's seed unless one is given, so the schemes of one repetition see the same random path
(common random numbers).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cclab.api import run, validate
from cclab.batch import (
    EventSink,
    Observer,
    Plan,
    PlanError,
    RunOutcome,
    RunSpec,
    Task,
    execute_task,
    execution_order,
    flows_for_scheme,
    run_batch,
)
from cclab.engines import DEFAULT_ENGINE, EMU, UnknownEngineError, engine_named
from cclab.experiment_dir import new_archive_dir, safe_name
from cclab.scenario_source import ScenarioSource, describe, resolve

__all__ = [
    "ExperimentError",
    "Observer",
    "PlannedRun",
    "RunOutcome",
    "flows_for_scheme",
    "parse_schemes",
    "plan_runs",
    "run_experiment",
]


class ExperimentError(PlanError):
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


def plan_runs(
    schemes: Sequence[str],
    runs: int,
    base_seed: int,
    *,
    random_order: bool = False,
    order_seed: int | None = None,
) -> list[PlannedRun]:
    """Scheme-major order (every run of the first scheme, then the next ...), or a shuffle of
    it drawn from `order_seed` when `random_order` (the batch runner's shuffle)."""
    pairs = [(scheme, k) for scheme in schemes for k in range(1, runs + 1)]
    order = execution_order(len(pairs), order_seed if random_order else None)
    return [
        PlannedRun(
            order=i, scheme=pairs[j][0], repetition=pairs[j][1], seed=base_seed + pairs[j][1] - 1
        )
        for i, j in enumerate(order)
    ]


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
    """Whether this build has the emulator: the seam through which tests stand in for a build
    without it (every other engine's availability is its descriptor's)."""
    return EMU.available()


def _available(engine: str) -> bool:
    return _emu_supported() if engine == EMU.name else engine_named(engine).available()


def _execute(task: Task, events: EventSink | None = None) -> RunOutcome:
    """One run, through this module's `run` (so that tests can stand in for an engine)."""
    return execute_task(task, events, run_fn=run)


def run_experiment(
    scenario: ScenarioSource,
    schemes: Sequence[str],
    *,
    runs: int = 5,
    seed: int | None = None,
    random_order: bool = False,
    order_seed: int | None = None,
    engine: str = DEFAULT_ENGINE,
    jobs: int | None = None,
    out: str | os.PathLike[str] | None = None,
    log_packets: bool = False,
    trace: bool | str | int | None = False,
    observer: Observer | None = None,
    command: list[str] | None = None,
    **overrides: Any,
) -> Path:
    """Runs every scheme `runs` times over the scenario's path (a scenario file, or a dict as
    `cclab.run` takes) and returns the experiment directory. `jobs` worker processes (default:
    one per core) run the simulator; an engine whose runs must be serial (the emulator) runs
    one run at a time, in this process. `overrides` as for `cclab.run`. A run that fails is
    recorded as failed in `experiment.json`; invalid input raises before anything runs.

    The workers are started fresh ("spawn"), so a script that calls this at its top level must
    do so under `if __name__ == "__main__":` (as with any Python process pool); notebooks and
    the `cclab` command need nothing."""
    if not isinstance(scenario, Mapping):
        scenario = Path(resolve(scenario))
    try:
        descriptor = engine_named(engine)
    except UnknownEngineError as e:
        raise ExperimentError(str(e)) from None
    if not _available(engine):
        why = descriptor.unavailable() or f"this cclab build has no {descriptor.noun} engine"
        raise ExperimentError(f"--engine {engine}: {why}; run the experiment with another --engine")
    if runs < 1:
        raise ExperimentError(f"--runs must be at least 1, not {runs}")
    schemes = list(schemes)
    if not schemes:
        raise ExperimentError("an experiment needs at least one scheme")
    base_toml = validate(scenario, seed=seed, engine=engine, **overrides)
    base = tomllib.loads(base_toml)
    base_seed = int(base["seed"])
    specs = [
        RunSpec(
            name=p.name,
            scenario=scenario,
            seed=p.seed,
            engine=engine,
            scheme=p.scheme,
            overrides=overrides,
            label=p.label,
            tags={"repetition": p.repetition},
            log_packets=log_packets,
            trace=trace,
        )
        for p in plan_runs(schemes, runs, base_seed)
    ]
    plan = Plan(
        kind="experiment",
        name=str(base["name"]),
        description=str(base.get("description", "")),
        runs=specs,
        scenario_toml=base_toml,
        meta={
            "scenario": describe(scenario),
            "engine": engine,
            "schemes": schemes,
            "runs_per_scheme": runs,
            "base_seed": base_seed,
            "overrides": overrides,
        },
        random_order=random_order,
        order_seed=order_seed,
    )
    target = Path(out) if out is not None else new_archive_dir(plan.name, "x")
    result = run_batch(
        plan,
        target,
        jobs=jobs,
        observer=observer,
        command=command or ["cclab.run_experiment"],
        execute=_execute,
        validate_fn=validate,
    )
    return result.directory
