"""The per-flow summary table `cclab run` prints."""

from __future__ import annotations

import math

import pandas as pd
from rich import box
from rich.table import Table

from cclab.engines import engine_named
from cclab.result import SCHEMA, RunResult

#: What the loss column counts, in the schema's words.
_LOSS_DOC = next(doc for name, _, _, doc in SCHEMA["summary"] if name == "loss_pct")


def _number(value: float, digits: int) -> str:
    return "-" if pd.isna(value) or not math.isfinite(value) else f"{value:.{digits}f}"


def summary_table(result: RunResult) -> Table:
    """flow, scheme, throughput, p95 delay, queueing p95 and loss per flow, then the total with
    the link utilisation and the median Jain index; the caption gives the share of buckets that
    median counts and says what "loss" counts."""
    engine = engine_named(result.engine)
    if engine.real_time:
        # Real time: what is worth a glance is how closely the engine kept to the link model.
        caption = (
            f"{result.stats['events']:,} packets; {engine.noun} timing error p99 "
            f"{result.stats['data_late_p99_us']:.0f} us (data), "
            f"{result.stats['ack_late_p99_us']:.0f} us (ACKs)"
        )
        cpu = result.stats.get("emu_path_cpu_pct")
        if cpu is not None:
            # Runs recorded before the emulator measured its own CPU use lack the figure.
            caption += f"; its path used {cpu:.0f}% of a CPU"
            if result.stats.get("emu_one_cpu"):
                caption += ", shared with the endpoints"
    else:
        caption = (
            f"{result.stats['events']:,} events in {result.stats['wall_secs']:.2f} s "
            f"({result.events_per_sec / 1e6:.1f} M events/s)"
        )
    # The share of buckets beside the median, in the caption: the table keeps within 80
    # columns. A median over few buckets is worth less than it looks.
    counted = result.summary["jain_counted"].iloc[-1]
    caption += f"\nJain median over {_number(100 * counted, 0)}% of its buckets (not those where "
    caption += "flows start or stop)"
    caption += f"\nloss % = {_LOSS_DOC}"
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"{result.name} — seed {result.seed}, {result.duration_s:g} s {engine.verb}",
        caption=caption,
    )
    for header in ("flow", "scheme"):
        table.add_column(header, no_wrap=True)
    for header in (
        "throughput\nMbit/s",
        "delay\np95 ms",
        "queue\np95 ms",
        "loss\n%",
        "util.\n%",
        "Jain\nmedian",
    ):
        table.add_column(header, justify="right", no_wrap=True)
    for row in result.summary.itertuples(index=False):
        total = pd.isna(row.flow)
        if total:
            table.add_section()
        table.add_row(
            "total" if total else str(row.flow),
            "" if total else row.scheme,
            _number(row.throughput_mbps, 2),
            _number(row.delay_p95_ms, 1),
            _number(row.queueing_p95_ms, 1),
            _number(row.loss_pct, 2),
            _number(100 * row.utilisation, 1) if total else "",
            _number(row.jain_median, 3) if total else "",
            style="bold" if total else None,
        )
    return table
