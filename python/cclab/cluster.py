"""Running a batch's runs on a Dask distributed cluster: `DaskExecutor`, an `Executor` of the
batch runner (`cclab.batch`) beside the local ones.

Workers need no shared file system: each run is executed on a worker into a temporary
directory there, its files come back with the outcome, and the submitting machine writes them
as the run directory (atomically, `meta.json` last), so results land in the archive of the
machine that submitted the batch. What a worker needs: the same cclab version (and Python
minor version, for pickles) installed, and any file a scenario names (a trace) at the same
path. The scenario itself travels: it is sent as the core's filled form of the run's scenario
(overrides, scheme and seed applied), which runs identically anywhere.

Real-time engines (the emulator) are refused: they must run one run at a time per machine, and
a cluster runs as many as it has worker threads. Run emulator batches locally.

Dask is an optional dependency (`pip install 'cclab[cluster]'`); nothing here imports it until
an executor is made.

Owns: the Dask executor, the cluster address (`--cluster`, $CCLAB_CLUSTER) and choosing an
executor for a batch. Must not import the CLI.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cclab.api import validate
from cclab.archive import META_FILE, make_staging_dir
from cclab.batch import (
    ExecuteFn,
    Executor,
    Observer,
    PlanError,
    RunOutcome,
    Task,
    _failed,
)
from cclab.engines import engine_named
from cclab.errors import SimulationError
from cclab.scenario_source import describe

#: Environment variable naming the cluster that `--cluster` defaults to.
CLUSTER_ENV = "CCLAB_CLUSTER"
INSTALL_HINT = "pip install 'cclab[cluster]'"
#: How long connecting to a scheduler may take.
CONNECT_TIMEOUT_S = 15


class ClusterError(SimulationError):
    """The cluster cannot be used: Dask is not installed, the scheduler cannot be reached, a
    worker lacks cclab, or the batch needs an engine that cannot run there."""


def cluster_address(explicit: str | None = None) -> str | None:
    """The cluster to use: `explicit`, else $CCLAB_CLUSTER, else None (run locally)."""
    return explicit or os.environ.get(CLUSTER_ENV) or None


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ClusterError(
            f"running on a cluster needs Dask, which is not installed: {INSTALL_HINT}"
        ) from None
    return distributed


def _worker_version() -> str:
    from cclab import __version__

    return __version__


def _portable(task: Task) -> Task:
    """The task as any machine can run it: the scenario in the core's filled form, with the
    overrides (scheme substitution included) and the seed already applied."""
    spec = task.planned.spec
    filled = validate(task.scenario, seed=spec.seed, engine=spec.engine, **task.overrides)
    return replace(task, scenario=tomllib.loads(filled), overrides={})


def run_remote(execute: ExecuteFn, task: Task) -> tuple[RunOutcome, dict[str, bytes]]:
    """On a worker: runs the task into a temporary directory and returns its outcome and the
    run directory's files (path relative to it → bytes). A run that fails is a failed outcome
    and no files, as on a local pool."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cclab-run-") as tmp:
        root = Path(tmp) / Path(task.out).name
        try:
            outcome = execute(replace(task, out=str(root)), None)
        except Exception as e:
            return _failed(task.planned, e, time.perf_counter() - t0), {}
        files = {
            str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }
    return outcome, files


def write_shipped(files: dict[str, bytes], target: Path, source: str) -> None:
    """Writes a run directory that came back from a worker as `target`, atomically and with
    `meta.json` last (as `cclab.archive` writes one). Its `source` becomes the scenario as the
    submitting machine names it (the worker ran the filled form of it)."""
    if target.exists():
        raise FileExistsError(f"{target} already exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = make_staging_dir(target)
    try:
        mask = os.umask(0)
        os.umask(mask)
        staging.chmod(0o777 & ~mask)
        meta = files.get(META_FILE)
        for relative, data in files.items():
            if relative == META_FILE:
                continue
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if meta is not None:
            record = json.loads(meta)
            if "source" in record:
                record["source"] = source
            with (staging / META_FILE).open("w") as f:
                json.dump(record, f, indent=2)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


class DaskExecutor:
    """Runs a batch's tasks on a Dask distributed cluster (`address`, e.g. "tcp://host:8786",
    or an existing `distributed.Client`). Every task is submitted at once and the scheduler
    spreads them over the workers' threads; outcomes are reported as they arrive. A cluster
    does not report when a run starts, so the observer hears `started` as the run's result
    arrives, just before `finished`. Ctrl-C (or an observer's exception) cancels what is left.
    Use as a context manager (or call `close`) to close a client it opened."""

    def __init__(self, address: Any) -> None:
        distributed = _distributed()
        self._owns = not isinstance(address, distributed.Client)
        if self._owns:
            try:
                self.client = distributed.Client(address, timeout=CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError, ValueError) as e:
                raise ClusterError(f"cannot reach the Dask scheduler at {address}: {e}") from None
        else:
            self.client = address
        self._check_workers()

    def _check_workers(self) -> None:
        """Every worker must run this cclab: another version could give other results."""
        from cclab import __version__

        try:
            versions = self.client.run(_worker_version)
        except Exception as e:
            raise ClusterError(
                f"the cluster's workers cannot run cclab ({type(e).__name__}: {e}); install "
                f"cclab {__version__} on every worker"
            ) from None
        odd = {w: v for w, v in versions.items() if v != __version__}
        if odd:
            worker, version = next(iter(odd.items()))
            raise ClusterError(
                f"worker {worker} runs cclab {version}, this machine {__version__}; install the "
                "same version on every worker"
            )

    @property
    def workers(self) -> int:
        return max(sum(self.client.nthreads().values()), 1)

    def run(
        self, execute: ExecuteFn, tasks: Sequence[Task], observer: Observer
    ) -> list[RunOutcome]:
        distributed = _distributed()
        serial = sorted({t.planned.engine for t in tasks if engine_named(t.planned.engine).serial})
        if serial:
            raise PlanError(
                f"the {engine_named(serial[0]).noun} engine runs one run at a time per machine, "
                "which a cluster cannot promise; run this batch without --cluster"
            )
        futures = {}
        submitted_at = time.perf_counter()
        try:
            for task in tasks:
                future = self.client.submit(
                    run_remote, execute, _portable(task), pure=False, key=_key(task)
                )
                futures[future] = task
            outcomes = []
            for future in distributed.as_completed(futures):
                task = futures[future]
                try:
                    outcome, files = future.result()
                    if outcome.ok:
                        write_shipped(files, Path(task.out), describe(task.scenario))
                except Exception as e:  # a worker lost for good, a run directory not written
                    outcome = _failed(task.planned, e, time.perf_counter() - submitted_at)
                observer.started(task.planned)
                observer.finished(outcome)
                outcomes.append(outcome)
                future.release()
            return outcomes
        except BaseException:
            self.client.cancel(list(futures), force=True)
            raise

    def close(self) -> None:
        if self._owns:
            self.client.close()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _key(task: Task) -> str:
    """A task key unique on the scheduler (two batches may share run names)."""
    return f"cclab-{task.planned.name}-{os.getpid()}-{time.time_ns()}"


@contextlib.contextmanager
def executor_for(
    engine: str, *, jobs: int | None = None, cluster: Any = None
) -> Iterator[Executor | None]:
    """The executor for a batch: a `DaskExecutor` on `cluster` (or $CCLAB_CLUSTER), closed
    afterwards; None (the batch runner's default, a local pool of `jobs` processes) without
    one. A cluster with an engine that must run serially (the emulator) is refused."""
    address = cluster if cluster is not None and not isinstance(cluster, str) else None
    address = address or cluster_address(cluster if isinstance(cluster, str) else None)
    if address is None:
        yield None
        return
    descriptor = engine_named(engine)
    if descriptor.serial:
        raise ClusterError(
            f"the {descriptor.noun} engine runs one run at a time per machine, so its batches "
            "run locally; leave out --cluster (and unset $CCLAB_CLUSTER)"
        )
    if jobs is not None:
        raise ClusterError("--jobs is for local cores; a cluster runs as many as it has workers")
    with DaskExecutor(address) as executor:
        yield executor
