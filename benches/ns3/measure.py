"""Times cclab's simulator and ns-3 on the same dumbbell, side by side.

Run through benches/ns3_dumbbell.sh, which installs ns-3 and compiles dumbbell.cc first. Each
repetition runs ns-3 and then cclab for every scheme, so both engines meet the same machine load.
CPU seconds are the child process's user + system time (getrusage): the whole command, with
ns-3's topology setup and cclab's Python start, metrics and Parquet files. "core" is the
simulation loop alone: ns-3's CPU time in Simulator::Run, cclab's engine wall time (meta.json;
on a loaded machine wall time is an upper bound on the CPU time it stands for).

Both engines report the data packets that crossed the bottleneck and the drops there, so the
reader sees they did the same work; throughput is those packets as 1500-byte IP packets.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: cclab's scheme name → ns-3's TCP congestion-control type.
NS3_TCP = {"newreno": "TcpNewReno", "cubic": "TcpCubic"}

#: Bytes of one data packet at the IP layer in both engines: a 1448-byte segment and 52 bytes
#: of TCP (with timestamps) and IP headers.
IP_PACKET_BYTES = 1500


@dataclass
class Sample:
    wall: float
    cpu: float
    core: float
    events: int
    packets: int
    drops: int


def timed(cmd: list[str]) -> tuple[str, float, float]:
    """Runs `cmd`; its stdout, wall seconds and CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"measure: {' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return done.stdout, wall, cpu


def run_ns3(binary: str, scheme: str, duration: float, topology: str) -> Sample:
    cmd = [binary, f"--tcp={NS3_TCP[scheme]}", f"--duration={duration}", f"--topology={topology}"]
    out, wall, cpu = timed(cmd)
    figures = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return Sample(
        wall=wall,
        cpu=cpu,
        core=float(figures["run_cpu_secs"]),
        events=int(figures["events"]),
        # What the bottleneck's queue disc handed to the link.
        packets=int(figures["bottleneck_packets"]),
        drops=int(figures["bottleneck_drops"]),
    )


def run_cclab(cclab: str, scenario: str, scheme: str, duration: float, out: Path) -> Sample:
    cmd = [cclab, "run", scenario, "--out", str(out)]
    cmd += ["--set", f"flows.0.scheme={scheme}", "--set", f"duration={duration}s"]
    _, wall, cpu = timed(cmd)
    stats = json.loads((out / "meta.json").read_text())["stats"]
    return Sample(
        wall=wall,
        cpu=cpu,
        core=stats["wall_secs"],
        events=stats["events"],
        # Delivered to the receivers: what crossed the bottleneck less the last propagation
        # delay's worth still on the wire (ns-3 counts those; ~0.1% of a 10 s run).
        packets=stats["data_delivered"],
        drops=stats["data_dropped"],
    )


def median(samples: list[Sample], field: str) -> float:
    return statistics.median(getattr(s, field) for s in samples)


def row(engine: str, samples: list[Sample], duration: float) -> str:
    cpu = median(samples, "cpu")
    packets = median(samples, "packets")
    mbps = packets * IP_PACKET_BYTES * 8 / duration / 1e6
    return (
        f"  {engine:<6} {median(samples, 'wall'):>8.2f} {cpu:>8.2f} {median(samples, 'core'):>8.2f}"
        f" {duration / cpu:>9.3f} {median(samples, 'events') / 1e6:>8.2f}"
        f" {median(samples, 'events') / cpu / 1e6:>9.2f} {packets:>10.0f}"
        f" {median(samples, 'drops'):>7.0f} {mbps:>7.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns3", required=True, help="the compiled benches/ns3/dumbbell.cc")
    parser.add_argument("--cclab", required=True, help="the cclab command")
    parser.add_argument("--scenario", required=True, help="benches/ns3/dumbbell.toml")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--duration", type=float, default=10.0, help="simulated seconds")
    parser.add_argument("--schemes", default="newreno,cubic", help="comma-separated")
    parser.add_argument(
        "--topology",
        choices=["shared", "dumbbell"],
        default="shared",
        help="ns-3's hosts: all flows on the two routers (default), or a node per host",
    )
    args = parser.parse_args()
    schemes = args.schemes.split(",")
    for scheme in schemes:
        if scheme not in NS3_TCP:
            parser.error(f"--schemes: unknown scheme {scheme!r}; accepted: {', '.join(NS3_TCP)}")
    if args.reps < 1 or args.duration <= 0:
        parser.error("--reps must be at least 1 and --duration positive")

    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(
        f"{args.duration:g} simulated s, {args.reps} repetitions (medians), "
        f"ns-3 topology {args.topology}"
    )
    results: dict[str, dict[str, list[Sample]]] = {s: {"ns-3": [], "cclab": []} for s in schemes}
    with tempfile.TemporaryDirectory(prefix="cclab-ns3-bench-") as tmp:
        for rep in range(args.reps):
            for scheme in schemes:
                ns3 = run_ns3(args.ns3, scheme, args.duration, args.topology)
                out = Path(tmp) / f"{scheme}-{rep}"
                cc = run_cclab(args.cclab, args.scenario, scheme, args.duration, out)
                results[scheme]["ns-3"].append(ns3)
                results[scheme]["cclab"].append(cc)
                print(
                    f"  rep {rep + 1} {scheme}: ns-3 {ns3.cpu:.2f} CPU s, cclab {cc.cpu:.2f} CPU s",
                    flush=True,
                )

    header = (
        f"  {'engine':<6} {'wall s':>8} {'CPU s':>8} {'core s':>8} {'sim s/CPU':>9}"
        f" {'M events':>8} {'M ev/CPU':>9} {'packets':>10} {'drops':>7} {'Mbit/s':>7}"
    )
    for scheme in schemes:
        ns3, cc = results[scheme]["ns-3"], results[scheme]["cclab"]
        print(f"\n{scheme}")
        print(header)
        print(row("ns-3", ns3, args.duration))
        print(row("cclab", cc, args.duration))
        whole = median(ns3, "cpu") / median(cc, "cpu")
        core = median(ns3, "core") / median(cc, "core")
        print(f"  cclab is {whole:.0f}x faster than ns-3 in CPU seconds ({core:.0f}x in core)")
    load = os.getloadavg()
    print(f"\nload average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("events are each engine's own unit (ns-3: every scheduled event; cclab: packet hops")
    print("and timers), so events per CPU second are not comparable across engines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
