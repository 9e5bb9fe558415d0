"""The emulator's performance and timing accuracy, on this machine, with per-packet records on.

Run (as root):  .venv/bin/python benches/emu_bench.py [--seconds S] [--only NAME]
(also part of `make bench`; it says "skipped" without root or /dev/net/tun).

Targets (issue 4, DESIGN.md "Performance budgets"):
- one kernel:cubic flow through a 1 Gbit/s constant link with 10 ms one-way delay: >= 900 Mbit/s
  goodput, median RTT within 0.5 ms of the model's, per-packet delay error p99 < 0.5 ms, zero
  unexplained drops (packets sent = delivered + recorded drops + still in flight);
- at 100 Mbit/s: goodput within 2 % of the payload rate (100 x 1448/1500 Mbit/s).

What is printed, per case:
- goodput: application bytes the receiver read / time between its first and last read;
  throughput: the metrics' wire throughput (IP bytes, retransmissions included);
- RTT: Linux's median smoothed RTT (TCP_INFO every 10 ms) against the model's median RTT, i.e.
  the nominal 20 ms plus the median time delivered packets spent in the bottleneck queue; the
  difference is what the emulator itself adds (TUN queues, late writes, host stacks). Also the
  kernel's minimum RTT against the nominal 20 ms;
- delay error: arrival minus model arrival of every packet the emulator wrote, p50/p99/max,
  data and ACK direction;
- accounting: sent, delivered, recorded drops by cause, in flight at the end, and the drops the
  kernels made before the emulator could see a packet (TUN counters);
- the machine's load average: this VM is shared, and a busy neighbour shows up as lateness.
The last case, a 10 Gbit/s link, is no target: it finds the emulator's own ceiling.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

MSS = 1448
WIRE = 1500


def scenario(rate: str, seconds: int) -> dict:
    return {
        "name": f"emu-bench-{rate}",
        "duration": f"{seconds}s",
        "link": {"rate": rate, "delay": "10ms", "queue": "1bdp"},
        "flows": [{"scheme": "kernel:cubic"}],
    }


def report(name: str, rate_mbps: float, seconds: int) -> None:
    import cclab

    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    result = cclab.run(scenario(f"{rate_mbps:g}Mbps", seconds), engine="emu", log_packets=True)
    wall = time.perf_counter() - t0
    st = result.stats
    total = result.summary[result.summary["flow"].isna()].iloc[0]
    packets = result.packet_columns
    data = packets["kind"] == 0
    delivered = data & (packets["fate"] == 0)
    sojourn_ms = (packets["dequeued_ns"][delivered] - packets["enqueued_ns"][delivered]) / 1e6
    model_rtt = 20.0 + float(np.median(sojourn_ms))
    srtt = st["tcp_srtt_median_ms"][0]
    min_rtt = st["tcp_min_rtt_ms"][0]
    goodput = st["app_goodput_mbps"][0]
    payload_rate = rate_mbps * MSS / WIRE
    fates = np.bincount(packets["fate"][data], minlength=5)
    names = packets["fate_names"]
    print(f"== {name}: kernel:cubic, {rate_mbps:g} Mbit/s x 10 ms, 1 BDP queue, {seconds} s")
    print(f"   load average before the run: {load:.2f} (2 CPUs); wall {wall:.1f} s")
    print(
        f"   goodput {goodput:.1f} Mbit/s ({100 * goodput / payload_rate:.1f} % of the "
        f"{payload_rate:.2f} Mbit/s payload rate); wire throughput {total['throughput_mbps']:.1f}"
    )
    print(
        f"   RTT: kernel median {srtt:.3f} ms vs model median {model_rtt:.3f} ms "
        f"(20 + median queueing {model_rtt - 20:.3f}) -> emulator adds {srtt - model_rtt:+.3f} ms;"
        f" kernel min RTT {min_rtt:.3f} ms vs 20 ms nominal"
    )
    for d in ("data", "ack"):
        print(
            f"   delay error ({d}): p50 {st[f'{d}_late_p50_us']:.0f} us, "
            f"p99 {st[f'{d}_late_p99_us']:.0f} us, max {st[f'{d}_late_max_us']:.0f} us"
        )
    explained = st["data_delivered"] + st["data_dropped"] + st["data_in_flight_end"]
    by_fate = ", ".join(f"{names[i]} {int(n)}" for i, n in enumerate(fates) if n)
    print(
        f"   packets sent {st['data_sent']} = delivered + drops + in flight: "
        f"{st['data_sent'] == explained} ({by_fate}); unseen kernel drops: sender TUN "
        f"{st['tun_sender_tx_dropped']}, receiver TUN {st['tun_receiver_rx_dropped']}"
    )


CASES = {
    "1g": ("1 Gbit/s", 1000.0),
    "100m": ("100 Mbit/s", 100.0),
    # Not a target: a link faster than the emulator, to show where it stops keeping up (the
    # delay error then says so; mahimahi's ceiling on this VM was 0.3-0.6 Gbit/s).
    "ceiling": ("the emulator's own ceiling, 10 Gbit/s link", 10000.0),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--only", choices=sorted(CASES))
    args = parser.parse_args()
    if os.geteuid() != 0 or not Path("/dev/net/tun").exists():
        print("emu_bench: skipped (needs root and /dev/net/tun)")
        return
    for key, (name, rate) in CASES.items():
        if args.only in (None, key):
            report(name, rate, args.seconds)


if __name__ == "__main__":
    main()
