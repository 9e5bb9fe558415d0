"""`cclab.calibrate.calibrate`: fit an emulator to a target, and write the calibration
directory.

The directory (`out`) holds:

- `calibration.json`, written last with `"complete": true`: the target, the settings, the
  search ranges, each study's best emulator, the best overall with its replication error per
  scheme and overall, the leave-one-scheme-out check, wall time;
- `best.toml`: the best emulator as a ready scenario (its `[link]` over the base scenario's
  flows);
- `trials.csv`: every finished trial (study, number, link, replication error);
- `studies.db`: the Optuna studies (SQLite), what a resumed calibration continues;
- `real_vs_emulated.{svg,png}` (the Pantheon's Figure 3 per scheme) and `history.{svg,png}`
  (the optimisation history).

Leave-one-scheme-out: for each scheme, the trial (of both studies) with the lowest replication
error over the other schemes is its fit, and its error on the held-out scheme is the
prediction error. The trials were chosen by a search that saw every scheme, so this checks the
selection, not a search run blind to the scheme; with `loo_trials`, a fresh study of that many
trials per held-out scheme (on the best delivery model) searches without it.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import optuna

from cclab.api import validate
from cclab.batch import Executor, flows_for_scheme
from cclab.calibrate.search import (
    SCRATCH_DIR,
    STUDIES_FILE,
    CalibrationError,
    Settings,
    TrialCallback,
    TrialRecord,
    compare_to_target,
    completed,
    default_executor,
    evaluate,
    open_storage,
    open_study,
    optimise,
    subset_error,
    with_trials,
)
from cclab.calibrate.space import DELIVERIES, LinkParams
from cclab.calibrate.target import Target
from cclab.compare import Comparison
from cclab.provenance import environment

#: The manifest that makes a directory a calibration (what `cclab report` looks for).
CALIBRATION_FILE = "calibration.json"
BEST_SCENARIO = "best.toml"
TRIALS_FILE = "trials.csv"
KIND = "calibration"


def _check_out(out: Path) -> None:
    """`out` is new, empty, or an earlier calibration (to resume)."""
    if not out.exists():
        return
    if not out.is_dir():
        raise CalibrationError(f"--out {out}: exists and is not a directory")
    if (out / STUDIES_FILE).exists() or not any(out.iterdir()):
        return
    raise CalibrationError(
        f"--out {out}: a directory that holds something else than a calibration; give a new "
        "or an empty directory (or an earlier calibration's, to resume it)"
    )


def _comparison_rows(comparison: Comparison) -> list[dict[str, Any]]:
    return [
        {
            "scheme": r.label,
            "real_throughput_mbps": r.second.throughput,
            "real_delay_p95_ms": r.second.delay_p95,
            "emulated_throughput_mbps": r.first.throughput,
            "emulated_delay_p95_ms": r.first.delay_p95,
            "throughput_error": r.throughput_error,
            "delay_error": r.delay_error,
            "replication_error": (r.throughput_error + r.delay_error) / 2,
        }
        for r in comparison.rows
    ]


def _summary(record: TrialRecord, target: Target, settings: Settings) -> dict[str, Any]:
    comparison = compare_to_target(target, record.runs, len(settings.seeds))
    return {
        "delivery": record.delivery,
        "trial": record.number,
        "link": record.params.to_dict(),
        "replication_error": comparison.replication_error,
        "throughput_error": comparison.throughput_error,
        "delay_error": comparison.delay_error,
        "schemes": _comparison_rows(comparison),
    }


def _leave_one_out(
    records: Sequence[TrialRecord],
    target: Target,
    settings: Settings,
    best_delivery: str,
    loo_trials: int,
    storage: optuna.storages.BaseStorage,
    executor: Executor,
    out: Path,
) -> list[dict[str, Any]]:
    labels = [label for _, label in settings.pairs]
    if len(labels) < 2:
        return []
    comparisons = [(r, compare_to_target(target, r.runs, len(settings.seeds))) for r in records]
    rows = []
    for held in labels:
        others = [label for label in labels if label != held]
        if loo_trials > 0:
            sub = with_trials(settings, loo_trials)
            study = open_study(storage, f"loo-{best_delivery}-{held}", sub, out)
            optimise(study, best_delivery, sub, target, executor, out / SCRATCH_DIR, labels=others)
            fitted = min(completed(study, best_delivery), key=lambda r: r.error)
            # The held-out scheme on the fit: the runs of the other schemes are the fit's own.
            (check,) = evaluate(
                [fitted.params], settings, target, executor, out / SCRATCH_DIR, labels=[held]
            )
            if not check.ok:
                raise CalibrationError(f"leave-one-out check of {held} failed: {check.error}")
            held_error = check.replication_error
            fit_error, params, method = fitted.error, fitted.params, "search"
        else:
            record, comparison = min(comparisons, key=lambda rc: subset_error(rc[1], others))
            fit_error = subset_error(comparison, others)
            held_error = subset_error(comparison, [held])
            params, method = record.params, "selection"
        rows.append(
            {
                "held_out": held,
                "method": method,
                "fit_error": fit_error,
                "held_out_error": held_error,
                "link": params.to_dict(),
            }
        )
    return rows


def _write_trials(path: Path, records: Sequence[TrialRecord]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["delivery", "trial", "rate_mbps", "delay_ms", "queue_packets", "loss", "error"]
        )
        for r in records:
            p = r.params
            writer.writerow(
                [r.delivery, r.number, p.rate_mbps, p.delay_ms, p.queue_packets, p.loss, r.error]
            )


def best_scenario_toml(settings: Settings, params: LinkParams, header: str) -> str:
    """The best emulator as a scenario file: the base scenario over its link, every default
    written out by the core's own validation, with a comment header."""
    from cclab.calibrate.search import trial_scenario

    scenario = trial_scenario(settings.scenario, params)
    scenario["flows"] = flows_for_scheme(scenario, settings.pairs[0][0])
    text = validate(scenario)
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comment + text


def _write_json(path: Path, data: dict[str, Any]) -> None:
    staging = path.with_name(f".{path.name}.partial")
    staging.write_text(json.dumps(data, indent=2, default=_json_default) + "\n")
    staging.replace(path)


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(f"{type(value).__name__} is not JSON")


def calibrate(
    target: Target,
    settings: Settings,
    out: str | os.PathLike[str],
    *,
    executor: Executor | None = None,
    jobs: int | None = None,
    loo_trials: int = 0,
    on_trial: TrialCallback | None = None,
    command: list[str] | None = None,
    figures: bool = True,
    log: Callable[[str], object] | None = None,
) -> dict[str, Any]:
    """Runs (or resumes) the calibration into `out` and returns the manifest written as
    `calibration.json`. `executor`: where the runs go (default: threads of this process, one
    per core or `jobs`); a distributed executor (`cclab.batch`'s Dask one) plugs in here."""
    out = Path(out)
    _check_out(out)
    out.mkdir(parents=True, exist_ok=True)
    # A resumed calibration is not complete until it has finished again.
    (out / CALIBRATION_FILE).unlink(missing_ok=True)
    executor = executor or default_executor(jobs)
    started_at = datetime.now().astimezone()
    t0 = time.perf_counter()
    storage = open_storage(out / STUDIES_FILE)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    scratch = out / SCRATCH_DIR
    records: list[TrialRecord] = []
    studies: dict[str, dict[str, Any]] = {}
    try:
        for delivery in DELIVERIES:
            study = open_study(storage, delivery, settings, out)
            optimise(study, delivery, settings, target, executor, scratch, on_trial=on_trial)
            mine = completed(study, delivery)
            if not mine:
                raise CalibrationError(
                    f"every trial of the {delivery} study failed; see {out / STUDIES_FILE}"
                )
            records.extend(mine)
            studies[delivery] = _summary(min(mine, key=lambda r: r.error), target, settings)
        best_delivery = min(studies, key=lambda d: studies[d]["replication_error"])
        best = studies[best_delivery]
        if log is not None and loo_trials > 0:
            log(f"leave-one-scheme-out: {loo_trials} trials per held-out scheme")
        loo = _leave_one_out(
            records, target, settings, best_delivery, loo_trials, storage, executor, out
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    params = LinkParams(**best["link"])
    header = (
        f"Calibrated emulator of {target.source} (cclab calibrate): replication error "
        f"{100 * best['replication_error']:.1f}% over {', '.join(lb for _, lb in settings.pairs)}"
        f"\n({best_delivery} deliveries; {len(records)} trials; the flows are the base "
        "scenario's with the first scheme)."
    )
    (out / BEST_SCENARIO).write_text(best_scenario_toml(settings, params, header))
    _write_trials(out / TRIALS_FILE, records)
    manifest: dict[str, Any] = {
        "kind": KIND,
        "target": target.to_dict(),
        "schemes": [{"sim": s, "target": label} for s, label in settings.pairs],
        "seeds": list(settings.seeds),
        "trials_per_study": settings.trials,
        "search_space": settings.space.to_dict(),
        "scenario": dict(settings.scenario),
        "studies": studies,
        "best": {**best, "scenario": BEST_SCENARIO},
        "leave_one_out": loo,
        "leave_one_out_error": (
            statistics.fmean(r["held_out_error"] for r in loo) if loo else None
        ),
        "jobs": executor.workers,
        "started_at": started_at.isoformat(timespec="seconds"),
        "wall_secs": time.perf_counter() - t0,
        "command": command or ["cclab.calibrate"],
        **environment(),
    }
    if figures:
        from cclab.report.calibration import write_figures

        write_figures(out, manifest, records)
    manifest["complete"] = True
    _write_json(out / CALIBRATION_FILE, manifest)
    return manifest
