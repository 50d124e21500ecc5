"""Reading experiments back: listings, one experiment, and per-item scores for comparisons."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any, TypedDict, cast

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from evalkit._arrow_arrays import arrow_array
from evalkit._duckdb import connect_offline
from evalkit._intervals import mean_interval95
from evalkit._liveness import effective_status, with_effective_status
from evalkit.errors import ConfigError, StoreError
from evalkit.store._connect import DEFAULT_STORE, connection
from evalkit.store._migrate import migrate, schema_version

_EXPERIMENT_COLUMNS = (
    "id, name, description, status, dataset, dataset_fingerprint, total_items,"
    " succeeded_count, failed_count, started_at, completed_at"
)


class ListedExperiment(TypedDict):
    """One experiment as a row of [`list_experiments`][evalkit.list_experiments]' table
    (``.to_pylist()``), ``status`` the effective one (a ``running`` row whose writer is gone
    reads ``interrupted``)."""

    id: str
    name: str
    description: str | None
    status: str
    dataset: str  # evalkit writes one for every run (ExperimentRecord.dataset)
    dataset_fingerprint: str | None
    total_items: int
    succeeded_count: int
    failed_count: int
    started_at: dt.datetime
    completed_at: dt.datetime | None
    partial: bool
    verdict: str | None
    baseline_id: str | None
    baseline_reason: str | None


class ExperimentRow(ListedExperiment):
    """One experiment as [`read_experiment`][evalkit.store.read_experiment] returns it: the
    listed columns, and ``config`` and ``metadata`` still JSON text."""

    config: str | None
    metadata: str | None
    evalkit_version: str | None


class ScorerCounts(TypedDict):
    """One scorer's counts in `RunCounts`: ``n`` successful scores,
    ``errors``, and the ``mean``, ``stddev``, ``min`` and ``max`` of the scores (None with
    none, ``stddev`` with fewer than two)."""

    n: int
    errors: int
    mean: float | None
    stddev: float | None
    min: float | None
    max: float | None


class RunCounts(TypedDict):
    """Counts over every pass of one experiment, as
    `read_run_counts` returns them."""

    total_items: int
    succeeded: int
    failed: int
    processed: int
    target_failed: int
    scorers: dict[str, ScorerCounts]


def _columns(con: duckdb.DuckDBPyConnection) -> str:
    """The experiment columns a listing reads; a store not yet migrated (it is, at its next
    write) reads as if it were: no writer recorded, no run partial."""
    version = schema_version(con)
    writer = "writer_pid, writer_host"
    if version < 2:
        writer = "NULL AS writer_pid, NULL AS writer_host"
    partial = "partial" if version >= 3 else "false AS partial"
    verdict = (
        "verdict, baseline_id, baseline_reason"
        if version >= 8
        else "NULL::VARCHAR AS verdict, NULL::VARCHAR AS baseline_id,"
        " NULL::VARCHAR AS baseline_reason"
    )
    return f"{_EXPERIMENT_COLUMNS}, {partial}, {verdict}, {writer}"


def _arrow(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> pa.Table:
    relation = con.sql(sql, params=params)
    assert relation is not None
    return relation.to_arrow_table()


def _blank_table(sql: str, params: list[Any]) -> pa.Table:
    """``sql``'s empty result over a blank store (typed columns, no rows)."""
    with connect_offline() as con:
        migrate(con, where=":memory:")
        return _arrow(con, sql, params)


def list_experiments(
    store: str | os.PathLike[str] = DEFAULT_STORE,
    *,
    name: str | None = None,
    status: str | list[str] | None = None,
    limit: int | None = None,
) -> pa.Table:
    """Experiments in the store, newest first.

    Args:
        store: The store file.
        name: Only experiments of this name.
        status: Only experiments with this status (or any of these statuses).
        limit: At most this many rows (a whole number >= 0).

    Returns:
        An Arrow table with ``id``, ``name``, ``description``, ``status``, ``dataset``,
        ``dataset_fingerprint``, ``total_items``, ``succeeded_count``, ``failed_count``,
        ``started_at``, ``completed_at`` (UTC), ``partial`` (a run of part of its dataset:
        a limit or one shard slice), ``verdict`` (``passed``, ``failed``, or None when no
        gate could run or the run predates schema 8), ``baseline_id`` and
        ``baseline_reason`` (the run it was judged against, and why).

    Raises:
        ConfigError: ``limit`` is not a whole number >= 0.
        StoreError: The store is missing or cannot be read.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ConfigError(f"limit must be a whole number >= 0, got {limit!r}")
    where: list[str] = []
    params: list[Any] = []
    if name is not None:
        where.append("name = ?")
        params.append(name)
    tail = " FROM experiments"
    if where:
        tail += " WHERE " + " AND ".join(where)
    tail += " ORDER BY started_at DESC, id"
    with connection(store, read_only=True) as con:
        if schema_version(con) == 0:
            # A file whose creation was cut short (a run killed while creating the store).
            blank = (
                f"SELECT {_EXPERIMENT_COLUMNS}, partial, verdict, baseline_id, baseline_reason,"
                f" writer_pid, writer_host{tail}"
            )
            return with_effective_status(_blank_table(blank, params))
        sql = f"SELECT {_columns(con)}{tail}"
        # The status filter and limit apply to the effective status (a dead running row
        # reads interrupted), which only Python can tell.
        table = with_effective_status(_arrow(con, sql, params))
    if status is not None:
        statuses = [status] if isinstance(status, str) else list(status)
        table = table.filter(pc.is_in(table["status"], arrow_array(statuses, pa.string())))
    if limit is not None:
        table = table.slice(0, int(limit))
    return table


def read_experiment(
    store: str | os.PathLike[str] | duckdb.DuckDBPyConnection, ref: str
) -> ExperimentRow:
    """One experiment's row (``config`` and ``metadata`` as JSON text), by id or id prefix.
    ``store`` may be a connection to it that the caller keeps open (several reads, one open).

    Raises:
        StoreError: No experiment matches, or a prefix matches several.
    """
    if not isinstance(store, duckdb.DuckDBPyConnection):
        with connection(store, read_only=True) as con:
            return _read_experiment(con, ref, str(store))
    return _read_experiment(store, ref, None)


def _read_experiment(con: duckdb.DuckDBPyConnection, ref: str, store: str | None) -> ExperimentRow:
    if schema_version(con) == 0:
        store = store or _where(con)
        raise StoreError(f"{store}: no experiment with id {ref!r} (the store is empty)")
    rows = con.execute(
        f"SELECT {_columns(con)}, config, metadata, evalkit_version FROM experiments"
        " WHERE starts_with(id, ?) ORDER BY id LIMIT 2",
        [ref],
    )
    names = [d[0] for d in rows.description]
    found = rows.fetchall()
    exact = [r for r in found if r[0] == ref]
    if exact:
        found = exact
    if not found:
        raise StoreError(f"{store or _where(con)}: no experiment with id {ref!r}")
    if len(found) > 1:
        raise StoreError(f"{store or _where(con)}: id prefix {ref!r} matches several experiments")
    row = dict(zip(names, found[0], strict=True))
    pid, host = row.pop("writer_pid"), row.pop("writer_host")
    row["status"] = effective_status(row["status"], pid, host)
    # The SELECT above names ExperimentRow's keys (tests/store/test_row_types.py checks they agree).
    return cast(ExperimentRow, row)


def _where(con: duckdb.DuckDBPyConnection) -> str:
    """The file of the store ``con`` is connected to, to name it in an error."""
    found = con.execute(
        "SELECT path, type FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()
    if not found or not found[0]:
        return "the store"
    # A lake is named as its location is written: ducklake:<catalog>.
    return f"ducklake:{found[0]}" if found[1] == "ducklake" else str(found[0])


def read_item_scores(
    store: str | os.PathLike[str] | duckdb.DuckDBPyConnection, experiment_id: str
) -> pa.Table:
    """Per item and scorer, the score and status of one experiment, for paired comparisons.
    ``store`` may be a connection to it that the caller keeps open.

    Every finished item gets a row per scorer of the experiment: ``status`` is ``"success"``
    with its ``score``, or ``"failed"`` with a null score (the scorer failed, or the item's
    target did, in which case ``error`` says so). Items never reached (a cancelled run) have
    no rows.

    Returns:
        An Arrow table with ``item_id``, ``item_index``, ``scorer_id``, ``score``, ``status``
        and ``error``, sorted by item index and scorer position.

    Raises:
        StoreError: No experiment has this id.
    """
    read_experiment(store, experiment_id)
    sql = """
        SELECT i.item_id, i.item_index, es.scorer_id, s.score,
               CASE WHEN s.score IS NOT NULL THEN 'success' ELSE 'failed' END AS status,
               CASE WHEN s.score IS NOT NULL THEN NULL
                    ELSE coalesce(e.error_message, i.error->>'$.message') END AS error
        FROM experiment_items i
        JOIN experiment_scorers es ON es.experiment_id = i.experiment_id
        LEFT JOIN scores s ON s.experiment_id = i.experiment_id AND s.run_id = i.run_id
             AND s.scorer_id = es.scorer_id
        LEFT JOIN scorer_errors e ON e.experiment_id = i.experiment_id AND e.run_id = i.run_id
             AND e.scorer_id = es.scorer_id
        WHERE i.experiment_id = ?
        ORDER BY i.item_index, es.position
    """
    if not isinstance(store, duckdb.DuckDBPyConnection):
        with connection(store, read_only=True) as con:
            return read_item_scores(con, experiment_id)
    return _arrow(store, sql, [experiment_id])


def read_run_counts(store: str | os.PathLike[str], experiment_id: str) -> RunCounts:
    """Counts over every pass of one experiment (a resumed run's passes together).

    Returns:
        ``total_items``, ``processed`` (items evaluated), ``succeeded``, ``failed``,
        ``target_failed`` and ``scorers``: per scorer id, ``n``, ``errors``, ``mean``,
        ``stddev``, ``min`` and ``max`` of its successful scores.
    """
    read_experiment(store, experiment_id)
    with connection(store, read_only=True) as con:
        head = con.execute(
            "SELECT x.total_items, x.succeeded_count, x.failed_count, count(i.item_id),"
            " count(i.item_id) FILTER (WHERE i.error IS NOT NULL) FROM experiments x"
            " LEFT JOIN experiment_items i ON i.experiment_id = x.id WHERE x.id = ?"
            " GROUP BY ALL",
            [experiment_id],
        ).fetchone()
        rows = con.execute(
            "SELECT scorer_id, n, errors, mean, stddev, min, max FROM scorer_summary"
            " WHERE experiment_id = ?",
            [experiment_id],
        ).fetchall()
    assert head is not None
    return {
        "total_items": int(head[0]),
        "succeeded": int(head[1]),
        "failed": int(head[2]),
        "processed": int(head[3]),
        "target_failed": int(head[4]),
        "scorers": {
            scorer_id: {"n": n, "errors": errors, "mean": mean, "stddev": sd, "min": lo, "max": hi}
            for scorer_id, n, errors, mean, sd, lo, hi in rows
        },
    }


def read_scorer_summary(
    store: str | os.PathLike[str], experiment_ids: list[str]
) -> list[dict[str, Any]]:
    """Per scorer of each run, its summary from the store's ``scorer_summary`` view, as
    ``evalkit experiments`` and ``evalkit show`` print it: ``experiment_id``,
    ``experiment_name``, ``started_at``, ``scorer_id``, ``scorer_name``, ``n``, ``errors``,
    ``mean``, ``stddev``, ``ci95_low``, ``ci95_high``, ``min``, ``median``, ``max``,
    ``threshold_min``, ``threshold_max``, ``pass_rate`` and ``error_rate`` (the view's columns,
    described on the store schema page).

    Args:
        store: The store.
        experiment_ids: The runs' ids; an id of no run has no rows.

    Returns:
        One dict per run and scorer, ordered by run id, then scorer id.
    """
    if not experiment_ids:
        return []
    with connection(store, read_only=True) as con:
        cursor = con.execute(
            "SELECT * FROM scorer_summary WHERE list_contains(?, experiment_id)"
            " ORDER BY experiment_id, scorer_id",
            [experiment_ids],
        )
        columns = [d[0] for d in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    # The interval computed again: a store of an older schema, read without being migrated,
    # keeps its view's older formula (docs/pages/design/score-intervals.md).
    for row in rows:
        found = mean_interval95(row["n"], row["mean"], row["stddev"], row["min"], row["max"])
        row["ci95_low"], row["ci95_high"] = found if found is not None else (None, None)
    return rows
