"""`cclab run`: the summary table, the run directory, errors without tracebacks."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pandas as pd

from conftest import SMALL, cclab_process


def test_prints_the_summary_and_the_directory(cli, write_scenario, tmp_path: Path) -> None:
    path = write_scenario(SMALL)
    out_dir = tmp_path / "run"
    code, out, err = cli("run", path, "--out", out_dir, "--log-packets", "--set", "duration=2s")
    assert code == 0, err
    for header in ("flow", "scheme", "throughput", "delay", "queue", "loss", "util", "Jain"):
        assert header in out
    rows = [line.split() for line in out.splitlines()]
    flow_rows = [r for r in rows if r[:2] in (["0", "cubic"], ["1", "cubic"], ["2", "cubic"])]
    assert len(flow_rows) == 3
    [total] = [r for r in rows if r[:1] == ["total"]]
    assert len(total) == 7  # throughput, delay, queue, loss, utilisation, Jain
    # Issue 9: the share of buckets the Jain median counts is printed beside it.
    assert "Jain median over " in " ".join(out.split())
    # Issue 9: the summary says in one line what "loss" counts.
    assert "still in flight at the end" in " ".join(out.split())
    assert f"run directory: {out_dir}" in out.replace("\n", "")
    assert (out_dir / "packets.parquet").exists()
    assert 'duration = "2s"' in (out_dir / "scenario.toml").read_text()
    assert json.loads((out_dir / "meta.json").read_text())["complete"] is True


def test_existing_out_is_refused_before_running(cli, write_scenario, tmp_path: Path) -> None:
    path = write_scenario(SMALL)
    code, out, err = cli("run", path, "--out", tmp_path)
    assert code == 2
    assert out == ""
    assert err == f"error: {tmp_path} already exists; give --out a new directory\n"


def test_invalid_scenario_is_one_line_per_error_without_traceback(write_scenario) -> None:
    path = write_scenario(SMALL.replace('queue = "1bdp"', 'queue = "1bdp"\nspeed = 3'))
    proc = cclab_process("run", path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in err
    assert f"error: {path}:10: field `link.speed`: unknown key `speed`" in err


def test_malformed_set_is_a_usage_error(cli, write_scenario) -> None:
    path = write_scenario(SMALL)
    try:
        cli("run", path, "--set", "duration")
    except SystemExit as e:
        assert e.code == 2
    else:
        raise AssertionError("argparse accepted --set without '='")


def _read_pcap(path: Path) -> list[tuple[int, int, bytes]]:
    """(time in ns, original length, captured bytes) of each packet of a nanosecond pcap."""
    data = path.read_bytes()
    magic, _, _, _, _, snaplen, linktype = struct.unpack_from("<IHHiIII", data, 0)
    assert (magic, linktype) == (0xA1B23C4D, 101)  # nanosecond pcap, raw IPv4
    out, at = [], 24
    while at < len(data):
        sec, nsec, incl, orig = struct.unpack_from("<IIII", data, at)
        assert incl <= snaplen
        out.append((sec * 1_000_000_000 + nsec, orig, data[at + 16 : at + 16 + incl]))
        at += 16 + incl
    return out


def test_pcap_carries_tcp_sequence_and_acknowledgment_numbers(
    cli, write_scenario, tmp_path: Path
) -> None:
    path = write_scenario(SMALL)
    capture = tmp_path / "run.pcap"
    code, out, err = cli(
        "run", path, "--out", tmp_path / "run", "--pcap", capture, "--set", "duration=2s"
    )
    assert code == 0, err
    assert f"capture: {capture}" in out.replace("\n", "")
    packets = _read_pcap(capture)
    log = pd.read_parquet(tmp_path / "run" / "packets.parquet")  # --pcap keeps the log
    data = log[log["kind"] == "data"]
    acks = log[(log["kind"] == "ack") & (log["fate"] == "delivered")]
    # Every data packet (dropped ones too: they left the sender) and every delivered ACK.
    assert len(packets) == len(data) + len(acks)
    times = [t for t, _, _ in packets]
    assert times == sorted(times)
    by_flow: dict[int, list[int]] = {}
    for _, orig, raw in packets:
        ip, tcp = raw[:20], raw[20:]
        assert struct.unpack_from(">H", ip, 2)[0] == orig  # IP total length = size on wire
        sport, dport, seq, ack = struct.unpack_from(">HHII", tcp, 0)
        if dport == 5201:  # data, sender → receiver
            # Payload = total - 20 (IP) - 32 (TCP with timestamps) = 1448, the MSS: the next
            # segment's sequence number follows, which is what Wireshark's analysis checks.
            assert (tcp[12] >> 4) * 4 == 32 and orig - 52 == 1448
            assert seq % 1448 == 0
            by_flow.setdefault(sport, []).append(seq)
        else:
            assert seq == 0 and ack % 1448 == 0
    # Three flows, each starting at stream offset 0 and sending new data upwards.
    assert len(by_flow) == 3
    for seqs in by_flow.values():
        assert seqs[0] == 0 and max(seqs) > 100 * 1448
