"""`cclab report`: one self-contained HTML page, checked in headless Chromium (Debian's
`chromium`, which `make test` installs): every figure must be present and really drawn. The
screenshot is kept in target/test-artifacts/ for a human to look at."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from html import escape as html_escape
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from cclab.experiment import run_experiment
from cclab.report import write_report

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "target" / "test-artifacts"
FIGURES = ["throughput-delay", "throughput-time", "delay-time", "jain-time", "jain-cdf"]
#: Every run of the `experiment` fixture has its own time-series figure, collapsed under Runs.
RUN_FIGURES = [f"run-{scheme}-r{i}" for scheme in ("cubic", "newreno") for i in (1, 2, 3)]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]

SCENARIO = """\
    name = "report-test"
    description = "Two Cubic flows on a 12 Mbit/s Poisson link, 20 ms RTT"
    duration = "4s"
    seed = 1

    [link]
    rate = "12Mbps"
    delivery = "poisson"
    delay = "10ms"
    queue = "1bdp"

    [[flows]]
    scheme = "cubic"
    count = 2
    every = "1s"
"""


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    scenario = folder / "scenario.toml"
    scenario.write_text(SCENARIO.replace("    ", ""))
    return run_experiment(scenario, ["cubic", "newreno"], runs=3, jobs=1, out=folder / "exp")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.fail("chromium is not installed: `make test` installs Debian's chromium package")


def _browser(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_report_is_self_contained(experiment, tmp_path, cli):
    figures = tmp_path / "figures"
    code, stdout, stderr = cli("report", experiment, "--figures", figures)
    assert code == 0, stderr
    page = experiment / "report.html"
    assert f"report: {page}" in stdout
    html = page.read_text()
    # Nothing is fetched from anywhere: no external URL in any src or href, no @import.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html
    for key in FIGURES + RUN_FIGURES:
        match = re.search(
            rf'data-figure="{key}".*?src="data:image/svg\+xml;base64,([^"]+)".*?<figcaption>(.+?)'
            "</figcaption>",
            html,
            re.S,
        )
        assert match, key
        svg = base64.b64decode(match.group(1)).decode()
        assert svg.count("<path") > 20, key  # axes, ticks and data, not an empty frame
        assert len(match.group(2)) > 100, key  # the figure's definition
        for suffix in (".png", ".svg"):
            assert (figures / f"{key}{suffix}").stat().st_size > 5_000
    # The tables and the metadata.
    assert "Summary per scheme" in html and "± " in html
    assert "newreno-r3" in html
    assert "rate = &quot;12Mbps&quot;" in html or 'rate = "12Mbps"' in html
    assert "Environment" in html and "cclab version" in html
    # Each run's own figure sits collapsed in its section, beside its per-flow table.
    for key in RUN_FIGURES:
        section = re.search(
            rf"<details>(?:(?!</details>).)*data-figure=\"{key}\".*?</details>", html, re.S
        )
        assert section and "throughput (Mbit/s)" in section.group(0), key
    # The per-flow summary: a row per scheme and flow, mean ± sd over the three runs.
    summary = html.split("Summary per flow", 1)[1].split("</table>", 1)[0]
    for scheme in ("cubic", "newreno"):
        assert len(re.findall(rf"<td>{scheme}</td><td>\d+</td><td>3</td>", summary)) >= 2, scheme


def test_report_renders_in_chromium(experiment, tmp_path):
    page = write_report(experiment, out=tmp_path / "report.html")
    profile = tmp_path / "profile"
    dom = _browser(page, profile, "--virtual-time-budget=5000", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = dict(re.findall(r'data-figure="([^"]+)"[^>]*data-rendered="([^"]+)"', dom.stdout))
    assert set(rendered) == set(FIGURES + RUN_FIGURES), rendered
    for key, size in rendered.items():
        width, height = (int(v) for v in size.split("x"))
        assert width > 300 and height > 200, (key, size)

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "report-screenshot.png"
    screenshot.unlink(missing_ok=True)
    shot = _browser(page, profile, "--window-size=1100,5200", f"--screenshot={screenshot}")
    assert shot.returncode == 0, shot.stderr[-2000:]
    pixels = matplotlib.image.imread(screenshot)[..., :3]
    assert pixels.shape[:2] == (5200, 1100)
    # Drawn, not blank: a good share of the page is not white, with many distinct colours.
    not_white = np.any(pixels < 0.95, axis=-1)
    assert not_white.mean() > 0.05
    colours = np.unique((pixels.reshape(-1, 3) * 255).astype(np.uint8), axis=0)
    assert len(colours) > 200


def test_single_run_report(tmp_path, cli, write_scenario):
    import cclab

    cclab.run(write_scenario(SCENARIO), out=tmp_path / "run")
    code, _, stderr = cli("report", tmp_path / "run", "--out", tmp_path / "r.html")
    assert code == 0, stderr
    html = (tmp_path / "r.html").read_text()
    assert "single run" in html
    assert all(f'data-figure="{key}"' in html for key in FIGURES)
    # A single run's figures are its own: no second copy of them under Runs.
    assert 'data-figure="run-' not in html


def test_an_emulator_runs_warnings_reach_its_report(tmp_path, cli, write_scenario):
    import cclab

    cclab.run(write_scenario(SCENARIO), out=tmp_path / "run")
    code, _, _ = cli("report", tmp_path / "run", "--out", tmp_path / "clean.html")
    assert code == 0
    assert "What the emulator warned of" not in (tmp_path / "clean.html").read_text()
    # What an emulator run that fell behind keeps in its meta.json (cclab_emu's warnings).
    meta_path = tmp_path / "run" / "meta.json"
    meta = json.loads(meta_path.read_text())
    said = "the hosts' kernels dropped 7 packets at the emulator's devices"
    meta["stats"]["emu_warnings"] = [said]
    meta_path.write_text(json.dumps(meta))
    code, _, stderr = cli("report", tmp_path / "run", "--out", tmp_path / "r.html")
    assert code == 0, stderr
    html = (tmp_path / "r.html").read_text()
    assert "What the emulator warned of" in html
    assert f"run: {html_escape(said)}" in html


def test_report_of_something_else_is_an_error(tmp_path, cli):
    code, _, stderr = cli("report", tmp_path)
    assert code == 2
    assert "not a complete run directory" in stderr
    code, _, stderr = cli("report", "no-such-run")
    assert code == 2
    assert "latest" in stderr
