"""`cclab import mahimahi LOG` and `cclab import pantheon DIR`: incumbents' logs → cclab runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cclab.cli.common import CommandError, make_console
from cclab.cli.experiment_command import study_summary_table
from cclab.importers import LogFormatError, import_mahimahi, import_pantheon

NAME = "import"
HELP = "turn a mahimahi link log or a Pantheon data directory into cclab runs"


def configure(parser: argparse.ArgumentParser) -> None:
    formats = parser.add_subparsers(title="formats", metavar="FORMAT", required=True)
    mahimahi = formats.add_parser(
        "mahimahi",
        help="an mm-link log (--uplink-log / --downlink-log) → one run",
        description="Import an mm-link log as one run of one flow (engine import:mahimahi).",
    )
    mahimahi.add_argument("log", type=Path, metavar="LINK_LOG")
    mahimahi.add_argument(
        "--scheme", default="unknown", help="what sent the traffic (the log does not say)"
    )
    mahimahi.add_argument("--name", help="the run's name (default: the log's file name)")
    mahimahi.set_defaults(format="mahimahi")
    pantheon = formats.add_parser(
        "pantheon",
        help="a Pantheon data directory (<cc>_datalink_run<N>.log files) → one experiment",
        description="Import every datalink log of a Pantheon data directory as one experiment "
        "(engine import:pantheon), checked against the Pantheon's own stats logs when present.",
    )
    pantheon.add_argument("directory", type=Path, metavar="DIR")
    pantheon.set_defaults(format="pantheon")
    for sub in (mahimahi, pantheon):
        sub.add_argument(
            "--out", type=Path, metavar="DIR", help="directory to create (default: in the archive)"
        )
        sub.add_argument(
            "--no-packets",
            action="store_true",
            help="do not keep the per-packet records (packets.parquet)",
        )


def execute(args: argparse.Namespace) -> int:
    if args.out is not None and args.out.exists():
        raise CommandError(f"{args.out} already exists; give --out a new directory")
    command = ["cclab", *sys.argv[1:]]
    try:
        if args.format == "mahimahi":
            path = import_mahimahi(
                args.log,
                out=args.out,
                scheme=args.scheme,
                name=args.name,
                keep_packets=not args.no_packets,
                command=command,
            )
        else:
            path = import_pantheon(
                args.directory, out=args.out, keep_packets=not args.no_packets, command=command
            )
    except LogFormatError as e:
        raise CommandError(str(e)) from None
    kind = "run" if args.format == "mahimahi" else "experiment"
    stdout = make_console()
    # The table `cclab run` and `cclab experiment` end with, so an import is checked at a glance.
    stdout.print(study_summary_table(path))
    stdout.print(f"imported {kind}: {path}", highlight=False, soft_wrap=True)
    return 0
