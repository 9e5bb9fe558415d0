"""Engine comparison: one scenario on two engines (the simulator and the emulator), scheme by
scheme, with the Pantheon's replication error — how we show the simulator's fidelity.

For each scheme pair `A=B`, every `[[flows]]` entry of the scenario gets scheme A on the first
engine and B on the second (e.g. `cubic=kernel:cubic`: the simulator's Cubic against Linux's).
A plain name runs the same scheme on both. Without pairs the scenario runs as it is.

The second engine is the reference ("real"). Per scheme and engine, throughput and p95 one-way
delay are the medians over the runs of the run's figures (all flows together when every flow runs
the scheme, as in the Pantheon's "all" row; otherwise the mean over the scheme's flows). The
replication error is the Pantheon's emulation score: the mean over schemes of
(|Δ throughput| / real + |Δ p95 delay| / real) / 2; both halves are reported too.

The runs are a plan for the batch runner (`cclab.batch`), run one at a time: one experiment
directory (kind "comparison") holds them under `runs/<engine>-<scheme>-r<k>` and the comparison
as `compare.json` beside `experiment.json`, so the archive indexes the runs and `cclab report`
shows them grouped as "<scheme> (<engine>)".
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from cclab.api import validate
from cclab.batch import (
    BatchResult,
    BatchRun,
    Plan,
    PlanError,
    RunOutcome,
    RunSpec,
    SerialExecutor,
    resolved_overrides,
    run_batch,
)
from cclab.engines import EMU, SIM, UnknownEngineError, engine_named
from cclab.experiment_dir import new_archive_dir
from cclab.report.loading import load_run

#: What `cclab compare` sets side by side unless told otherwise: the simulator against the
#: emulator (the reference).
DEFAULT_ENGINES = (SIM.name, EMU.name)
#: The file the comparison is written to, beside `experiment.json`.
COMPARE_FILE = "compare.json"

#: Called when a run starts: (engine, scheme, repetition from 1, runs).
StartCallback = Callable[[str, str, int, int], object]


class CompareError(PlanError):
    """The comparison cannot be set up (unknown engine, malformed scheme pair, ...)."""


@dataclass(frozen=True)
class SchemePair:
    """The scheme each engine runs; `label` names the row."""

    first: str
    second: str

    @property
    def label(self) -> str:
        return self.first if self.first == self.second else f"{self.first} vs {self.second}"


def parse_engines(text: str) -> tuple[str, str]:
    """`sim,emu` → ("sim", "emu")."""
    names = [e.strip() for e in text.split(",") if e.strip()]
    if len(names) != 2:
        raise CompareError(f"--engines takes two engines, e.g. sim,emu (got {text!r})")
    for name in names:
        try:
            engine_named(name)
        except UnknownEngineError as e:
            raise CompareError(str(e)) from None
    return names[0], names[1]


def parse_scheme_pairs(text: str) -> list[SchemePair]:
    """`cubic=kernel:cubic, bbr` → [(cubic, kernel:cubic), (bbr, bbr)]."""
    pairs = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        first, sep, second = item.partition("=")
        first, second = first.strip(), second.strip()
        if not first or (sep and not second):
            raise CompareError(
                f"--schemes: {item!r} is not a scheme or a pair A=B (e.g. cubic=kernel:cubic)"
            )
        pairs.append(SchemePair(first, second or first))
    if not pairs:
        raise CompareError("--schemes needs at least one scheme, e.g. cubic=kernel:cubic")
    return pairs


@dataclass
class EngineFigures:
    """One scheme on one engine: the per-run figures and their medians."""

    throughput_mbps: list[float] = field(default_factory=list)
    delay_p95_ms: list[float] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return statistics.median(self.throughput_mbps)

    @property
    def delay_p95(self) -> float:
        return statistics.median(self.delay_p95_ms)


@dataclass
class SchemeRow:
    label: str
    first: EngineFigures
    second: EngineFigures

    @property
    def throughput_error(self) -> float:
        return abs(self.first.throughput - self.second.throughput) / self.second.throughput

    @property
    def delay_error(self) -> float:
        return abs(self.first.delay_p95 - self.second.delay_p95) / self.second.delay_p95


@dataclass
class Comparison:
    scenario: str
    engines: tuple[str, str]
    runs: int
    rows: list[SchemeRow]
    #: The experiment directory that holds the runs and `compare.json`.
    directory: Path | None = None

    @property
    def throughput_error(self) -> float:
        return statistics.fmean(r.throughput_error for r in self.rows)

    @property
    def delay_error(self) -> float:
        return statistics.fmean(r.delay_error for r in self.rows)

    @property
    def replication_error(self) -> float:
        """The Pantheon's emulation score (see the module comment)."""
        return (self.throughput_error + self.delay_error) / 2

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "engines": list(self.engines),
            "runs": self.runs,
            "schemes": [
                {
                    "scheme": r.label,
                    **{
                        f"{engine}_{key}": values
                        for engine, figs in zip(self.engines, (r.first, r.second), strict=True)
                        for key, values in (
                            ("throughput_mbps", figs.throughput),
                            ("delay_p95_ms", figs.delay_p95),
                            ("throughput_runs", figs.throughput_mbps),
                            ("delay_p95_runs", figs.delay_p95_ms),
                        )
                    },
                    "throughput_error": r.throughput_error,
                    "delay_error": r.delay_error,
                }
                for r in self.rows
            ],
            "throughput_error": self.throughput_error,
            "delay_error": self.delay_error,
            "replication_error": self.replication_error,
        }


class HasSummary(Protocol):
    """A run's result or a run directory read back: both have the summary table."""

    summary: pd.DataFrame


def scheme_figures(result: HasSummary, scheme: str | None) -> tuple[float, float]:
    """(throughput, p95 delay) of one scheme in a run: the total row when every flow runs it,
    else the mean over its flows."""
    flows = result.summary[result.summary["flow"].notna()]
    if scheme is None or (flows["scheme"] == scheme).all():
        total = result.summary[result.summary["flow"].isna()].iloc[0]
        return float(total["throughput_mbps"]), float(total["delay_p95_ms"])
    mine = flows[flows["scheme"] == scheme]
    return float(mine["throughput_mbps"].mean()), float(mine["delay_p95_ms"].mean())


def _scenario_schemes(result: HasSummary) -> list[str]:
    flows = result.summary[result.summary["flow"].notna()]
    return list(dict.fromkeys(flows["scheme"]))


class _Reporter:
    """The batch observer that hands run starts and progress to `compare`'s callbacks."""

    def __init__(
        self,
        runs: int,
        on_start: StartCallback | None,
        progress: Callable[[int, int], object] | None,
    ) -> None:
        self._runs = runs
        self._on_start = on_start
        self._progress = progress

    def started(self, planned: BatchRun) -> None:
        if self._on_start is not None:
            k = int(planned.spec.tags["repetition"])
            self._on_start(planned.engine, planned.scheme or "as written", k, self._runs)

    def progress(self, planned: BatchRun, sim_ns: int, duration_ns: int) -> None:
        if self._progress is not None:
            self._progress(sim_ns, duration_ns)

    def finished(self, outcome: RunOutcome) -> None:
        pass


def _plan_specs(
    scenario: Path,
    engines: tuple[str, str],
    pairs: Sequence[SchemePair] | None,
    runs: int,
    overrides: dict[str, Any],
) -> list[RunSpec]:
    """Pair by pair, each engine in turn, `runs` runs each (seeds filled in later)."""
    specs: list[RunSpec] = []
    names: set[str] = set()
    plan: list[SchemePair | None] = list(pairs) if pairs else [None]
    for i, pair in enumerate(plan):
        for side, engine in enumerate(engines):
            scheme = None if pair is None else (pair.first, pair.second)[side]
            shown = scheme or "as written"
            group = (
                f"{shown} ({engine})"
                if engines[0] != engines[1]
                else f"{shown} ({engine} {side + 1})"
            )
            for k in range(1, runs + 1):
                stem = (scheme or "scenario").replace(":", "-").replace("/", "_")
                name, n = f"{engine}-{stem}-r{k}", 1
                while name in names:  # the same scheme on the same engine twice
                    n += 1
                    name = f"{engine}-{stem}-r{k}-{n}"
                names.add(name)
                specs.append(
                    RunSpec(
                        name=name,
                        scenario=scenario,
                        engine=engine,
                        scheme=scheme,
                        overrides=overrides,
                        label=f"{shown} on {engine} ({k}/{runs})",
                        tags={
                            "scheme": group,
                            "repetition": k,
                            "pair": i,
                            "side": side,
                        },
                    )
                )
    return specs


def _analyse(
    batch: BatchResult,
    scenario: Path,
    engines: tuple[str, str],
    pairs: Sequence[SchemePair] | None,
    runs: int,
) -> Comparison | None:
    if batch.failed:
        return None  # no comparison from some of the runs; the caller raises
    figures: dict[tuple[str, int], EngineFigures] = {}
    for outcome in sorted(batch.outcomes, key=lambda o: o.run.order):
        spec = outcome.run.spec
        result = load_run(batch.run_dir(outcome))
        side = int(spec.tags["side"])
        if pairs:
            rows = [(pairs[int(spec.tags["pair"])].label, spec.scheme)]
        else:
            rows = [(s, s) for s in _scenario_schemes(result)]
        for label, s in rows:
            tput, p95 = scheme_figures(result, s)
            figs = figures.setdefault((label, side), EngineFigures())
            figs.throughput_mbps.append(tput)
            figs.delay_p95_ms.append(p95)
    labels = dict.fromkeys(label for label, _ in figures)
    missing = [label for label in labels if (label, 0) not in figures or (label, 1) not in figures]
    if missing:
        raise CompareError(
            f"{', '.join(missing)} ran on one engine only; name the scheme each engine runs "
            "with --schemes A=B (e.g. cubic=kernel:cubic)"
        )
    rows_out = [SchemeRow(label, figures[(label, 0)], figures[(label, 1)]) for label in labels]
    comparison = Comparison(str(scenario), engines, runs, rows_out)
    (batch.directory / COMPARE_FILE).write_text(json.dumps(comparison.to_dict(), indent=2) + "\n")
    return comparison


def compare(
    scenario: str | Path,
    *,
    engines: Sequence[str] = DEFAULT_ENGINES,
    pairs: Sequence[SchemePair] | None = None,
    runs: int = 1,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
    out: Path | None = None,
    trace: bool | str | int | None = False,
    tolerance_us: int | None = None,
    on_start: StartCallback | None = None,
    progress: Callable[[int, int], object] | None = None,
    command: list[str] | None = None,
) -> Comparison:
    """Runs the scenario on both engines (`runs` times each, seeds seed, seed+1, ...; seed
    defaults to the scenario's), one run at a time, and compares them. The runs and
    `compare.json` are written as one experiment directory: `out` (which must not exist), or
    a new one in the archive (`Comparison.directory`). `trace` as for `cclab.run`: every run
    keeps its sender trace, which the report draws engine against engine. `tolerance_us`: the
    timing tolerance of a real-time engine's runs (`cclab.run`'s; None: its default). Raises
    `cclab.batch.RunsFailedError` when a run failed (the directory keeps the others)."""
    if runs < 1:
        raise CompareError("--runs must be at least 1")
    first_engine, second_engine = parse_engines(",".join(engines))
    if tolerance_us is not None and not (
        engine_named(first_engine).real_time or engine_named(second_engine).real_time
    ):
        raise CompareError(
            f"--tolerance-us is the emulator's ({EMU.name}); neither {first_engine} nor "
            f"{second_engine} keeps time"
        )
    scenario = Path(scenario)
    overrides = dict(overrides or {})
    specs = _plan_specs(scenario, (first_engine, second_engine), pairs, runs, overrides)
    # The seed and name of the scenario as the first run runs it (as written, a scheme may be
    # one only the other engine knows).
    first = specs[0]
    base_toml = validate(scenario, seed=seed, engine=first.engine, **resolved_overrides(first))
    base = tomllib.loads(base_toml)
    base_seed = int(base["seed"])
    specs = [
        dataclasses.replace(
            s,
            seed=base_seed + int(s.tags["repetition"]) - 1,
            trace=trace,
            tolerance_us=tolerance_us if engine_named(s.engine).real_time else None,
        )
        for s in specs
    ]
    plan = Plan(
        kind="comparison",
        name=str(base["name"]),
        description=str(base.get("description", "")),
        runs=specs,
        scenario_toml=base_toml,
        meta={
            "scenario": str(scenario),
            "engine": f"{first_engine},{second_engine}",
            "engines": [first_engine, second_engine],
            "schemes": list(dict.fromkeys(str(s.tags["scheme"]) for s in specs)),
            "pairs": None if not pairs else [[p.first, p.second] for p in pairs],
            "runs_per_scheme": runs,
            "base_seed": base_seed,
            "tolerance_us": tolerance_us,
            "overrides": overrides,
        },
    )
    engines_pair = (first_engine, second_engine)
    result = run_batch(
        plan,
        out if out is not None else new_archive_dir(plan.name, "compare"),
        executor=SerialExecutor(),  # one at a time, as an engine comparison measures
        observer=_Reporter(runs, on_start, progress),
        command=command or ["cclab.compare"],
        analyse=lambda batch: _analyse(batch, scenario, engines_pair, pairs, runs),
    )
    if result.failed:
        raise result.failures_error()
    comparison: Comparison = result.analysis
    comparison.directory = result.directory
    return comparison
