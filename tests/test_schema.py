"""The result schema the core publishes (`_core.SCHEMA`, the codes, `NEVER`, the unit parsers)
is the one every run directory, DataFrame and imported log actually has."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cclab
from cclab import _core
from cclab.analysis import analyze_packets
from conftest import SMALL_DICT

#: Parquet type of each schema dtype, for the columns written as plain arrays.
ARROW = {
    "uint8": "uint8",
    "uint32": "uint32",
    "uint64": "uint64",
    "int64": "int64",
    "float64": "double",
    "bool": "bool",
    "str": "large_string",
}


def test_every_column_is_named_typed_and_documented() -> None:
    assert set(_core.SCHEMA) == {
        "summary",
        "metrics",
        "timeseries",
        "jain",
        "packets",
        "flows",
        "stats",
        "requests",
        "fct",
        "middlebox",
        "trace",
    }
    for table, columns in _core.SCHEMA.items():
        names = [name for name, *_ in columns]
        assert len(names) == len(set(names)), table
        for name, dtype, unit, doc in columns:
            assert dtype in ARROW, (table, name)
            assert isinstance(unit, str) and doc, (table, name)


def test_run_directory_files_follow_the_schema(tmp_path: Path) -> None:
    result = cclab.run(SMALL_DICT, log_packets=True)
    run_dir = result.save(tmp_path / "run")
    for table in ("summary", "timeseries", "jain", "flows", "packets"):
        schema = pq.read_schema(run_dir / f"{table}.parquet")
        declared = _core.SCHEMA[table]
        assert schema.names == [name for name, *_ in declared], table
        for name, dtype, *_ in declared:
            arrow = schema.field(name).type
            if pa.types.is_dictionary(arrow):
                # Coded columns are stored as categories named by the core.
                assert str(arrow.index_type) == ARROW[dtype], (table, name)
            else:
                assert str(arrow) == ARROW[dtype], (table, name)
    assert set(result.metrics) == {name for name, *_ in _core.SCHEMA["metrics"]}
    assert {name for name, *_ in _core.SCHEMA["stats"]} <= set(result.stats)
    assert list(result.packets["fate"].cat.categories) == _core.FATE_NAMES
    assert list(result.packets["kind"].cat.categories) == _core.KIND_NAMES


def test_the_trace_file_follows_the_schema(tmp_path: Path) -> None:
    run_dir = cclab.run(SMALL_DICT, trace=True).save(tmp_path / "run")
    schema = pq.read_schema(run_dir / "trace.parquet")
    # The declared columns first, then the controllers' own (the `cc_*` family), all float.
    fixed = [c for c in _core.SCHEMA["trace"] if not c[0].endswith("*")]
    assert schema.names[: len(fixed)] == [name for name, *_ in fixed]
    for name, dtype, *_ in fixed:
        arrow = schema.field(name).type
        if name in ("mode", "ca_state"):
            assert pa.types.is_dictionary(arrow)  # a categorical of mode or state names
        else:
            assert str(arrow) == ARROW[dtype], name
    extra = schema.names[len(fixed) :]
    assert extra and all(n.startswith("cc_") for n in extra)
    assert all(str(schema.field(n).type) == "double" for n in extra)


def test_analysis_frames_have_the_run_columns() -> None:
    analysis = analyze_packets(
        np.array([0, 1]),
        np.array([1500, 1500]),
        np.array([0, 10]),
        np.array([5_000_000, _core.NEVER], dtype=np.uint64),
        np.array([_core.FATE["delivered"], _core.FATE["queue"]]),
        capacity_mbps=12.0,
        schemes=["cubic"],
    )
    for table, frame in (
        ("summary", analysis.summary),
        ("timeseries", analysis.timeseries),
        ("jain", analysis.jain),
    ):
        assert list(frame.columns) == [name for name, *_ in _core.SCHEMA[table]], table
    assert list(analysis.summary["scheme"]) == ["cubic", "", "total"]
    assert analysis.summary["flow"].isna().tolist() == [False, False, True]


def test_codes_are_indexed_by_name_and_never_is_the_largest_u64() -> None:
    assert _core.NEVER == np.iinfo(np.uint64).max == cclab.NEVER
    assert [_core.FATE[name] for name in _core.FATE_NAMES] == list(range(len(_core.FATE_NAMES)))
    assert [_core.KIND[name] for name in _core.KIND_NAMES] == [0, 1]


def test_unit_parsers_are_the_cores() -> None:
    assert _core.parse_duration("1.5s") == 1_500_000_000
    assert _core.parse_duration("250us") == 250_000
    assert _core.parse_duration("0") == 0
    assert _core.parse_rate("2640kbps") == 2_640_000
    assert _core.parse_rate("1.5Gbps") == 1_500_000_000
    assert _core.parse_size("64KiB") == 65_536
    for parse, text in (
        (_core.parse_duration, "10"),
        (_core.parse_rate, "46"),
        (_core.parse_size, "lots"),
    ):
        with pytest.raises(ValueError, match=text):
            parse(text)
