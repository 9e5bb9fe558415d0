"""The cost of a congestion controller written in Python, per ACK and per simulated second.

Run:  .venv/bin/python benches/py_controller.py [--duration 30s] [--repeat 3]
(also part of `make bench`). Target (issue 13): at most 2 µs per ACK on this machine.

The same scenario (one flow on a 48 Mbit/s, 40 ms RTT path, 0.1 % random loss) runs with the
Rust NewReno and with its Python twin (examples/newreno.py), whose results are identical bit for
bit (tests/test_python_controller.py). The difference in wall time, divided by the number of
ACKs the sender received (counted from the packet log of one run), is what the Python callback
costs per ACK: crossing into Python (taking the GIL), building the ACK object, the hook itself
and reading the controller's attributes back. Best of `--repeat` runs of each.

A second pair separates the crossing from the hook's own Python: a Python controller whose
`on_ack` does nothing, with a fixed 40-packet window, against the Rust `fixed` scheme with the
same window (same packets, same ACKs).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import newreno  # noqa: F401  (registers "py-newreno")

import cclab

#: The fixed window of the crossing-only pair, in packets.
NULL_WINDOW = 40


class Null(cclab.Controller):
    """A fixed window; `on_ack` does nothing (what remains is the cost of the crossing)."""

    def __init__(self, mss: int) -> None:
        super().__init__(mss)
        self.cwnd = NULL_WINDOW * mss

    def on_ack(self, ack: cclab.controller.Ack) -> None:
        pass


cclab.register_scheme("py-null", Null)


def scenario(scheme: str, duration: str, **options: object) -> dict:
    return {
        "name": "py-controller-bench",
        "duration": duration,
        "seed": 1,
        "link": {"rate": "48Mbps", "delay": "20ms", "queue": "1bdp", "loss": 0.001},
        "flows": [{"scheme": scheme, **options}],
    }


def best_wall(source: dict, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        cclab.run(source)
        best = min(best, time.perf_counter() - start)
    return best


def delivered_acks(source: dict) -> tuple[int, cclab.RunResult]:
    logged = cclab.run(source, log_packets=True)
    packets = logged.packets
    assert packets is not None
    # The packet log's kind and fate columns are categoricals of the core's names.
    return int(((packets["kind"] == "ack") & (packets["fate"] == "delivered")).sum()), logged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="30s")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    acks, logged = delivered_acks(scenario("py-newreno", args.duration))
    seconds = logged.duration_s

    rust = best_wall(scenario("newreno", args.duration), args.repeat)
    python = best_wall(scenario("py-newreno", args.duration), args.repeat)
    extra = python - rust
    total = logged.summary.iloc[-1]
    print(
        f"{seconds:.0f} simulated s, {acks:,} ACKs delivered to the sender, "
        f"{total['throughput_mbps']:.1f} Mbit/s"
    )
    print(f"Rust NewReno   {rust:.3f} s wall ({rust / seconds * 1e3:.2f} ms per simulated s)")
    print(f"Python NewReno {python:.3f} s wall ({python / seconds * 1e3:.2f} ms per simulated s)")
    print(
        f"Python controller cost: {extra / acks * 1e6:.2f} µs per ACK, "
        f"{extra / seconds * 1e3:.2f} ms per simulated second (target ≤ 2 µs per ACK)"
    )
    null_acks, _ = delivered_acks(scenario("py-null", args.duration))
    fixed = best_wall(scenario("fixed", args.duration, cwnd=NULL_WINDOW), args.repeat)
    null = best_wall(scenario("py-null", args.duration), args.repeat)
    print(
        f"of which the crossing (empty on_ack vs Rust fixed, {null_acks:,} ACKs): "
        f"{(null - fixed) / null_acks * 1e6:.2f} µs per ACK"
    )


if __name__ == "__main__":
    main()
