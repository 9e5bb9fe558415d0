"""`cclab run`: the summary table, the run directory, errors without tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from capture_check import expected_capture, read_capture, time_ns
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


def test_pcap_carries_tcp_sequence_and_acknowledgment_numbers(
    cli, write_scenario, tmp_path: Path
) -> None:
    from scapy.layers.inet import IP, TCP

    path = write_scenario(SMALL)
    capture = tmp_path / "run.pcapng"
    code, out, err = cli(
        "run", path, "--out", tmp_path / "run", "--pcap", capture, "--set", "duration=2s"
    )
    assert code == 0, err
    packets = read_capture(capture)
    log = pd.read_parquet(tmp_path / "run" / "packets.parquet")  # --pcap keeps the log
    expected = expected_capture(log)
    # Every data packet (dropped ones too: they left the sender) and every delivered ACK.
    assert len(packets) == len(expected) > 1000
    assert f"capture: {capture} ({len(packets)} packets)" in out.replace("\n", "")
    # Timestamps to the nanosecond: the records' send and arrival times exactly.
    assert [time_ns(p) for p in packets] == expected["time"].tolist()
    assert [p.wirelen for p in packets] == expected["size"].tolist()
    by_flow: dict[int, list[int]] = {}
    for p, row in zip(packets, expected.itertuples(), strict=True):
        ip, tcp = p[IP], p[TCP]
        assert ip.len == row.size  # IP total length = size on the wire
        if row.kind == "data":  # sender → receiver
            assert (ip.dst, tcp.dport, tcp.sport) == ("10.255.0.1", 5201, 10_000 + row.flow)
            assert tcp.seq == row.seq and tcp.ack == 0
            # Payload = total - 20 (IP) - 32 (TCP with timestamps) = 1448, the MSS: the next
            # segment's sequence number follows, which is what Wireshark's analysis checks.
            assert tcp.dataofs * 4 == 32 and row.size - 52 == 1448
            # PSH where the sender set it (the `push` column: the ends of its writes).
            assert bool(tcp.flags & 0x08) == row.push
            by_flow.setdefault(tcp.sport, []).append(tcp.seq)
        else:
            assert (ip.src, tcp.sport, tcp.dport) == ("10.255.0.1", 5201, 10_000 + row.flow)
            assert tcp.seq == 0 and tcp.ack == row.seq and tcp.ack % 1448 == 0
    # A bulk sender writes what each ACK frees, mostly two segments: PSH on about every second.
    data = log[log["kind"] == "data"]
    assert 0.3 < data["push"].mean() < 0.7
    assert not log.loc[log["kind"] == "ack", "push"].any()
    # Three flows, each starting at stream offset 0 and sending new data upwards.
    assert len(by_flow) == 3
    for seqs in by_flow.values():
        assert seqs[0] == 0 and max(seqs) > 100 * 1448


def test_pcap_into_a_missing_folder_is_refused_before_running(
    cli, write_scenario, tmp_path: Path
) -> None:
    capture = tmp_path / "nowhere" / "run.pcapng"
    code, out, err = cli("run", write_scenario(SMALL), "--out", tmp_path / "r", "--pcap", capture)
    assert (code, out) == (2, "")
    assert f"cannot write the capture {capture}: its folder does not exist" in err
    assert not (tmp_path / "r").exists()
