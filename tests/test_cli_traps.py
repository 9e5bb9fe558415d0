"""The command line without traps: `--set` into lists, errors that name their cause, output
that survives a pipe, one name for parallelism, Ctrl-C that stops an experiment at once, and
experiments started from scripts that lack a `__main__` guard."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from cclab.cli.common import UNWRAPPED_WIDTH, make_console
from conftest import SMALL, cclab_process

TWO_FLOWS = SMALL + '\n    [[flows]]\n    scheme = "newreno"\n'


def test_set_changes_a_flows_scheme_in_either_spelling(cli, write_scenario) -> None:
    path = write_scenario(TWO_FLOWS)
    for key in ("flows[1].scheme", "flows.1.scheme"):
        code, out, err = cli("validate", path, "--set", f"{key}=bbr", "--filled")
        assert (code, err) == (0, ""), err
        assert out.count('scheme = "bbr"') == 1 and 'scheme = "cubic"' in out


def test_set_with_an_index_out_of_range_names_the_override(cli, write_scenario) -> None:
    code, _, err = cli("validate", write_scenario(TWO_FLOWS), "--set", "flows[2].scheme=bbr")
    assert code == 1
    assert "error: --set flows[2].scheme=bbr: `flows` has 2 entries (indices 0 to 1)" in err


def test_a_bad_scheme_from_set_names_the_override_and_suggests(cli, write_scenario) -> None:
    path = write_scenario(SMALL)
    code, _, err = cli("validate", path, "--set", "flows[0].scheme=vivace")
    assert code == 1
    assert err.startswith("error: --set flows[0].scheme=vivace: unknown scheme `vivace`")
    assert "did you mean `pcc-vivace`?" in err and str(path) not in err


def test_kernel_scheme_in_the_simulator_says_to_use_the_emulator(cli, write_scenario) -> None:
    path = write_scenario(SMALL.replace('scheme = "cubic"', 'scheme = "kernel:cubic"'))
    code, _, err = cli("validate", path)
    assert code == 1 and "--engine emu" in err


def test_mistyped_subcommand_message(capsys) -> None:
    from cclab.cli.main import main

    with contextlib.suppress(SystemExit):
        main(["expermient"])
    assert "did you mean 'experiment'?" in capsys.readouterr().err


def test_piped_output_is_neither_wrapped_nor_cut(write_scenario, tmp_path: Path) -> None:
    assert make_console().width == UNWRAPPED_WIDTH  # pytest captures stdout: not a terminal
    # Each "done" line of these schemes is longer than the 80 columns rich assumes off a
    # terminal; a log must still get each whole on one line.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    args = ["experiment", write_scenario(SMALL), "--schemes", "pcc-allegro,pcc-vivace"]
    done = subprocess.run(
        [sys.executable, "-m", "cclab", *map(str, args), "--runs", "1", "--out", tmp_path / "x"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    finished = [line for line in done.stderr.splitlines() if line.startswith("done")]
    assert len(finished) == 2 and all(line.endswith(" s)") for line in finished), done.stderr
    assert max(map(len, finished)) > 80
    assert "…" not in done.stdout + done.stderr and "\x1b[" not in done.stdout


def test_a_reader_that_closes_the_pipe_early_ends_it_quietly() -> None:
    child = cclab_process("schemes")
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # as `| head` does once it has its lines
    stderr = child.stderr.read()
    assert child.wait(timeout=60) == 141  # 128 + SIGPIPE, as a shell reports `yes | head`
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr


def test_reproduce_takes_jobs() -> None:
    from cclab.cli.main import build_parser

    help_text = build_parser()._subparsers._group_actions[0].choices["reproduce"].format_help()
    assert "--jobs" in help_text and "--workers" not in help_text


def test_ctrl_c_stops_an_experiment_at_once(write_scenario, tmp_path: Path) -> None:
    # Runs long enough (minutes each) that only an interrupted pool ends in seconds.
    long = SMALL.replace('"3s"', '"300s"').replace('"12Mbps"', '"2Gbps"')
    args = ["experiment", write_scenario(long), "--schemes", "cubic,newreno", "--runs", "2"]
    child = subprocess.Popen(
        [sys.executable, "-m", "cclab", *map(str, args), "--jobs", "2", "--out", tmp_path / "x"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    time.sleep(4)  # the workers are started and running
    assert child.poll() is None
    sent = time.monotonic()
    os.killpg(child.pid, signal.SIGINT)  # what Ctrl-C sends: the whole group
    code = child.wait(timeout=60)
    took = time.monotonic() - sent
    child.communicate()
    assert code == 130
    assert took < 3, f"took {took:.1f} s to stop"


SCRIPT = """\
from cclab.experiment import run_experiment
print("made", run_experiment({scenario!r}, ["cubic", "newreno"], runs=1, jobs=2, out={out!r}))
"""


def test_run_experiment_from_a_script_without_a_main_guard(write_scenario, tmp_path) -> None:
    scenario = str(write_scenario(SMALL))
    script = tmp_path / "unguarded.py"
    script.write_text(SCRIPT.format(scenario=scenario, out=str(tmp_path / "a")))
    done = subprocess.run(
        [sys.executable, script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout.count("made") == 1, done.stderr
    # The same text read from standard input.
    text = SCRIPT.format(scenario=scenario, out=str(tmp_path / "b"))
    done = subprocess.run(
        [sys.executable, "-"],
        input=textwrap.dedent(text),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.count("made") == 1, done.stderr


def test_keyword_overrides_reach_into_lists() -> None:
    import cclab
    from conftest import SMALL_DICT

    filled = cclab.validate(SMALL_DICT, flows__0__scheme="bbr")
    assert 'scheme = "bbr"' in filled
    try:
        cclab.validate(SMALL_DICT, flows__1__scheme="bbr")
    except cclab.ScenarioError as e:
        assert "`flows` has 1 entry (index 0); index 1 is out of range" in str(e)
    else:
        raise AssertionError("an index past the end must be an error")
