"""Calibrated emulators: fit the simulator's link model (rate, one-way delay, droptail queue,
i.i.d. loss; constant or Poisson deliveries) so that a set of schemes reproduce a real path's
mean throughput and mean p95 one-way delay, graded by the Pantheon's replication error.

    >>> from cclab.calibrate import load_target, settings_for, calibrate
    >>> target = load_target("path.csv")
    >>> calibrate(target, settings_for(target, None, seeds=3, trials=40, scenario=...), "out/")

`target` reads what is fitted, `space` the search ranges, `search` the Optuna studies over the
batch runner, `calibration` the whole calibration and its directory (`cclab calibrate`).

Optuna is an optional dependency (`pip install 'cclab[calibrate]'`): importing this package
without it raises ModuleNotFoundError saying how to install it.
"""

# First: without Optuna, fail here with the hint rather than deep inside a submodule.
from cclab.calibrate.needs_optuna import INSTALL_HINT

# isort: split
from cclab.calibrate.calibration import CALIBRATION_FILE, calibrate
from cclab.calibrate.search import (
    CalibrationError,
    Settings,
    base_scenario,
    settings_for,
)
from cclab.calibrate.space import LinkParams, SearchSpace
from cclab.calibrate.target import Target, TargetError, load_target

__all__ = [
    "CALIBRATION_FILE",
    "INSTALL_HINT",
    "CalibrationError",
    "LinkParams",
    "SearchSpace",
    "Settings",
    "Target",
    "TargetError",
    "base_scenario",
    "calibrate",
    "load_target",
    "settings_for",
]
