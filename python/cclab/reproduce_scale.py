"""`cclab reproduce scale`: IMC'21 "Revisiting TCP congestion control throughput models &
fairness properties at scale" (reproduction-targets.md §3) in the simulator, through the batch
runner (so the runs spread over local cores, and over whatever executor the batch layer gets).

Settings (paper §3): EdgeScale, 100 Mbit/s with a 3 MB drop-tail buffer and 10/30/50 flows;
CoreScale, 10 Gbit/s with 375 MB and 1000/3000/5000 flows; 20 ms base RTT (the Mathis fits are
NewReno at 20 ms, as in Table 1); flows arrive spread over the first 2 s.

`--scale s` scales CoreScale's rate, buffer and flow counts by s together, which keeps each
flow's fair share (2 Mbit/s at 5000 flows) and the buffer in BDPs (≈ 15 BDP at 20 ms), i.e. the
quantities the findings depend on, while cutting the events by s. EdgeScale already runs in
seconds and is not scaled. Scaling does not shorten the sawtooth: a flow's window, and so its
cycle of W/2 RTTs, is the same at every scale, so the duration is not scaled (default 300 s).
The paper ran up to 3 hours and ignored the first 5 minutes; these runs measure over the whole
run, slow start included, so losses per halving, C and JFI carry slow start's burst and the
slow convergence of AIMD through a buffer of hundreds of ms: short runs (CI's 20 s) show
unconverged shares (one early flow holding a third of the link) — read them as smoke tests.

Published values are IMC'21's (Table 1, Figs. 3-8; reproduction-targets.md §3.2); Ware et al.'s
model (`cclab.models.bbr_share`) sits beside the BBR shares. Numbers are never tuned toward
them: where they differ, the table shows both.

`kernel_runs=k` (`--kernel-runs k`) adds the referee: every run of a setting the emulator
carries (`KERNEL_MAX_RATE_BPS`) runs k more times (seeds 1..k) in the emulator with each scheme
replaced by its Linux twin (`cclab.fidelity.KERNEL_TWIN`), and each finding the kernel's runs
can measure gets their median in a `kernel` column (and every run's value in `kernel_runs`).
Kernel stacks report no congestion events, so C from halvings and losses per halving stay
simulator-only. With kernel runs the batch runs one run at a time (the emulator's timing needs
the machine to itself).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cclab.batch import BatchResult, Observer, Plan, RunSpec
from cclab.cluster import executor_for
from cclab.engines import EMU, SIM
from cclab.fidelity import KERNEL_TWIN
from cclab.models import bbr_share, mathis_fit, read_run
from cclab.reproduce import Reproduction, default_out
from cclab.sweep import run_resumable

#: IMC'21 published values (reproduction-targets.md §3.2).
PAPER_C_LOSS = {"edge": 1.78, "core": {1000: 3.95, 3000: 3.64, 5000: 3.24}}
PAPER_C_HALVING = {"edge": 1.47, "core": {1000: 1.36, 3000: 1.36, 5000: 1.34}}
PAPER_LOSSES_PER_HALVING = {"edge": "≈1.7", "core": "6-9"}


@dataclass(frozen=True)
class Setting:
    name: str
    rate_bps: float
    buffer_bytes: float
    flow_counts: tuple[int, ...]


def settings(scale: float) -> list[Setting]:
    """EdgeScale as published; CoreScale with rate, buffer and flows times `scale`."""
    if not 0 < scale <= 1:
        raise ValueError(f"--scale must be in (0, 1], got {scale}")
    core_flows = tuple(max(2, round(n * scale)) for n in (1000, 3000, 5000))
    return [
        Setting("edge", 100e6, 3e6, (10, 30, 50)),
        Setting("core", 10e9 * scale, 375e6 * scale, core_flows),
    ]


#: Simulated seconds per run unless asked otherwise.
DEFAULT_DURATION_S = 300.0

#: The fastest setting whose kernel twins run: the emulator carries kernel Cubic at 0.99 of
#: 1 Gbit/s (crates/emu/README.md), not 10 Gbit/s with thousands of flows.
KERNEL_MAX_RATE_BPS = 1e9


def _scenario(setting: Setting, mix: list[tuple[str, int]], duration: float) -> dict[str, Any]:
    """`mix` flows arriving over the first 2 s, interleaved across entries."""
    total = sum(n for _, n in mix)
    gap_us = max(1, 2_000_000 // total)
    flows = []
    for i, (scheme, n) in enumerate(mix):
        flows.append(
            {
                "scheme": scheme,
                "count": n,
                "start": f"{i * gap_us}us",
                "every": f"{len(mix) * gap_us}us",
            }
        )
    return {
        "name": f"scale-{setting.name}",
        "duration": f"{duration:g}s",
        "link": {
            "rate": f"{setting.rate_bps / 1e6:g}Mbps",
            "delay": "10ms",
            "queue": f"{int(setting.buffer_bytes)}B",
        },
        "flows": flows,
    }


def plan(
    scale: float, d: float = DEFAULT_DURATION_S, kernel_runs: int = 0
) -> tuple[Plan, dict[str, dict[str, Any]]]:
    """The runs of `d` simulated seconds each and, by run name, what each measures (a kernel
    twin's entry names its simulator run as `twin_of`)."""
    if d <= 0:
        raise ValueError(f"the duration must be positive, got {d} s")
    if kernel_runs < 0:
        raise ValueError(f"--kernel-runs must be at least 0, got {kernel_runs}")
    runs: list[RunSpec] = []
    what: dict[str, dict[str, Any]] = {}

    def add(name: str, setting: Setting, mix: list[tuple[str, int]], **info: Any) -> None:
        runs.append(
            RunSpec(
                name=name,
                scenario=_scenario(setting, mix, d),
                seed=1,
                label=name,
                tags={"scheme": name, "configuration": setting.name},
            )
        )
        what[name] = {"setting": setting, "mix": mix, **info}
        if setting.rate_bps > KERNEL_MAX_RATE_BPS:
            return
        twins = [(KERNEL_TWIN[scheme], n) for scheme, n in mix]
        for k in range(1, kernel_runs + 1):
            twin = f"{name}-kernel-{k}"
            runs.append(
                RunSpec(
                    name=twin,
                    scenario=_scenario(setting, twins, d),
                    seed=k,
                    engine=EMU.name,
                    label=f"{name} (kernel, seed {k})",
                    tags={"scheme": name, "configuration": setting.name, "engine": EMU.name},
                )
            )
            what[twin] = {"setting": setting, "mix": mix, **info, "twin_of": name}

    for s in settings(scale):
        for n in s.flow_counts:
            add(f"{s.name}-newreno-{n}", s, [("newreno", n)], kind="mathis", n=n)
        mid = s.flow_counts[1]
        for scheme in ("cubic", "bbr"):
            add(f"{s.name}-{scheme}-{mid}", s, [(scheme, mid)], kind="jfi", n=mid)
    core = settings(scale)[1]
    n = core.flow_counts[0]
    for other in ("newreno", "cubic"):
        add(f"core-1bbr-vs-{other}-{n}", core, [("bbr", 1), (other, n)], kind="1bbr", other=other)
    half = max(1, n // 2)
    for a, b in (("bbr", "newreno"), ("cubic", "newreno")):
        add(f"core-{a}-vs-{b}-{half}x2", core, [(a, half), (b, half)], kind="nvn", a=a, b=b)
    p = Plan(
        kind="reproduction",
        name="scale",
        description="IMC'21 TCP congestion control at scale (EdgeScale, CoreScale)",
        runs=runs,
        meta={"reproduction": "scale", "scale": scale, "duration_s": d, "kernel_runs": kernel_runs},
    )
    return p, what


def jain(x: np.ndarray) -> float:
    """Jain's index over per-flow throughputs (IMC'21's JFI over whole-run averages)."""
    x = np.asarray(x, dtype=float)
    return (
        float(x.sum() ** 2 / (len(x) * (x * x).sum())) if len(x) and (x * x).sum() > 0 else math.nan
    )


#: Fraction of each run ignored by the shares and JFIs (the paper ignores the first 5 min).
WARMUP_FRACTION = 1 / 3


def steady_throughput(run_dir: Path, flows: pd.DataFrame, duration: float) -> pd.DataFrame:
    """Per flow (with its scheme): mean delivered Mbit/s over the time-series bins after the
    warm-up (`WARMUP_FRACTION` of the run), a flow without deliveries there counting as 0."""
    series = pd.read_parquet(run_dir / "timeseries.parquet")
    start_ns = WARMUP_FRACTION * duration * 1e9
    late = series[series["t_ns"] >= start_ns]
    # Every bin after the warm-up counts, also those where a flow delivered nothing.
    mean = late.groupby("flow")["throughput_mbps"].sum() / max(1, late["t_ns"].nunique())
    out = flows[["flow", "scheme"]].copy()
    out["throughput_mbps"] = out["flow"].map(mean).fillna(0.0)
    return out


def _share(steady: pd.DataFrame, scheme: str) -> float:
    total = steady["throughput_mbps"].sum()
    return float(steady.loc[steady["scheme"] == scheme, "throughput_mbps"].sum() / total)


def _findings(
    info: dict[str, Any], run_dir: Path, scale: float, duration: float
) -> list[dict[str, Any]]:
    """The table's rows one run measures (its `ours`). C, losses per halving and burstiness
    are over the whole run (the counters are totals); JFIs and shares over the steady part
    (`steady_throughput`)."""
    summary, flows, _ = read_run(run_dir)
    steady = steady_throughput(run_dir, flows, duration)
    s: Setting = info["setting"]
    per_flow = summary[summary["flow"].notna()]
    if info["kind"] == "mathis":
        fits = mathis_fit(summary, flows)
        n = info["n"]
        paper_n = round(n / scale) if s.name == "core" else n

        def published(values: dict[str, Any]) -> float:
            v = values[s.name]
            return v.get(paper_n, math.nan) if isinstance(v, dict) else v

        lph = per_flow["packets_dropped"].sum() / per_flow["congestion_events"].sum()
        base = {"setting": s.name, "flows": n, "scheme": "newreno"}
        return [
            {
                **base,
                "finding": "F1 C from loss rate",
                "ours": fits["loss"].c,
                "paper": published(PAPER_C_LOSS),
                "error_median": fits["loss"].median_error,
            },
            {
                **base,
                "finding": "F1 C from halvings",
                "ours": fits["halving"].c,
                "paper": published(PAPER_C_HALVING),
                "error_median": fits["halving"].median_error,
            },
            {
                **base,
                "finding": "F3 losses per halving",
                "ours": float(lph),
                "paper_text": PAPER_LOSSES_PER_HALVING[s.name],
            },
            {
                **base,
                "finding": "F3 loss burstiness (median)",
                "ours": float(per_flow["loss_burstiness"].median()),
                "paper": 0.2 if s.name == "edge" else 0.35,
            },
            {
                **base,
                "finding": "F4 JFI",
                "ours": jain(steady["throughput_mbps"].to_numpy()),
                "paper_text": "> 0.99",
            },
        ]
    if info["kind"] == "jfi":
        scheme = info["mix"][0][0]
        return [
            {
                "setting": s.name,
                "flows": info["n"],
                "scheme": scheme,
                "finding": "F4/F5 JFI",
                "ours": jain(steady["throughput_mbps"].to_numpy()),
                "paper_text": "> 0.99" if scheme == "cubic" else "as low as 0.4 (core), 0.7 (edge)",
            }
        ]
    # A kernel twin's flows carry the twin's name (kernel:bbr); shares are by cclab's name.
    steady["scheme"] = (
        steady["scheme"].map({v: k for k, v in KERNEL_TWIN.items()}).fillna(steady["scheme"])
    )
    if info["kind"] == "1bbr":
        model = bbr_share(rate_bps=s.rate_bps, base_rtt_s=0.02, buffer_bytes=s.buffer_bytes)
        return [
            {
                "setting": s.name,
                "flows": sum(n for _, n in info["mix"]),
                "scheme": f"1 bbr vs {info['other']}",
                "finding": "F6 BBR share",
                "ours": _share(steady, "bbr"),
                "paper": 0.40,
                "model": model,
            }
        ]
    a, b = info["a"], info["b"]
    return [
        {
            "setting": s.name,
            "flows": sum(n for _, n in info["mix"]),
            "scheme": f"N {a} vs N {b}",
            "finding": "F7 BBR share" if a == "bbr" else "F8 Cubic share",
            "ours": _share(steady, a),
            "paper_text": "up to 0.999" if a == "bbr" else "0.70-0.80",
        }
    ]


#: A row is one finding at one setting, flow count and scheme.
_ROW_KEY = ["finding", "setting", "flows", "scheme"]


def analyse(
    batch: BatchResult, what: dict[str, dict[str, Any]], scale: float, duration: float
) -> pd.DataFrame:
    """One row per finding: ours (the simulator) beside the published value, the model where
    there is one, and the kernel twins' median where they ran and can measure it."""
    rows: list[dict[str, Any]] = []
    kernel: dict[tuple[Any, ...], list[float]] = {}
    for outcome in batch.outcomes:
        info = what[outcome.run.name]
        found = _findings(info, batch.run_dir(outcome), scale, duration)
        if "twin_of" not in info:
            rows += found
            continue
        for r in found:
            if math.isfinite(r["ours"]):
                kernel.setdefault(tuple(r[k] for k in _ROW_KEY), []).append(r["ours"])
    table = pd.DataFrame(rows)
    for col in ("paper", "paper_text", "model", "error_median"):
        if col not in table:
            table[col] = math.nan if col != "paper_text" else ""
    keys = [tuple(r) for r in table[_ROW_KEY].itertuples(index=False)]
    table["kernel"] = [float(np.median(kernel[k])) if k in kernel else math.nan for k in keys]
    table["kernel_runs"] = [" / ".join(f"{v:.3g}" for v in kernel.get(k, [])) for k in keys]
    return table[
        [
            *_ROW_KEY,
            "ours",
            "kernel",
            "kernel_runs",
            "paper",
            "paper_text",
            "model",
            "error_median",
        ]
    ]


def reproduce_scale(
    *,
    scale: float = 1.0,
    duration: float = DEFAULT_DURATION_S,
    out: str | Path | None = None,
    workers: int | None = None,
    command: list[str] | None = None,
    kernel_runs: int = 0,
    resume: bool = False,
    cluster: Any = None,
    observer: Observer | None = None,
) -> Reproduction:
    """Runs the reproduction into `out` through the sweep layer (`cclab.sweep.run_resumable`):
    an interruption keeps the finished runs and `resume=True` runs only the missing ones; the
    runs go to `workers` local processes or to the Dask cluster `cluster` (as `cclab.sweep`
    takes it; kernel runs need this machine's emulator, so they refuse a cluster)."""
    p, what = plan(scale, duration, kernel_runs)

    def analysis(batch: BatchResult) -> pd.DataFrame | None:
        if batch.failed:
            return None
        table = analyse(batch, what, scale, duration)
        table.to_csv(batch.directory / "scale.csv", index=False)
        return table

    engine = EMU.name if kernel_runs else SIM.name
    with executor_for(engine, jobs=workers, cluster=cluster) as executor:
        result = run_resumable(
            p,
            Path(out) if out is not None else default_out("scale"),
            resume=resume,
            jobs=workers,
            executor=executor,
            observer=observer,
            command=command or ["cclab.reproduce_scale"],
            analyse=analysis,
        )
    if result.failed:
        raise result.failures_error()
    d = duration
    notes = [
        f"scale {scale:g}: CoreScale at {settings(scale)[1].rate_bps / 1e9:g} Gbit/s, "
        f"{settings(scale)[1].buffer_bytes / 1e6:g} MB, flows {settings(scale)[1].flow_counts}; "
        f"{d:g} s per run; JFI and shares after the first third, C and losses per halving over "
        "the whole run (the paper: hours, the first 5 min ignored)",
        "model: Ware et al. IMC'19 eqs. 9-11 (cclab.models.bbr_share)",
    ]
    if kernel_runs:
        notes.append(
            f"kernel: median of {kernel_runs} emulator run(s) with Linux's reno/cubic/bbr per "
            f"finding, settings up to {KERNEL_MAX_RATE_BPS / 1e9:g} Gbit/s; no halvings counted"
        )
    return Reproduction(
        name="scale",
        table=result.analysis,
        out=result.directory,
        files=[result.directory / "scale.csv"],
        notes=notes,
    )
