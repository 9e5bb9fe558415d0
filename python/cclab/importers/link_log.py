"""Reading mahimahi link logs and Pantheon datalink logs into columns, vectorised.

Both formats (reference/pantheon-and-mahimahi.md §1.7, §2.4) are text lines after a header of
`#` comment lines, with a timestamp in ms since the log's start first:

    T + SIZE [FLOW]          a packet arrived at the link (Pantheon: entered the path)
    T - SIZE DELAY [FLOW]    a packet left the link (Pantheon: arrived), DELAY ms after it came
    T # SIZE                 a delivery opportunity of SIZE bytes, used or not
    T d NPKTS NBYTES         mahimahi: packets dropped at the queue

mahimahi writes whole ms; the Pantheon's merged logs write ms with three decimals (µs). Times
are kept as integer µs, which is exact for both.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd


class LogFormatError(ValueError):
    """A log that is not in the format it was read as; says where and what was expected."""


@dataclass
class LinkLog:
    """The events of a log, per type, as int64 columns (µs, bytes, 0-based flow ids)."""

    path: Path
    header: list[str]
    arrival_us: np.ndarray
    arrival_size: np.ndarray
    arrival_flow: np.ndarray
    departure_us: np.ndarray
    departure_size: np.ndarray
    departure_delay_us: np.ndarray
    departure_flow: np.ndarray
    opportunity_us: np.ndarray
    opportunity_size: np.ndarray
    drop_packets: int
    drop_bytes: int
    #: Timestamp of the first event of any type (the time origin of the Pantheon's bins).
    first_event_us: int
    last_event_us: int
    #: Whether the lines carried flow ids (the Pantheon's multi-flow merged logs).
    has_flow_ids: bool = False
    lines: int = 0
    flows: list[int] = field(default_factory=list)

    def header_value(self, prefix: str) -> str | None:
        """The rest of the first header line that starts with `# <prefix>`."""
        for line in self.header:
            body = line.lstrip("#").strip()
            if body.startswith(prefix):
                return body[len(prefix) :].strip()
        return None


def _header(path: Path) -> list[str]:
    header = []
    with path.open("r", encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("#"):
                break
            header.append(line.rstrip("\n"))
    return header


def _ms_to_us(values: pd.Series) -> np.ndarray:
    return np.rint(values.to_numpy(dtype=np.float64) * 1000.0).astype(np.int64)


def _integers(values: pd.Series, what: str, path: Path) -> np.ndarray:
    numbers = values.to_numpy(dtype=np.float64)
    if np.isnan(numbers).any():
        raise LogFormatError(f"{path}: a {what} line lacks a field (expected {_EXPECTED[what]})")
    return numbers.astype(np.int64)


_EXPECTED = {
    "+": "`T + SIZE [FLOW]`",
    "-": "`T - SIZE DELAY [FLOW]`",
    "#": "`T # SIZE`",
    "d": "`T d NPKTS NBYTES`",
}


#: The largest log read (a Pantheon datalink log of 30 s at 100 Mbit/s is about 6 MB).
MAX_LOG_BYTES = 4 << 30
#: Timestamps and delays past this (about 11.6 days, in ms) are not a link log's.
MAX_TIME_MS = 1e9
#: A logged packet holds at least a byte and at most an IP packet's 65535 plus mahimahi's
#: 4-byte TUN header.
MAX_PACKET_BYTES = 65_539
#: Flow ids past this are not the Pantheon's (it runs a handful of flows); a run allocates per
#: flow, so an id of 10^9 must not become 10^9 flows.
MAX_FLOW_ID = 10_000


def check_readable(path: Path, limit: int) -> None:
    """Refuses what cannot be read to its end (a FIFO, a device, a directory) or is too large,
    before anything opens it."""
    try:
        info = path.stat()
    except OSError as e:
        raise LogFormatError(f"{path}: cannot read it: {e.strerror or e}") from None
    if stat.S_ISDIR(info.st_mode):
        raise LogFormatError(f"{path}: is a directory, not a log file")
    if not stat.S_ISREG(info.st_mode):
        raise LogFormatError(
            f"{path}: not a regular file (a pipe, socket or device cannot be read to its end)"
        )
    if info.st_size > limit:
        raise LogFormatError(f"{path}: holds {info.st_size} bytes; at most {limit} are read")


def _check_range(
    path: Path,
    first_line: int,
    values: pd.Series,
    what: str,
    low: float,
    high: float,
    *,
    whole: bool = False,
) -> None:
    """A LogFormatError at the first value outside [low, high] (or not whole, or not finite),
    naming the file and line."""
    numbers = values.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(numbers) | (numbers < low) | (numbers > high)
    if whole:
        bad |= np.isfinite(numbers) & (np.floor(numbers) != numbers)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        line = int(values.index[i]) + first_line
        kind = "a whole number " if whole else ""
        raise LogFormatError(
            f"{path}:{line}: {what} {numbers[i]:g} is out of range; expected {kind}"
            f"from {low:g} to {high:g}"
        )


def require_packets(log: LinkLog) -> None:
    """Refuses a log no run can be made of: no packet crossed the link, or packets left it
    that never entered (every `-` line has its `+` line in a whole mm-link log)."""
    if len(log.arrival_us) == 0 and len(log.departure_us) == 0:
        raise LogFormatError(f"{log.path}: no `+` or `-` lines: no packet crossed this link")
    if len(log.arrival_us) == 0:
        raise LogFormatError(
            f"{log.path}: {len(log.departure_us)} departures (`-` lines) but no arrivals "
            "(`+` lines); every packet that leaves a link entered it, so the log is cut or "
            "not an mm-link log"
        )


def read_link_log(path: str | Path) -> LinkLog:
    """Reads a mahimahi link log or a Pantheon datalink log."""
    path = Path(path)
    check_readable(path, MAX_LOG_BYTES)
    header = _header(path)
    try:
        frame = pd.read_csv(
            path,
            sep=" ",
            header=None,
            names=["t", "op", "a", "b", "c"],
            skiprows=len(header),
            # A line with more fields than these must be an error, not shift its first
            # fields into the frame's index (the fuzzer's `+ 0 + 0 0 0`).
            index_col=False,
            dtype={
                "t": np.float64,
                "op": "category",
                "a": np.float64,
                "b": np.float64,
                "c": np.float64,
            },
            engine="c",
            skipinitialspace=True,
        )
    except (ValueError, pd.errors.ParserError) as e:
        raise LogFormatError(
            f"{path}: not a mahimahi or Pantheon link log ({e}); expected lines like "
            "`12.345 + 1500 1` after `#` header lines"
        ) from None
    if frame["t"].isna().any():
        bad = int(np.flatnonzero(frame["t"].isna().to_numpy())[0]) + len(header) + 1
        raise LogFormatError(f"{path}:{bad}: expected a timestamp in ms first")
    op = frame["op"].astype(str).to_numpy()
    unknown = ~np.isin(op, list(_EXPECTED))
    if unknown.any():
        bad = int(np.flatnonzero(unknown)[0])
        raise LogFormatError(
            f"{path}:{bad + len(header) + 1}: unknown event {op[bad]!r}; expected one of "
            + ", ".join(_EXPECTED.values())
        )
    arrivals = frame[op == "+"]
    departures = frame[op == "-"]
    opportunities = frame[op == "#"]
    drops = frame[op == "d"]
    # Ranges first, so nothing below converts an inf, a negative size or a 1e30 to integers.
    first_line = len(header) + 1
    _check_range(path, first_line, frame["t"], "timestamp (ms)", 0, MAX_TIME_MS)
    for rows, column, what in (
        (arrivals, "a", "packet size (bytes)"),
        (departures, "a", "packet size (bytes)"),
        (opportunities, "a", "opportunity size (bytes)"),
    ):
        _check_range(path, first_line, rows[column].dropna(), what, 1, MAX_PACKET_BYTES, whole=True)
    _check_range(path, first_line, departures["b"].dropna(), "delay (ms)", 0, MAX_TIME_MS)
    for rows, column in ((arrivals, "b"), (departures, "c")):
        _check_range(path, first_line, rows[column].dropna(), "flow id", 1, MAX_FLOW_ID, whole=True)
    for column, what in (("a", "dropped packets"), ("b", "dropped bytes")):
        _check_range(path, first_line, drops[column].dropna(), what, 0, 1e12, whole=True)
    # A flow id follows the size on `+` lines and the delay on `-` lines (Pantheon, 1-based).
    has_flow_ids = bool(arrivals["b"].notna().any() or departures["c"].notna().any())
    if has_flow_ids:
        arrival_flow = _integers(arrivals["b"], "+", path) - 1
        departure_flow = _integers(departures["c"], "-", path) - 1
    else:
        arrival_flow = np.zeros(len(arrivals), dtype=np.int64)
        departure_flow = np.zeros(len(departures), dtype=np.int64)
    if departures["b"].isna().any():
        raise LogFormatError(f"{path}: a - line lacks its delay (expected {_EXPECTED['-']})")
    times = _ms_to_us(frame["t"])
    flows = sorted(set(np.unique(arrival_flow).tolist()) | set(np.unique(departure_flow).tolist()))
    if flows and flows[0] < 0:
        raise LogFormatError(f"{path}: flow ids start at 1 in a Pantheon log; found 0")
    return LinkLog(
        path=path,
        header=header,
        arrival_us=_ms_to_us(arrivals["t"]),
        arrival_size=_integers(arrivals["a"], "+", path),
        arrival_flow=arrival_flow,
        departure_us=_ms_to_us(departures["t"]),
        departure_size=_integers(departures["a"], "-", path),
        departure_delay_us=_ms_to_us(departures["b"]),
        departure_flow=departure_flow,
        opportunity_us=_ms_to_us(opportunities["t"]),
        opportunity_size=_integers(opportunities["a"], "#", path),
        drop_packets=int(drops["a"].sum()) if len(drops) else 0,
        drop_bytes=int(drops["b"].sum()) if len(drops) else 0,
        first_event_us=int(times[0]) if len(times) else 0,
        last_event_us=int(times.max()) if len(times) else 0,
        has_flow_ids=has_flow_ids,
        lines=len(frame),
        flows=flows,
    )
