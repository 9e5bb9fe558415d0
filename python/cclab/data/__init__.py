"""The data cclab ships inside its package, and the one way to find it: `package_data(...)`.

Everything the package reads at run time lives under this folder, so it works the same from a
source checkout (editable install) and from an installed wheel:

- `scenarios/` — the example scenarios and `scenarios/repro/`, the reproductions' scenarios. This
  is their one home; the repository's top-level `scenarios` is a symbolic link to it, so the
  README's commands (`cclab run scenarios/...`) work in a checkout. (The link points this way
  because maturin packs a package's files but does not follow a link inside it.)
- `traces/` — mahimahi traces that shipped scenarios and presets name.
- `cdfs/` — request-size distributions.

Owns: the package-data root and the shipped-scenario lookup. Must not import the runner, the
CLI or `cclab._core` (everything may import this).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: The sub-folder of the shipped scenarios, and the suffix of a scenario file.
SCENARIOS = "scenarios"
SCENARIO_SUFFIX = ".toml"


def package_data(*parts: str) -> Path:
    """The path of `parts` under the package's data folder (it need not exist).

    `importlib.resources` finds the folder wherever the package was installed; cclab is never
    imported from a zip (it has a compiled extension), so the resource is a real directory.
    """
    root = resources.files(__name__)
    return Path(str(root.joinpath(*parts)))


def shipped_scenarios(subdir: str = "") -> list[Path]:
    """The scenario files shipped with the package (in `scenarios/<subdir>`), sorted by name."""
    folder = package_data(SCENARIOS, subdir) if subdir else package_data(SCENARIOS)
    return sorted(p for p in folder.glob(f"*{SCENARIO_SUFFIX}") if p.is_file())


def shipped_scenario(name: str) -> Path | None:
    """The shipped scenario a bare name means (`pantheon-1flow`, `pantheon-1flow.toml` or
    `repro/copa-fairness`), or None if there is none."""
    relative = name if name.endswith(SCENARIO_SUFFIX) else name + SCENARIO_SUFFIX
    if Path(relative).is_absolute() or ".." in Path(relative).parts:
        return None
    path = package_data(SCENARIOS, relative)
    return path if path.is_file() else None
