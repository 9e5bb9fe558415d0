"""`cclab presets`: the named links a scenario's `[link] preset = "NAME"` may use."""

from __future__ import annotations

import argparse

from cclab import _core
from cclab.cli.common import make_console

NAME = "presets"
HELP = "list the named links ([link] preset = NAME): the Pantheon's calibrated paths and more"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keys", action="store_true", help="also print each preset's keys")


def execute(args: argparse.Namespace) -> int:
    console = make_console()
    for preset in _core.presets():
        console.print(f"[bold]{preset['name']}[/bold]  {preset['summary']}", soft_wrap=True)
        if args.keys:
            for key, value in preset["keys"]:
                console.print(f"    {key} = {value}", highlight=False, markup=False)
    console.print(
        f"\nkeys written beside `preset` override it; traces are read from "
        f"{_core.preset_trace_dir()}",
        highlight=False,
        soft_wrap=True,
    )
    return 0
