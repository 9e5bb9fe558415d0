"""`cclab reproduce`: Copa's fairness experiments, shortened to a couple of schemes and one seed."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cclab import reproduce

FAIRNESS_COLUMNS = {
    "scheme",
    "seeds",
    "jain_median",
    "jain_median_min",
    "jain_median_max",
    "jain_counted",
    "paper",
    "report",
    "ours_minus_paper",
    "ours_minus_report",
    "utilisation",
}


def test_copa_fairness_table_plot_and_single_flow_check(tmp_path) -> None:
    rep = reproduce.copa_fairness(seeds=1, schemes=["copa", "cubic"], out=tmp_path, workers=1)
    table = rep.table
    assert set(table.columns) >= FAIRNESS_COLUMNS
    assert list(table["scheme"]) == ["copa", "cubic"]
    for _, row in table.iterrows():
        assert 0.0 < row["jain_median"] <= 1.0
        assert row["jain_median_min"] <= row["jain_median"] <= row["jain_median_max"]
        assert 0.5 < row["jain_counted"] <= 1.0
        assert 0.5 < row["utilisation"] <= 1.0
    copa = table.set_index("scheme").loc["copa"]
    assert (copa["paper"], copa["report"]) == (0.93, 0.97)
    assert math.isclose(copa["ours_minus_paper"], copa["jain_median"] - 0.93)
    for name in ("copa-fairness.csv", "copa-fairness-cdf.png", "copa-fairness-cdf.svg"):
        assert (tmp_path / name).stat().st_size > 0
    assert pd.read_csv(tmp_path / "copa-fairness.csv")["scheme"].tolist() == ["copa", "cubic"]
    jain = pd.read_csv(tmp_path / "copa-fairness-jain.csv")
    assert jain["jain"].between(0, 1).all() and set(jain["scheme"]) == {"copa", "cubic"}
    single = rep.details["single_flow"]
    assert 0.5 < single["ours"].iloc[0] <= 1.0 and single["report"].iloc[0] == 0.85


def test_unknown_scheme_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown scheme copa2"):
        reproduce.copa_fairness(seeds=1, schemes=["copa2"], out=None)


def test_rtt_fairness_runs_copa_in_default_mode(tmp_path) -> None:
    rep = reproduce.copa_rtt_fairness(schemes=["copa-d"], out=tmp_path, workers=1)
    row = rep.table.iloc[0]
    assert row["scheme"] == "copa-d" and row["paper"] == 1.0
    assert 0.0 < row["jain"] <= 1.0
    flows = pd.read_csv(tmp_path / "copa-rtt-fairness-flows.csv")
    assert sorted(flows["rtt_ms"]) == [15.0 * k for k in range(1, 21)]


def test_cli_prints_the_table(cli, tmp_path) -> None:
    code, out, _ = cli(
        "reproduce", "copa-fairness", "--seeds", "1", "--schemes", "copa", "--out", tmp_path
    )
    assert code == 0
    assert "copa" in out and "0.93" in out and "0.97" in out
    code, _, err = cli("reproduce", "copa-fairness", "--schemes", "nope", "--out", tmp_path)
    assert code == 2 and "unknown scheme nope" in err
