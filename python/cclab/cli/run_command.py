"""`cclab run SCENARIO`: simulate, print the summary table, write the run directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cclab
from cclab.archive import RUNS_ENV, default_run_dir
from cclab.cli.common import (
    CommandError,
    add_set_argument,
    add_trace_arguments,
    make_console,
    overrides_of,
    trace_of,
)
from cclab.cli.progress_bar import ProgressBar
from cclab.cli.summary_table import summary_table
from cclab.engines import EMU, add_engine_argument, add_tolerance_argument, engine_named

NAME = "run"
HELP = "simulate a scenario, print a per-flow summary and write a run directory"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", type=Path, metavar="SCENARIO")
    parser.add_argument("--seed", type=int, help="the random seed (default: the scenario's)")
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help=f"run directory to create (default: ${RUNS_ENV} or ./cclab-runs, then "
        "<time>-<scenario name>-s<seed>)",
    )
    parser.add_argument(
        "--log-packets", action="store_true", help="keep every packet's record (packets.parquet)"
    )
    add_trace_arguments(parser)
    parser.add_argument(
        "--pcap",
        type=Path,
        metavar="FILE",
        help="also write a pcapng capture at the senders (Wireshark, tshark, tcptrace): the "
        "simulator's packets as synthetic IP/TCP headers with their sequence and acknowledgment "
        "numbers (implies --log-packets), the emulator's real packets crossing its link",
    )
    add_tolerance_argument(parser)
    add_set_argument(parser)
    add_engine_argument(parser)


def execute(args: argparse.Namespace) -> int:
    if args.out is not None and args.out.exists():
        raise CommandError(f"{args.out} already exists; give --out a new directory")
    if args.pcap is not None and not args.pcap.resolve().parent.is_dir():
        # Before the run, which may be long: the capture is written during or after it.
        raise CommandError(f"cannot write the capture {args.pcap}: its folder does not exist")
    if args.tolerance_us is not None and not engine_named(args.engine).real_time:
        raise CommandError(
            f"--tolerance-us is the emulator's (--engine {EMU.name}); the {args.engine} engine "
            "delivers every packet at its model time"
        )
    trace = trace_of(args)
    stderr = make_console(stderr=True)
    stderr.print(f"running {args.scenario}", highlight=False)
    with ProgressBar(stderr) as progress:
        try:
            result = run_scenario(args, trace, progress)
        except OSError as e:  # the simulator's capture, written after the run
            raise CommandError(str(e)) from None
    out = args.out or default_run_dir(result.name, result.seed)
    result.save(out, command=["cclab", *sys.argv[1:]])
    stdout = make_console()
    stdout.print(summary_table(result))
    stdout.print(f"run directory: {out}", highlight=False, soft_wrap=True)
    if args.pcap is not None:
        written = result.stats["pcap_packets"]
        stdout.print(f"capture: {args.pcap} ({written} packets)", highlight=False, soft_wrap=True)
    return 0


def run_scenario(
    args: argparse.Namespace, trace: bool | str, progress: ProgressBar
) -> cclab.RunResult:
    """`cclab.run` as the flags ask, `--pcap` included."""
    return cclab.run(
        args.scenario,
        seed=args.seed,
        log_packets=args.log_packets,
        trace=trace,
        progress=progress,
        engine=args.engine,
        pcap=args.pcap,
        tolerance_us=args.tolerance_us,
        **overrides_of(args),
    )
