"""The archive's index: SQL over every run and experiment directory under the archive root, so
that "every Copa run on 46 Mbit/s links" is one query.

The directories are the truth. Each table's rows are one DuckDB query straight over the
directories' files — `meta.json` and `experiment.json` read as JSON, `summary.parquet` as
Parquet; only the link's values come from `scenario.toml` through Python, as DuckDB reads no
TOML. Reading every directory for every query costs time in proportion to the archive (measured
on a loaded 2-core machine: 0.4 s for 300 runs and 7 s for 3,000, against 0.04 s and 0.2 s from a
cache), so the rows are kept in `<root>/index.duckdb`, and a query reads again only the
directories that are new, changed (by their `meta.json` / `experiment.json` stamps) or gone.
`rebuild=True` (`cclab runs --rebuild`) deletes that file first. Only complete runs appear: a
directory whose `meta.json` is missing or does not say `"complete": true` (a run interrupted
half-way, a hidden `.partial-` staging directory), or a run of an experiment that is not
complete, never does. Queries run on a read-only connection, so no query can change the index;
when the file cannot be had (read-only archive, another process writing it), the same tables are
built in memory.

Tables (`cclab runs --sql` sees them all):
- `runs`: one row per complete run, with its scheme(s), seed, engine, the link it ran on
  (`rate_mbps`, `delay_ms`, `queue`, `aqm`, `link_loss`, `trace`), its duration, and its whole-run
  figures (`throughput_mbps`, `delay_p95_ms`, `queueing_p95_ms`, `loss_pct`, `utilisation`,
  `jain_median`, `jain_counted`, `capacity_mbps`), and for request workloads the FCT figures
  (`requests_completed`, `fct_median_ms`, `fct_p99_ms`, `slowdown_median`, `slowdown_p99` over
  all requests, `small_slowdown_median` and `small_slowdown_p99` for those < 10 KB; NULL
  without); `experiment` names the experiment it belongs
  to, if any, and `status` is what the experiment recorded ("ok", or "invalid" for an imported
  Pantheon run that the Pantheon's own analysis would discard);
- `flows`: one row per flow of each run (its summary row);
- `experiments`: one row per complete experiment;
- `sweeps`: one row per complete sweep (an experiment of kind "sweep", `cclab sweep`): its
  axes, grid (JSON), points, schemes and runs. A sweep's runs are in `runs` with their
  `sweep_point` and `swept` values (a MAP from key to the value as given:
  `swept['link.rate'] = '10Mbps'`), and `sweep_runs` has the same values as columns, one per
  swept key of any sweep (`SELECT * FROM runs JOIN sweep_runs USING (run_id) WHERE
  "link.rate" = '10Mbps'`); it is rebuilt whenever the index changes.
"""

from __future__ import annotations

import tomllib
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from cclab import _core
from cclab.archive import META_FILE, runs_root
from cclab.archive_lookup import experiment_runs
from cclab.experiment_dir import EXPERIMENT_FILE
from cclab.scenario_values import duration_ms, rate_mbps

INDEX_FILE = "index.duckdb"
#: Bumped whenever the tables change shape; an index of another version is rebuilt.
INDEX_VERSION = 6
SUMMARY_FILE = "summary.parquet"
SCENARIO_FILE = "scenario.toml"

#: The text of a JSON file that says `"complete": true` (the marker of a whole directory).
_COMPLETE = (
    "json_type({j}, '$.complete') = 'BOOLEAN' AND json_extract_string({j}, '$.complete') = 'true'"
)


def _metric(key: str, otherwise: str) -> str:
    """A whole-run figure from meta.json's `metrics`, which wins when it is there even as null
    (a NaN written as strict JSON); `otherwise` when it is not."""
    path = f"'$.metrics.{key}'"
    value = f"TRY_CAST(json_extract_string(m.j, {path}) AS DOUBLE)"
    return f"CASE WHEN json_extract(m.j, {path}) IS NOT NULL THEN {value} ELSE {otherwise} END"


#: The `runs` table: (column, DuckDB type, its value in `_RUNS_QUERY`). `d` is the directory
#: (its id, path, experiment and link, from `_fresh_runs`), `m.j` its meta.json, `t` the total
#: row of its summary, `f` its flows, `p` the experiment's record of the run.
_RUNS = [
    ("run_id", "VARCHAR PRIMARY KEY", "d.run_id"),
    ("path", "VARCHAR", "d.path"),
    ("experiment", "VARCHAR", "d.experiment"),
    ("name", "VARCHAR", "json_extract_string(m.j, '$.name')"),
    ("scheme", "VARCHAR", "coalesce(nullif(p.scheme, ''), array_to_string(f.schemes, '+'))"),
    ("schemes", "VARCHAR[]", "coalesce(f.schemes, [])"),
    ("repetition", "INTEGER", "p.repetition"),
    ("status", "VARCHAR", "coalesce(p.status, 'ok')"),
    ("sweep_point", "INTEGER", "p.point"),
    ("swept", "MAP(VARCHAR, VARCHAR)", "p.swept"),
    ("seed", "BIGINT", "json_extract_string(m.j, '$.seed')"),
    ("engine", "VARCHAR", "json_extract_string(m.j, '$.engine')"),
    ("started_at", "TIMESTAMPTZ", "json_extract_string(m.j, '$.started_at')"),
    ("wall_secs", "DOUBLE", "json_extract_string(m.j, '$.wall_secs')"),
    ("duration_s", "DOUBLE", "json_extract_string(m.j, '$.simulated_secs')"),
    ("rate_mbps", "DOUBLE", "d.rate_mbps"),
    ("delay_ms", "DOUBLE", "d.delay_ms"),
    ("queue", "VARCHAR", "d.queue"),
    ("aqm", "VARCHAR", "d.aqm"),
    ("link_loss", "DOUBLE", "d.link_loss"),
    ("trace", "VARCHAR", "d.trace"),
    ("n_flows", "INTEGER", "coalesce(f.n_flows, 0)"),
    ("throughput_mbps", "DOUBLE", "t.throughput_mbps"),
    ("delay_p95_ms", "DOUBLE", "t.delay_p95_ms"),
    ("queueing_p95_ms", "DOUBLE", "t.queueing_p95_ms"),
    ("loss_pct", "DOUBLE", "t.loss_pct"),
    ("utilisation", "DOUBLE", _metric("utilisation", "t.utilisation")),
    ("jain_median", "DOUBLE", _metric("jain_median", "t.jain_median")),
    ("jain_counted", "DOUBLE", _metric("jain_counted", "t.jain_counted")),
    ("capacity_mbps", "DOUBLE", "json_extract_string(m.j, '$.metrics.capacity_mbps')"),
    # Request workloads: meta.json's `fct` (the core's `fct` table by size bucket).
    ("requests_completed", "BIGINT", "json_extract_string(m.j, '$.fct.all.completed')"),
    ("fct_median_ms", "DOUBLE", "json_extract_string(m.j, '$.fct.all.fct_median_ms')"),
    ("fct_p99_ms", "DOUBLE", "json_extract_string(m.j, '$.fct.all.fct_p99_ms')"),
    ("slowdown_median", "DOUBLE", "json_extract_string(m.j, '$.fct.all.slowdown_median')"),
    ("slowdown_p99", "DOUBLE", "json_extract_string(m.j, '$.fct.all.slowdown_p99')"),
    ("small_slowdown_median", "DOUBLE", "json_extract_string(m.j, '$.fct.small.slowdown_median')"),
    ("small_slowdown_p99", "DOUBLE", "json_extract_string(m.j, '$.fct.small.slowdown_p99')"),
    ("complete", "BOOLEAN", "true"),
    ("cclab_version", "VARCHAR", "json_extract_string(m.j, '$.cclab_version')"),
    ("host", "VARCHAR", "json_extract_string(m.j, '$.host')"),
]
#: The `flows` table: each run's per-flow rows of `summary.parquet`.
#: The column types of the core's schema (`_core.SCHEMA`) in DuckDB.
_DUCKDB_TYPES = {
    "uint8": "UTINYINT",
    "uint32": "UINTEGER",
    "uint64": "UBIGINT",
    "int64": "BIGINT",
    "float64": "DOUBLE",
    "bool": "BOOLEAN",
    "str": "VARCHAR",
}
FLOW_SCHEMA = [("run_id", "VARCHAR")] + [
    (name, _DUCKDB_TYPES[dtype]) for name, dtype, _unit, _doc in _core.SCHEMA["summary"]
]
#: The `experiments` table, like `_RUNS`: `d` is the directory, `e.j` its experiment.json and
#: `r` the count of its runs' records and of those not "ok".
_EXPERIMENTS = [
    ("experiment", "VARCHAR PRIMARY KEY", "d.entry_id"),
    ("path", "VARCHAR", "d.path"),
    ("name", "VARCHAR", "json_extract_string(e.j, '$.name')"),
    ("kind", "VARCHAR", "json_extract_string(e.j, '$.kind')"),
    ("engine", "VARCHAR", "json_extract_string(e.j, '$.engine')"),
    ("schemes", "VARCHAR[]", "coalesce(json_extract_string(e.j, '$.schemes[*]'), [])"),
    ("runs", "INTEGER", "coalesce(r.runs, 0)"),
    ("failed", "INTEGER", "coalesce(r.failed, 0)"),
    ("runs_per_scheme", "INTEGER", "json_extract_string(e.j, '$.runs_per_scheme')"),
    ("started_at", "TIMESTAMPTZ", "json_extract_string(e.j, '$.started_at')"),
    ("wall_secs", "DOUBLE", "json_extract_string(e.j, '$.wall_secs')"),
]
#: The `sweeps` table, like `_EXPERIMENTS`, from the experiment.json of a sweep.
_SWEEPS = [
    ("sweep", "VARCHAR PRIMARY KEY", "d.entry_id"),
    ("path", "VARCHAR", "d.path"),
    ("name", "VARCHAR", "json_extract_string(e.j, '$.name')"),
    ("scenario", "VARCHAR", "json_extract_string(e.j, '$.scenario')"),
    ("engine", "VARCHAR", "json_extract_string(e.j, '$.engine')"),
    ("axes", "VARCHAR[]", "coalesce(json_extract_string(e.j, '$.axes[*]'), [])"),
    ("grid", "JSON", "json_extract(e.j, '$.grid')"),
    ("points", "INTEGER", "json_extract_string(e.j, '$.points')"),
    ("schemes", "VARCHAR[]", "coalesce(json_extract_string(e.j, '$.schemes[*]'), [])"),
    ("runs_per_point", "INTEGER", "json_extract_string(e.j, '$.runs_per_point')"),
    ("runs", "INTEGER", "coalesce(r.runs, 0)"),
    ("failed", "INTEGER", "coalesce(r.failed, 0)"),
    ("started_at", "TIMESTAMPTZ", "json_extract_string(e.j, '$.started_at')"),
    ("wall_secs", "DOUBLE", "json_extract_string(e.j, '$.wall_secs')"),
]
#: The key columns of `sweep_runs`; one column per swept key follows.
SWEEP_RUN_KEYS = [("run_id", "VARCHAR"), ("sweep", "VARCHAR"), ("point", "INTEGER")]
RUN_COLUMNS = [name for name, _, _ in _RUNS]
FLOW_COLUMNS = [name for name, _ in FLOW_SCHEMA]

#: What `cclab runs` shows by default.
LISTING_COLUMNS = [
    "run_id",
    "scheme",
    "seed",
    "engine",
    "rate_mbps",
    "delay_ms",
    "throughput_mbps",
    "delay_p95_ms",
    "loss_pct",
    "utilisation",
    "started_at",
]


def _select(columns: list[tuple[str, str, str]]) -> str:
    """The SELECT list of a table: every value cast to its column's type. TRY_CAST, so that
    one odd field (a seed written as text) leaves that cell empty, not the whole index."""
    return ",\n    ".join(
        f"TRY_CAST({value} AS {kind.removesuffix(' PRIMARY KEY')}) AS {name}"
        for name, kind, value in columns
    )


#: The summaries of the runs to read (a run's summary is one row per flow and a total row).
_SUMMARIES_QUERY = """
CREATE TEMP TABLE fresh_summaries AS
SELECT * FROM read_parquet($files, filename = true, union_by_name = true, file_row_number = true)
"""


def _complete_summaries(con: duckdb.DuckDBPyConnection) -> None:
    """Gives `fresh_summaries` every column of the core's summary, so that runs written before
    a column existed index with it empty. Such runs stored loss as a fraction named `loss`;
    it becomes `loss_pct`, the unit every table uses now."""
    present = {row[0] for row in con.execute("DESCRIBE fresh_summaries").fetchall()}
    for name, kind in FLOW_SCHEMA[1:]:
        if name not in present:
            con.execute(f"ALTER TABLE fresh_summaries ADD COLUMN {name} {kind}")
    if "loss" in present:
        con.execute("UPDATE fresh_summaries SET loss_pct = 100 * loss WHERE loss_pct IS NULL")
        con.execute("ALTER TABLE fresh_summaries DROP COLUMN loss")


#: One row per complete run among the directories registered as `fresh_runs`.
_RUNS_QUERY = f"""
WITH
m AS (SELECT filename, CAST(content AS JSON) AS j FROM read_text($metas) WHERE json_valid(content)),
s AS (SELECT * FROM fresh_summaries),
t AS (
    SELECT * FROM s WHERE flow IS NULL
    QUALIFY row_number() OVER (PARTITION BY filename ORDER BY file_row_number) = 1
),
first_of_scheme AS (
    SELECT filename, CAST(scheme AS VARCHAR) AS scheme, min(file_row_number) AS first
    FROM s WHERE flow IS NOT NULL GROUP BY ALL
),
f AS (
    SELECT filename, n_flows, schemes
    FROM (SELECT filename, count(*) AS n_flows FROM s WHERE flow IS NOT NULL GROUP BY filename)
    JOIN (SELECT filename, list(scheme ORDER BY first) AS schemes FROM first_of_scheme
          GROUP BY filename) USING (filename)
),
e AS (
    SELECT filename, CAST(content AS JSON) AS j FROM read_text($experiments)
    WHERE json_valid(content) AND {_COMPLETE.format(j="CAST(content AS JSON)")}
),
p AS (
    SELECT filename,
           regexp_extract(rtrim(json_extract_string(r, '$.dir'), '/'), '[^/]*$') AS run_name,
           json_extract_string(r, '$.scheme') AS scheme,
           TRY_CAST(json_extract_string(r, '$.repetition') AS INTEGER) AS repetition,
           json_extract_string(r, '$.status') AS status,
           TRY_CAST(json_extract_string(r, '$.point') AS INTEGER) AS point,
           TRY_CAST(json_extract(r, '$.swept') AS MAP(VARCHAR, VARCHAR)) AS swept
    FROM (SELECT filename, unnest(json_extract(j, '$.runs[*]')) AS r FROM e)
    QUALIFY row_number() OVER (PARTITION BY filename, run_name) = 1
)
SELECT
    {_select(_RUNS)}
FROM fresh_runs AS d
JOIN m ON m.filename = d.meta_file
LEFT JOIN t ON t.filename = d.summary_file
LEFT JOIN f ON f.filename = d.summary_file
LEFT JOIN e ON e.filename = d.experiment_file
LEFT JOIN p ON p.filename = d.experiment_file AND p.run_name = d.run_name
WHERE {_COMPLETE.format(j="m.j")} AND (d.experiment_file IS NULL OR e.filename IS NOT NULL)
"""

#: The per-flow summary rows of the runs just inserted into `runs`. A column that no summary
#: file has is left empty by INSERT BY NAME.
_FLOWS_QUERY = f"""
SELECT d.run_id, s.* EXCLUDE (filename)
FROM (
    SELECT filename, COLUMNS('^({"|".join(FLOW_COLUMNS[1:])})$')
    FROM fresh_summaries WHERE flow IS NOT NULL
) AS s
JOIN fresh_runs AS d ON s.filename = d.summary_file
WHERE d.run_id IN (SELECT run_id FROM runs)
"""

#: One row per complete experiment among the directories registered as `fresh_experiments`
#: (`{columns}`: the table's SELECT list; `{only}`: a further condition on its experiment.json).
_EXPERIMENT_ROWS = """
WITH
e AS (SELECT filename, CAST(content AS JSON) AS j FROM read_text($files) WHERE json_valid(content)),
r AS (
    SELECT filename, count(*) AS runs,
           count(*) FILTER (
               WHERE json_extract_string(r, '$.status') IS DISTINCT FROM 'ok'
           ) AS failed
    FROM (SELECT filename, unnest(json_extract(j, '$.runs[*]')) AS r FROM e)
    GROUP BY filename
)
SELECT
    {columns}
FROM fresh_experiments AS d
JOIN e ON e.filename = d.file
LEFT JOIN r ON r.filename = d.file
WHERE {complete} AND {only}
"""
_EXPERIMENTS_QUERY = _EXPERIMENT_ROWS.format(
    columns=_select(_EXPERIMENTS), complete=_COMPLETE.format(j="e.j"), only="true"
)
_SWEEPS_QUERY = _EXPERIMENT_ROWS.format(
    columns=_select(_SWEEPS),
    complete=_COMPLETE.format(j="e.j"),
    only="json_extract_string(e.j, '$.kind') = 'sweep'",
)


class IndexQueryError(ValueError):
    """A `--where` or `--sql` that DuckDB could not run."""


@dataclass(frozen=True)
class _Entry:
    """A directory the index knows: a run or an experiment, with the stamp of its marker(s)."""

    entry_id: str
    kind: str
    path: Path
    stamp: str
    experiment: str | None = None


def _stamp(marker: Path) -> str | None:
    try:
        st = marker.stat()
    except OSError:
        return None
    return f"{st.st_mtime_ns}:{st.st_size}"


def _scan(root: Path) -> dict[str, _Entry]:
    """Every candidate directory with a marker file. Whether it is complete is the query's to
    say; a run of an experiment carries its experiment's stamp too, so that it is read again
    when the experiment's record of it changes (or the experiment becomes complete)."""
    found: dict[str, _Entry] = {}
    if not root.is_dir():
        return found
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        experiment_stamp = _stamp(entry / EXPERIMENT_FILE)
        if experiment_stamp is not None:
            found[entry.name] = _Entry(entry.name, "experiment", entry, experiment_stamp)
            for run in experiment_runs(entry):
                stamp = _stamp(run / META_FILE)
                if stamp is not None:
                    run_id = f"{entry.name}/{run.parent.name}/{run.name}"
                    found[run_id] = _Entry(
                        run_id, "run", run, f"{stamp}|{experiment_stamp}", experiment=entry.name
                    )
            continue
        stamp = _stamp(entry / META_FILE)
        if stamp is not None:
            found[entry.name] = _Entry(entry.name, "run", entry, stamp)
    return found


def _link(run: Path) -> dict[str, Any]:
    """The link's values from the run's `scenario.toml` (empty when it cannot be read)."""
    try:
        link = tomllib.loads((run / SCENARIO_FILE).read_text()).get("link", {})
    except (OSError, tomllib.TOMLDecodeError):
        link = {}
    queue, loss = link.get("queue"), link.get("loss")
    return {
        "rate_mbps": rate_mbps(link.get("rate")),
        "delay_ms": duration_ms(link.get("delay")),
        "queue": None if queue is None else str(queue),
        "aqm": link.get("aqm"),
        "link_loss": float(loss) if isinstance(loss, int | float) else None,
        "trace": link.get("trace"),
    }


#: What `_fresh_runs` hands to the SQL for each run directory to read.
_FRESH_RUNS = pa.schema(
    [
        ("run_id", pa.string()),
        ("run_name", pa.string()),
        ("path", pa.string()),
        ("experiment", pa.string()),
        ("meta_file", pa.string()),
        ("summary_file", pa.string()),
        ("experiment_file", pa.string()),
        ("rate_mbps", pa.float64()),
        ("delay_ms", pa.float64()),
        ("queue", pa.string()),
        ("aqm", pa.string()),
        ("link_loss", pa.float64()),
        ("trace", pa.string()),
    ]
)
_FRESH_EXPERIMENTS = pa.schema(
    [("entry_id", pa.string()), ("path", pa.string()), ("file", pa.string())]
)


def _fresh_runs(runs: list[_Entry]) -> pa.Table:
    """The run directories to read, with what the SQL does not read itself (ids, file names,
    the link)."""
    rows = []
    for e in runs:
        experiment_file = None
        if e.experiment is not None:
            experiment_file = str(e.path.parent.parent / EXPERIMENT_FILE)
        rows.append(
            {
                "run_id": e.entry_id,
                "run_name": e.path.name,
                "path": str(e.path.resolve()),
                "experiment": e.experiment,
                "meta_file": str(e.path / META_FILE),
                "summary_file": str(e.path / SUMMARY_FILE),
                "experiment_file": experiment_file,
                **_link(e.path),
            }
        )
    return pa.Table.from_pylist(rows, schema=_FRESH_RUNS)


def _fresh_experiments(experiments: list[_Entry]) -> pa.Table:
    rows = [
        {
            "entry_id": e.entry_id,
            "path": str(e.path.resolve()),
            "file": str(e.path / EXPERIMENT_FILE),
        }
        for e in experiments
    ]
    return pa.Table.from_pylist(rows, schema=_FRESH_EXPERIMENTS)


def _insert(
    con: duckdb.DuckDBPyConnection, runs: pa.Table, experiments: pa.Table, fresh: list[_Entry]
) -> None:
    """Reads the directories registered as `fresh_runs` and `fresh_experiments` into the
    tables (the complete ones), and records every directory of `fresh` as read."""
    if len(runs):
        # Read once for both tables: opening the Parquet files is most of the time it takes.
        con.execute(_SUMMARIES_QUERY, {"files": runs["summary_file"].to_pylist()})
        _complete_summaries(con)
        experiment_files = sorted({f for f in runs["experiment_file"].to_pylist() if f})
        con.execute(
            f"INSERT INTO runs {_RUNS_QUERY}",
            {"metas": runs["meta_file"].to_pylist(), "experiments": experiment_files},
        )
        con.execute(f"INSERT INTO flows BY NAME {_FLOWS_QUERY}")
        con.execute("DROP TABLE fresh_summaries")
    if len(experiments):
        files = experiments["file"].to_pylist()
        con.execute(f"INSERT INTO experiments {_EXPERIMENTS_QUERY}", {"files": files})
        con.execute(f"INSERT INTO sweeps {_SWEEPS_QUERY}", {"files": files})
    # Complete or not: a directory is read again when its stamp changes (a run's meta.json
    # rewritten as complete, its experiment finished).
    con.execute(
        "INSERT INTO entries SELECT unnest($ids), unnest($stamps)",
        {"ids": [e.entry_id for e in fresh], "stamps": [e.stamp for e in fresh]},
    )


def _pivot_sweeps(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuilds `sweep_runs`: each sweep run's swept values as columns, one per key swept by
    any sweep in the archive (empty where a run's sweep did not sweep it)."""
    taken = {name for name, _ in SWEEP_RUN_KEYS}
    keys = [
        row[0]
        for row in con.execute(
            "SELECT DISTINCT unnest(map_keys(swept)) AS k FROM runs WHERE swept IS NOT NULL "
            "ORDER BY k"
        ).fetchall()
        if row[0] not in taken
    ]
    columns = "".join(f", swept[{_sql_text(k)}] AS {_sql_name(k)}" for k in keys)
    con.execute("DROP TABLE IF EXISTS sweep_runs")
    con.execute(
        "CREATE TABLE sweep_runs AS SELECT run_id, experiment AS sweep, sweep_point AS point"
        f"{columns} FROM runs WHERE swept IS NOT NULL"
    )


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_name(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _create_tables(con: duckdb.DuckDBPyConnection) -> None:
    tables = {
        "runs": [(name, kind) for name, kind, _ in _RUNS],
        "flows": FLOW_SCHEMA,
        "experiments": [(name, kind) for name, kind, _ in _EXPERIMENTS],
        "sweeps": [(name, kind) for name, kind, _ in _SWEEPS],
        "sweep_runs": SWEEP_RUN_KEYS,
        "entries": [("entry_id", "VARCHAR PRIMARY KEY"), ("stamp", "VARCHAR")],
    }
    for table in (*tables, "info"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    for table, schema in tables.items():
        columns = ", ".join(f"{name} {kind}" for name, kind in schema)
        con.execute(f"CREATE TABLE {table} ({columns})")
    con.execute("CREATE TABLE info (version INTEGER)")
    con.execute("INSERT INTO info VALUES (?)", [INDEX_VERSION])


def _version(con: duckdb.DuckDBPyConnection) -> int | None:
    try:
        row = con.execute("SELECT version FROM info").fetchone()
    except duckdb.Error:
        return None
    return None if row is None else int(row[0])


def _changes(
    con: duckdb.DuckDBPyConnection, found: dict[str, _Entry]
) -> tuple[list[str], list[_Entry]]:
    """The entries the index holds that are gone or changed, and the directories to read."""
    known = dict(con.execute("SELECT entry_id, stamp FROM entries").fetchall())
    stale = [k for k, stamp in known.items() if k not in found or found[k].stamp != stamp]
    fresh = [e for k, e in found.items() if known.get(k) != e.stamp]
    return stale, fresh


@contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        # A transaction that failed to write (a full disk) cannot be rolled back either; the
        # first error is the one that says why.
        with suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _sync(con: duckdb.DuckDBPyConnection, found: dict[str, _Entry]) -> None:
    """Brings the tables up to date with the directories `found`."""
    if _version(con) != INDEX_VERSION:
        _create_tables(con)
    stale, fresh = _changes(con, found)
    # Deleting a key and inserting it again in one transaction trips the primary-key check of
    # DuckDB before 1.2, so what is gone goes first, in a transaction of its own. An index left
    # between the two lacks those rows and their entries alike: the next query reads them.
    if stale:
        with _transaction(con):
            con.execute("CREATE TEMP TABLE gone AS SELECT unnest($ids) AS id", {"ids": stale})
            con.execute("DELETE FROM runs WHERE run_id IN (SELECT id FROM gone)")
            con.execute("DELETE FROM flows WHERE run_id IN (SELECT id FROM gone)")
            con.execute("DELETE FROM experiments WHERE experiment IN (SELECT id FROM gone)")
            con.execute("DELETE FROM sweeps WHERE sweep IN (SELECT id FROM gone)")
            con.execute("DELETE FROM entries WHERE entry_id IN (SELECT id FROM gone)")
            con.execute("DROP TABLE gone")
    if not fresh:
        if stale:
            with _transaction(con):
                _pivot_sweeps(con)
        return
    # A run without its summary is not whole (the summary is written before meta.json).
    runs = _fresh_runs([e for e in fresh if e.kind == "run" and (e.path / SUMMARY_FILE).is_file()])
    experiments = _fresh_experiments([e for e in fresh if e.kind == "experiment"])
    con.register("fresh_runs", runs)
    con.register("fresh_experiments", experiments)
    try:
        with _transaction(con):
            _insert(con, runs, experiments, fresh)
            _pivot_sweeps(con)
    finally:
        con.unregister("fresh_runs")
        con.unregister("fresh_experiments")


def _open(path: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection | None:
    """The index file, or None when it cannot be had (missing when read-only, a read-only
    archive, another process holding its lock, this process holding it open otherwise).
    Opened for writing, a file that DuckDB cannot read is replaced: the index is only a cache
    of the directories."""
    for attempt in range(2):
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as e:
            if read_only or attempt or "lock" in str(e).lower() or not path.exists():
                return None
            _remove(path)
        except (duckdb.Error, OSError):
            return None
    return None


class IndexWarning(UserWarning):
    """The archive's index file could not be updated; results come from the directories."""


def _write_failure(path: Path, error: duckdb.Error) -> str:
    text = str(error)
    for reason in ("No space left on device", "Read-only file system", "Permission denied"):
        if reason in text:
            break
    else:
        reason = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return (
        f"cannot update the archive index {path}: {reason}; "
        f"listing from the run directories in {path.parent} instead"
    )


def _remove(path: Path) -> None:
    with suppress(OSError):
        path.unlink(missing_ok=True)
        path.with_name(path.name + ".wal").unlink(missing_ok=True)


def _is_current(con: duckdb.DuckDBPyConnection, found: dict[str, _Entry]) -> bool:
    if _version(con) != INDEX_VERSION:
        return False
    try:
        stale, fresh = _changes(con, found)
    except duckdb.Error:
        return False
    return not stale and not fresh


def connect(root: str | Path | None = None, *, rebuild: bool = False) -> duckdb.DuckDBPyConnection:
    """A read-only connection to an up-to-date index of the archive at `root` (default:
    `$CCLAB_RUNS` or ./cclab-runs). `rebuild`: delete the index file first. The caller closes
    it."""
    root = Path(root) if root is not None else runs_root()
    found = _scan(root)
    path = root / INDEX_FILE
    if root.is_dir():
        if rebuild:
            _remove(path)
        # The common case, nothing changed, never takes the write lock, so that readers do
        # not shut each other out.
        con = _open(path, read_only=True)
        if con is not None:
            if _is_current(con, found):
                return con
            con.close()
        writer = _open(path, read_only=False)
        if writer is not None:
            try:
                _sync(writer, found)
            except duckdb.Error as e:
                # The index is a cache of the directories: when it cannot be written (a full
                # disk, a read-only archive), the query is answered from them, in memory.
                writer.close()
                writer = None
                _remove(path)
                warnings.warn(IndexWarning(_write_failure(path, e)), stacklevel=3)
            finally:
                if writer is not None:
                    writer.close()
            con = _open(path, read_only=True)
            if con is not None:
                return con
    con = duckdb.connect(":memory:")
    try:
        _sync(con, found)
    except BaseException:
        con.close()
        raise
    return con


def _frame(relation: duckdb.DuckDBPyRelation | None) -> pd.DataFrame:
    """A query's result as a DataFrame, through Arrow (DuckDB's own `.df()` trips pandas'
    deprecation warnings); a statement with no result gives an empty frame."""
    if relation is None:
        return pd.DataFrame()
    to_arrow = getattr(relation, "to_arrow_table", None) or relation.arrow
    return to_arrow().to_pandas()


def _query(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> pd.DataFrame:
    try:
        return _frame(con.sql(sql, params=params or None))
    except duckdb.Error as e:
        raise IndexQueryError(str(e).strip()) from None


def runs(
    *,
    scheme: str | None = None,
    where: str | None = None,
    sql: str | None = None,
    root: str | Path | None = None,
    rebuild: bool = False,
) -> pd.DataFrame:
    """The archive's complete runs as a DataFrame (all columns of the `runs` table), newest
    first. `scheme`: runs with a flow of that scheme; `where`: an SQL condition on the `runs`
    columns (`"rate_mbps = 46 AND loss_pct < 1"`). `sql`: any read-only query over the `runs`,
    `flows` and `experiments` tables instead. `rebuild`: delete the index and re-read every
    directory first."""
    con = connect(root, rebuild=rebuild)
    try:
        if sql is not None:
            return _query(con, sql, [])
        conditions, params = [], []
        if scheme is not None:
            conditions.append("(scheme = ? OR list_contains(schemes, ?))")
            params += [scheme, scheme]
        if where:
            conditions.append(f"({where})")
        clause = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        return _query(con, f"SELECT * FROM runs {clause} ORDER BY started_at DESC, run_id", params)
    finally:
        con.close()


def experiments(*, root: str | Path | None = None, rebuild: bool = False) -> pd.DataFrame:
    """The archive's complete experiments, newest first."""
    con = connect(root, rebuild=rebuild)
    try:
        return _query(con, "SELECT * FROM experiments ORDER BY started_at DESC", [])
    finally:
        con.close()
