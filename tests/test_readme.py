"""What a newcomer reads first must hold: the README points only at files in the repository,
tours every command, and the demo installs nothing it does not need."""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

from cclab.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_points_only_inside_the_repository() -> None:
    # Users get the repository, not the workspace around it (FIDELITY.md is the README's record).
    for doc in ["README.md", "FIDELITY.md"]:
        text = (ROOT / doc).read_text()
        assert "../" not in text, doc
        for link in re.findall(r"\]\(([^)#]+)\)", text):
            if "://" not in link:
                assert (ROOT / link).exists(), f"{doc}: {link}"


def test_readme_tours_every_command() -> None:
    for module_name in COMMANDS:
        name = importlib.import_module(module_name).NAME
        assert re.search(rf"^cclab {name}\b", README, re.M), f"`cclab {name}` is not in the README"


def test_shipped_scenarios_do_not_wait_for_schemes_that_exist() -> None:
    for path in [ROOT / "README.md", *sorted((ROOT / "scenarios").glob("*.toml"))]:
        assert "until Copa exists" not in path.read_text(), path


def test_demo_does_not_install_the_test_browser() -> None:
    def plan(target: str) -> str:
        # -n prints the recipe; -W pretends the install inputs changed so it is printed in full.
        return subprocess.run(
            ["make", "-n", "-W", "pyproject.toml", target],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    assert "check-system.sh --test" not in plan("demo")
    assert "check-system.sh --test" in plan("test")


def test_shipped_scenarios_point_only_inside_the_repository() -> None:
    for path in sorted((ROOT / "scenarios").rglob("*.toml")):
        text = path.read_text()
        assert "shared/" not in text and "reference/" not in text, path
