"""The emulator from the command line: `cclab run --engine emu` writes the same run directory
as the simulator, `cclab compare` sets the two engines side by side, and scheme errors are
clear. Runs need root and /dev/net/tun (CI has both); the checks of bad input need neither."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd
import pytest

from capture_check import expected_capture, read_capture, time_ns

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/net/tun").exists(),
    reason="the emulator needs root and /dev/net/tun",
)

#: 2 s of one Linux Cubic flow on a 12 Mbit/s, 20 ms RTT, 1-BDP link.
KERNEL = """\
    name = "emu-small"
    duration = "2s"

    [link]
    rate = "12Mbps"
    delay = "10ms"
    queue = "1bdp"

    [[flows]]
    scheme = "kernel:cubic"
"""


@needs_root
def test_run_on_the_emulator_writes_a_run_directory(cli, write_scenario, tmp_path) -> None:
    out = tmp_path / "run"
    code, stdout, err = cli(
        "run", write_scenario(KERNEL), "--engine", "emu", "--out", out, "--log-packets"
    )
    assert code == 0, err
    assert "kernel:cubic" in stdout
    assert "emulated in real time" in stdout
    assert "timing error p99" in stdout
    meta = json.loads((out / "meta.json").read_text())
    assert meta["complete"] is True
    assert meta["engine"] == "emu"
    stats = meta["stats"]
    assert stats["data_sent"] == (
        stats["data_delivered"] + stats["data_dropped"] + stats["data_in_flight_end"]
    )
    assert stats["data_device_drops"] == 0
    assert stats["tun_sender_tx_dropped"] == stats["emu_unseen_drops"] == 0
    # The run's warnings are kept with it (none expected here but lateness on a busy host).
    assert all(isinstance(w, str) and w for w in stats["emu_warnings"])
    assert not any("dropped" in w or "at start-up" in w for w in stats["emu_warnings"])
    # What the emulator cost and could do, in the run's record: its path thread's CPU (a 12
    # Mbit/s link is ~1,000 packets/s, a few % of a CPU; a thread that spun would show ~100),
    # the whole process's (which includes it), the tolerance (half a packet time at 12 Mbit/s
    # is 500 us, capped at 80) and the forwarding ceiling measured at start-up.
    assert 0.0 < stats["emu_path_cpu_pct"] < 50.0
    assert stats["emu_process_cpu_pct"] >= 0.99 * stats["emu_path_cpu_pct"]
    assert stats["emu_tolerance_us"] == 80.0
    assert stats["emu_capacity_mbps"] > 12.0
    # A slow kernel flow's endpoints share the path thread's CPU (cclab_emu::Cpus::Auto).
    assert stats["emu_one_cpu"] is True
    assert "of a CPU, shared with the endpoints" in stdout
    summary = pd.read_parquet(out / "summary.parquet")
    total = summary[summary["flow"].isna()].iloc[0]
    assert 9.0 < total["throughput_mbps"] <= 12.05
    assert total["delay_min_ms"] >= 10.0
    packets = pd.read_parquet(out / "packets.parquet")
    assert set(packets["kind"].astype(str)) == {"data", "ack"}
    data = packets[(packets["kind"] == "data") & (packets["fate"] == "delivered")]
    # The emulator owns both ends: arrival minus send is the one-way delay, propagation included.
    owd = (data["arrived_ns"] - data["sent_ns"]) / 1e6
    assert owd.min() >= 10.0


@needs_root
def test_compare_prints_both_engines_and_the_replication_error(cli, write_scenario) -> None:
    scenario = write_scenario(KERNEL.replace('"kernel:cubic"', '"cubic"'))
    code, stdout, err = cli("compare", scenario, "--schemes", "cubic=kernel:cubic", "--json")
    assert code == 0, err
    result = json.loads(stdout)
    assert result["engines"] == ["sim", "emu"]
    (row,) = result["schemes"]
    assert row["scheme"] == "cubic vs kernel:cubic"
    for key in ("sim_throughput_mbps", "emu_throughput_mbps"):
        assert 9.0 < row[key] <= 12.05
    expected = (row["throughput_error"] + row["delay_error"]) / 2
    assert math.isclose(result["replication_error"], expected)
    assert result["replication_error"] < 0.5
    code, stdout, _ = cli("compare", scenario, "--schemes", "cubic=kernel:cubic")
    assert code == 0
    assert "replication error" in stdout


def test_emulator_scheme_errors_are_clear(cli, write_scenario, tmp_path) -> None:
    typo = write_scenario(KERNEL.replace("cubic", "cubci"))
    code, _, err = cli("validate", "--engine", "emu", typo)
    assert code == 1
    assert "`cubci` is not a congestion control this kernel offers" in err
    assert "did you mean `kernel:cubic`?" in err
    (tmp_path / "w.toml").write_text('run_first = "sender"\nsender = "tx"\nreceiver = "rx"\n')
    scenario = write_scenario(KERNEL.replace("kernel:cubic", "wrapper:w.toml"))
    code, _, err = cli("validate", "--engine", "emu", scenario)
    assert code == 1
    assert "w.toml:2: `sender`: the sender listens first, so its command needs `{port}`" in err
    assert "the receiver connects to the other side, so its command needs `{ip}`" in err
    # The simulator cannot run a kernel scheme, and says what it can run.
    code, _, err = cli("validate", write_scenario(KERNEL))
    assert code == 1
    assert "kernel:cubic" in err


@needs_root
def test_a_zero_tolerance_puts_every_packet_on_time_or_after(write_scenario) -> None:
    import cclab

    # The default window (80 us at 12 Mbit/s) releases packets early as well as late; with
    # `tolerance_us=0` no packet may leave before its model time (timing.rs: a group is released
    # from `last - tolerance` on), so the earliest write is at its time.
    stats = cclab.run(write_scenario(KERNEL), engine="emu", tolerance_us=0).stats
    assert stats["emu_tolerance_us"] == 0.0
    assert stats["emu_one_cpu"] is False, "exact timing keeps the endpoints off the path's CPU"
    assert stats["data_early_max_us"] == 0.0
    assert stats["ack_early_max_us"] == 0.0
    assert stats["data_delivered"] > 1000


def test_the_tolerance_is_the_emulators_and_a_whole_number(cli, write_scenario, capsys) -> None:
    import cclab

    scenario = write_scenario(KERNEL.replace("kernel:cubic", "cubic"))
    code, _, err = cli("run", scenario, "--tolerance-us", "5")
    assert code == 2
    assert "--tolerance-us is the emulator's (--engine emu)" in err
    with pytest.raises(SystemExit) as exited:  # argparse's own error
        cli("run", scenario, "--engine", "emu", "--tolerance-us", "-3")
    assert exited.value.code == 2
    assert "expected a whole number of µs ≥ 0, not '-3'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="the sim engine delivers every packet at its model"):
        cclab.run(scenario, tolerance_us=5)
    with pytest.raises(ValueError, match=r"a whole number of µs ≥ 0, not 2\.5"):
        cclab.run(scenario, engine="emu", tolerance_us=2.5)  # type: ignore[arg-type]


def test_compare_rejects_bad_arguments(cli, write_scenario) -> None:
    scenario = write_scenario(KERNEL)
    code, _, err = cli("compare", scenario, "--engines", "sim")
    assert code == 2
    assert "--engines takes two engines" in err
    code, _, err = cli("compare", scenario, "--engines", "sim,ns3")
    assert "unknown engine 'ns3'" in err
    code, _, err = cli("compare", scenario, "--schemes", "cubic=")
    assert "is not a scheme or a pair A=B" in err
    code, _, err = cli("compare", scenario, "--engines", "sim,sim", "--tolerance-us", "0")
    assert code == 2
    assert "--tolerance-us is the emulator's (emu); neither sim nor sim keeps time" in err


@needs_root
def test_emulated_records_carry_the_wires_tcp_numbers(write_scenario, tmp_path) -> None:
    import cclab

    result = cclab.run(write_scenario(KERNEL), engine="emu", log_packets=True)
    packets = result.packets
    data = packets[(packets["kind"] == "data") & ~packets["retransmission"]]
    # The segments of one super-packet share its read time; uids count up within it.
    data = data.sort_values(["sent_ns", "uid"])
    # Kernel TCP: the segment's own sequence number, from its ISN (mod 2^32); new data only
    # moves forward, mostly by whole MSS-sized segments.
    seq = data["seq"].to_numpy()  # uint32: differences wrap as TCP's do
    steps = seq[1:] - seq[:-1]
    assert (steps < 1 << 31).all()
    assert (steps == 1448).mean() > 0.5
    acks = packets[(packets["kind"] == "ack") & (packets["fate"] == "delivered")]
    acks = acks.sort_values(["arrived_ns", "uid"])["seq"].to_numpy()
    # Cumulative acknowledgments never go back (mod 2^32).
    assert ((acks[1:] - acks[:-1]) < 1 << 31).all()
    # The packet log can still be written as a synthetic capture afterwards.
    assert result.write_pcap(tmp_path / "emu.pcapng") == len(expected_capture(packets))


@needs_root
def test_the_emulator_captures_the_real_packets_crossing_its_link(write_scenario, tmp_path) -> None:
    from scapy.layers.inet import IP, TCP, UDP

    import cclab

    # Flow 0 is Linux TCP, flow 1 cclab's Cubic over UDP; the server port is 5000 + flow.
    mixed = KERNEL + '\n    [[flows]]\n    scheme = "cubic"\n'
    capture = tmp_path / "emu.pcapng"
    result = cclab.run(write_scenario(mixed), engine="emu", log_packets=True, pcap=capture)
    packets = read_capture(capture)
    expected = expected_capture(result.packets)
    assert len(packets) == result.stats["pcap_packets"] == len(expected) > 1000
    # Written as it happened at the senders' device, so in time order.
    times = [time_ns(p) for p in packets]
    assert times == sorted(times)
    assert not list(tmp_path.glob(".*partial")), "the temporary name is gone"

    seen, tcp_acks, udp_data = [], 0, 0
    for p, t in zip(packets, times, strict=True):
        ip = p[IP]
        data = ip.src == "10.64.0.1"  # the sender's namespace
        psh = None
        if TCP in p:
            port = p[TCP].dport if data else p[TCP].sport
            seq = p[TCP].seq if data else p[TCP].ack
            psh = data and bool(p[TCP].flags & 0x08)
            if not data and len(p[TCP].payload) == 0 and p.wirelen == len(p):
                # A whole pure ACK: its checksum, left to "hardware" by the receiving kernel,
                # was filled in as a NIC would.
                fresh = IP(bytes(ip))
                del fresh[TCP].chksum
                assert IP(bytes(fresh))[TCP].chksum == p[TCP].chksum
                tcp_acks += 1
        else:
            port = p[UDP].dport if data else p[UDP].sport
            seq = None  # cclab's own header, not TCP's
            udp_data += data
        seen.append((t, "data" if data else "ack", port - 5000, p.wirelen, seq, psh))
        assert ip.len == p.wirelen  # the real IP header: total length = size on the wire
    # Packet for packet the records' times (to the ns), kinds, flows, sizes, TCP numbers and
    # PSH flags (the `push` column: on a super-packet's last segment only).
    # (Ties in time, the segments of one TSO read, are compared as a set: records are
    # logged when a packet's fate is known, not in send order.)
    want = [
        (
            r.time,
            r.kind,
            r.flow,
            r.size,
            r.seq if r.flow == 0 else None,
            r.push if r.flow == 0 else None,
        )
        for r in expected.itertuples()
    ]
    assert sorted(seen) == sorted(want)
    assert tcp_acks > 100 and udp_data > 100
    tcp_data = [x for x in seen if x[1] == "data" and x[2] == 0]
    assert 0 < sum(x[5] for x in tcp_data) < len(tcp_data), "PSH on some of Linux's segments"


#: 4 s of requests (TINY_CDF: 1-5,000 bytes) at 8 Mbit/s over 20 Linux Cubic connections on a
#: 20 Mbit/s, 20 ms RTT link: ~1,600 requests.
REQUESTS = """\
    name = "emu-requests"
    duration = "4s"

    [link]
    rate = "20Mbps"
    delay = "10ms"
    queue = "1bdp"

    [[flows]]
    scheme = "kernel:cubic"
    traffic = "requests"

    [flows.requests]
    cdf = "TINY_CDF"
    load = "8Mbps"
    connections = 20
"""


@needs_root
def test_request_workload_on_the_emulator_gives_fct_and_slowdown(
    cli, write_scenario, tmp_path
) -> None:
    out = tmp_path / "run"
    code, _, err = cli("run", write_scenario(REQUESTS), "--engine", "emu", "--out", out)
    assert code == 0, err
    meta = json.loads((out / "meta.json").read_text())
    assert meta["engine"] == "emu"
    fct = meta["fct"]
    # 8 Mbit/s of 2,500-byte requests is 400/s: ~1,600 in 4 s (Poisson, sd 40).
    assert 1400 < fct["all"]["requests"] < 1800, fct
    # All but those of the last moments complete (the slowest takes a few RTTs).
    assert fct["all"]["completed"] > 0.95 * fct["all"]["requests"], fct
    # Below 10 KB every request is "small"; an idle-ish link serves it near its ideal time.
    assert fct["small"]["requests"] == fct["all"]["requests"]
    assert 1.0 <= fct["all"]["slowdown_median"] < 3.0, fct
    assert fct["all"]["fct_median_ms"] >= 20.0, "no request beats the base RTT"
    requests = pd.read_parquet(out / "requests.parquet")
    assert len(requests) == fct["all"]["requests"]
    done = requests[requests["completed"]]
    # No request beats its ideal time, but by what the emulator's centred window allows: it
    # releases a packet up to its tolerance before the model's time (crates/emu, timing.rs),
    # a data packet and its ACK each (one run: a 73-byte request 40 ns under its 20.03 ms).
    stats = meta["stats"]
    early_ms = (stats["data_early_max_us"] + stats["ack_early_max_us"]) / 1e3
    assert 0 <= early_ms <= 2 * stats["emu_tolerance_us"] / 1e3
    ideal_ms = done["fct_ms"] / done["slowdown"]
    assert (done["fct_ms"] >= ideal_ms - early_ms).all(), "a request beat its ideal time"
    buckets = pd.read_parquet(out / "fct.parquet").set_index("bucket")
    assert math.isclose(buckets.loc["all", "slowdown_median"], fct["all"]["slowdown_median"])
