"""The fidelity suite's full form: the simulator against Linux TCP in the emulator over every
shipped scenario and the issue's mixes (`cclab fidelity`, python/cclab/fidelity.py), printed as
one table with each target's verdict. The figures in FIDELITY.md come from this script.

Run (as root):  .venv/bin/python benches/fidelity.py [--runs N] [--duration D] [--out DIR]
(also part of `make bench`; it says "skipped" without root or /dev/net/tun).

Targets (issue 15): replication error (the Pantheon's emulation score, emulator = reference)
≤ 3 % for Cubic and BBR in every scheme test; each scheme's share of a mix ≤ 5 % off the
kernel's (|sim - emu| / emu); on Copa's fairness test, the median Jain index of cclab's BBR
within 0.05 of kernel BBR's. The emulator runs in real time, one run at a time: the full form
is 80 runs, 31 of them on the emulator (20-30 s each), about 16 minutes (`--duration 10s` caps
every scenario whose flow schedule fits, for a shorter look). The load average is printed: the
emulator's timing error grows on a busy machine, and the table's `late_p99_ms` says by how much.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from cclab.cli.main import main


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs per scenario, scheme, engine")
    parser.add_argument("--duration", help="cap every scenario at this duration (e.g. 10s)")
    parser.add_argument("--out", type=Path, help="fidelity directory (default: a new temp dir)")
    parser.add_argument("--quick", action="store_true", help="the quick form instead")
    return parser.parse_args()


def run() -> int:
    args = parse()
    if os.geteuid() != 0 or not Path("/dev/net/tun").exists():
        print("fidelity: skipped (needs root and /dev/net/tun)")
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="cclab-fidelity-")) / "suite"
    argv = ["fidelity", "--runs", str(args.runs), "--out", str(out)]
    if args.duration:
        argv += ["--duration", args.duration]
    if args.quick:
        argv.append("--quick")
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    code = main(argv)
    wall = time.perf_counter() - t0
    print(
        f"fidelity: {'quick' if args.quick else 'full'} form, {args.runs} run(s) each, "
        f"{wall / 60:.1f} min wall, load average {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end"
    )
    return code


if __name__ == "__main__":
    sys.exit(run())
