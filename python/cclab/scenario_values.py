"""Reading a few quantities back out of a filled scenario (the run directory's `scenario.toml`)
for indexes and reports: rates in Mbit/s and durations in ms. The scenario itself is always
validated by the Rust core; these only read values it has already accepted (and written in its
canonical form), so anything unreadable is simply None."""

from __future__ import annotations

import re
from typing import Any

_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-zµ/]*)\s*$")

#: Bits per second of one unit. Values are converted through the base unit and then divided
#: (2640 kbps → 2_640_000 bit/s → 2.64), so a round value compares equal to its literal.
_RATE_BPS = {
    "bps": 1,
    "bit/s": 1,
    "kbps": 1e3,
    "kbit/s": 1e3,
    "mbps": 1e6,
    "mbit/s": 1e6,
    "gbps": 1e9,
    "gbit/s": 1e9,
    "tbps": 1e12,
    "tbit/s": 1e12,
}
#: Nanoseconds of one unit.
_DURATION_NS = {
    "ns": 1,
    "us": 1e3,
    "µs": 1e3,
    "ms": 1e6,
    "s": 1e9,
    "min": 60e9,
    "h": 3600e9,
}


def _split(value: Any) -> tuple[float, str] | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value), ""
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value)
    return (float(match.group(1)), match.group(2)) if match else None


def rate_mbps(value: Any) -> float | None:
    """ "46Mbps" → 46.0; "2640kbps" → 2.64; None when not a rate."""
    parts = _split(value)
    if parts is None:
        return None
    number, unit = parts
    scale = _RATE_BPS.get(unit.lower())
    return None if scale is None else number * scale / 1e6


def duration_ms(value: Any) -> float | None:
    """ "10ms" → 10.0; "1.5s" → 1500.0; "0s" → 0.0; None when not a duration."""
    parts = _split(value)
    if parts is None:
        return None
    number, unit = parts
    if unit == "" and number == 0:
        return 0.0
    scale = _DURATION_NS.get(unit)
    return None if scale is None else number * scale / 1e6
