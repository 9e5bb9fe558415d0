"""Kernel Cubic flows through mahimahi (mm-delay + mm-link), for emu_bench.py's side by side.

emu_bench.py imports this (as root); mahimahi's shell runs it as the sender (as nobody):
    mm-delay 10 mm-link UP DOWN [queue args] -- python3 mahimahi_flow.py send FLOWS SECONDS PORT OUT

mahimahi's shells must be setuid root, run by a user other than root, with IP forwarding on:
`prepare` copies mm-delay and mm-link (setuid) into a scratch folder that user can reach (the
build's prefix may be under /root), and `host_settings` sets what they need of the host for the
bench's run and restores it.

The receiver runs in the bench's own process (the root namespace, mahimahi's outside), the sender
inside mahimahi's innermost namespace: data crosses the uplink, ACKs the downlink. Goodput as
emu_bench measures cclab-emu's: bytes the receiver read / time between its first and last read.
CPU: the rusage of the whole mm-delay process tree (os.wait4 sums every process it reaped: the
mm-delay and mm-link processes and the sender) less the sender's own, which it writes to OUT.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

#: mahimahi's trace unit: one line = one opportunity to send an MTU-sized (1500-byte) packet.
PACKET_BITS = 1500 * 8
#: Trace period in ms: 12 ms at R Mbit/s is R/12*12 = R whole packets, so any integral rate in
#: Mbit/s is exact (mm-link replays the trace in a loop).
PERIOD_MS = 12
CHUNK = 1 << 20
#: mahimahi's shells refuse a real uid or gid of root (they must be setuid root and run by a user),
#: so the bench, which runs as root for cclab-emu, starts them as nobody.
NOBODY = 65534


def find_mahimahi(prefix: Path | None = None) -> Path | None:
    """The folder holding mm-delay and mm-link: mahimahi_build.sh's prefix, else PATH."""
    if prefix is None:
        cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        prefix = cache / "cclab" / "mahimahi"
    for where in (Path(prefix) / "bin", None):
        link = shutil.which("mm-link", path=None if where is None else str(where))
        delay = shutil.which("mm-delay", path=None if where is None else str(where))
        if link and delay and Path(link).parent == Path(delay).parent:
            return Path(link).resolve().parent
    return None


def prepare(bindir: Path, scratch: Path) -> Path:
    """Copies the shells and this script into `scratch` (made reachable by nobody); its bin/."""
    scratch.chmod(0o755)
    out = scratch / "bin"
    out.mkdir(exist_ok=True)
    for name in ("mm-delay", "mm-link"):
        shutil.copy2(bindir / name, out / name)
        os.chown(out / name, 0, 0)
        (out / name).chmod(0o4755)  # setuid root, as mahimahi's install makes them
    shutil.copy2(Path(__file__), out / "mahimahi_flow.py")
    return out


@contextlib.contextmanager
def host_settings() -> Iterator[None]:
    """What mahimahi's runs need of the host, for the bench's run, then as it was: IP forwarding
    (its shells refuse to start without it) and Cubic among the congestion controls an
    unprivileged socket may choose (the sender runs as nobody; the host's default may be other)."""
    knobs = {
        Path("/proc/sys/net/ipv4/ip_forward"): lambda v: "1",
        Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control"): lambda v: (
            v if "cubic" in v.split() else f"{v} cubic"
        ),
    }
    before = {k: k.read_text().strip() for k in knobs}
    try:
        for knob, want in knobs.items():
            knob.write_text(want(before[knob]))
        yield
    finally:
        for knob, value in before.items():
            knob.write_text(value)


def write_trace(path: Path, rate_mbps: float) -> None:
    """A constant-rate trace: rate*PERIOD/12000 opportunities spread evenly over PERIOD_MS ms."""
    n = rate_mbps * 1e6 * PERIOD_MS / 1e3 / PACKET_BITS
    if abs(n - round(n)) > 1e-9 or n < 1:
        raise ValueError(f"mahimahi trace: rate {rate_mbps} Mbit/s is not a whole Mbit/s >= 1")
    n = round(n)
    lines = (str(math.ceil((i + 1) * PERIOD_MS / n)) for i in range(n))
    path.write_text("\n".join(lines) + "\n")


def bdp_packets(rate_mbps: float, rtt_ms: float) -> int:
    """1 BDP in 1500-byte packets, rounded, as cclab's Limit::resolve."""
    return max(1, round(rate_mbps * 1e6 / 8 * rtt_ms / 1e3 / 1500))


def _realtime(prio: int) -> None:
    """The calling thread (and what it forks) at SCHED_FIFO `prio`; 0: ordinary scheduling."""
    if prio > 0:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
    else:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def _receive(server: socket.socket, flows: int, result: dict, rt: int) -> None:
    """Accepts `flows` connections and drains each in its own thread; the totals into `result`."""
    if rt > 0:
        _realtime(max(rt - 1, 1))  # as cclab-emu's endpoints: one below its path thread
    reads: list[tuple[int, float | None, float | None]] = []

    def drain(conn: socket.socket) -> None:
        if rt > 0:
            _realtime(max(rt - 1, 1))
        conn.settimeout(server.gettimeout())
        first = last = None
        total = 0
        buf = bytearray(CHUNK)
        while True:
            n = conn.recv_into(buf)
            if n == 0:
                break
            last = time.monotonic()
            if first is None:
                first = last
            total += n
        conn.close()  # the sender waits for this: all its data has arrived, its shell may end
        reads.append((total, first, last))

    threads = []
    for _ in range(flows):
        conn, _ = server.accept()
        threads.append(threading.Thread(target=drain, args=(conn,), daemon=True))
        threads[-1].start()
    for t in threads:
        t.join()
    result.update(
        bytes=sum(r[0] for r in reads),
        first=min(r[1] for r in reads if r[1] is not None),
        last=max(r[2] for r in reads if r[2] is not None),
    )


def one_run(
    bindir: Path,
    scratch: Path,
    rate_mbps: float,
    seconds: int,
    delay_ms: float = 10.0,
    rt: int = 0,
    flows: int = 1,
) -> dict[str, float]:
    """`flows` Cubic flows (goodput: their sum) through `mm-delay DELAY mm-link TRACE TRACE`,
    1 BDP droptail queues; `bindir` from `prepare`, inside `host_settings`. `rt` > 0: mahimahi's
    processes (and the sender inside) at SCHED_FIFO `rt`, the receiver at `rt` - 1, as cclab-emu
    runs its path thread (10) and its endpoints (9); 0: ordinary scheduling, as mahimahi is
    usually run."""
    trace = scratch / f"{rate_mbps:g}mbps.trace"
    if not trace.exists():
        write_trace(trace, rate_mbps)
    queue = bdp_packets(rate_mbps, 2 * delay_ms)
    server = socket.create_server(("0.0.0.0", 0))
    server.settimeout(seconds + 60)  # a failed run must not hang the bench
    port = server.getsockname()[1]
    received: dict = {}
    receiver = threading.Thread(target=_receive, args=(server, flows, received, rt), daemon=True)
    receiver.start()
    out = scratch / "sender.json"
    out.write_text("")
    os.chown(out, NOBODY, NOBODY)
    cmd = [
        str(bindir / "mm-delay"),
        f"{delay_ms:g}",  # mm-delay takes no "--"; mm-link does
        str(bindir / "mm-link"),
        str(trace),
        str(trace),
        "--uplink-queue=droptail",
        f"--uplink-queue-args=packets={queue}",
        "--downlink-queue=droptail",
        f"--downlink-queue-args=packets={queue}",
        "--",
        shutil.which("python3", path="/usr/bin:/bin") or "python3",  # one nobody can run
        str(bindir / "mahimahi_flow.py"),
        "send",
        str(flows),
        str(seconds),
        str(port),
        str(out),
    ]
    log_path = scratch / "mahimahi.log"
    t0 = time.monotonic()
    with log_path.open("wb") as log_file:
        _realtime(rt)  # inherited by the fork, kept through mahimahi's setuid exec
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=scratch,
                user=NOBODY,
                group=NOBODY,
                extra_groups=[],
            )
        finally:
            _realtime(0)
        _, status, usage = os.wait4(proc.pid, 0)  # its rusage: the whole reaped tree
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    log = log_path.read_text(errors="replace")
    server.close()
    receiver.join(timeout=5)
    if proc.returncode != 0 or not out.read_text() or not received.get("bytes"):
        raise RuntimeError(f"mahimahi run failed (exit {proc.returncode}): {' '.join(cmd)}\n{log}")
    sender = json.loads(out.read_text())
    tree_cpu = usage.ru_utime + usage.ru_stime
    goodput = received["bytes"] * 8 / (received["last"] - received["first"]) / 1e6
    return {
        "goodput_mbps": goodput,
        "srtt_median_ms": sender["srtt_median_ms"],
        "min_rtt_ms": sender["min_rtt_ms"],
        "mm_cpu_pct": 100.0 * (tree_cpu - sender["cpu_s"]) / wall,
        "sender_cpu_pct": 100.0 * sender["cpu_s"] / wall,
        "queue_packets": float(queue),
    }


def _tcp_info(sock: socket.socket) -> tuple[float, float]:
    """(smoothed RTT, min RTT) in ms from TCP_INFO (struct tcp_info: tcpi_rtt at byte 68,
    tcpi_min_rtt at byte 148, both µs)."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 152)
    return struct.unpack_from("<I", raw, 68)[0] / 1e3, struct.unpack_from("<I", raw, 148)[0] / 1e3


def _send(flows: int, seconds: float, port: int, out: Path) -> None:
    """Runs inside mahimahi: `flows` Cubic connections to the bench's receiver at $MAHIMAHI_BASE,
    each writing for `seconds` from its own thread."""
    socks = []
    for _ in range(flows):
        sock = socket.socket()
        sock.settimeout(seconds + 60)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")  # see host_settings
        sock.connect((os.environ["MAHIMAHI_BASE"], port))
        socks.append(sock)
    srtts: list[float] = []
    done = threading.Event()

    def sample() -> None:  # TCP_INFO every 10 ms, as cclab-emu samples kernel flows
        while not done.wait(0.01):
            srtts.extend(_tcp_info(sock)[0] for sock in socks)

    def write(sock: socket.socket) -> None:
        data = b"\0" * CHUNK
        while time.monotonic() < stop:
            sock.sendall(data)

    stop = time.monotonic() + seconds
    sampler = threading.Thread(target=sample)
    sampler.start()
    writers = [threading.Thread(target=write, args=(sock,)) for sock in socks]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    done.set()
    sampler.join()
    min_rtt = min(_tcp_info(sock)[1] for sock in socks)
    # Wait until the receiver has read everything and closed: when this process ends, its shell
    # and the path with it go away, and data still queued would never arrive.
    for sock in socks:
        sock.shutdown(socket.SHUT_WR)
    for sock in socks:
        sock.recv(1)
        sock.close()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out.write_text(
        json.dumps(
            {
                "cpu_s": ru.ru_utime + ru.ru_stime,
                "srtt_median_ms": statistics.median(srtts) if srtts else math.nan,
                "min_rtt_ms": min_rtt,
            }
        )
    )


if __name__ == "__main__":
    if len(sys.argv) == 1:  # `make bench` runs every script in benches/: nothing to do alone
        print("mahimahi_flow.py: emu_bench.py's helper; it runs the mahimahi side from there")
        sys.exit(0)
    if len(sys.argv) != 6 or sys.argv[1] != "send":
        sys.exit("usage: mahimahi_flow.py send FLOWS SECONDS PORT OUT")
    _send(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5]))
