"""The fidelity suite (`cclab fidelity`): the emulator, running Linux's own TCP, as the referee
of the simulator, over every shipped scenario and a fixed list of mixes.

This module is the suite's one home: which scenarios it runs (`suite`), which schemes and
their kernel twins (`KERNEL_TWIN`), its quick form (`QUICK`), the targets it checks (`TARGETS`)
and the table it writes. The runs are a plan for the batch runner (`cclab.batch`), one at a time
(the emulator shares the host's clock), so one fidelity directory — an experiment directory of
kind "fidelity", written atomically — holds every run under `runs/`, `fidelity.parquet` (the
table) and `fidelity.json` (the suite's settings, targets and verdict) beside `experiment.json`.

**What runs.** A scenario whose flows all run one scheme is a *scheme test*: it runs once per
scheme, the scheme put on every flow (cclab's `cubic`, `bbr`, `newreno` in the simulator; the
kernel's `kernel:cubic`, `kernel:bbr`, `kernel:reno` in the emulator). A scheme the kernel lacks
(`copa`, `vegas`, ...) runs in the simulator only, and its rows say so ("sim only"): nothing
stands in for it on the emulator. A scenario whose flows name several schemes is a *mix*: it runs
as written, each flow's scheme mapped to its kernel twin in the emulator (a mix with a scheme the
kernel lacks runs in the simulator only). The scenarios are every shipped scenario
(`scenarios/*.toml`: the Pantheon's local tests, its calibrated paths, Copa's 10-flow fairness
test) and the mixes of `scenarios/fidelity/` (`MIXES`). The reproductions' scenarios
(`scenarios/repro/`) have their own command, `cclab reproduce`: Copa's fairness test is the
shipped `copa-fairness.toml` with another scheme, Bundler's needs request workloads the
emulator does not run yet, and Copa's RTT-fairness test is 100 s of 20 flows.

**The table** has one row per scenario, scheme and engine, each figure the median over the
`runs` repetitions (repetition k uses the scenario's seed + k - 1 on both engines, so a Poisson
link draws the same deliveries on each):

- `throughput_mbps`: the scheme's flows' delivered bits over the run's delivery span (the total
  row's throughput * the scheme's share; in a scheme test, the run's throughput);
- `delay_p95_ms`: in a scheme test, the p95 one-way delay over every delivered packet (the total
  row's); in a mix, the mean of the scheme's flows' own p95s;
- `jain_median`: the run's median Jain index (over all its flows, per bucket);
- `share`: the scheme's bytes delivered / all flows' bytes delivered (1 in a scheme test).

The errors compare the simulator with the emulator (the reference), on both rows of the pair:
`throughput_error` and `delay_error` are |sim - emu| / emu, `replication_error` their mean (the
Pantheon's emulation score for one scheme, as `cclab compare` computes it), `share_error` is
|sim - emu| / emu of the share (relative, as the replication error is: a scheme that gets 2.8 %
of a link where Linux gets it 4.9 % is 43 % off, which a difference of 0.021 would hide),
`share_diff` the signed sim - emu, and `jain_error` |sim - emu| in Jain's index.
`share_ratio_low` / `share_ratio_high` bound the ratio of the engines' median shares (a
bootstrap 95 % interval over each engine's runs), `replication_low` / `replication_high` the
replication error of a scheme test the same way, and `decided` says whether the runs could
tell the row's target at all: a mix whose flows race for the first loss (the RTT mix: the 80
ms Cubic flow ends at 0.11 or at 0.23 of the link, on either engine) has medians that jump
between the modes, and five runs a side cannot tell a 5 % gap from chance; a kernel flow on
the cellular trace ends in one of three p95 modes 20 % apart, and three runs cannot tell a
3 % replication error from its own spread. Where both engines ran the same repetitions, run k
of each (one seed) is drawn together: on a path the seed draws (the Nepal trace's losses) the
engines' runs vary alike, and pairing keeps that shared spread out of the interval.
`target` names the targets a row is held to (`TARGETS`) and `passed` whether it meets them all
(null where none applies or the row is sim-only).

    >>> from cclab.fidelity import run_fidelity
    >>> suite = run_fidelity(quick=True)          # needs root (the emulator)
    >>> suite.table
"""

from __future__ import annotations

import difflib
import json
import math
import os
import statistics
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cclab import _core
from cclab.api import validate
from cclab.batch import (
    BatchResult,
    BatchRun,
    Plan,
    PlanError,
    RunOutcome,
    RunSpec,
    SerialExecutor,
    flows_for_scheme,
    run_batch,
)
from cclab.data import SCENARIOS, package_data, shipped_scenarios
from cclab.engines import EMU, SIM
from cclab.errors import ScenarioError
from cclab.experiment_dir import new_archive_dir, read_experiment, safe_name
from cclab.report.loading import load_run

#: The simulator's scheme → the Linux congestion control the emulator runs as its referee. The
#: kernel offers only these three of cclab's schemes (`tcp_available_congestion_control`); Linux
#: "reno" is NewReno's loss recovery with SACK (net/ipv4/tcp_cong.c, tcp_reno_cong_avoid).
KERNEL_TWIN: dict[str, str] = {
    "cubic": "kernel:cubic",
    "bbr": "kernel:bbr",
    "newreno": "kernel:reno",
}
#: The schemes of the scheme tests, in table order: the kernel's three, then two the kernel
#: lacks, which run in the simulator only (so the table shows what has no referee).
SCHEMES: tuple[str, ...] = ("cubic", "bbr", "newreno", "copa", "vegas")

#: The mixes (issue 15), shipped in `scenarios/fidelity/`, in the suite's order. Copa's 10-flow
#: fairness test is the shipped `copa-fairness.toml` (46 Mbit/s, 20 ms RTT, 1 BDP, 10 flows 1 s
#: apart, LIFO departures), which the suite runs with every shipped scenario.
FIDELITY_DIR = "fidelity"
MIXES: tuple[str, ...] = (
    "single-constant",
    "single-poisson",
    "single-cellular",
    "three-staggered",
    "bbr-vs-cubic-1bdp",
    "bbr-vs-cubic-8bdp",
    "cubic-vs-newreno-deep",
    "rtt-mix",
)
#: The scenario whose Jain index BBR is held to (Copa's fairness test).
COPA_FAIRNESS = "copa-fairness"

#: The quick form, for CI: three scenarios (a constant link, a measured cellular trace, a mix)
#: of `QUICK_DURATION` each; (scenario, schemes) — no schemes for a mix. Copa is there so that a
#: sim-only row is always exercised. Four emulator runs of 5 s: 25-30 s in all here (loaded).
QUICK: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("fidelity/single-constant", ("cubic", "bbr", "copa")),
    ("fidelity/single-cellular", ("cubic",)),
    ("fidelity/bbr-vs-cubic-1bdp", ()),
)
QUICK_DURATION = "5s"

#: The emulator's timing tolerance in the suite, µs (`cclab.run`'s `tolerance_us`): 0, every
#: packet released at its model time or after (p99 error ~20-60 µs here, against ~100 µs with
#: the default window of 5/8 of a packet time). A referee should add as little timing of its
#: own as it can: at 100 Mbit/s the default window releases packets up to 75 µs early and
#: merges half the data packets into pairs for the receiver (crates/emu/README.md, "The
#: tolerance is also a model of the receiving NIC"). It costs ~5 % of a core more there.
REFEREE_TOLERANCE_US = 0

#: The files written beside `experiment.json`.
TABLE_FILE = "fidelity.parquet"
SUITE_FILE = "fidelity.json"
KIND = "fidelity"

#: What a row whose scheme has no kernel twin says.
SIM_ONLY = "sim only: the kernel has no {scheme}"
#: ... and a scheme of a mix that another of its schemes keeps off the emulator.
SIM_ONLY_MIX = "sim only: another scheme of this mix has no kernel twin"
#: ... and every row of a suite run with `sim_only`.
SIM_ONLY_SUITE = "sim only: the suite ran the simulator alone (--pool it with kernel runs)"


@dataclass(frozen=True)
class Target:
    """A bound on one error column of the table."""

    column: str
    limit: float
    text: str

    def holds(self, value: float) -> bool:
        return math.isfinite(value) and value <= self.limit


#: The issue's targets: the replication error of Cubic and BBR on every scheme test ≤ 3 %, each
#: scheme's share in a mix ≤ 5 % off the kernel's (relative), and BBR's median Jain on Copa's
#: fairness test within 0.05 of the kernel's.
REPLICATION = Target("replication_error", 0.03, "replication ≤ 3%")
SHARE = Target("share_error", 0.05, "share error ≤ 5%")
JAIN = Target("jain_error", 0.05, "Jain within 0.05")
#: No phase lock: a mix's run-to-run spread of each share (its standard deviation over the
#: runs) is the kernel's within a factor of two, once each engine has `SPREAD_MIN_RUNS` runs.
SPREAD = Target("spread_factor", 2.0, "spread within 2x")
TARGETS = (REPLICATION, SHARE, JAIN, SPREAD)
SPREAD_MIN_RUNS = 3
#: The intervals (the share ratio's, the replication error's): each engine's runs resampled
#: with replacement `BOOTSTRAP_DRAWS` times, the figure taken from each draw's medians, its
#: 2.5th and 97.5th percentiles kept. The generator's seed is fixed so that a table is
#: reproducible from its runs.
BOOTSTRAP_DRAWS = 4000
BOOTSTRAP_SEED = 2021
#: The schemes the replication target applies to.
REPLICATION_SCHEMES = ("cubic", "bbr")


class FidelityError(PlanError):
    """The suite cannot run (no emulator, no root, an unknown scheme or scenario)."""


@dataclass(frozen=True)
class SuiteScenario:
    """One scenario of the suite: its name in the table (`pantheon-1flow`,
    `fidelity/rtt-mix`), its file, the schemes its flows name, and which schemes it runs with
    (a scheme test) or none (a mix, run as written)."""

    name: str
    path: Path
    flow_schemes: tuple[str, ...]
    schemes: tuple[str, ...] = ()

    @property
    def is_mix(self) -> bool:
        return len(set(self.flow_schemes)) > 1


def _flow_schemes(path: Path) -> tuple[str, ...]:
    with path.open("rb") as f:
        entries = tomllib.load(f).get("flows") or []
    return tuple(str(e.get("scheme")) for e in entries)


def _scenario(name: str, schemes: Sequence[str]) -> SuiteScenario:
    path = package_data(SCENARIOS, f"{name}.toml")
    if not path.is_file():
        raise FidelityError(f"the fidelity suite's scenario {path} is missing from the package")
    flow_schemes = _flow_schemes(path)
    mix = len(set(flow_schemes)) > 1
    return SuiteScenario(name, path, flow_schemes, () if mix else tuple(schemes))


def _suite_names(quick: bool) -> list[str]:
    if quick:
        return [name for name, _ in QUICK]
    return [p.stem for p in shipped_scenarios()] + [f"{FIDELITY_DIR}/{m}" for m in MIXES]


def _only(names: list[str], only: Sequence[str]) -> list[str]:
    """`names` restricted to `only`, in the suite's order; an unknown name is an error that
    lists the suite's names (the closest first)."""
    unknown = [n for n in only if n not in names]
    if unknown:
        close = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise FidelityError(
            f"--only: {', '.join(unknown)} is not in the suite{hint}; its scenarios are "
            f"{', '.join(names)}"
        )
    return [n for n in names if n in only]


def suite(
    quick: bool = False,
    schemes: Sequence[str] | None = None,
    only: Sequence[str] | None = None,
) -> list[SuiteScenario]:
    """The scenarios the suite runs: every shipped scenario, then the mixes (or `QUICK`), each
    scheme test with `schemes` (default `SCHEMES`; the quick form's own list, filtered by
    `schemes` when given); with `only`, just those scenarios (by their names in the table)."""
    names = _suite_names(quick)
    if only is not None:
        names = _only(names, only)
    if quick:
        mine = dict(QUICK)
        return [
            _scenario(name, [s for s in mine[name] if schemes is None or s in schemes])
            for name in names
        ]
    wanted = tuple(schemes) if schemes is not None else SCHEMES
    return [_scenario(name, wanted) for name in names]


def emulator_flows(path: Path) -> list[dict[str, Any]] | None:
    """The scenario's `[[flows]]` with each scheme replaced by its kernel twin, or None when a
    flow's scheme has none (the mix is then sim-only)."""
    with path.open("rb") as f:
        entries = tomllib.load(f).get("flows") or []
    flows = []
    for entry in entries:
        twin = KERNEL_TWIN.get(str(entry.get("scheme")))
        if twin is None:
            return None
        flows.append(flows_for_scheme({"flows": [entry]}, twin)[0])
    return flows


@dataclass(frozen=True)
class _Pair:
    """A row pair of the table: a scenario and a scheme (None: a mix), and what each engine
    runs (None: nothing, the row is sim-only)."""

    scenario: SuiteScenario
    scheme: str | None
    emu_scheme: str | None
    emu_flows: list[dict[str, Any]] | None = None

    @property
    def sim_only(self) -> bool:
        return self.emu_scheme is None and self.emu_flows is None


def _pairs(scenarios: Sequence[SuiteScenario]) -> list[_Pair]:
    pairs = []
    for sc in scenarios:
        if sc.is_mix:
            pairs.append(_Pair(sc, None, None, emulator_flows(sc.path)))
            continue
        for scheme in sc.schemes:
            pairs.append(_Pair(sc, scheme, KERNEL_TWIN.get(scheme)))
    return pairs


def _duration_override(sc: SuiteScenario, duration: str | None) -> dict[str, Any]:
    """`{"duration": D}` when the scenario's flow schedule fits in D and D is shorter than its
    own duration; otherwise nothing (it keeps its length: a staggered schedule cut short would
    not be the same test)."""
    if duration is None:
        return {}
    try:
        filled = tomllib.loads(validate(sc.path, duration=duration))
        own = tomllib.loads(validate(sc.path))
    except ScenarioError:
        return {}
    if _core.parse_duration(str(filled["duration"])) >= _core.parse_duration(str(own["duration"])):
        return {}
    return {"duration": duration}


def _specs(
    pairs: Sequence[_Pair],
    runs: int,
    duration: str | None,
    tolerance_us: int | None = REFEREE_TOLERANCE_US,
    sim_only: bool = False,
    first_seed: int | None = None,
) -> tuple[list[RunSpec], list[str]]:
    """Each pair's runs: the simulator's `runs`, then the emulator's (none for a sim-only
    pair, or for any with `sim_only`; `tolerance_us` its timing tolerance, None its default);
    repetition k runs seed `first_seed` + k - 1 (the scenario's own seed when None). Also the
    notes on scenarios that kept their length."""
    specs: list[RunSpec] = []
    notes: list[str] = []
    overrides: dict[str, dict[str, Any]] = {}
    seeds: dict[str, int] = {}
    for pair in pairs:
        sc = pair.scenario
        if sc.name not in overrides:
            overrides[sc.name] = _duration_override(sc, duration)
            if duration is not None and not overrides[sc.name]:
                notes.append(f"{sc.name} keeps its own duration (its flow schedule needs it)")
            own = int(tomllib.loads(validate(sc.path))["seed"])
            seeds[sc.name] = own if first_seed is None else first_seed
        base_seed = seeds[sc.name]
        sides: list[tuple[str, str | None, dict[str, Any]]] = [(SIM.name, pair.scheme, {})]
        if not (pair.sim_only or sim_only):
            extra = {"flows": pair.emu_flows} if pair.emu_flows is not None else {}
            sides.append((EMU.name, pair.emu_scheme, extra))
        row = pair.scheme or "mix"
        for engine, scheme, extra in sides:
            runs_as = scheme or ("as written" if engine == SIM.name else "kernel twins")
            for k in range(1, runs + 1):
                stem = f"{engine}-{safe_name(sc.name.replace('/', '-'))}-{safe_name(row)}-r{k}"
                specs.append(
                    RunSpec(
                        name=stem,
                        scenario=sc.path,
                        seed=base_seed + k - 1,
                        engine=engine,
                        tolerance_us=tolerance_us if engine == EMU.name else None,
                        scheme=scheme,
                        overrides={**overrides[sc.name], **extra},
                        label=f"{sc.name}: {runs_as} on {engine} ({k}/{runs})",
                        tags={
                            "scheme": f"{sc.name}: {row} ({engine})",
                            "scenario": sc.name,
                            "row": row,
                            "runs_as": runs_as,
                            "repetition": k,
                        },
                    )
                )
    return specs, notes


def _sim_name(scheme: str) -> str:
    """A flow's scheme as the table names it: the kernel's twin by cclab's name."""
    for sim, twin in KERNEL_TWIN.items():
        if scheme == twin:
            return sim
    return scheme


def _late_p99_ms(meta: dict[str, Any]) -> float:
    """The emulator's timing error of a run: the p99 of data packets' |arrival - model
    arrival| (its `stats`; runs recorded before the window was centred had only late
    packets), in ms; NaN when the run does not say."""
    value = (meta.get("stats") or {}).get("data_late_p99_us")
    return math.nan if value is None else float(value) / 1000


def run_records(batch: BatchResult, outcome: RunOutcome) -> list[dict[str, Any]]:
    """One record per scheme of a finished run, read back from its run directory (the metrics
    kernel's numbers: the summary's total and flow rows)."""
    spec = outcome.run.spec
    entry = {**spec.tags, "engine": spec.engine, "seed": outcome.seed, "name": spec.name}
    return _records(batch.run_dir(outcome), entry)


def _records(run_dir: Path, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """`run_records` for the run in `run_dir`, planned as `entry` says (its scenario, engine,
    repetition, seed, name, row — a scheme or "mix" — and runs_as: the plan's tags, as
    `experiment.json` lists them too)."""
    run = load_run(run_dir)
    summary = run.summary
    total = summary[summary["flow"].isna()].iloc[0]
    flows = summary[summary["flow"].notna()].assign(
        sim_scheme=lambda f: f["scheme"].astype(str).map(_sim_name)
    )
    delivered = float(flows["bytes_delivered"].sum())
    base = {
        "scenario": entry["scenario"],
        "engine": entry["engine"],
        "repetition": int(entry["repetition"]),
        "seed": entry["seed"],
        "jain_median": float(total["jain_median"]),
        "late_p99_ms": _late_p99_ms(run.meta) if entry["engine"] == EMU.name else math.nan,
        "run": entry["name"],
    }
    if entry["row"] != "mix":
        return [
            {
                **base,
                "scheme": entry["row"],
                "runs_as": entry["runs_as"],
                "throughput_mbps": float(total["throughput_mbps"]),
                "delay_p95_ms": float(total["delay_p95_ms"]),
                "share": 1.0,
            }
        ]
    records = []
    for scheme, mine in flows.groupby("sim_scheme", sort=False):
        share = float(mine["bytes_delivered"].sum()) / delivered if delivered > 0 else math.nan
        records.append(
            {
                **base,
                "scheme": str(scheme),
                "runs_as": str(mine["scheme"].iloc[0]),
                "throughput_mbps": float(total["throughput_mbps"]) * share,
                "delay_p95_ms": float(mine["delay_p95_ms"].mean()),
                "share": share,
            }
        )
    return records


#: The table's columns, in order, with their meanings: the one place they are declared (the
#: Parquet file's schema; the report and the tests read it from here).
TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scenario", "the suite's name of the scenario (`pantheon-1flow`, `fidelity/rtt-mix`)"),
    ("test", "scheme (a scheme test: the scheme on every flow) or mix (run as written)"),
    ("scheme", "the simulator's scheme (the kernel's twin on the emulator row)"),
    ("engine", "sim or emu (the reference)"),
    ("runs_as", "the scheme the engine ran (`kernel:cubic` on the emulator)"),
    ("runs", "runs the medians are over"),
    ("throughput_mbps", "the scheme's delivered bits / the run's delivery span, Mbit/s"),
    ("delay_p95_ms", "p95 one-way delay, ms (a mix: mean of the scheme's flows' p95)"),
    ("jain_median", "the run's median per-bucket Jain index over all its flows"),
    ("share", "the scheme's bytes delivered / all flows' bytes delivered"),
    ("share_sd", "standard deviation of share over the runs (NaN with one run)"),
    ("late_p99_ms", "emulator only: p99 of its packets' |arrival - model arrival|, ms"),
    ("throughput_error", "|sim - emu| / emu of throughput_mbps"),
    ("delay_error", "|sim - emu| / emu of delay_p95_ms"),
    ("replication_error", "(throughput_error + delay_error) / 2, the Pantheon's score"),
    ("share_error", "|sim - emu| / emu of share"),
    ("share_diff", "sim - emu of share (signed)"),
    ("share_ratio_low", "a mix: the bootstrap 95% interval's low end of sim / emu median share"),
    ("share_ratio_high", "... and its high end (both NaN below 3 runs an engine)"),
    ("replication_low", "a scheme test: the bootstrap 95% interval's low end of replication_error"),
    ("replication_high", "... and its high end (both NaN below 3 runs an engine)"),
    (
        "decided",
        "whether the row's interval (a mix: the share ratio's; a scheme test held to the "
        "replication target: the replication error's) lies inside the target's bound or wholly "
        "outside it (false: more runs are needed to tell; null: no interval)",
    ),
    ("jain_error", "|sim - emu| of jain_median"),
    (
        "spread_factor",
        "a mix's max(sim/emu, emu/sim) of share_sd: 1 when the engines' runs vary alike, inf "
        "when one engine's never vary (phase lock)",
    ),
    ("target", "the targets the row is held to, '; '-separated"),
    ("passed", "whether it meets them all (null: no target, or sim only)"),
    ("note", "why a row has no emulator twin"),
)

#: The table's figures, each the median over a row's runs.
FIGURES = ("throughput_mbps", "delay_p95_ms", "jain_median", "share", "late_p99_ms")
#: The error columns, in table order.
ERRORS = (
    "throughput_error",
    "delay_error",
    "replication_error",
    "share_error",
    "share_diff",
    "share_ratio_low",
    "share_ratio_high",
    "replication_low",
    "replication_high",
    "jain_error",
    "spread_factor",
)


def _median(values: pd.Series) -> float:
    values = values.dropna()
    return float(statistics.median(values)) if len(values) else math.nan


def _relative(sim: float, emu: float) -> float:
    return abs(sim - emu) / emu if emu > 0 else math.nan


def _sd(values: pd.Series) -> float:
    values = values.dropna()
    return float(statistics.stdev(values)) if len(values) > 1 else math.nan


def _spread_factor(sim_sd: float, emu_sd: float) -> float:
    if math.isnan(sim_sd) or math.isnan(emu_sd):
        return math.nan
    if sim_sd == emu_sd:
        return 1.0  # both zero included: neither engine varies
    if min(sim_sd, emu_sd) == 0:
        return math.inf
    return max(sim_sd / emu_sd, emu_sd / sim_sd)


def _bootstrap(
    sim: Sequence[Sequence[float]],
    emu: Sequence[Sequence[float]],
    figure: Callable[[np.ndarray, np.ndarray], np.ndarray],
    paired: bool = False,
) -> tuple[float, float]:
    """The bootstrap 95 % interval of `figure(sim medians, emu medians)`: each engine's runs
    (rows of figures) resampled with replacement, the medians of each draw's columns given to
    `figure` as (draws, columns) arrays; NaNs when either engine has fewer than
    `SPREAD_MIN_RUNS` runs or no draw gives a finite figure. `paired`: run k of one engine
    and run k of the other share a seed, and are drawn together."""
    if min(len(sim), len(emu)) < SPREAD_MIN_RUNS:
        return math.nan, math.nan
    rng = np.random.default_rng(BOOTSTRAP_SEED)

    def draws(n: int) -> np.ndarray:
        return rng.integers(0, n, (BOOTSTRAP_DRAWS, n))

    shared = draws(len(sim)) if paired and len(sim) == len(emu) else None

    def medians(runs: Sequence[Sequence[float]]) -> np.ndarray:
        values = np.asarray(runs, float)
        return np.median(values[shared if shared is not None else draws(len(values))], axis=1)

    sims, emus = medians(sim), medians(emu)
    with np.errstate(divide="ignore", invalid="ignore"):
        figures = figure(sims, emus)
    figures = figures[np.isfinite(figures)]
    if len(figures) == 0:
        return math.nan, math.nan
    low, high = np.quantile(figures, [0.025, 0.975])
    return float(low), float(high)


def share_ratio_interval(
    sim: Sequence[float], emu: Sequence[float], paired: bool = False
) -> tuple[float, float]:
    """The bootstrap 95 % interval of median(sim) / median(emu) over the engines' runs (drawn
    in seed-matched pairs when `paired`); NaNs when either engine has fewer than
    `SPREAD_MIN_RUNS` runs."""
    return _bootstrap(
        [[x] for x in sim],
        [[x] for x in emu],
        lambda s, e: np.where(e[:, 0] > 0, s[:, 0] / e[:, 0], np.nan),
        paired,
    )


def replication_interval(
    sim: Sequence[tuple[float, float]], emu: Sequence[tuple[float, float]], paired: bool = False
) -> tuple[float, float]:
    """The bootstrap 95 % interval of the replication error over the engines' runs, each run a
    (throughput, p95 delay) pair resampled whole (in seed-matched pairs when `paired`); NaNs
    below `SPREAD_MIN_RUNS` runs."""

    def error(s: np.ndarray, e: np.ndarray) -> np.ndarray:
        return (np.abs(s - e) / e).mean(axis=1)

    return _bootstrap(sim, emu, error, paired)


def interval_decided(low: float, high: float, accept: tuple[float, float]) -> bool | None:
    """Whether an interval settles a target whose figure must lie in `accept`: wholly inside
    (met whatever the next runs give) or wholly outside (missed); None without an interval."""
    if math.isnan(low) or math.isnan(high):
        return None
    inside = accept[0] <= low and high <= accept[1]
    outside = high < accept[0] or low > accept[1]
    return inside or outside


#: The values each interval's target accepts: the share ratio within the share target's
#: bound of 1, the replication error up to its limit.
SHARE_RATIO_ACCEPTED = (1 - SHARE.limit, 1 + SHARE.limit)
REPLICATION_ACCEPTED = (-math.inf, REPLICATION.limit)

#: What a verdict marked undecided means (the CLI's and the report's).
UNDECIDED = (
    "the runs cannot tell: the 95% interval (of the share ratio in a mix, of the replication "
    f"error in a scheme test) straddles the target's bound ({SHARE.limit:.0%}, "
    f"{REPLICATION.limit:.0%}; more --runs narrow it)"
)


def interval_text(row: dict[str, Any]) -> str:
    """A table row's interval as the tables print it: a mix's share ratio (0.93 to 1.04), a
    scheme test's replication error (1.2% to 4.5%), or "-" (none, or an older table)."""

    def ends(low: str, high: str) -> tuple[float, float]:
        return float(row.get(low, math.nan)), float(row.get(high, math.nan))

    low, high = ends("share_ratio_low", "share_ratio_high")
    if math.isfinite(low) and math.isfinite(high):
        return f"{low:.2f} to {high:.2f}"
    low, high = ends("replication_low", "replication_high")
    if math.isfinite(low) and math.isfinite(high):
        return f"{100 * low:.1f}% to {100 * high:.1f}%"
    return "-"


def undecided(row: dict[str, Any]) -> bool:
    """Whether a table row's target is one its runs could not settle (a table written before
    scheme tests had intervals names the column share_decided)."""
    decided = row.get("decided", row.get("share_decided"))
    return decided is not None and not pd.isna(decided) and not decided


def targets_for(scenario: str, scheme: str, mix: bool, runs: int = 1) -> list[Target]:
    """The targets a (scenario, scheme) row is held to, with `runs` runs on each engine (the
    fewer of the two)."""
    found = []
    if not mix and scheme in REPLICATION_SCHEMES:
        found.append(REPLICATION)
    if mix:
        found.append(SHARE)
        if runs >= SPREAD_MIN_RUNS:
            found.append(SPREAD)
    if scenario == COPA_FAIRNESS and scheme == "bbr":
        found.append(JAIN)
    return found


def fidelity_table(
    records: Sequence[dict[str, Any]], mixes: set[str], sim_only: bool = False
) -> pd.DataFrame:
    """The table from every run's records: medians per scenario, scheme and engine, the errors
    of each simulator row against its emulator row, and the targets (`sim_only`: the suite
    ran no emulator, and its rows say so)."""
    frame = pd.DataFrame(records)
    rows: list[dict[str, Any]] = []
    keys = list(dict.fromkeys(zip(frame["scenario"], frame["scheme"], strict=True)))
    for scenario, scheme in keys:
        mine = frame[(frame["scenario"] == scenario) & (frame["scheme"] == scheme)]
        medians: dict[str, dict[str, Any]] = {}
        shares: dict[str, list[float]] = {}
        figures: dict[str, list[tuple[float, float]]] = {}
        repetitions: dict[str, list[int]] = {}
        for engine in (SIM.name, EMU.name):
            runs = mine[mine["engine"] == engine].sort_values("repetition", kind="stable")
            if runs.empty:
                continue
            repetitions[engine] = list(runs["repetition"])
            shares[engine] = list(runs["share"].dropna())
            figures[engine] = list(
                runs[["throughput_mbps", "delay_p95_ms"]].dropna().itertuples(index=False)
            )
            medians[engine] = {
                "runs_as": str(runs["runs_as"].iloc[0]),
                "runs": len(runs),
                **{f: _median(runs[f]) for f in FIGURES},
                "share_sd": _sd(runs["share"]),
            }
        mix = scenario in mixes
        # Repetition k runs seed + k - 1 on both engines: where a seed draws the path (losses,
        # a Poisson link's deliveries), run k of one engine is the twin of run k of the other,
        # and the intervals draw them together (figures with gaps are not paired).
        reps = list(repetitions.values())
        paired = (
            len(reps) == 2
            and reps[0] == reps[1]
            and len(set(reps[0])) == len(reps[0])
            and all(len(v) == len(reps[0]) for v in (*shares.values(), *figures.values()))
        )
        errors = dict.fromkeys(ERRORS, math.nan)
        fewest = min((m["runs"] for m in medians.values()), default=0)
        targets = targets_for(scenario, scheme, mix, fewest)
        note = ""
        passed: bool | None = None
        decided: bool | None = None
        if SIM.name in medians and EMU.name in medians:
            s, e = medians[SIM.name], medians[EMU.name]
            errors["throughput_error"] = _relative(s["throughput_mbps"], e["throughput_mbps"])
            errors["delay_error"] = _relative(s["delay_p95_ms"], e["delay_p95_ms"])
            errors["replication_error"] = (errors["throughput_error"] + errors["delay_error"]) / 2
            errors["share_error"] = _relative(s["share"], e["share"])
            errors["share_diff"] = s["share"] - e["share"]
            errors["jain_error"] = abs(s["jain_median"] - e["jain_median"])
            if mix:
                errors["spread_factor"] = _spread_factor(s["share_sd"], e["share_sd"])
                low, high = share_ratio_interval(shares[SIM.name], shares[EMU.name], paired)
                errors["share_ratio_low"], errors["share_ratio_high"] = low, high
                decided = interval_decided(low, high, SHARE_RATIO_ACCEPTED)
            elif REPLICATION in targets:
                low, high = replication_interval(figures[SIM.name], figures[EMU.name], paired)
                errors["replication_low"], errors["replication_high"] = low, high
                decided = interval_decided(low, high, REPLICATION_ACCEPTED)
            if targets:
                passed = all(t.holds(errors[t.column]) for t in targets)
        elif sim_only:
            note = SIM_ONLY_SUITE
        elif EMU.name not in medians:
            note = SIM_ONLY.format(scheme=scheme) if scheme not in KERNEL_TWIN else SIM_ONLY_MIX
        for engine, figures in medians.items():
            rows.append(
                {
                    "scenario": scenario,
                    "test": "mix" if mix else "scheme",
                    "scheme": scheme,
                    "engine": engine,
                    **figures,
                    **errors,
                    "target": "; ".join(t.text for t in targets) if passed is not None else "",
                    "passed": passed,
                    "decided": decided,
                    "note": note,
                }
            )
    table = pd.DataFrame(rows, columns=[name for name, _ in TABLE_COLUMNS])
    table["passed"] = table["passed"].astype("boolean")
    table["decided"] = table["decided"].astype("boolean")
    table["runs"] = table["runs"].astype("int64")
    return table


@dataclass
class FidelityResult:
    """What the suite produced: the table, its directory, and notes."""

    table: pd.DataFrame
    directory: Path
    quick: bool
    runs: int
    notes: list[str] = field(default_factory=list)
    #: How many fidelity directories' runs the table pools (`pooled_table`); 0 for one suite.
    pooled_from: int = 0

    @property
    def checked(self) -> pd.DataFrame:
        """The simulator rows held to a target (one per scenario and scheme)."""
        return self.table[(self.table["engine"] == SIM.name) & self.table["passed"].notna()]

    @property
    def all_passed(self) -> bool:
        return bool(self.checked["passed"].all())


#: Called as each run starts: (label, position from 1, runs in all).
StartCallback = Callable[[str, int, int], object]


class _Reporter:
    def __init__(
        self,
        total: int,
        on_start: StartCallback | None,
        progress: Callable[[int, int], object] | None,
    ) -> None:
        self._total = total
        self._on_start = on_start
        self._progress = progress

    def started(self, planned: BatchRun) -> None:
        if self._on_start is not None:
            self._on_start(planned.label, planned.order + 1, self._total)

    def progress(self, planned: BatchRun, sim_ns: int, duration_ns: int) -> None:
        if self._progress is not None:
            self._progress(sim_ns, duration_ns)

    def finished(self, outcome: RunOutcome) -> None:
        pass


def _check_emulator() -> None:
    if not EMU.available():
        raise FidelityError(f"the fidelity suite needs the emulator: {EMU.unavailable()}")
    if EMU.needs_root and hasattr(os, "geteuid") and os.geteuid() != 0:
        raise FidelityError(
            "the fidelity suite runs the emulator, which needs root (namespaces and TUN "
            "devices): run it as root, e.g. with sudo"
        )


def run_fidelity(
    *,
    quick: bool = False,
    runs: int = 1,
    duration: str | None = None,
    schemes: Sequence[str] | None = None,
    only: Sequence[str] | None = None,
    tolerance_us: int | None = REFEREE_TOLERANCE_US,
    out: str | Path | None = None,
    on_start: StartCallback | None = None,
    progress: Callable[[int, int], object] | None = None,
    command: list[str] | None = None,
    sim_only: bool = False,
    first_seed: int | None = None,
) -> FidelityResult:
    """Runs the suite (the quick form with `quick`; `only` keeps just the scenarios named, as
    the table names them; `tolerance_us` is the emulator's timing tolerance, None its
    default; `duration` caps every scenario whose flow
    schedule fits, the quick form's default being `QUICK_DURATION`) on both engines (the
    simulator alone with `sim_only`: no root needed, a directory to pool with kept kernel runs,
    `pooled_table`), one run at a time, and writes the fidelity directory `out` (new, or an
    empty directory; default a new one in the archive). Repetition k runs seed `first_seed` +
    k - 1 on both engines (each scenario's own seed when None): a later suite from the seed
    after an earlier one's last adds new seeds to pool with it. Raises
    `cclab.batch.RunsFailedError` when a run failed (the directory keeps the others)."""
    if runs < 1:
        raise FidelityError("--runs must be at least 1")
    if first_seed is not None and first_seed < 0:
        raise FidelityError(f"--seed must be 0 or more, not {first_seed}")
    if schemes is not None:
        unknown = [s for s in schemes if s not in SCHEMES]
        if unknown:
            raise FidelityError(
                f"unknown scheme {', '.join(unknown)} for the fidelity suite; its schemes are "
                f"{', '.join(SCHEMES)}"
            )
    if duration is None and quick:
        duration = QUICK_DURATION
    scenarios = suite(quick, schemes, only)
    if not sim_only:
        _check_emulator()
    pairs = _pairs(scenarios)
    specs, notes = _specs(pairs, runs, duration, tolerance_us, sim_only, first_seed)
    if not specs:
        raise FidelityError("nothing to run: no scheme of --schemes is in the suite's form")
    mixes = {sc.name for sc in scenarios if sc.is_mix}
    form = "quick" if quick else "full"
    plan = Plan(
        kind=KIND,
        name=f"fidelity-{form}",
        description=(
            f"the fidelity suite ({form}): the simulator against the emulator running Linux TCP"
        ),
        runs=specs,
        meta={
            "engine": SIM.name if sim_only else f"{SIM.name},{EMU.name}",
            "engines": [SIM.name] if sim_only else [SIM.name, EMU.name],
            "form": form,
            "scenarios": [sc.name for sc in scenarios],
            "schemes": list(dict.fromkeys(str(s.tags["scheme"]) for s in specs)),
            "kernel_twins": KERNEL_TWIN,
            "runs_per_scheme": runs,
            "first_seed": first_seed,
            "duration": duration,
            "emu_tolerance_us": tolerance_us,
        },
    )

    def analyse(batch: BatchResult) -> pd.DataFrame | None:
        if batch.failed:
            return None  # no table from some of the runs; the caller raises
        records = [r for o in batch.outcomes for r in run_records(batch, o)]
        table = fidelity_table(records, mixes, sim_only)
        table.to_parquet(batch.directory / TABLE_FILE, index=False)
        checked = table[(table["engine"] == SIM.name) & table["passed"].notna()]
        summary = {
            "form": form,
            "runs": runs,
            "first_seed": first_seed,
            "duration": duration,
            "emu_tolerance_us": tolerance_us,
            "scenarios": [sc.name for sc in scenarios],
            "kernel_twins": KERNEL_TWIN,
            "targets": [{"column": t.column, "limit": t.limit, "text": t.text} for t in TARGETS],
            "checked": len(checked),
            "passed": int(checked["passed"].sum()),
            "failed": [
                {"scenario": r["scenario"], "scheme": r["scheme"], "target": r["target"]}
                for r in checked[~checked["passed"].astype(bool)].to_dict("records")
            ],
            "notes": notes,
        }
        (batch.directory / SUITE_FILE).write_text(json.dumps(summary, indent=2) + "\n")
        return table

    result = run_batch(
        plan,
        Path(out) if out is not None else new_archive_dir("fidelity", form),
        executor=SerialExecutor(),  # one at a time: the emulator runs against the wall clock
        observer=_Reporter(len(specs), on_start, progress),
        command=command or ["cclab.fidelity"],
        analyse=analyse,
        replace_empty=True,
    )
    if result.failed:
        raise result.failures_error()
    return FidelityResult(result.analysis, result.directory, quick, runs, notes)


def _seed_list(seeds: set[int]) -> str:
    """Seeds as a note prints them: a range where they run without a gap."""
    if not seeds:
        return "none"
    low, high = min(seeds), max(seeds)
    if len(seeds) == high - low + 1:
        return f"seeds {low}-{high}" if high > low else f"seed {low}"
    return "seeds " + ", ".join(map(str, sorted(seeds)))


def pooled_table(
    directories: Sequence[str | Path], max_late_ms: float | None = None
) -> FidelityResult:
    """The table of several fidelity directories' finished runs taken together, with the
    table's definitions as they are now: the emulator's runs (Linux's, the reference) of every
    directory, the simulator's of the first only (the simulator's code moves its rows; make
    the first a new suite to hold today's simulator against every kernel run kept). For
    verdicts that more runs can decide than one suite affords. Reads only; the result's
    directory is the first one given. Pooled suites repeat their repetitions, so the runs are
    not drawn in seed-matched pairs. `max_late_ms` leaves out the emulator's runs whose own
    timing error (p99 of its data packets, `late_p99_ms`) exceeded it: on a loaded host the
    referee's lateness is in the delays it measured."""
    records: list[dict[str, Any]] = []
    mixes: set[str] = set()
    commits: set[str] = set()
    for k, directory in enumerate(map(Path, directories)):
        meta = read_experiment(directory)
        if meta is None or meta.get("kind") != KIND:
            raise FidelityError(
                f"{directory} is not a finished fidelity directory (what `cclab fidelity --out "
                "DIR` writes, with experiment.json marked complete)"
            )
        commits.add(str(meta.get("git_commit")))
        for entry in meta.get("runs", []):
            if entry.get("status") != "ok" or (k > 0 and entry["engine"] == SIM.name):
                continue
            if entry["row"] == "mix":
                mixes.add(entry["scenario"])
            name = Path(entry["dir"]).name
            records += [
                {**r, "pool": k}
                for r in _records(directory / entry["dir"], {**entry, "name": name})
            ]

    def too_late(record: dict[str, Any]) -> bool:
        return max_late_ms is not None and record["late_p99_ms"] > max_late_ms

    late = [r for r in records if too_late(r)]
    records = [r for r in records if not too_late(r)]
    if not records:
        raise FidelityError(f"no finished runs in {', '.join(map(str, directories))}")
    table = fidelity_table(records, mixes)
    notes = [
        f"the simulator's runs are {directories[0]}'s; the emulator's come from all "
        f"{len(directories)} directories"
    ]
    if len(commits) > 1:
        notes.append(f"the directories were written by {len(commits)} versions of cclab")
    if late:
        runs_left_out = len({(r["pool"], r["run"]) for r in late})
        notes.append(
            f"{runs_left_out} emulator run(s) left out: their timing error p99 exceeded "
            f"{max_late_ms:g} ms"
        )
    seeds: dict[tuple[str, str], dict[str, set[int]]] = {}
    for r in records:
        row = seeds.setdefault((r["scenario"], r["scheme"]), {SIM.name: set(), EMU.name: set()})
        row[r["engine"]].add(int(r["seed"]))
    apart = [
        (key, row)
        for key, row in seeds.items()
        if row[SIM.name] and row[EMU.name] and row[SIM.name] != row[EMU.name]
    ]
    if apart:
        (scenario, scheme), row = apart[0]
        notes.append(
            f"in {len(apart)} row(s) the engines ran different seeds (first: {scenario} "
            f"{scheme}, {_seed_list(row[SIM.name])} against {_seed_list(row[EMU.name])}): where a "
            "scenario's seed draws its path (random losses, Poisson deliveries) pool "
            "seed-matched sets"
        )
    runs = int(table["runs"].max())
    return FidelityResult(
        table, Path(directories[0]), False, runs, notes, pooled_from=len(directories)
    )


def read_table(directory: str | Path) -> pd.DataFrame | None:
    """A fidelity directory's table, or None when `directory` is not one."""
    path = Path(directory) / TABLE_FILE
    return pd.read_parquet(path) if path.is_file() else None
