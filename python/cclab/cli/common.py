"""What the subcommands share: exit codes, error output, `--set key=value` overrides."""

from __future__ import annotations

import argparse
import sys
import tomllib
from typing import Any

#: Exit codes: bad input or a failed run, and Ctrl-C (128 + SIGINT) as shells expect.
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


class CommandError(Exception):
    """A problem with the command line itself, printed as `error: <message>`."""


def print_error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


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
