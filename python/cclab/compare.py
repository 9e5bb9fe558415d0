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
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cclab.api import run
from cclab.engines import ENGINES
from cclab.experiment import flows_for_scheme
from cclab.result import RunResult

#: Called when a run starts: (engine, scheme, repetition from 1, runs).
StartCallback = Callable[[str, str, int, int], object]


class CompareError(ValueError):
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
        if name not in ENGINES:
            raise CompareError(f"unknown engine {name!r}; the engines are {', '.join(ENGINES)}")
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


def scheme_figures(result: RunResult, scheme: str | None) -> tuple[float, float]:
    """(throughput, p95 delay) of one scheme in a run: the total row when every flow runs it,
    else the mean over its flows."""
    flows = result.summary[result.summary["flow"].notna()]
    if scheme is None or (flows["scheme"] == scheme).all():
        total = result.summary[result.summary["flow"].isna()].iloc[0]
        return float(total["throughput_mbps"]), float(total["delay_p95_ms"])
    mine = flows[flows["scheme"] == scheme]
    return float(mine["throughput_mbps"].mean()), float(mine["delay_p95_ms"].mean())


def _scenario_schemes(result: RunResult) -> list[str]:
    flows = result.summary[result.summary["flow"].notna()]
    return list(dict.fromkeys(flows["scheme"]))


def compare(
    scenario: str | Path,
    *,
    engines: Sequence[str] = ("sim", "emu"),
    pairs: Sequence[SchemePair] | None = None,
    runs: int = 1,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
    out: Path | None = None,
    on_start: StartCallback | None = None,
    progress: Callable[[int, int], object] | None = None,
) -> Comparison:
    """Runs the scenario on both engines (`runs` times each, seeds seed, seed+1, ...) and
    compares them. With `out`, every run directory is written under it as
    `<engine>-<scheme>-r<k>`."""
    if runs < 1:
        raise CompareError("--runs must be at least 1")
    first_engine, second_engine = parse_engines(",".join(engines))
    scenario = Path(scenario)
    overrides = dict(overrides or {})
    base_seed = seed
    plan: list[SchemePair | None] = list(pairs) if pairs else [None]
    figures: dict[tuple[str, int], EngineFigures] = {}
    for pair in plan:
        for side, engine in enumerate((first_engine, second_engine)):
            scheme = None if pair is None else (pair.first, pair.second)[side]
            extra = {} if scheme is None else {"flows": flows_for_scheme(scenario, scheme)}
            for k in range(1, runs + 1):
                if on_start is not None:
                    on_start(engine, scheme or "as written", k, runs)
                run_seed = None if base_seed is None else base_seed + k - 1
                result = run(
                    scenario, seed=run_seed, engine=engine, progress=progress, **overrides, **extra
                )
                if base_seed is None:
                    base_seed = result.seed
                if out is not None:
                    name = (scheme or "scenario").replace(":", "-").replace("/", "_")
                    result.save(out / f"{engine}-{name}-r{k}")
                if pair is not None:
                    rows = [(pair.label, scheme)]
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
    return Comparison(str(scenario), (first_engine, second_engine), runs, rows_out)
