"""cclab: a training ground for congestion-control research.

    >>> import cclab
    >>> result = cclab.run("scenarios/pantheon-1flow.toml", seed=2)
    >>> result.summary

See `cclab.run`, `cclab.validate` and `cclab.RunResult`; the `cclab` command wraps the same.
Experiments, reports and the archive: `cclab.run_experiment`, `cclab.write_report`,
`cclab.runs` / `cclab.experiments` (the archive's index as DataFrames), `cclab.import_pantheon`,
`cclab.import_mahimahi` and `cclab.analyze_packets` (the metrics of any packet log); sweeps:
`cclab.sweep` (a grid of scenario values x schemes x runs, as one DataFrame).

The package owns everything user-facing: the API, the CLI (`cli/`, one module per command),
the engine descriptors (`engines`), the one batch runner (`batch`) that experiments,
reproductions and comparisons feed with plans, the archive and its index, reports and importers.
It computes no metric and declares no result column, unit or code of its own: those come from
`cclab._core` (the Rust core), which it must not bypass by reading packets itself.
"""

import os as _os
from pathlib import Path as _Path

import cclab._startup  # noqa: F401 (first: a quiet Ctrl-C while the `cclab` command starts)
from cclab._core import TRACE_DIR_ENV as _TRACE_DIR_ENV
from cclab._core import __version__
from cclab.analysis import analyze_packets
from cclab.api import run, validate
from cclab.archive_index import experiments, runs
from cclab.controller import Controller, register_scheme, unregister_scheme
from cclab.errors import ScenarioError, SimulationError
from cclab.experiment import run_experiment
from cclab.importers import import_mahimahi, import_pantheon
from cclab.notebook import load_results
from cclab.report import write_report
from cclab.result import NEVER, RunResult
from cclab.sweep import sweep

# A scenario preset's trace is read from the package's own copy (`[link] preset`), wherever the
# package is installed; the emulator's processes inherit it. A value set by the user wins.
_os.environ.setdefault(_TRACE_DIR_ENV, str(_Path(__file__).parent / "data" / "traces"))

__all__ = [
    "NEVER",
    "Controller",
    "RunResult",
    "ScenarioError",
    "SimulationError",
    "__version__",
    "analyze_packets",
    "experiments",
    "import_mahimahi",
    "import_pantheon",
    "load_results",
    "register_scheme",
    "run",
    "run_experiment",
    "runs",
    "sweep",
    "unregister_scheme",
    "validate",
    "write_report",
]
