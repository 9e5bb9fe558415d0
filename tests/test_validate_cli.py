"""`cclab validate`: every error names the file, the field and the line, and says what is
accepted; valid files print OK."""

from __future__ import annotations

from pathlib import Path

from conftest import SCENARIOS, SMALL


def test_shipped_scenarios_are_valid(cli) -> None:
    files = sorted(SCENARIOS.glob("*.toml"))
    assert len(files) >= 5
    code, out, err = cli("validate", *files)
    assert (code, err) == (0, "")
    assert out.count(": OK") == len(files)


def test_unknown_key_names_file_line_field_and_suggestion(cli, write_scenario) -> None:
    path = write_scenario(SMALL.replace('rate = "12Mbps"', 'rat = "12Mbps"'))
    code, out, err = cli("validate", path)
    assert code == 1
    assert out == ""
    # `rat` is on line 6 of the dedented SMALL text.
    assert err.startswith(f"error: {path}:6: field `link.rat`: unknown key `rat`")
    assert "did you mean `rate`?" in err
    assert "Accepted keys here:" in err


def test_bad_unit_says_what_is_accepted(cli, write_scenario) -> None:
    path = write_scenario(SMALL.replace('delay = "10ms"', 'delay = "10 parsecs"'))
    code, _, err = cli("validate", path)
    assert code == 1
    assert f"error: {path}:8: field `link.delay`:" in err
    assert '"10ms"' in err  # an example of what is accepted


def test_unknown_scheme_suggests_a_known_one(cli, write_scenario) -> None:
    path = write_scenario(SMALL.replace('scheme = "cubic"', 'scheme = "cubc"'))
    code, _, err = cli("validate", path)
    assert code == 1
    assert "field `flows[0].scheme`" in err
    assert "did you mean `cubic`?" in err


def test_every_file_is_checked_and_every_error_printed(cli, write_scenario) -> None:
    good = write_scenario(SMALL, "good.toml")
    bad = write_scenario(
        SMALL.replace('duration = "3s"', 'duration = "0s"').replace("count = 3", "count = 0"),
        "bad.toml",
    )
    code, out, err = cli("validate", bad, good)
    assert code == 1
    assert f"{good}: OK" in out
    lines = err.strip().splitlines()
    assert any("field `duration`" in line for line in lines)
    assert any("field `flows[0].count`" in line for line in lines)
    assert all(line.startswith(f"error: {bad}") for line in lines)


def test_missing_file(cli, tmp_path: Path) -> None:
    code, _, err = cli("validate", tmp_path / "nope.toml")
    assert code == 1
    assert "nope.toml" in err
    assert "cannot read the scenario file" in err


def test_overrides_are_validated_too(cli, write_scenario) -> None:
    path = write_scenario(SMALL)
    code, _, err = cli("validate", path, "--set", "link.rate=fast")
    assert code == 1
    # Issue 9: an error caused by an override names the `--set`, not the file's line.
    assert "error: --set link.rate=fast: " in err


def test_filled_prints_the_defaults(cli, write_scenario) -> None:
    path = write_scenario(SMALL)
    code, out, _ = cli("validate", "--filled", path, "--set", "link.rate=24Mbps")
    assert code == 0
    assert 'rate = "24Mbps"' in out
    assert "min_rto" in out  # a default that SMALL does not write
