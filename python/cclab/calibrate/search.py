"""The calibration itself: two Optuna studies (constant and Poisson deliveries) over the link
model of `space`, each trial scored by the Pantheon's replication error of its emulated
figures against the target.

A trial is a set of runs on the batch runner (`cclab.batch`): every scheme over the trial's
link, with K seeds when the path is random (Poisson deliveries or loss; one seed otherwise: the
simulator is deterministic). A scheme's emulated figures are the means over the seeds of each
run's throughput and p95 one-way delay, as the target's are means over its runs; the error is
`cclab.compare`'s (mean over schemes of (|Δ throughput| / real + |Δ p95 delay| / real) / 2).

Studies live in an SQLite file in the output directory (`studies.db`), so a calibration that
is stopped resumes where it was: finished trials are kept, a trial that was running is marked
failed, and only the missing trials run.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import shutil
import statistics
import tempfile
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy

from cclab.api import run
from cclab.batch import (
    EventSink,
    Executor,
    Plan,
    RunOutcome,
    RunSpec,
    Task,
    ThreadExecutor,
    run_batch,
)
from cclab.calibrate.space import DELIVERIES, LinkParams, SearchSpace
from cclab.calibrate.target import Target
from cclab.compare import Comparison, EngineFigures, SchemePair, SchemeRow, scheme_figures
from cclab.engines import SIM
from cclab.experiment_dir import safe_name

#: The Optuna storage file in the output directory.
STUDIES_FILE = "studies.db"
#: Scratch space for the trials' run directories, removed after each batch.
SCRATCH_DIR = ".trials"


class CalibrationError(ValueError):
    """A calibration that cannot be set up (schemes the target lacks, a directory that holds
    another calibration, ...)."""


@dataclass(frozen=True)
class Settings:
    """What a calibration fits and how; recorded with its studies so that a resumed one must
    match."""

    #: (scheme run by the simulator, the target's scheme label).
    pairs: tuple[tuple[str, str], ...]
    seeds: tuple[int, ...]
    trials: int
    space: SearchSpace
    #: The base scenario (flows, duration, output): its `[link]` is replaced by each trial's.
    scenario: Mapping[str, Any]
    sampler_seed: int = 0

    def fingerprint(self) -> dict[str, Any]:
        """What must not change between a calibration and its resumption."""
        return {
            "pairs": [list(p) for p in self.pairs],
            "seeds": list(self.seeds),
            "space": self.space.to_dict(),
            "scenario": dict(self.scenario),
        }


@dataclass
class Evaluation:
    """One candidate emulator scored against the target."""

    params: LinkParams
    #: Per target scheme: emulated (throughput, p95 delay) per seed.
    runs: dict[str, list[tuple[float, float]]]
    comparison: Comparison | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.comparison is not None

    @property
    def replication_error(self) -> float:
        return self.comparison.replication_error if self.comparison else math.inf


def compare_to_target(
    target: Target, emulated: Mapping[str, Sequence[tuple[float, float]]], runs: int
) -> Comparison:
    """`cclab compare`'s comparison of the emulated schemes (means over their runs) with the
    target (the reference); only the schemes in `emulated`."""
    rows = []
    for label, figures in emulated.items():
        real = target.schemes[label]
        rows.append(
            SchemeRow(
                label,
                EngineFigures(
                    [statistics.fmean(t for t, _ in figures)],
                    [statistics.fmean(d for _, d in figures)],
                ),
                EngineFigures([real.throughput_mbps], [real.delay_p95_ms]),
            )
        )
    return Comparison(target.source, (SIM.name, "target"), runs, rows)


def subset_error(comparison: Comparison, labels: Sequence[str]) -> float:
    """The replication error over some of a comparison's schemes."""
    rows = [r for r in comparison.rows if r.label in labels]
    return statistics.fmean((r.throughput_error + r.delay_error) / 2 for r in rows)


def execute_trial_run(task: Task, events: EventSink | None = None) -> RunOutcome:
    """One run of a trial: only its figures come back (a trial's runs are scored and
    forgotten, so no run directory is written)."""
    spec = task.planned.spec
    t0 = time.perf_counter()
    result = run(task.scenario, seed=spec.seed, engine=spec.engine, **task.overrides)
    throughput, delay = scheme_figures(result, None)
    return RunOutcome(
        run=task.planned,
        ok=True,
        wall_secs=time.perf_counter() - t0,
        seed=int(result.seed),
        total={"throughput_mbps": throughput, "delay_p95_ms": delay},
    )


def trial_scenario(base: Mapping[str, Any], params: LinkParams) -> dict[str, Any]:
    """The base scenario over the candidate link (its `[reverse]` dropped: the model's delay is
    the same both ways, as `mm-delay`)."""
    scenario = {k: v for k, v in base.items() if k not in ("link", "reverse")}
    scenario["link"] = params.link_table()
    return scenario


def evaluate(
    candidates: Sequence[LinkParams],
    settings: Settings,
    target: Target,
    executor: Executor,
    scratch: Path,
    labels: Sequence[str] | None = None,
) -> list[Evaluation]:
    """Scores candidates on one batch: every (candidate, scheme, seed) run at once, so an
    executor with many workers runs several trials together."""
    pairs = [p for p in settings.pairs if labels is None or p[1] in labels]
    specs = []
    for i, params in enumerate(candidates):
        scenario = trial_scenario(settings.scenario, params)
        seeds = settings.seeds if params.random else settings.seeds[:1]
        for sim_scheme, label in pairs:
            for seed in seeds:
                specs.append(
                    RunSpec(
                        name=f"c{i}-{safe_name(label)}-s{seed}",
                        scenario=scenario,
                        seed=seed,
                        engine=SIM.name,
                        scheme=sim_scheme,
                        tags={"candidate": i, "label": label},
                    )
                )
    scratch.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="batch-", dir=scratch))
    directory.rmdir()  # the batch runner creates it
    try:
        batch = run_batch(
            Plan(kind="calibration-trials", name="trials", runs=specs),
            directory,
            executor=executor,
            execute=execute_trial_run,
            command=["cclab.calibrate"],
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    runs: list[dict[str, list[tuple[float, float]]]] = [{} for _ in candidates]
    errors: list[str | None] = [None] * len(candidates)
    for outcome in batch.outcomes:
        tags = outcome.run.spec.tags
        i = int(tags["candidate"])
        if not outcome.ok:
            errors[i] = errors[i] or f"{outcome.run.label}: {outcome.error}"
            continue
        figures = (float(outcome.throughput_mbps or 0.0), float(outcome.delay_p95_ms or 0.0))
        runs[i].setdefault(str(tags["label"]), []).append(figures)
    evaluations = []
    for i, params in enumerate(candidates):
        comparison = None
        if errors[i] is None:
            n = len(settings.seeds) if params.random else 1
            comparison = compare_to_target(target, runs[i], n)
        evaluations.append(Evaluation(params, runs[i], comparison, errors[i]))
    return evaluations


#: Called after each trial: (delivery, trials done, trials wanted, its error, best so far).
TrialCallback = Callable[[str, int, int, float, float], object]


def _complete(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    # Write-ahead log without an fsync per commit: a trial costs a few commits, and with the
    # default (rollback journal, synchronous=FULL) they cost more than a trial's runs on a
    # loaded disk. A stopped process loses nothing it committed; only an OS crash could.
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def open_storage(path: Path) -> optuna.storages.RDBStorage:
    """The studies' SQLite file (created if missing)."""
    storage = optuna.storages.RDBStorage(f"sqlite:///{path.resolve()}")
    sqlalchemy.event.listen(storage.engine, "connect", _sqlite_pragmas)
    storage.engine.dispose()  # connections opened while creating the tables lack the pragmas
    return storage


def open_study(
    storage: optuna.storages.BaseStorage, name: str, settings: Settings, directory: Path
) -> optuna.Study:
    """The study of that name in the storage, created or resumed (then its settings must be
    the same, and a trial left running by a stopped calibration is marked failed)."""
    sampler = optuna.samplers.TPESampler(
        seed=settings.sampler_seed,
        multivariate=True,  # rate, delay and queue act together on the delays
        constant_liar=True,  # trials asked together (a batch on many workers) spread out
        n_startup_trials=min(10, max(2, settings.trials // 4)),
    )
    study = optuna.create_study(
        study_name=name,
        storage=storage,
        sampler=sampler,
        direction="minimize",
        load_if_exists=True,
    )
    fingerprint = settings.fingerprint()
    recorded = study.user_attrs.get("settings")
    if recorded is None:
        study.set_user_attr("settings", fingerprint)
    elif recorded != fingerprint:
        differs = sorted(k for k in fingerprint if fingerprint[k] != recorded.get(k))
        raise CalibrationError(
            f"{directory} holds a calibration with other {', '.join(differs)}; resume it with "
            "the same target, --schemes, --seeds and scenario, or give a new --out"
        )
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    return study


def optimise(
    study: optuna.Study,
    delivery: str,
    settings: Settings,
    target: Target,
    executor: Executor,
    scratch: Path,
    *,
    labels: Sequence[str] | None = None,
    trials: int | None = None,
    on_trial: TrialCallback | None = None,
) -> None:
    """Runs trials until the study has `trials` (default: the settings') complete ones, in
    batches of as many trials as the executor's workers can take at once. A failed trial
    (a run failed) is recorded as failed and does not count."""
    wanted = settings.trials if trials is None else trials
    n_pairs = sum(1 for p in settings.pairs if labels is None or p[1] in labels)
    runs_per_trial = n_pairs * len(settings.seeds)
    per_batch = max(1, executor.workers // max(1, runs_per_trial))
    failures = 0
    explore = math.ceil(EXPLORE_SHARE * wanted)
    while (done := len(_complete(study))) < wanted:
        count = min(per_batch, wanted - done)
        if done >= explore:
            _enqueue_near_best(study, settings, count, (done - explore) / max(1, wanted - explore))
        asked = [study.ask() for _ in range(count)]
        candidates = [settings.space.suggest(t, delivery) for t in asked]
        results = evaluate(candidates, settings, target, executor, scratch, labels)
        for trial, result in zip(asked, results, strict=True):
            trial.set_user_attr("link", result.params.to_dict())
            trial.set_user_attr("runs", {k: [list(v) for v in vs] for k, vs in result.runs.items()})
            if result.ok:
                study.tell(trial, result.replication_error)
            else:
                failures += 1
                trial.set_user_attr("error", result.error)
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            if on_trial is not None:
                best = _best_value(study)
                on_trial(delivery, len(_complete(study)), wanted, result.replication_error, best)
        if failures > wanted:  # runs fail whatever the link: no point in going on
            raise CalibrationError(
                f"{failures} trials of the {delivery} study failed (last: {result.error})"
            )


#: The share of a study's trials left to TPE alone; the rest refine its best (see below).
EXPLORE_SHARE = 0.6


def _enqueue_near_best(
    study: optuna.Study, settings: Settings, count: int, progress: float
) -> None:
    """Queues `count` trials near the best so far, closer as `progress` goes from 0 to 1 (a
    step 10% of each range down to 2%). TPE finds the basin but, on an objective whose
    figures are noisy and whose queue is an integer, samples its bottom sparsely; a local
    search there is what takes the error from ~10% to the noise floor (measured on hidden
    targets: benches/calibrate_bench.py)."""
    try:
        best = study.best_trial
    except ValueError:
        return
    scale = 0.10 + (0.02 - 0.10) * progress
    rng = random.Random(f"{settings.sampler_seed}-{study.study_name}-{len(study.trials)}")
    for _ in range(count):
        study.enqueue_trial(settings.space.perturb(dict(best.params), scale, rng))


def _best_value(study: optuna.Study) -> float:
    try:
        return float(study.best_value)
    except ValueError:  # no complete trial yet
        return math.inf


@dataclass
class TrialRecord:
    """A finished trial, read back from a study."""

    delivery: str
    number: int
    params: LinkParams
    error: float
    runs: dict[str, list[tuple[float, float]]]
    #: What it searched (rate_mbps, delay_ms, queue_ms, loss_log10).
    point: dict[str, float] = field(default_factory=dict)


def completed(study: optuna.Study, delivery: str) -> list[TrialRecord]:
    records = []
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        link = t.user_attrs["link"]
        records.append(
            TrialRecord(
                delivery,
                t.number,
                LinkParams(**link),
                float(t.value if t.value is not None else math.inf),
                {k: [tuple(v) for v in vs] for k, vs in t.user_attrs["runs"].items()},
                dict(t.params),
            )
        )
    return records


def default_executor(jobs: int | None) -> Executor:
    """Threads in this process: the simulator runs without the GIL, and a calibration's many
    small batches would pay a process pool's start-up on every one."""
    return ThreadExecutor(jobs or os.cpu_count() or 1)


def base_scenario(scenario: str | Path | None, target: Target, duration: str | None) -> dict:
    """The scenario whose flows each trial runs: `scenario` (a file), else the target
    experiment's own, else one flow for 30 s (the Pantheon's single-flow run); `duration`
    overrides its length."""
    if scenario is not None:
        with Path(scenario).open("rb") as f:
            table = tomllib.load(f)
    elif target.scenario_toml:
        table = tomllib.loads(target.scenario_toml)
    else:
        table = {"name": "calibration", "duration": "30s", "flows": [{"scheme": "cubic"}]}
    table = {k: v for k, v in table.items() if k not in ("link", "reverse")}
    if duration is not None:
        table["duration"] = duration
    return table


def settings_for(
    target: Target,
    pairs: Sequence[SchemePair] | None,
    *,
    seeds: int,
    trials: int,
    scenario: Mapping[str, Any],
    space: SearchSpace | None = None,
    sampler_seed: int = 0,
) -> Settings:
    """Checks the schemes against the target: every label must be one of its schemes."""
    if seeds < 1:
        raise CalibrationError("--seeds must be at least 1")
    if trials < 1:
        raise CalibrationError("--trials must be at least 1")
    chosen = list(pairs) if pairs else [SchemePair(s, s) for s in target.schemes]
    missing = [p.second for p in chosen if p.second not in target.schemes]
    if missing:
        raise CalibrationError(
            f"{target.source}: no scheme {', '.join(missing)} in the target; it has "
            f"{', '.join(target.schemes)} (name the simulator's scheme for a target's with "
            "--schemes SIM=TARGET, e.g. cubic=kernel:cubic)"
        )
    if len(chosen) < 1:
        raise CalibrationError("a calibration needs at least one scheme")
    base_seed = int(scenario.get("seed", 1))
    return Settings(
        pairs=tuple((p.first, p.second) for p in chosen),
        seeds=tuple(range(base_seed, base_seed + seeds)),
        trials=trials,
        space=space or SearchSpace.from_target(target),
        scenario=dict(scenario),
        sampler_seed=sampler_seed,
    )


def with_trials(settings: Settings, trials: int) -> Settings:
    return dataclasses.replace(settings, trials=trials)


__all__ = [
    "DELIVERIES",
    "STUDIES_FILE",
    "CalibrationError",
    "Evaluation",
    "Settings",
    "TrialRecord",
    "compare_to_target",
    "completed",
    "evaluate",
    "open_study",
    "optimise",
]
