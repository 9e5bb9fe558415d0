"""Reading a few quantities back out of a filled scenario (the run directory's `scenario.toml`)
for indexes and reports: rates in Mbit/s and durations in ms. The scenario itself is always
validated by the Rust core; these only read values it has already accepted (and written in its
canonical form), through the core's own unit parsers (`units.rs`), so anything unreadable is
simply None."""

from __future__ import annotations

from typing import Any

from cclab import _core


def rate_mbps(value: Any) -> float | None:
    """ "46Mbps" → 46.0; "2640kbps" → 2.64; None when not a rate (read by the core's parser)."""
    if not isinstance(value, str):
        return None
    try:
        return _core.parse_rate(value) / 1e6
    except ValueError:
        return None


def duration_ms(value: Any) -> float | None:
    """ "10ms" → 10.0; "1.5s" → 1500.0; "0s" or 0 → 0.0; None when not a duration (read by the
    core's parser)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        # A bare number is a duration only when it is zero, as in scenario files.
        return 0.0 if value == 0 else None
    if not isinstance(value, str):
        return None
    try:
        return _core.parse_duration(value) / 1e6
    except ValueError:
        return None
