"""The throughput-delay plot's log axes carry enough labelled ticks to read values off (issue 9
item 6): a span like 50-250 ms used to show a single label (100)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from cclab.report.figures import WIDE_RANGE, _log_axis


def _labels(low: float, high: float) -> list[str]:
    fig, ax = plt.subplots()
    values = np.array([low, high])
    ax.plot(values, [1.0, 2.0])
    _log_axis(ax, "x", values)
    fig.canvas.draw()
    view = sorted(ax.get_xlim())
    labels = [
        t.get_text()
        for t, v in zip(ax.get_xticklabels(), ax.get_xticks(), strict=True)
        if t.get_text() and view[0] <= v <= view[1]
    ]
    plt.close(fig)
    return labels


@pytest.mark.parametrize(
    ("low", "high"), [(50, 250), (60, 60 * WIDE_RANGE), (3, 900), (0.5, 5000), (130, 700)]
)
def test_every_log_span_has_at_least_three_labelled_ticks(low, high):
    labels = _labels(low, high)
    assert len(labels) >= 3, labels
    assert len(labels) <= 16, labels  # and not a wall of numbers


def test_fifty_to_two_hundred_fifty_ms_reads_off():
    assert {"50", "100", "200"} <= set(_labels(50, 250))


def test_identical_runs_are_said_to_be_identical_not_drawn_as_an_ellipse(tmp_path):
    from cclab.experiment import run_experiment
    from cclab.report.figures import throughput_delay
    from cclab.report.loading import load_study

    scenario = tmp_path / "constant.toml"
    scenario.write_text(
        'duration = "2s"\n[link]\nrate = "12Mbps"\ndelivery = "constant"\ndelay = "10ms"\n'
        'queue = "1bdp"\n[[flows]]\nscheme = "cubic"\n'
    )
    folder = run_experiment(scenario, ["cubic"], runs=2, jobs=1, out=tmp_path / "exp")
    figure = throughput_delay(load_study(folder))
    texts = [t.get_text() for t in figure.figure.axes[0].texts]
    assert texts == ["cubic (2, all identical)"]
    lines = figure.figure.axes[0].get_lines()
    assert lines == [], "no ellipse outline for runs without spread"
    plt.close(figure.figure)
