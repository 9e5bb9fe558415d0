"""`cclab schemes`: the congestion-control schemes a scenario may name, with their options."""

from __future__ import annotations

import argparse

from rich.table import Table

from cclab import _core
from cclab.cli.common import CommandError, make_console

NAME = "schemes"
HELP = "list the congestion-control schemes and their options"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="SCHEME", help="show only these schemes")


def execute(args: argparse.Namespace) -> int:
    schemes = _core.schemes()
    known = {s["name"] for s in schemes}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        raise CommandError(
            f"unknown scheme {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    console = make_console()
    for scheme in schemes:
        if args.names and scheme["name"] not in args.names:
            continue
        console.print(f"[bold]{scheme['name']}[/bold]  {scheme['summary']}", highlight=False)
        if not scheme["options"]:
            console.print("  (no options)\n")
            continue
        table = Table(box=None, padding=(0, 2), show_header=True, header_style="dim")
        table.add_column("  option", no_wrap=True)
        table.add_column("default", no_wrap=True)
        table.add_column("accepts / meaning")
        for option in scheme["options"]:
            default = option["default"] if option["default"] is not None else "-"
            table.add_row(f"  {option['name']}", default, f"{option['accepts']}: {option['help']}")
        console.print(table)
        console.print()
    return 0
