"""Reports that read true (issue 9 items 5 and 6): log axes label enough ticks to read values
off (a span like 50-250 ms used to show a single label, 100), identical runs are said to be
identical, and a relative trace path shades the trace's own capacity."""

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

    # Nothing random on the path (a constant link, the hosts' jitter off): every seed gives the
    # same run.
    scenario = tmp_path / "constant.toml"
    scenario.write_text(
        'duration = "2s"\n[link]\nrate = "12Mbps"\ndelivery = "constant"\ndelay = "10ms"\n'
        'queue = "1bdp"\n[hosts]\njitter = "0"\n[[flows]]\nscheme = "cubic"\n'
    )
    folder = run_experiment(scenario, ["cubic"], runs=2, jobs=1, out=tmp_path / "exp")
    figure = throughput_delay(load_study(folder))
    texts = [t.get_text() for t in figure.figure.axes[0].texts]
    assert texts == ["cubic (2, all identical)"]
    lines = figure.figure.axes[0].get_lines()
    assert lines == [], "no ellipse outline for runs without spread"
    plt.close(figure.figure)


def test_a_relative_trace_path_shades_the_traces_own_capacity(tmp_path, monkeypatch):
    # Issue 9 item 5: a scenario naming its trace relative to itself, run through a relative
    # scenario path, used to record a relative trace path, so the report (from any other
    # folder) shaded a flat average instead of the trace's per-bin capacity.
    import cclab
    from cclab.report.capacity import capacity_of
    from cclab.report.loading import load_run

    folder = tmp_path / "paths"
    folder.mkdir()
    # 1 s period: 4 opportunities per ms for 500 ms (48 Mbit/s), then 1 per ms (12 Mbit/s).
    busy = [str(ms) for ms in range(1, 501) for _ in range(4)]
    calm = [str(ms) for ms in range(501, 1001)]
    (folder / "steps.trace").write_text("\n".join(busy + calm) + "\n")
    (folder / "s.toml").write_text(
        'duration = "2s"\n[link]\ntrace = "steps.trace"\ndelay = "10ms"\nqueue = 100\n'
        '[[flows]]\nscheme = "cubic"\n'
    )
    monkeypatch.chdir(tmp_path)
    result = cclab.run("paths/s.toml", out=tmp_path / "run")
    monkeypatch.chdir(tmp_path.parent)
    assert result is not None
    capacity = capacity_of(load_run(tmp_path / "run"))
    assert capacity is not None and capacity.label == "capacity of trace steps.trace"
    # Each 500 ms bin holds 499 ms of one level and 1 ms of the other (timestamps are ms 1..1000).
    assert capacity.mbps.max() == pytest.approx(48.0, rel=0.01)
    assert capacity.mbps.min() == pytest.approx(12.0, rel=0.01)
