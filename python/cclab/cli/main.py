"""Entry point of the `cclab` command: builds the parser from the subcommand modules and turns
errors into one-line messages and exit codes.

Adding a subcommand: write a module with `NAME`, `HELP`, `configure(parser)` and
`execute(args) -> int` (see `validate_command.py`), and add its import path to `COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Protocol

from cclab import __version__
from cclab.cli.common import (
    EXIT_BROKEN_PIPE,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    CommandError,
    SuggestingParser,
    print_error,
    scenario_error_text,
)
from cclab.controller import CONTROLLERS_ENV, load_controllers
from cclab.errors import ScenarioError, SimulationError

#: The subcommand modules, in the order `cclab --help` lists them.
COMMANDS: list[str] = [
    "cclab.cli.run_command",
    "cclab.cli.compare_command",
    "cclab.cli.validate_command",
    "cclab.cli.schemes_command",
    "cclab.cli.experiment_command",
    "cclab.cli.report_command",
    "cclab.cli.runs_command",
    "cclab.cli.import_command",
    "cclab.cli.reproduce_command",
]


class Command(Protocol):
    """What a subcommand module provides."""

    NAME: str
    HELP: str

    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def execute(self, args: argparse.Namespace) -> int: ...


def build_parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(
        prog="cclab",
        description="cclab: scenarios, simulation and analysis for congestion-control research",
    )
    parser.add_argument("--version", action="version", version=f"cclab {__version__}")
    subcommands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for module_name in COMMANDS:
        command: Command = importlib.import_module(module_name)  # type: ignore[assignment]
        sub = subcommands.add_parser(command.NAME, help=command.HELP, description=command.HELP)
        command.configure(sub)
        sub.set_defaults(execute=command.execute)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        # Python controllers named by $CCLAB_CONTROLLERS register themselves as they import.
        load_controllers(os.environ.get(CONTROLLERS_ENV, ""))
        code: int = args.execute(args)
        # Written out here, so that a reader gone early is caught below, not at exit.
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # `cclab runs --csv | head`: the reader has what it wanted. Quietly, like any filter
        # killed by SIGPIPE; stdout goes to devnull so the interpreter's last flush is silent.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except ScenarioError as e:
        for error in e.errors:
            print_error(scenario_error_text(error, getattr(args, "overrides", [])))
        return EXIT_ERROR
    except (SimulationError, CommandError) as e:
        print_error(str(e))
        return EXIT_ERROR
    except OSError as e:
        print_error(f"{e.strerror or e}: {e.filename}" if e.filename else str(e))
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
