"""The emulator's performance and timing accuracy, on this machine, with per-packet records on.

Run (as root):  .venv/bin/python benches/emu_bench.py [--seconds S] [--runs N] [--only NAME]
(also part of `make bench`; it says "skipped" without root or /dev/net/tun).

Targets (issues 4 and 14, DESIGN.md "Performance budgets"), each case run N times (default 3),
figures as min / median / max:
- 10 Gbit/s x 10 ms, one kernel:cubic flow (also 4 and 16): >= 5 Gbit/s, delay error p99 < 0.5 ms;
- 1 Gbit/s x 10 ms: >= 950 Mbit/s goodput, emulator-added RTT <= 0.2 ms, zero unexplained drops
  (packets sent = delivered + recorded drops + still in flight);
- 100 Mbit/s x 10 ms: the emulator's process <= 20 % of a CPU (issue 14; its path thread's
  share printed beside it), delay error p99 < 0.1 ms.

mahimahi side by side: when mm-delay and mm-link are found (on PATH, or where
benches/mahimahi_build.sh installs them; --mahimahi DIR names a prefix, --no-mahimahi skips it),
every run of a case is followed by the same flow through `mm-delay 10 mm-link TRACE TRACE` (a
constant-rate trace at the case's rate, 1 BDP droptail queues; benches/mahimahi_flow.py), runs
alternating. Its lines: goodput (same definition), the sender's median srtt and min RTT, and
mm_cpu_pct: the CPU of every mm-delay/mm-link process over the shell's life (% of one CPU).
mahimahi runs at the real-time priority cclab-emu gives its path thread and endpoints
(--mahimahi-rt, default 10; 0: ordinary scheduling, as it is usually run): on a busy machine
the comparison is otherwise one of priorities.

What is printed, per case:
- goodput: application bytes the receiver read / time between its first and last read;
  throughput: the metrics' wire throughput (IP bytes, retransmissions included);
- RTT: Linux's median smoothed RTT (TCP_INFO every 10 ms) against the model's median RTT, i.e.
  the nominal 20 ms plus the median time delivered packets spent in the bottleneck queue; the
  difference is what the emulator itself adds (TUN queues, late writes, host stacks). Also the
  kernel's minimum RTT against the nominal 20 ms;
- delay error: arrival minus model arrival of every packet the emulator wrote, p50/p99/max,
  data and ACK direction; and what it cannot see, the p99 of how long kernel segments waited in
  the sending host before the emulator read them (from their TCP timestamps, to the ms);
- accounting: sent, delivered, recorded drops by cause, in flight at the end, and the drops the
  kernels made before the emulator could see a packet (TUN counters);
- CPU: the path thread's CPU time over the run (% of one CPU) and the whole process's, and the
  forwarding ceiling the emulator measured at start-up;
- the machine's load average: this VM is shared, and a busy neighbour shows up as lateness.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def scenario(rate: str, seconds: int, flows: int) -> dict:
    return {
        "name": f"emu-bench-{rate}",
        "duration": f"{seconds}s",
        "link": {"rate": rate, "delay": "10ms", "queue": "1bdp"},
        "flows": [{"scheme": "kernel:cubic"} for _ in range(flows)],
    }


def one_run(rate_mbps: float, seconds: int, flows: int) -> dict[str, float]:
    """One run's figures: goodput (all flows), RTT added, delay error, CPU, accounting."""
    import cclab

    spec = scenario(f"{rate_mbps:g}Mbps", seconds, flows)
    result = cclab.run(spec, engine="emu", log_packets=True)
    st = result.stats
    packets = result.packet_columns
    data = packets["kind"] == 0
    delivered = data & (packets["fate"] == 0)
    sojourn_ms = (packets["dequeued_ns"][delivered] - packets["enqueued_ns"][delivered]) / 1e6
    model_rtt = 20.0 + float(np.median(sojourn_ms))
    srtts = [x for x in st["tcp_srtt_median_ms"] if x is not None]
    explained = st["data_delivered"] + st["data_dropped"] + st["data_in_flight_end"]
    return {
        "goodput_mbps": float(sum(x or 0.0 for x in st["app_goodput_mbps"])),
        "rtt_added_ms": float(np.median(srtts)) - model_rtt if srtts else math.nan,
        "min_rtt_ms": float(min(x for x in st["tcp_min_rtt_ms"] if x is not None)),
        "data_late_p50_us": st["data_late_p50_us"],
        "data_late_p99_us": st["data_late_p99_us"],
        "ack_late_p99_us": st["ack_late_p99_us"],
        # What the delay error cannot see: the wait in the sending host before the read.
        "input_wait_p99_ms": st["data_input_wait_p99_ms"],
        "path_cpu_pct": st["emu_path_cpu_pct"],
        "process_cpu_pct": st["emu_process_cpu_pct"],
        "capacity_mbps": st["emu_capacity_mbps"],
        "conserved": float(st["data_sent"] == explained),
        "unseen_drops": float(st["emu_unseen_drops"]),
    }


def print_figures(results: list[dict[str, float]]) -> None:
    for key in results[0]:
        v = sorted(r[key] for r in results)
        lo, mid, hi = v[0], v[len(v) // 2], v[-1]
        print(f"   {key:18s} min {lo:10.3f}  median {mid:10.3f}  max {hi:10.3f}")


def report(
    name: str, rate_mbps: float, flows: int, seconds: int, runs: int, mm: tuple | None, mm_rt: int
) -> None:
    """`mm`: None, or (mahimahi_flow module, its prepared bin folder, scratch folder)."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    results, mm_results = [], []
    for _ in range(runs):  # alternated, so that both tools see the same neighbours
        results.append(one_run(rate_mbps, seconds, flows))
        if mm is not None:
            flow, bindir, scratch = mm
            mm_results.append(
                flow.one_run(bindir, scratch, rate_mbps, seconds, rt=mm_rt, flows=flows)
            )
    wall = time.perf_counter() - t0
    print(
        f"== {name}: {flows} x kernel:cubic, {rate_mbps:g} Mbit/s x 10 ms, 1 BDP queue, "
        f"{seconds} s, {runs} runs"
    )
    after = os.getloadavg()[0]
    print(f"   load average before: {load:.2f}, after: {after:.2f} (2 CPUs); wall {wall:.1f} s")
    print("   -- cclab-emu")
    print_figures(results)
    if mm_results:
        how = f"SCHED_FIFO {mm_rt}" if mm_rt > 0 else "ordinary scheduling"
        print(f"   -- mahimahi (mm-delay 10 mm-link, {how})")
        print_figures(mm_results)


#: name -> (what, link rate in Mbit/s, flows)
CASES = {
    "10g": ("10 Gbit/s, one flow", 10000.0, 1),
    "10g-4": ("10 Gbit/s, 4 flows", 10000.0, 4),
    "10g-16": ("10 Gbit/s, 16 flows", 10000.0, 16),
    "1g": ("1 Gbit/s", 1000.0, 1),
    "100m": ("100 Mbit/s", 100.0, 1),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=sorted(CASES))
    parser.add_argument("--mahimahi", type=Path, help="mahimahi_build.sh's --prefix")
    parser.add_argument("--no-mahimahi", action="store_true")
    parser.add_argument(
        "--mahimahi-rt",
        type=int,
        default=10,
        help="SCHED_FIFO priority of mahimahi's processes, as cclab-emu's path thread "
        "(default 10); 0: ordinary scheduling, as mahimahi is usually run",
    )
    args = parser.parse_args()
    if os.geteuid() != 0 or not Path("/dev/net/tun").exists():
        print("emu_bench: skipped (needs root and /dev/net/tun)")
        return
    sys.path.insert(0, str(Path(__file__).parent))
    import mahimahi_flow

    bindir = None if args.no_mahimahi else mahimahi_flow.find_mahimahi(args.mahimahi)
    if args.mahimahi and not args.no_mahimahi and bindir != args.mahimahi.resolve() / "bin":
        parser.error(f"--mahimahi {args.mahimahi}: no bin/mm-delay and bin/mm-link there")
    if bindir is None:
        print("emu_bench: mahimahi not found (benches/mahimahi_build.sh builds it): not run")
    with tempfile.TemporaryDirectory(prefix="emu-bench-mm-") as scratch:
        mm = None
        if bindir is not None:
            print(f"emu_bench: mahimahi from {bindir}, runs alternated with cclab-emu's")
            mm = (mahimahi_flow, mahimahi_flow.prepare(bindir, Path(scratch)), Path(scratch))
        with mahimahi_flow.host_settings() if mm else contextlib.nullcontext():
            for key, (name, rate, flows) in CASES.items():
                if args.only in (None, key):
                    report(name, rate, flows, args.seconds, args.runs, mm, args.mahimahi_rt)


if __name__ == "__main__":
    main()
