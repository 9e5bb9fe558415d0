"""The batch runner: the one way cclab runs many scenarios. Experiments, reproductions and
engine comparisons are plan builders plus analyses over what this module returns.

A `Plan` is a list of `RunSpec`s (a scenario and its overrides, a scheme put on every flow, a
seed, an engine, a run name and tags such as the repetition). `run_batch` checks every run
before any starts, executes them on an `Executor` (this process, or a local process pool; a
distributed executor plugs in behind the same interface), optionally in a random order, reports
progress to an `Observer`, records a run that fails instead of stopping, and writes one
experiment directory (`cclab.experiment_dir`): `runs/<name>/` ordinary run directories,
whatever the analysis writes beside them, and `experiment.json` last, so the whole batch
appears in the archive (`cclab runs`) and in reports (`cclab report`) at once or not at all.

Owns: plans, executors, scheme substitution and the run entries of `experiment.json`. Must not
import the CLI, the report or the builders (experiment, reproduce, compare import it).
"""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import multiprocessing
import multiprocessing.context
import multiprocessing.process
import os
import random
import signal
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Protocol

from cclab import _core, controller
from cclab.api import run, validate
from cclab.engines import DEFAULT_ENGINE, UnknownEngineError, engine_named
from cclab.errors import SimulationError
from cclab.experiment_dir import (
    RUNS_SUBDIR,
    finish,
    staged_experiment,
)
from cclab.provenance import environment
from cclab.scenario_source import ScenarioSource, describe, resolve


class PlanError(ValueError):
    """A plan cannot run (an unknown engine, a duplicate run name, no flows to give a scheme)."""


class RunsFailedError(SimulationError):
    """Runs of a batch failed, so its analysis could not be made; the batch's directory keeps
    the runs that finished and each failure's message."""


@dataclass(frozen=True)
class RunSpec:
    """One run of a plan.

    `scheme`, when given, replaces the scheme of every `[[flows]]` entry (options of the
    entry's old scheme are dropped; `scheme_options` are added to every entry, e.g. Copa's
    `mode`). `overrides` are keyword overrides as `cclab.run` takes them. `name` is the run's
    directory under `runs/` (unique in the plan); `label` is what progress shows; `tags` are
    recorded with the run in `experiment.json` (the archive index and reports read `scheme`,
    the group the run belongs to, and `repetition`)."""

    name: str
    scenario: ScenarioSource
    seed: int | None = None
    engine: str = DEFAULT_ENGINE
    scheme: str | None = None
    scheme_options: Mapping[str, Any] = field(default_factory=dict)
    overrides: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    tags: Mapping[str, Any] = field(default_factory=dict)
    log_packets: bool = False
    #: The sender trace (`cclab.run`'s `trace`): False, True, an interval or "ack".
    trace: bool | str | int | None = False
    #: The emulator's timing tolerance (`cclab.run`'s `tolerance_us`); None: its default.
    tolerance_us: int | None = None


@dataclass(frozen=True)
class BatchRun:
    """A spec at its place in the execution order (`order`, from 0)."""

    order: int
    spec: RunSpec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def label(self) -> str:
        return self.spec.label or self.spec.name

    @property
    def scheme(self) -> str | None:
        return self.spec.scheme

    @property
    def seed(self) -> int | None:
        return self.spec.seed

    @property
    def engine(self) -> str:
        return self.spec.engine


@dataclass
class Plan:
    """What to run and how to describe it. `kind` ("experiment", "reproduction", "comparison")
    and `name` go into `experiment.json` with the builder's own `meta`; `scenario_toml`, when
    given, is written as the directory's `scenario.toml` (the base scenario)."""

    kind: str
    name: str
    runs: list[RunSpec]
    description: str = ""
    scenario_toml: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    random_order: bool = False
    #: Seed of the random order; drawn fresh (and recorded) when None.
    order_seed: int | None = None


@dataclass
class RunOutcome:
    """How one run ended. `total` holds the numeric figures of the run's summary total row."""

    run: BatchRun
    ok: bool
    wall_secs: float
    seed: int | None = None
    total: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def throughput_mbps(self) -> float | None:
        return self.total.get("throughput_mbps")

    @property
    def delay_p95_ms(self) -> float | None:
        return self.total.get("delay_p95_ms")

    @property
    def loss_pct(self) -> float | None:
        return self.total.get("loss_pct")


class Observer(Protocol):
    """What a batch reports while it runs (the CLI draws it; tests may record it). Every call
    happens in the calling process; an exception raised here stops the batch."""

    def started(self, planned: BatchRun) -> None: ...

    def progress(self, planned: BatchRun, sim_ns: int, duration_ns: int) -> None: ...

    def finished(self, outcome: RunOutcome) -> None: ...


class Silent:
    """An observer that shows nothing."""

    def started(self, planned: BatchRun) -> None:
        pass

    def progress(self, planned: BatchRun, sim_ns: int, duration_ns: int) -> None:
        pass

    def finished(self, outcome: RunOutcome) -> None:
        pass


@dataclass(frozen=True)
class Task:
    """Everything a worker needs for one run (picklable): the scheme substitution is already
    resolved into `overrides`, and `out` is where its run directory goes."""

    planned: BatchRun
    scenario: ScenarioSource
    overrides: dict[str, Any]
    out: str
    command: list[str]


class EventSink(Protocol):
    """Where a worker puts ("started" | "progress", order, sim_ns, duration_ns) events."""

    def put(self, event: tuple[str, int, int, int]) -> None: ...


#: Runs one task and writes its run directory; must be a module-level function to reach a pool.
ExecuteFn = Callable[[Task, Any], RunOutcome]


def execute_task(
    task: Task, events: EventSink | None = None, *, run_fn: Callable[..., Any] = run
) -> RunOutcome:
    """Runs one task with `run_fn` (`cclab.run`) and writes its run directory."""
    planned = task.planned
    spec = planned.spec
    if events is not None:
        events.put(("started", planned.order, 0, 0))

    def progress(sim_ns: int, duration_ns: int) -> None:
        if events is not None:
            events.put(("progress", planned.order, sim_ns, duration_ns))

    t0 = time.perf_counter()
    result = run_fn(
        task.scenario,
        seed=spec.seed,
        log_packets=spec.log_packets,
        trace=spec.trace,
        progress=progress,
        engine=spec.engine,
        tolerance_us=spec.tolerance_us,
        **task.overrides,
    )
    result.save(task.out, command=task.command)
    summary = result.summary
    total_row = summary[summary["flow"].isna()].iloc[0]
    return RunOutcome(
        run=planned,
        ok=True,
        wall_secs=time.perf_counter() - t0,
        seed=int(result.seed),
        total=_numbers(total_row),
    )


def _numbers(row: Mapping[str, Any]) -> dict[str, float]:
    numbers = {}
    for key, value in row.items():
        try:
            numbers[str(key)] = float(value)
        except (TypeError, ValueError):  # the flow id (<NA>) and the scheme of the total row
            continue
    return numbers


def _failed(planned: BatchRun, error: BaseException, wall_secs: float) -> RunOutcome:
    message = str(error) or type(error).__name__
    return RunOutcome(run=planned, ok=False, wall_secs=wall_secs, seed=planned.seed, error=message)


class Executor(Protocol):
    """Runs tasks and reports each to the observer as it starts, progresses and ends. A failed
    run becomes a failed `RunOutcome`; an exception from the observer (Ctrl-C included) stops
    everything and propagates. A distributed executor implements the same call
    (`cclab.cluster.DaskExecutor`: its workers send each run's files back, so they need no
    shared file system)."""

    @property
    def workers(self) -> int: ...

    def run(
        self, execute: ExecuteFn, tasks: Sequence[Task], observer: Observer
    ) -> list[RunOutcome]: ...


class _LocalEvents:
    """The worker's event sink, for runs in this process: progress goes to the observer."""

    def __init__(self, planned: BatchRun, observer: Observer) -> None:
        self._planned = planned
        self._observer = observer

    def put(self, event: tuple[str, int, int, int]) -> None:
        kind, _, sim_ns, duration_ns = event
        if kind == "progress":
            self._observer.progress(self._planned, sim_ns, duration_ns)


class SerialExecutor:
    """One run at a time, in this process (what a real-time engine needs, and one job)."""

    workers = 1

    def run(
        self, execute: ExecuteFn, tasks: Sequence[Task], observer: Observer
    ) -> list[RunOutcome]:
        outcomes = []
        for task in tasks:
            observer.started(task.planned)
            t0 = time.perf_counter()
            try:
                outcome = execute(task, _LocalEvents(task.planned, observer))
            except Exception as e:  # a failed run is recorded; Ctrl-C is not an Exception
                outcome = _failed(task.planned, e, time.perf_counter() - t0)
            observer.finished(outcome)
            outcomes.append(outcome)
        return outcomes


class ThreadExecutor:
    """`workers` threads in this process. The simulator runs without the GIL, so threads run
    simulations in parallel with no process to start: what many small batches need (a
    calibration's trials), where a fresh process pool per batch would cost more than the runs.
    Progress is not reported from the threads (the observer is called from this thread only)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def run(
        self, execute: ExecuteFn, tasks: Sequence[Task], observer: Observer
    ) -> list[RunOutcome]:
        outcomes: list[RunOutcome] = []
        with cf.ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = {}
            for task in tasks:
                observer.started(task.planned)
                futures[pool.submit(execute, task, None)] = (task, time.perf_counter())
            try:
                for future in cf.as_completed(futures):
                    task, t0 = futures[future]
                    try:
                        outcome = future.result()
                    except Exception as e:  # a failed run is recorded
                        outcome = _failed(task.planned, e, time.perf_counter() - t0)
                    observer.finished(outcome)
                    outcomes.append(outcome)
            except BaseException:
                for future in futures:
                    future.cancel()  # what has not started never will; running ones finish
                raise
        return outcomes


class _PipeEvents:
    """A pool worker's event sink: events go to the parent over the worker's pipe."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def put(self, event: tuple[str, int, int, int]) -> None:
        self._conn.send(event)


#: How much of a crashed worker's standard error its failure keeps.
STDERR_TAIL_CHARS = 2000


@dataclass
class _Worker:
    """The parent's view of one pool worker: its process, its pipe, its standard error file,
    and the task it runs (with where its standard error stood when the task began)."""

    process: multiprocessing.process.BaseProcess
    conn: Connection
    stderr_path: Path
    task: Task | None = None
    stderr_offset: int = 0
    started_at: float = 0.0


class LocalPoolExecutor:
    """`workers` fresh worker processes on this machine. Tasks go out in plan order, each to the
    next idle worker, so the plan's order is the order runs start.

    Robust by construction: the parent knows which task each worker runs, so a worker that
    dies (a crash, an out-of-memory kill) fails that run alone, with its exit signal and the
    tail of its standard error, and a fresh worker takes the remaining tasks. Workers die with
    the parent (a parent-death signal on Linux, a watchdog thread everywhere), so a SIGKILL of
    the parent leaves none behind. Ctrl-C reaches the parent only (the workers ignore SIGINT),
    and it or a SIGTERM kills the workers at once rather than letting each finish its task."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def run(
        self, execute: ExecuteFn, tasks: Sequence[Task], observer: Observer
    ) -> list[RunOutcome]:
        context = multiprocessing.get_context("spawn")  # no fork of a process that has threads
        by_order = {t.planned.order: t.planned for t in tasks}
        todo = list(reversed(tasks))  # popped from the end: plan order
        outcomes: list[RunOutcome] = []
        workers: list[_Worker] = []
        with tempfile.TemporaryDirectory(prefix="cclab-pool-") as scratch, _sigterm_raises():
            try:
                while todo or any(w.task is not None for w in workers):
                    # Keep `workers` processes while there is work nobody has taken.
                    idle = [w for w in workers if w.task is None]
                    while len(workers) < self.workers and len(idle) < len(todo):
                        worker = _start_worker(context, execute, Path(scratch), len(workers))
                        workers.append(worker)
                        idle.append(worker)
                    for worker in idle:
                        if not todo:
                            break
                        _assign(worker, todo.pop())
                    ready = wait([w.conn for w in workers] + [w.process.sentinel for w in workers])
                    for worker in list(workers):
                        if worker.conn in ready or worker.process.sentinel in ready:
                            outcome = _serve(worker, by_order, observer)
                            if outcome is not None:
                                observer.finished(outcome)
                                outcomes.append(outcome)
                            if not worker.process.is_alive() and worker.task is None:
                                worker.process.join()
                                workers.remove(worker)
            except BaseException:
                _kill(workers)
                raise
            _stop(workers)
        return outcomes


def _start_worker(
    context: multiprocessing.context.BaseContext, execute: ExecuteFn, scratch: Path, n: int
) -> _Worker:
    parent_end, child_end = context.Pipe(duplex=True)
    stderr_path = scratch / f"worker-{n}-{time.monotonic_ns()}.stderr"
    process = context.Process(
        target=_worker_main,
        args=(execute, child_end, os.getpid(), tuple(controller.REGISTERED.values())),
        daemon=True,
        name=f"cclab-worker-{n}",
    )
    # The worker's standard error is its file from its first instruction: were the parent
    # killed while it starts, multiprocessing's own start-up would otherwise print its
    # EOFError traceback into the caller's terminal or pipe.
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    saved = os.dup(2)
    try:
        sys.stderr.flush()
        os.dup2(fd, 2)
        # The worker starts here, while the main script is hidden.
        with _children_skip_main():
            process.start()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
    child_end.close()
    return _Worker(process=process, conn=parent_end, stderr_path=stderr_path)


def _assign(worker: _Worker, task: Task) -> None:
    worker.task = task
    worker.started_at = time.perf_counter()
    try:
        worker.stderr_offset = worker.stderr_path.stat().st_size
    except OSError:
        worker.stderr_offset = 0
    # It may have died since it was idle: its sentinel says so next, and the task fails with it.
    with suppress(BrokenPipeError, ConnectionResetError, EOFError):
        worker.conn.send(("task", task))


def _serve(
    worker: _Worker, by_order: Mapping[int, BatchRun], observer: Observer
) -> RunOutcome | None:
    """Reads what the worker sent (events, an outcome) or, when it died, fails its task."""
    while True:
        try:
            if not worker.conn.poll():
                break
            message = worker.conn.recv()
        except (EOFError, OSError):
            break
        kind = message[0]
        if kind == "started":
            observer.started(by_order[message[1]])
        elif kind == "progress":
            observer.progress(by_order[message[1]], message[2], message[3])
        elif kind == "done":
            worker.task = None
            _forward_stderr(worker)
            return message[1]
    if worker.task is not None and not worker.process.is_alive():
        worker.process.join()
        task, worker.task = worker.task, None
        error = f"the run's worker process {_death(worker.process.exitcode)}"
        tail = _stderr_tail(worker)
        if tail:
            error += f"; the end of its error output:\n{tail}"
        return _failed(task.planned, RuntimeError(error), time.perf_counter() - worker.started_at)
    return None


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by {name}" + (
            " (out of memory?)" if name == "SIGKILL" else " (it crashed)"
        )
    return f"exited with status {exitcode} before finishing"


def _stderr_tail(worker: _Worker) -> str:
    try:
        with worker.stderr_path.open("rb") as f:
            f.seek(worker.stderr_offset)
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return text.strip()[-STDERR_TAIL_CHARS:]


def _forward_stderr(worker: _Worker) -> None:
    """What a finished task wrote to standard error (a warning), passed on to ours."""
    text = _stderr_tail(worker)
    if text:
        print(text, file=sys.stderr)


def _kill(workers: Sequence[_Worker]) -> None:
    """Ends every worker at once (Ctrl-C, SIGTERM, an observer's exception)."""
    for worker in workers:
        if worker.process.is_alive():
            worker.process.kill()
    for worker in workers:
        worker.process.join(timeout=5)
        worker.conn.close()


def _stop(workers: Sequence[_Worker]) -> None:
    """Lets idle workers go: a None task tells a worker to exit."""
    for worker in workers:
        with suppress(OSError):
            worker.conn.send(None)
    for worker in workers:
        worker.process.join(timeout=5)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()


def _worker_main(
    execute: ExecuteFn,
    conn: Connection,
    parent: int,
    registrations: tuple[controller.Registration, ...],
) -> None:
    """A pool worker (its standard error is a file the parent reads for a crash's message):
    dies with its parent, registers the parent's Python schemes again (a spawned process
    starts with none), then runs the tasks the parent sends until told to stop."""
    _die_with_parent(parent)
    _ignore_interrupts()
    controller.restore(registrations)
    events = _PipeEvents(conn)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        task: Task = message[1]
        t0 = time.perf_counter()
        try:
            outcome = execute(task, events)
        except Exception as e:  # a failed run is recorded, not fatal to the worker
            outcome = _failed(task.planned, e, time.perf_counter() - t0)
        sys.stderr.flush()
        conn.send(("done", outcome))


def _ignore_interrupts() -> None:
    """In a pool's worker processes: Ctrl-C is the parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


#: prctl's option that sends the caller a signal when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Makes this process die when `parent` does: at once on Linux (a parent-death signal),
    within half a second elsewhere (a thread that watches the parent's pid go away)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    # The parent may have died before the signal was armed: then we are someone else's child.
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="cclab-parent-watch", daemon=True).start()


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Within: SIGTERM stops the batch as Ctrl-C does (the workers are killed, the staging
    directory removed), and the process then exits with 128 + 15. Only the main thread can
    set a handler; elsewhere SIGTERM keeps its default."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _children_skip_main() -> Iterator[None]:
    """Spawned processes re-run the main script unless it hides. They need nothing from it (a
    task is cclab's own code and data), and re-running it breaks a script without an
    `if __name__ == "__main__":` guard (it would start an experiment in every worker) and a
    script read from standard input (there is no file to re-run)."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = dict(main.__dict__)
    main.__dict__.pop("__file__", None)
    main.__spec__ = None  # spawn reads it unguarded
    try:
        yield
    finally:
        for key in ("__file__", "__spec__"):
            if key in saved:
                main.__dict__[key] = saved[key]
            else:
                main.__dict__.pop(key, None)


def default_executor(specs: Sequence[RunSpec], jobs: int | None = None) -> Executor:
    """A pool of `jobs` processes (default: one per core, no more than there are runs), or
    this process when one worker is all there is or an engine of the plan runs serially."""
    workers = min(jobs or os.cpu_count() or 1, len(specs))
    # A Python scheme defined in a script's __main__ cannot be imported by a worker.
    if (
        workers <= 1
        or any(engine_named(s.engine).serial for s in specs)
        or not controller.all_importable()
    ):
        return SerialExecutor()
    return LocalPoolExecutor(workers)


def execution_order(count: int, order_seed: int | None) -> list[int]:
    """The plan positions in the order they run: as planned, or (with a seed) a shuffle drawn
    from `random.Random(order_seed)`."""
    order = list(range(count))
    if order_seed is not None:
        random.Random(order_seed).shuffle(order)
    return order


def _scheme_options() -> dict[str, set[str]]:
    return {s["name"]: {o["name"] for o in s["options"]} for s in _core.schemes()}


def flows_for_scheme(scenario: ScenarioSource, scheme: str) -> list[dict[str, Any]]:
    """The scenario's `[[flows]]` tables with `scheme` in every entry. An entry's options for
    its own scheme (e.g. cubic's `beta`) are dropped when the scheme changes: they would mean
    nothing, or something else, to another scheme."""
    if isinstance(scenario, Mapping):
        table = dict(scenario)
    else:
        with Path(resolve(scenario)).open("rb") as f:
            table = tomllib.load(f)
    entries = table.get("flows")
    if not isinstance(entries, list) or not entries:
        raise PlanError(
            f"{describe(scenario)}: running it with another scheme needs at least one "
            "[[flows]] entry"
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


def resolved_overrides(spec: RunSpec) -> dict[str, Any]:
    """The spec's overrides with its scheme substitution written in as `flows`."""
    overrides = dict(spec.overrides)
    if spec.scheme is not None:
        flows = flows_for_scheme(spec.scenario, spec.scheme)
        overrides["flows"] = [{**flow, **spec.scheme_options} for flow in flows]
    return overrides


def check_plan(plan: Plan, validate_fn: Callable[..., str] = validate) -> list[dict[str, Any]]:
    """Raises before anything runs: an unknown or missing engine, a duplicate run name, or a
    run whose scenario is invalid (`cclab.ScenarioError` with every problem). Returns each
    run's resolved overrides, in plan order."""
    if not plan.runs:
        raise PlanError(f"the {plan.kind} has no runs")
    names = [s.name for s in plan.runs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise PlanError(f"run names must be unique; {', '.join(duplicates)} repeat")
    for engine in dict.fromkeys(s.engine for s in plan.runs):
        try:
            descriptor = engine_named(engine)
        except UnknownEngineError as e:
            raise PlanError(str(e)) from None
        if not descriptor.available():
            raise PlanError(descriptor.unavailable())
    resolved = [resolved_overrides(spec) for spec in plan.runs]
    for spec, overrides in zip(plan.runs, resolved, strict=True):
        validate_fn(spec.scenario, seed=spec.seed, engine=spec.engine, **overrides)
    return resolved


@dataclass
class BatchResult:
    """What `run_batch` returns (and hands the analysis, whose directory is then still the
    hidden staging directory): the outcomes in execution order and the analysis's value."""

    directory: Path
    outcomes: list[RunOutcome]
    analysis: Any = None
    #: Runs taken from an earlier, interrupted attempt rather than run (`sweep.run_resumable`).
    reused: set[str] = field(default_factory=set)

    def run_dir(self, outcome: RunOutcome) -> Path:
        return self.directory / RUNS_SUBDIR / outcome.run.name

    @property
    def failed(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if not o.ok]

    def in_plan_order(self, plan: Plan) -> list[RunOutcome]:
        """The outcomes in the order the plan lists its runs (not the execution order)."""
        by_name = {o.run.name: o for o in self.outcomes}
        return [by_name[s.name] for s in plan.runs]

    def failures_error(self) -> RunsFailedError:
        """The error to raise when an analysis needs every run: how many failed, and why."""
        first = self.failed[0]
        return RunsFailedError(
            f"{len(self.failed)} of {len(self.outcomes)} runs failed (first: {first.run.label}: "
            f"{first.error}); the batch is in {self.directory}"
        )


#: An analysis: reads the runs (in the staging directory), writes its own files there and
#: returns what the builder needs. It runs before `experiment.json` is written.
Analysis = Callable[[BatchResult], Any]


def _entry(outcome: RunOutcome) -> dict[str, Any]:
    spec = outcome.run.spec
    entry: dict[str, Any] = {"dir": f"{RUNS_SUBDIR}/{spec.name}", "order": outcome.run.order}
    if spec.scheme is not None:
        entry["scheme"] = spec.scheme
    entry.update(spec.tags)
    entry["seed"] = outcome.seed
    entry["engine"] = spec.engine
    entry["status"] = "ok" if outcome.ok else "failed"
    entry["wall_secs"] = outcome.wall_secs
    if outcome.error is not None:
        entry["error"] = outcome.error
    return entry


def run_batch(
    plan: Plan,
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    executor: Executor | None = None,
    observer: Observer | None = None,
    command: list[str] | None = None,
    execute: ExecuteFn = execute_task,
    validate_fn: Callable[..., str] = validate,
    analyse: Analysis | None = None,
    replace_empty: bool = False,
) -> BatchResult:
    """Checks the plan (`check_plan`), runs it and writes the experiment directory `out`
    (which must not exist; or, with `replace_empty`, may be an empty directory). Returns the
    directory, the outcomes in execution order and the analysis's value.

    A run that fails is recorded as failed and the others go on; an exception from the
    observer (Ctrl-C included) removes everything. An analysis that raises is recorded in
    `experiment.json` (`analysis_error`), the directory is kept, and the error propagates.

    With the default executor (`default_executor`), a pool's workers are started fresh
    ("spawn"), so a script that runs a batch at its top level must do so under
    `if __name__ == "__main__":`."""
    resolved = check_plan(plan, validate_fn)
    order_seed = plan.order_seed
    if plan.random_order and order_seed is None:
        order_seed = random.SystemRandom().randrange(2**31)
    positions = execution_order(len(plan.runs), order_seed if plan.random_order else None)
    ordered = [BatchRun(order=i, spec=plan.runs[j]) for i, j in enumerate(positions)]
    executor = executor or default_executor(plan.runs, jobs)
    observer = observer or Silent()
    command = command or [f"cclab.{plan.kind}"]
    target = Path(out)
    started_at = datetime.now().astimezone()
    t0 = time.perf_counter()
    analysis = None
    analysis_error: Exception | None = None
    with staged_experiment(target, replace_empty=replace_empty) as staging:
        if plan.scenario_toml is not None:
            (staging / "scenario.toml").write_text(plan.scenario_toml)
        tasks = [
            Task(
                planned=p,
                scenario=p.spec.scenario
                if isinstance(p.spec.scenario, Mapping)
                else os.fspath(p.spec.scenario),
                overrides=resolved[j],
                out=str(staging / RUNS_SUBDIR / p.name),
                command=command,
            )
            for p, j in zip(ordered, positions, strict=True)
        ]
        outcomes = executor.run(execute, tasks, observer)
        outcomes.sort(key=lambda o: o.run.order)
        if analyse is not None:
            try:
                analysis = analyse(BatchResult(staging, outcomes))
            except Exception as e:  # the runs stay; the error is recorded and re-raised
                analysis_error = e
        meta: dict[str, Any] = {
            "kind": plan.kind,
            "name": plan.name,
            "description": plan.description,
            **plan.meta,
            "random_order": plan.random_order,
            "order_seed": order_seed,
            "jobs": executor.workers,
            "started_at": started_at.isoformat(timespec="seconds"),
            "wall_secs": time.perf_counter() - t0,
            "command": command,
            **environment(),
        }
        if analysis_error is not None:
            meta["analysis_error"] = str(analysis_error) or type(analysis_error).__name__
        finish(staging, {**meta, "runs": [_entry(o) for o in outcomes]})
    if analysis_error is not None:
        raise analysis_error
    return BatchResult(target, outcomes, analysis)
