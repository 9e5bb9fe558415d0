"""`cclab report RUN_OR_EXPERIMENT`: the self-contained HTML report (and figure files)."""

from __future__ import annotations

import argparse
import webbrowser
from pathlib import Path

from cclab.archive_lookup import LATEST, ArchiveLookupError, resolve
from cclab.cli.common import CommandError, make_console
from cclab.report import REPORT_FILE, NotARunError, write_report

NAME = "report"
HELP = "write the HTML report of a run or an experiment (works offline, one file)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="RUN_OR_EXPERIMENT",
        help=f"a run or experiment directory, its name in the archive, or `{LATEST}`",
    )
    parser.add_argument(
        "--out", type=Path, metavar="FILE", help=f"where to write it (default: DIR/{REPORT_FILE})"
    )
    parser.add_argument(
        "--figures",
        type=Path,
        metavar="DIR",
        help="also write every figure as DIR/<name>.png and DIR/<name>.svg",
    )
    parser.add_argument("--open", action="store_true", help="open the report in a browser")


def execute(args: argparse.Namespace) -> int:
    try:
        directory = resolve(args.target)
        path = write_report(directory, out=args.out, figures_dir=args.figures)
    except (ArchiveLookupError, NotARunError) as e:
        raise CommandError(str(e)) from None
    console = make_console()
    if args.figures is not None:
        console.print(f"figures: {args.figures}/*.png, *.svg", highlight=False, soft_wrap=True)
    console.print(f"report: {path}", highlight=False, soft_wrap=True)
    if args.open:
        webbrowser.open(path.resolve().as_uri())
    return 0
