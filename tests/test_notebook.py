"""Results in Jupyter: HTML tables, the report's figures inline, and the example notebook run
end to end (nbclient, in a fresh kernel)."""

from __future__ import annotations

from pathlib import Path

import nbclient  # the dev extra installs nbclient, nbformat and ipykernel
import nbformat
import pytest

import cclab
from cclab.notebook import FIGURES, FigureView

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "quickstart.ipynb"


@pytest.fixture(scope="module")
def result():
    return cclab.run("pantheon-1flow", duration="4s")


def test_a_run_shows_as_its_summary_table(result):
    page = result._repr_html_()
    assert page.count("<tr") == len(result.summary) + 1  # a header and one row per line
    assert "throughput_mbps" in page
    assert f"seed {result.seed}" in page


@pytest.mark.parametrize("which", list(FIGURES))
def test_every_report_figure_plots_inline(result, which):
    view = result.plot(which)
    assert isinstance(view, FigureView)
    assert view.title and view.definition
    svg = view._repr_svg_()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


def test_an_unknown_figure_names_the_figures(result):
    with pytest.raises(ValueError, match="throughput_delay"):
        result.plot("nope")


def test_experiment_results_show_both_tables(tmp_path):
    out = cclab.run_experiment(
        "pantheon-1flow", ["cubic", "newreno"], runs=2, jobs=1, duration="2s", out=tmp_path / "e"
    )
    results = cclab.load_results(out)
    assert list(results.schemes["scheme"]) == ["cubic", "newreno"]
    assert len(results.runs) == 4
    page = results._repr_html_()
    assert "4 run(s)" in page and page.count("<table") == 2
    assert "<svg" in results.plot()._repr_html_()


def test_the_example_notebook_runs_end_to_end():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("throughput_mbps" in h for h in html)  # the run's summary table
    assert sum("<svg" in h for h in html) == 2  # both figures
