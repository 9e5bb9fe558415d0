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
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from cclab import __version__, _core
from cclab._startup import quiet_end, quiet_start_done
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
    "cclab.cli.fidelity_command",
    "cclab.cli.validate_command",
    "cclab.cli.schemes_command",
    "cclab.cli.experiment_command",
    "cclab.cli.report_command",
    "cclab.cli.runs_command",
    "cclab.cli.import_command",
    "cclab.cli.reproduce_command",
    "cclab.cli.sweep_command",
    "cclab.cli.calibrate_command",
    "cclab.cli.presets_command",
    "cclab.cli.model_command",
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
        if command.NAME in MEMORY_COMMANDS:
            sub.add_argument(
                "--max-memory",
                metavar="SIZE",
                type=_memory_size,
                help="refuse a run whose estimated memory exceeds SIZE (e.g. 4GB), and stop one "
                "that grows past it (default: what the machine has available; env "
                f"{MAX_MEMORY_ENV})",
            )
        sub.set_defaults(execute=command.execute)
    return parser


#: The commands that simulate (or validate what they would simulate) and so take --max-memory.
MEMORY_COMMANDS = {"run", "compare", "validate", "experiment", "reproduce"}
#: Where --max-memory goes: the core's resource model reads it (workers inherit it).
MAX_MEMORY_ENV: str = _core.MAX_MEMORY_ENV


def _memory_size(text: str) -> str:
    try:
        _core.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "max_memory", None):
        os.environ[MAX_MEMORY_ENV] = args.max_memory
    # Started: from here Ctrl-C is a KeyboardInterrupt that the commands clean up after.
    quiet_start_done()
    # A warning (e.g. an archive index that cannot be written) is one line, as errors are.
    warnings.formatwarning = lambda message, *_args, **_kwargs: f"warning: {message}\n"
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
    except FileExistsError as e:
        if e.filename and os.path.lexists(e.filename) and not Path(e.filename).is_dir():
            # mkdir's "File exists" for /etc/passwd when asked for /etc/passwd/x.
            print_error(f"{e.filename} is a file, not a directory: nothing can be written under it")
        else:
            print_error(f"{e.strerror or e}: {e.filename}" if e.filename else str(e))
        return EXIT_ERROR
    except OSError as e:
        print_error(f"{e.strerror or e}: {e.filename}" if e.filename else str(e))
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        quiet_end()
