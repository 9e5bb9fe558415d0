"""The Python API: `cclab.run` and `cclab.validate`."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from cclab.engines import DEFAULT_ENGINE, engine_named, engine_runner, engine_validator
from cclab.result import RunResult
from cclab.scenario_source import ScenarioSource, core_source, describe, overrides_json
from cclab.sender_trace import TraceOption, interval_ns

#: Called with the simulated time reached and the scenario's duration, both in ns, at most every
#: 250 ms of wall time during a run. An exception it raises stops the run and propagates.
ProgressCallback = Callable[[int, int], object]


def validate(
    source: ScenarioSource,
    *,
    seed: int | None = None,
    engine: str = DEFAULT_ENGINE,
    **overrides: Any,
) -> str:
    """Checks a scenario (a file path or a dict) with `overrides` applied and returns it as
    TOML with every default filled in. Raises `cclab.ScenarioError` listing every problem."""
    core_validate = engine_validator(engine)
    text, is_path = core_source(source)
    return core_validate(text, is_path, overrides_json(overrides, seed))


def run(
    source: ScenarioSource,
    *,
    seed: int | None = None,
    log_packets: bool = False,
    trace: TraceOption = False,
    out: str | Path | None = None,
    progress: ProgressCallback | None = None,
    engine: str = DEFAULT_ENGINE,
    pcap: str | Path | None = None,
    tolerance_us: int | None = None,
    **overrides: Any,
) -> RunResult:
    """Simulates (or, with `engine="emu"`, emulates in real time) a scenario and returns its
    results.

    `source` is a scenario file or a dict with the same keys (`{"link": {"rate": "12Mbps"},
    "flows": [{"scheme": "cubic"}]}`). Keyword `overrides` replace keys of the scenario; write
    a nested key with a double underscore (`link__rate="24Mbps"`, `duration="10s"`). With
    `out`, the run directory is written there (atomically). Ctrl-C stops the run with
    KeyboardInterrupt. Raises `cclab.ScenarioError` for an invalid scenario and
    `cclab.SimulationError` when a valid one cannot run.

    `trace` samples every flow's sender over time into `result.trace` (and `trace.parquet`):
    True samples at most once per flow per 10 ms, a duration ("1ms") sets the interval, "ack"
    samples after every ACK.

    `pcap` writes a pcapng capture at the senders there (`stats["pcap_packets"]` counts its
    packets): the emulator captures the real packets crossing its link while it runs (the file
    appears only when the run completed); the simulator writes synthetic headers from its
    packet log afterwards (`RunResult.write_pcap`), so it keeps the log (`log_packets`).

    `tolerance_us` (a real-time engine's only: the emulator) is how far before or after its
    model time a packet may leave, so that one wake-up serves several (default: 5/8 of a
    packet time at the link's rate, at most 80 µs; `stats["emu_tolerance_us"]` says which).
    0 puts every packet on time at the cost of more wake-ups: what a referee wants.
    """
    core_run = engine_runner(engine)
    native_pcap = pcap is not None and engine_named(engine).captures_packets
    trace_ns = interval_ns(trace)
    text, is_path = core_source(source)
    started_at = datetime.now().astimezone()
    t0 = time.perf_counter()
    extra: dict[str, Any] = {"pcap": Path(pcap)} if native_pcap else {}
    if tolerance_us is not None:
        extra["tolerance_us"] = _tolerance(engine, tolerance_us)
    log_packets = log_packets or (pcap is not None and not native_pcap)
    raw = core_run(
        text,
        is_path,
        overrides_json(overrides, seed),
        log_packets,
        progress,
        trace_ns=trace_ns,
        **extra,
    )
    result = RunResult.from_core(
        raw,
        source=describe(source),
        started_at=started_at,
        wall_secs=time.perf_counter() - t0,
    )
    if pcap is not None and not native_pcap:
        result.stats["pcap_packets"] = result.write_pcap(pcap)
    if out is not None:
        result.save(out)
    return result


def _tolerance(engine: str, tolerance_us: int) -> int:
    """`tolerance_us` checked: a whole number of µs ≥ 0, for an engine that keeps time."""
    if not engine_named(engine).real_time:
        raise ValueError(
            f"tolerance_us applies to a real-time engine (the emulator); the {engine} engine "
            "delivers every packet at its model time"
        )
    if isinstance(tolerance_us, bool) or not isinstance(tolerance_us, int) or tolerance_us < 0:
        raise ValueError(f"tolerance_us must be a whole number of µs ≥ 0, not {tolerance_us!r}")
    return tolerance_us
