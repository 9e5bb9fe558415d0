"""The resource model and the input checks as the command line shows them (issue 16): a run
that would not fit in memory, a physically impossible range, or a trace `run` could not read is
refused by `validate` and `run` alike, naming the field, the estimate or FILE:LINE."""

from __future__ import annotations

import pytest

FIXED_HUGE = """\
    name = "huge"
    duration = "5s"
    [link]
    rate = "12Mbps"
    delay = "20ms"
    [[flows]]
    scheme = "fixed"
    cwnd = 1000000000
"""

SMALL = """\
    name = "small"
    duration = "30s"
    [link]
    rate = "12Mbps"
    delay = "20ms"
    [[flows]]
    scheme = "cubic"
"""


@pytest.fixture(autouse=True)
def _no_memory_limit(monkeypatch):
    # `--max-memory` sets the variable in this process; monkeypatch restores it afterwards.
    monkeypatch.setenv("CCLAB_MAX_MEMORY", "")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_window_that_cannot_fit_is_refused_naming_its_field(write_scenario, cli, command):
    code, out, err = cli(command, write_scenario(FIXED_HUGE))
    assert code == (1 if command == "validate" else 2)
    text = out + err
    # 10^9 packets of ~160 bytes of state each.
    assert "field `flows[0].cwnd`: this run would need about 160.0 GB of memory" in text
    assert "a window of 1000000000 packets" in text


def test_max_memory_lowers_the_limit_and_names_itself(write_scenario, cli):
    path = write_scenario(SMALL)
    assert cli("validate", path)[0] == 0
    code, out, err = cli("validate", path, "--max-memory", "10kB")
    assert code == 1
    # 300 Jain buckets of (8 + 64) bytes, 22 kB, is the largest item; 60 bins of 176: 11 kB.
    assert "field `output.jain_bucket`: this run would need about 33 kB" in out + err
    assert "the limit set by --max-memory" in out + err


def test_a_bad_max_memory_is_a_usage_error(write_scenario, cli):
    with pytest.raises(SystemExit) as stop:
        cli("validate", write_scenario(SMALL), "--max-memory", "lots")
    assert stop.value.code == 2


def test_bins_shorter_than_a_packet_time_are_refused(write_scenario, cli):
    text = SMALL + '    [output]\n    bin = "100us"\n'
    code, out, err = cli("validate", write_scenario(text))
    assert code == 1
    # 1500 bytes at 12 Mbit/s take 1 ms.
    assert "field `output.bin`: 100us is shorter than one packet's transmission" in out + err
    assert "(1ms)" in out + err


def test_validate_reads_the_trace_as_run_would(write_scenario, cli, tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("5\n9\n3\n")
    text = f'[link]\ntrace = "{trace}"\n[[flows]]\nscheme = "cubic"\n'
    code, out, err = cli("validate", write_scenario(text))
    assert code == 1
    assert f"field `link.trace`: {trace}:3: timestamps must not decrease (3 after 9)" in out + err
