"""Reading `--pcap` captures back with scapy (an independent pcapng reader) and the packets
of a packet log they must hold, in the order they must hold them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from scapy.layers.inet import IP  # importing it registers raw IPv4 (linktype 101)
from scapy.packet import Packet
from scapy.utils import PcapNgReader


def read_capture(path: Path) -> list[Packet]:
    """Every packet of a pcapng file; each has `.time` (an exact decimal: scapy divides the
    64-bit timestamp by the interface's `if_tsresol`, so nanoseconds survive) and
    `.wirelen` (the block's original length). Every packet must dissect as IPv4."""
    with PcapNgReader(str(path)) as reader:
        packets = list(reader)
    assert all(IP in p for p in packets)
    return packets


def time_ns(packet: Packet) -> int:
    """A captured packet's timestamp in ns, exactly (see `read_capture`)."""
    return int(packet.time * 1_000_000_000)


def expected_capture(log: pd.DataFrame) -> pd.DataFrame:
    """The rows of a packet log a capture at the senders holds, with `time` (data when sent,
    dropped ones too: they left the sender; ACKs when delivered to it), in capture order:
    by time, ties in the order the packets were made (uid)."""
    log = log.reset_index(drop=True)
    data = log["kind"] == "data"
    rows = log[data | ((log["kind"] == "ack") & (log["fate"] == "delivered"))].copy()
    rows["time"] = rows["sent_ns"].where(rows["kind"] == "data", rows["arrived_ns"])
    return rows.sort_values(["time", "uid"]).reset_index(drop=True)
