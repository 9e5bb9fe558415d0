"""cclab: a training ground for congestion-control research.

    >>> import cclab
    >>> result = cclab.run("scenarios/pantheon-1flow.toml", seed=2)
    >>> result.summary

See `cclab.run`, `cclab.validate` and `cclab.RunResult`; the `cclab` command wraps the same.
"""

from cclab._core import __version__
from cclab.api import run, validate
from cclab.errors import ScenarioError, SimulationError
from cclab.result import NEVER, RunResult

__all__ = [
    "NEVER",
    "RunResult",
    "ScenarioError",
    "SimulationError",
    "__version__",
    "run",
    "validate",
]
