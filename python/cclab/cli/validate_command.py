"""`cclab validate SCENARIO...`: check scenario files and report every problem."""

from __future__ import annotations

import argparse
from pathlib import Path

import cclab
from cclab.cli.common import add_set_argument, overrides_of, print_error, scenario_error_text
from cclab.engines import add_engine_argument

NAME = "validate"
HELP = "check scenario files; print OK or every error (exit status 1 if any is invalid)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenarios", nargs="+", type=Path, metavar="SCENARIO")
    add_set_argument(parser)
    parser.add_argument(
        "--filled",
        action="store_true",
        help="also print each scenario with every default filled in",
    )
    add_engine_argument(parser)


def execute(args: argparse.Namespace) -> int:
    overrides = overrides_of(args)
    invalid = 0
    for path in args.scenarios:
        try:
            filled = cclab.validate(path, engine=args.engine, **overrides)
        except cclab.ScenarioError as e:
            invalid += 1
            for error in e.errors:
                print_error(scenario_error_text(error, args.overrides))
            continue
        print(f"{path}: OK")
        if args.filled:
            print(filled)
    return 1 if invalid else 0
