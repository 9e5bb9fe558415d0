"""The archive's index: a DuckDB database over every run and experiment directory under the
archive root, so that "every Copa run on 46 Mbit/s links" is one query.

The directories are the truth; the index is a cache of them. It lives in
`<root>/index.duckdb`, is brought up to date on every query (new, changed and vanished
directories are found by their `meta.json` / `experiment.json` modification times), and
`rebuild=True` (`cclab runs --rebuild`) throws it away and reads every directory again. Only
complete runs are indexed: a directory whose `meta.json` is missing or does not say
`"complete": true` (a run interrupted half-way, a hidden `.partial-` staging directory) never
appears. When the index file cannot be written (read-only archive, another process holding
it), the same tables are built in memory.

Tables (`cclab runs --sql` sees them all):
- `runs`: one row per complete run, with its scheme(s), seed, engine, the link it ran on
  (`rate_mbps`, `delay_ms`, `queue`, `aqm`, `link_loss`, `trace`), its duration, and its whole-run
  figures (`throughput_mbps`, `delay_p95_ms`, `queueing_p95_ms`, `loss`, `utilisation`,
  `jain_median`, `capacity_mbps`); `experiment` names the experiment it belongs to, if any, and
  `status` is what the experiment recorded ("ok", or "invalid" for an imported Pantheon run that
  the Pantheon's own analysis would discard);
- `flows`: one row per flow of each run (its summary row);
- `experiments`: one row per complete experiment.
"""

from __future__ import annotations

import json
import tomllib
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from cclab.archive import META_FILE, runs_root
from cclab.archive_lookup import experiment_runs
from cclab.experiment_dir import EXPERIMENT_FILE, read_experiment
from cclab.scenario_values import duration_ms, rate_mbps

INDEX_FILE = "index.duckdb"
#: Bumped whenever the tables change shape; an index of another version is rebuilt.
INDEX_VERSION = 2

#: (column, DuckDB type) of each table.
RUN_SCHEMA = [
    ("run_id", "VARCHAR PRIMARY KEY"),
    ("path", "VARCHAR"),
    ("experiment", "VARCHAR"),
    ("name", "VARCHAR"),
    ("scheme", "VARCHAR"),
    ("schemes", "VARCHAR[]"),
    ("repetition", "INTEGER"),
    ("status", "VARCHAR"),
    ("seed", "BIGINT"),
    ("engine", "VARCHAR"),
    ("started_at", "TIMESTAMPTZ"),
    ("wall_secs", "DOUBLE"),
    ("duration_s", "DOUBLE"),
    ("rate_mbps", "DOUBLE"),
    ("delay_ms", "DOUBLE"),
    ("queue", "VARCHAR"),
    ("aqm", "VARCHAR"),
    ("link_loss", "DOUBLE"),
    ("trace", "VARCHAR"),
    ("n_flows", "INTEGER"),
    ("throughput_mbps", "DOUBLE"),
    ("delay_p95_ms", "DOUBLE"),
    ("queueing_p95_ms", "DOUBLE"),
    ("loss", "DOUBLE"),
    ("utilisation", "DOUBLE"),
    ("jain_median", "DOUBLE"),
    ("capacity_mbps", "DOUBLE"),
    ("complete", "BOOLEAN"),
    ("cclab_version", "VARCHAR"),
    ("host", "VARCHAR"),
]
FLOW_SCHEMA = [
    ("run_id", "VARCHAR"),
    ("flow", "INTEGER"),
    ("scheme", "VARCHAR"),
    ("throughput_mbps", "DOUBLE"),
    ("delay_p95_ms", "DOUBLE"),
    ("queueing_p95_ms", "DOUBLE"),
    ("delay_mean_ms", "DOUBLE"),
    ("delay_min_ms", "DOUBLE"),
    ("loss", "DOUBLE"),
    ("packets_sent", "BIGINT"),
    ("packets_delivered", "BIGINT"),
    ("packets_dropped", "BIGINT"),
    ("bytes_sent", "BIGINT"),
    ("bytes_delivered", "BIGINT"),
    ("retransmissions", "BIGINT"),
]
EXPERIMENT_SCHEMA = [
    ("experiment", "VARCHAR PRIMARY KEY"),
    ("path", "VARCHAR"),
    ("name", "VARCHAR"),
    ("kind", "VARCHAR"),
    ("engine", "VARCHAR"),
    ("schemes", "VARCHAR[]"),
    ("runs", "INTEGER"),
    ("failed", "INTEGER"),
    ("runs_per_scheme", "INTEGER"),
    ("started_at", "TIMESTAMPTZ"),
    ("wall_secs", "DOUBLE"),
]
ENTRY_SCHEMA = [("entry_id", "VARCHAR PRIMARY KEY"), ("kind", "VARCHAR"), ("stamp", "VARCHAR")]
TABLES = {
    "runs": RUN_SCHEMA,
    "flows": FLOW_SCHEMA,
    "experiments": EXPERIMENT_SCHEMA,
    "entries": ENTRY_SCHEMA,
}
RUN_COLUMNS = [name for name, _ in RUN_SCHEMA]
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
    "loss",
    "utilisation",
    "started_at",
]


class IndexQueryError(ValueError):
    """A `--where` or `--sql` that DuckDB could not run."""


@dataclass(frozen=True)
class _Entry:
    """A directory the index knows: a run or an experiment, with the stamp of its marker."""

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
    """Every candidate directory with a marker file. Whether it is complete is checked when it
    is read, so an incomplete one is looked at again when its marker changes."""
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
                    found[run_id] = _Entry(run_id, "run", run, stamp, experiment=entry.name)
            continue
        stamp = _stamp(entry / META_FILE)
        if stamp is not None:
            found[entry.name] = _Entry(entry.name, "run", entry, stamp)
    return found


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((path / META_FILE).read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("complete") is True else None


def _scenario(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads((path / "scenario.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def _float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _run_rows(
    entries: list[_Entry], experiments: dict[str, dict[str, Any]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The `runs` and `flows` rows of some run directories (the complete ones)."""
    metas = {e.entry_id: m for e in entries if (m := _read_meta(e.path)) is not None}
    complete = [e for e in entries if e.entry_id in metas]
    if not complete:
        return pd.DataFrame(columns=RUN_COLUMNS), pd.DataFrame(columns=FLOW_COLUMNS)
    files = [str(e.path / "summary.parquet") for e in complete]
    summaries = _frame(
        duckdb.sql(
            "SELECT * FROM read_parquet($files, filename = true, union_by_name = true)",
            params={"files": files},
        )
    )
    by_file = dict(tuple(summaries.groupby("filename", sort=False)))
    run_rows = []
    flow_frames = []
    for e in complete:
        meta = metas[e.entry_id]
        summary = by_file.get(str(e.path / "summary.parquet"), pd.DataFrame())
        per_flow = summary[summary["flow"].notna()] if len(summary) else summary
        totals = summary[summary["flow"].isna()] if len(summary) else summary
        total = totals.iloc[0] if len(totals) else pd.Series(dtype=object)
        schemes = list(dict.fromkeys(str(s) for s in per_flow.get("scheme", [])))
        planned = _planned(experiments.get(e.experiment or ""), e.path.name)
        scenario = _scenario(e.path)
        link = scenario.get("link", {})
        metrics = meta.get("metrics") or {}
        run_rows.append(
            {
                "run_id": e.entry_id,
                "path": str(e.path.resolve()),
                "experiment": e.experiment,
                "name": meta.get("name"),
                "scheme": planned.get("scheme") or "+".join(schemes),
                "schemes": schemes,
                "repetition": planned.get("repetition"),
                "status": planned.get("status", "ok"),
                "seed": meta.get("seed"),
                "engine": meta.get("engine"),
                "started_at": meta.get("started_at"),
                "wall_secs": _float(meta.get("wall_secs")),
                "duration_s": _float(meta.get("simulated_secs")),
                "rate_mbps": rate_mbps(link.get("rate")),
                "delay_ms": duration_ms(link.get("delay")),
                "queue": None if link.get("queue") is None else str(link.get("queue")),
                "aqm": link.get("aqm"),
                "link_loss": _float(link.get("loss")),
                "trace": link.get("trace"),
                "n_flows": len(per_flow),
                "throughput_mbps": _float(total.get("throughput_mbps")),
                "delay_p95_ms": _float(total.get("delay_p95_ms")),
                "queueing_p95_ms": _float(total.get("queueing_p95_ms")),
                "loss": _float(total.get("loss")),
                "utilisation": _float(metrics.get("utilisation", total.get("utilisation"))),
                "jain_median": _float(metrics.get("jain_median", total.get("jain_median"))),
                "capacity_mbps": _float(metrics.get("capacity_mbps")),
                "complete": True,
                "cclab_version": meta.get("cclab_version"),
                "host": meta.get("host"),
            }
        )
        if len(per_flow):
            flows = per_flow.reindex(columns=FLOW_COLUMNS[1:]).copy()
            flows.insert(0, "run_id", e.entry_id)
            flow_frames.append(flows)
    runs = pd.DataFrame(run_rows, columns=RUN_COLUMNS)
    flows = (
        pd.concat(flow_frames, ignore_index=True)
        if flow_frames
        else pd.DataFrame(columns=FLOW_COLUMNS)
    )
    return runs, flows


def _planned(experiment: dict[str, Any] | None, run_name: str) -> dict[str, Any]:
    """The experiment's record of one of its runs (scheme, repetition, seed), if any."""
    for entry in (experiment or {}).get("runs", []):
        if Path(str(entry.get("dir", ""))).name == run_name:
            return entry
    return {}


def _experiment_row(entry: _Entry, meta: dict[str, Any]) -> dict[str, Any]:
    runs = meta.get("runs", [])
    return {
        "experiment": entry.entry_id,
        "path": str(entry.path.resolve()),
        "name": meta.get("name"),
        "kind": meta.get("kind"),
        "engine": meta.get("engine"),
        "schemes": list(meta.get("schemes") or []),
        "runs": len(runs),
        "failed": sum(1 for r in runs if r.get("status") != "ok"),
        "runs_per_scheme": meta.get("runs_per_scheme"),
        "started_at": meta.get("started_at"),
        "wall_secs": _float(meta.get("wall_secs")),
    }


def _create_tables(con: duckdb.DuckDBPyConnection) -> None:
    for table in (*TABLES, "info"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    for table, schema in TABLES.items():
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


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
    if len(frame):
        con.register("incoming", frame)
        try:
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM incoming")
        finally:
            con.unregister("incoming")


def _sync(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """Brings the tables up to date with the directories under `root`."""
    found = _scan(root)
    known = dict(con.execute("SELECT entry_id, stamp FROM entries").fetchall())
    stale = [k for k, stamp in known.items() if k not in found or found[k].stamp != stamp]
    fresh = [e for k, e in found.items() if known.get(k) != e.stamp]
    if not stale and not fresh:
        return
    con.execute("BEGIN TRANSACTION")
    try:
        if stale:
            con.execute("CREATE TEMP TABLE gone AS SELECT unnest($ids) AS id", {"ids": stale})
            con.execute("DELETE FROM runs WHERE run_id IN (SELECT id FROM gone)")
            con.execute("DELETE FROM flows WHERE run_id IN (SELECT id FROM gone)")
            con.execute("DELETE FROM experiments WHERE experiment IN (SELECT id FROM gone)")
            con.execute("DELETE FROM entries WHERE entry_id IN (SELECT id FROM gone)")
            con.execute("DROP TABLE gone")
        experiment_metas = {
            k: meta
            for k, e in found.items()
            if e.kind == "experiment" and (meta := read_experiment(e.path)) is not None
        }
        fresh_runs = [
            e
            for e in fresh
            if e.kind == "run" and (e.experiment is None or e.experiment in experiment_metas)
        ]
        runs, flows = _run_rows(fresh_runs, experiment_metas)
        _insert(con, "runs", runs)
        _insert(con, "flows", flows)
        experiments = [
            _experiment_row(e, experiment_metas[e.entry_id])
            for e in fresh
            if e.kind == "experiment" and e.entry_id in experiment_metas
        ]
        _insert(con, "experiments", pd.DataFrame(experiments))
        # A run of an experiment that is not complete yet is not recorded, so that it is read
        # once the experiment completes (its own stamp does not change then).
        considered = [e for e in fresh if e.kind == "experiment"] + fresh_runs
        entries = pd.DataFrame(
            [{"entry_id": e.entry_id, "kind": e.kind, "stamp": e.stamp} for e in considered],
            columns=["entry_id", "kind", "stamp"],
        )
        _insert(con, "entries", entries)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _open_file(path: Path) -> duckdb.DuckDBPyConnection | None:
    """The index file, opened for writing; a file that is not a readable DuckDB database is
    replaced (the index is only a cache of the directories). None when it cannot be had (a
    read-only archive, another process holding the file's lock)."""
    for attempt in range(2):
        try:
            return duckdb.connect(str(path))
        except (duckdb.Error, OSError) as e:
            if attempt or "lock" in str(e).lower() or not path.exists():
                return None
            with suppress(OSError):
                path.unlink()
                path.with_name(path.name + ".wal").unlink(missing_ok=True)
    return None


def connect(root: str | Path | None = None, *, rebuild: bool = False) -> duckdb.DuckDBPyConnection:
    """An up-to-date index of the archive at `root` (default: `$CCLAB_RUNS` or ./cclab-runs).
    The caller closes it."""
    root = Path(root) if root is not None else runs_root()
    con = _open_file(root / INDEX_FILE) if root.is_dir() else None
    if con is None:
        con = duckdb.connect(":memory:")
        rebuild = True
    try:
        if rebuild or _version(con) != INDEX_VERSION:
            _create_tables(con)
        _sync(con, root)
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
    columns (`"rate_mbps = 46 AND loss < 0.01"`). `sql`: any query over the `runs`, `flows` and
    `experiments` tables instead. `rebuild`: re-read every directory first."""
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
