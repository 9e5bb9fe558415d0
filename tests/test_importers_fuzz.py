"""Fuzzing the importers' readers with Hypothesis: a link log, a Pantheon metadata file or a
stats file of any content is read or refused with `LogFormatError` naming the file — never
another exception — and what is read is physical (finite, non-negative times, sizes of a
packet, flow ids that do not allocate the machine). The inputs that once crashed a reader are
kept as `@example`s and in tests/fuzz/importers/ (replayed every run); the number of generated
examples is time-boxed for CI (`CCLAB_FUZZ_EXAMPLES`, default 150 per property)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cclab.importers import LogFormatError, import_mahimahi
from cclab.importers.link_log import MAX_FLOW_ID, MAX_PACKET_BYTES, LinkLog, read_link_log
from cclab.importers.pantheon import _metadata
from cclab.importers.pantheon_stats import MARKER, read_stats

CORPUS = Path(__file__).parent / "fuzz" / "importers"
EXAMPLES = int(os.environ.get("CCLAB_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

#: Numbers as a hostile log writes them.
number = st.one_of(
    st.integers(min_value=-10, max_value=10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["inf", "-inf", "nan", "1e300", "1e30", "---.-", "1e999", "-0.5", "x", ""]),
)
op = st.sampled_from(["+", "-", "#", "d", "?", ""])
log_line = st.one_of(
    st.lists(st.one_of(number, op), min_size=0, max_size=6).map(" ".join),
    st.tuples(number, op, number, number, number).map(" ".join),
    st.text(max_size=30),
)
log_text = st.tuples(
    st.lists(st.sampled_from(["# mahimahi mm-link [uplink]", "# base timestamp: 0"]), max_size=2),
    st.lists(log_line, max_size=25),
).map(lambda parts: "\n".join(parts[0] + parts[1]) + "\n")


def _physical(log: LinkLog) -> None:
    for times in (log.arrival_us, log.departure_us, log.opportunity_us):
        assert (times >= 0).all()
    for sizes in (log.arrival_size, log.departure_size, log.opportunity_size):
        assert ((sizes >= 1) & (sizes <= MAX_PACKET_BYTES)).all()
    assert (log.departure_delay_us >= 0).all()
    assert all(0 <= f < MAX_FLOW_ID for f in log.flows)
    assert np.isfinite(log.arrival_us.astype(float)).all()


@FUZZ
@given(text=log_text)
@example(text="-5 + 1504\n-4 - 1504 1\n")
@example(text="inf + 1504\n")
@example(text="1e300 + 1504\n1e300 - 1504 1\n")
@example(text="- - -\n- - -\n")
@example(text="1 + -1504\n2 - -1504 1\n")
@example(text="1 + 1504\n2 - 1504 -7\n")
@example(text="1 + 1e30\n")
@example(text="1.0 + 1500 1000000000\n3.0 - 1500 2.0 1000000000\n")
@example(text="+ 0 + 0 0 0\n")  # more fields than a line has: once an index, not an error
@example(text="inf 0 + 0 0 0\n")
@example(text="1 + 1500 1 \n")  # a trailing space
def test_any_link_log_is_read_or_refused_by_file(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("log") / "link.log"
    path.write_text(text)
    try:
        log = read_link_log(path)
    except LogFormatError as e:
        assert str(path) in str(e)
        return
    _physical(log)


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.log")), ids=lambda p: p.name)
def test_kept_crashers_are_refused_or_physical(path, tmp_path):
    try:
        log = read_link_log(path)
    except LogFormatError:
        return
    _physical(log)


@settings(max_examples=max(EXAMPLES // 5, 10), deadline=None)
@given(text=log_text)
@example(text="1 # 1504\n1 - 1504 22\n")  # the campaign's find: departures, no arrival
def test_a_mahimahi_import_is_refused_or_physical(tmp_path_factory, text):
    base = tmp_path_factory.mktemp("imp")
    log = base / "link.log"
    log.write_text(text)
    try:
        run = import_mahimahi(log, out=base / "run", keep_packets=False)
    except LogFormatError as e:
        assert str(log) in str(e)
        return
    import pandas as pd

    summary = pd.read_parquet(run / "summary.parquet")
    for column in ("throughput_mbps", "loss_pct"):
        values = summary[column].dropna().to_numpy(dtype=float)
        assert all(math.isfinite(v) and v >= 0 for v in values)


json_value = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=10),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)


@FUZZ
@given(
    text=st.one_of(
        json_value.map(lambda v: __import__("json").dumps(v)),
        st.text(max_size=60),
        st.sampled_from(['{"runtime": 1e999}', '{"runtime": NaN}', "[", '{"a": -Infinity}']),
    )
)
def test_metadata_is_an_object_of_finite_numbers_or_refused(tmp_path_factory, text):
    d = tmp_path_factory.mktemp("meta")
    (d / "pantheon_metadata.json").write_text(text)
    try:
        data = _metadata(d)
    except LogFormatError as e:
        assert "pantheon_metadata.json" in str(e)
        return
    assert isinstance(data, dict)
    __import__("json").dumps(data, allow_nan=False)  # what the experiment records


@FUZZ
@given(
    figures=st.lists(st.tuples(st.sampled_from(["Average throughput: ", "Loss rate: "]), number))
)
def test_stats_figures_are_finite_or_not_read(tmp_path_factory, figures):
    path = tmp_path_factory.mktemp("stats") / "cubic_stats_run1.log"
    body = "".join(f"{label}{value} Mbit/s\n" for label, value in figures)
    path.write_text(f"{MARKER}\n-- Flow 1:\n{body}")
    stats = read_stats(path)
    for figures_of_flow in (stats or {}).values():
        assert all(math.isfinite(v) for v in figures_of_flow.values())


def test_special_files_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(LogFormatError, match=str(path)):
            read_link_log(path)
