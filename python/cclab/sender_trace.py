"""The sender trace (`--trace`, `cclab.run(..., trace=True)`): every flow's congestion window,
pacing rate, bytes in flight, RTTs, delivery rate, ssthresh and its controller's mode and own
variables over time, as the `trace` table (`trace.parquet` in a run directory).

The columns, units and meanings are the core's (`cclab._core.SCHEMA["trace"]`); the sampling
is the engines' (at most one sample per flow per interval, after an ACK). This module only turns
the user's `trace` argument into the interval the core takes and the core's columns into a
DataFrame."""

from __future__ import annotations

from typing import Any

import pandas as pd

from cclab import _core

#: The file a run directory keeps the trace in.
TRACE_FILE = "trace.parquet"
#: The default sampling interval, ns (the core's; the emulator reads TCP_INFO this often).
DEFAULT_INTERVAL_NS: int = _core.TRACE_INTERVAL_NS
#: What `trace=` / `--trace-interval` take for "after every ACK".
EVERY_ACK = "ack"
#: The prefix of the columns that hold a controller's own variables (`cc_bw`, `cc_w_max`).
VAR_PREFIX = "cc_"

TraceOption = bool | str | int | None


def interval_ns(trace: TraceOption) -> int | None:
    """The core's sampling interval for `trace`: None (no trace) for False/None, the default
    for True, 0 for "ack" (every ACK), a duration string ("1ms") or a number of ns as given.
    A ValueError names what is accepted."""
    if trace is None or trace is False:
        return None
    if trace is True:
        return DEFAULT_INTERVAL_NS
    if isinstance(trace, int):
        if trace < 0:
            raise ValueError(f"trace interval {trace} ns is negative")
        return trace
    if isinstance(trace, str):
        if trace.strip().lower() == EVERY_ACK:
            return 0
        try:
            return int(_core.parse_duration(trace.strip()))
        except ValueError as e:
            raise ValueError(
                f"trace interval {trace!r}: {e}; accepted: a duration such as 10ms, "
                f"or {EVERY_ACK!r} for every ACK"
            ) from None
    raise ValueError(f"trace={trace!r}: give True, a duration such as '10ms', or {EVERY_ACK!r}")


def trace_frame(columns: dict[str, Any] | None) -> pd.DataFrame | None:
    """The core's `trace` columns as a DataFrame (mode and ca_state as categoricals), or None."""
    if columns is None:
        return None
    frame = pd.DataFrame(columns, copy=False)
    for name in ("mode", "ca_state"):
        if name in frame:
            frame[name] = frame[name].astype("category")
    return frame
