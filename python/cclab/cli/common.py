"""What the subcommands share: exit codes, error output, `--set key=value` overrides."""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
import tomllib
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from cclab._core import OVERRIDES_FILE
from cclab.errors import ErrorLocation
from cclab.sender_trace import DEFAULT_INTERVAL_NS, EVERY_ACK, interval_ns

#: Exit codes: bad input or a failed run, Ctrl-C (128 + SIGINT) as shells expect, and a reader
#: that closed the pipe early (128 + SIGPIPE, what `yes | head` leaves in `PIPESTATUS`).
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

#: The width output gets when it is not a terminal: wide enough that no table is cut to "…"
#: and no line is wrapped, so a log or a pipe gets each line whole.
UNWRAPPED_WIDTH = 100_000


class CommandError(Exception):
    """A problem with the command line itself, printed as `error: <message>`."""


def print_error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # Left to `main`, which ends quietly with EXIT_BROKEN_PIPE (rich's own default exits 1).
        raise BrokenPipeError


def make_console(*, stderr: bool = False) -> Console:
    """A console for a command's output: a terminal's full width, or, piped or logged, plain
    text in unwrapped lines (rich would otherwise wrap at 80 columns and cut table cells)."""
    console = _Console(stderr=stderr)
    if console.is_terminal:
        return console
    return _Console(stderr=stderr, width=UNWRAPPED_WIDTH, soft_wrap=True, no_color=True)


def scenario_error_text(error: ErrorLocation, overrides: Sequence[tuple[str, Any]]) -> str:
    """One scenario error as the command line shows it: an error the core put on an override
    names the `--set` that caused it, not the scenario file."""
    if error["file"] != OVERRIDES_FILE:
        return error["text"]
    for key, value in reversed(overrides):  # the last --set of a key is the one that counted
        if key == error["field"]:
            shown = value if isinstance(value, str) else json.dumps(value)
            return f"--set {key}={shown}: {error['message']}"
    if error["field"] == "seed":  # the command line's --seed reaches the core as an override
        return f"--seed: {error['message']}"
    return "--set" + error["text"].removeprefix(OVERRIDES_FILE)


class SuggestingParser(argparse.ArgumentParser):
    """argparse with a did-you-mean for a mistyped subcommand or choice."""

    def error(self, message: str) -> Any:
        found = re.search(r"invalid choice: '?([^' ]*)'? \(choose from (.*)\)", message)
        if found:
            choices = [c.strip(" '") for c in found.group(2).split(",")]
            close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean '{close[0]}'?"
        super().error(message)


def add_jobs_argument(parser: argparse.ArgumentParser, default_help: str) -> None:
    """`--jobs N`, the one name for parallel runs on local cores (experiment and reproduce)."""
    parser.add_argument(
        "--jobs",
        type=_positive_int,
        metavar="N",
        help=f"parallel runs on local cores ({default_help})",
    )


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def parse_assignment(text: str) -> tuple[str, Any]:
    """`key=value` → (key, value). The value is read as a TOML value (`3`, `0.01`, `true`,
    `"x"`, `[1, 2]`); anything that is not one is taken as a string, so `link.rate=24Mbps`
    works without quotes."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(
            f"expected KEY=VALUE (e.g. link.rate=24Mbps), got {text!r}"
        )
    try:
        return key, tomllib.loads(f"value = {value}")["value"]
    except tomllib.TOMLDecodeError:
        return key, value.strip()


def add_set_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="overrides",
        metavar="KEY=VALUE",
        type=parse_assignment,
        action="append",
        default=[],
        help="override a scenario key; nested keys with dots (link.rate=24Mbps); repeatable",
    )


def overrides_of(args: argparse.Namespace) -> dict[str, Any]:
    return dict(args.overrides)


def add_trace_arguments(parser: argparse.ArgumentParser, what: str = "the run") -> None:
    """`--trace` and `--trace-interval`: the sender trace (trace.parquet)."""
    parser.add_argument(
        "--trace",
        action="store_true",
        help=f"trace every flow's sender in {what} (cwnd, pacing rate, RTTs, the controller's "
        "mode and variables; kernel flows: TCP_INFO) into trace.parquet",
    )
    parser.add_argument(
        "--trace-interval",
        metavar="DUR",
        help=f"with --trace: at most one sample per flow per DUR (default "
        f"{DEFAULT_INTERVAL_NS / 1e6:g}ms), or '{EVERY_ACK}' for every ACK",
    )


def trace_of(args: argparse.Namespace) -> bool | str:
    """What `--trace`/`--trace-interval` ask of `cclab.run`'s `trace`; the interval is checked
    here so that a bad one is an error before anything runs."""
    if args.trace_interval is not None and not args.trace:
        raise CommandError("--trace-interval needs --trace")
    if not args.trace:
        return False
    if args.trace_interval is None:
        return True
    try:
        interval_ns(args.trace_interval)
    except ValueError as e:
        raise CommandError(f"--trace-interval: {e}") from None
    return str(args.trace_interval)
