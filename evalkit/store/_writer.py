"""Writing one experiment to the store: its record, then batches of items, then its outcome.

Every call opens the file, does its work in one transaction and closes it again, so other
processes can read the store between flushes (DuckDB allows one writing process *or* several
readers at a time). A batch holds whole items only, so a crash never leaves half an item.
See docs/pages/design/store-rows-via-arrow.md.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import duckdb
import pyarrow as pa

from evalkit._json import json_text
from evalkit.errors import StoreError
from evalkit.store._connect import connection, quote_ident
from evalkit.store._liveness import this_host
from evalkit.store._migrate import migrate
from evalkit.store._redact import redact
from evalkit.store._replace import (
    final_status,
    recount_experiment,
    recount_items,
    replace_older_rows,
)


@dataclass(frozen=True, slots=True)
class ExperimentRecord:
    """The ``experiments`` row written when a run starts; ``partial`` marks a run of part of
    its dataset (a limit, one shard slice), which is never chosen as a baseline."""

    id: str
    name: str
    description: str | None
    dataset: str
    config: Mapping[str, Any]
    metadata: Mapping[str, Any] | None
    total_items: int
    started_at: dt.datetime
    evalkit_version: str
    partial: bool = False


@dataclass(frozen=True, slots=True)
class ScorerRecord:
    """An ``experiment_scorers`` row: a scorer of the experiment, its threshold, its direction
    and its metadata (a prebuilt scorer's name, definition version and parameters)."""

    scorer_id: str
    scorer_name: str
    description: str
    position: int
    threshold_min: float | None = None
    threshold_max: float | None = None
    higher_is_better: bool = True
    metadata: str | None = None


class RowBatch(Protocol):
    """What :meth:`StoreWriter.write` takes: the rows of whole items, as Arrow tables.

    ``evalkit.run.RowBuffer`` is one: it turns a run's finished items into rows (see
    docs/pages/design/store-takes-arrow.md).
    """

    @property
    def succeeded(self) -> int:
        """Items of the batch that succeeded."""

    @property
    def failed(self) -> int:
        """Items of the batch that failed."""

    def tables(self) -> Mapping[str, pa.Table]:
        """The rows by store table name, each with its :data:`evalkit.store.ARROW_SCHEMAS`
        columns; a table without rows is left out."""


def writer_config(batch_bytes: int) -> dict[str, str]:
    """DuckDB settings for the short-lived database a flush opens.

    One thread and a modest memory limit keep the write from competing with the run for the
    CPU and from holding on to memory between flushes; the limit grows with the batch so large
    rows never hit it. Allocations are handed back to the system eagerly for the same reason.
    """
    limit_mb = max(256, 6 * batch_bytes // 2**20)
    return {
        "threads": "1",
        "memory_limit": f"{limit_mb}MB",
        "allocator_flush_threshold": "8MB",
        "allocator_bulk_deallocation_flush_threshold": "8MB",
    }


@contextmanager
def registered(
    con: duckdb.DuckDBPyConnection, tables: Mapping[str, pa.Table]
) -> Iterator[dict[str, str]]:
    """``tables`` registered as views of ``con`` inside the block; yields each one's view."""
    views = {name: f"_evalkit_batch_{name}" for name in tables}
    for name, table in tables.items():
        con.register(views[name], table)
    try:
        yield views
    finally:
        for view in views.values():
            con.unregister(view)


def insert_views(con: duckdb.DuckDBPyConnection, views: Mapping[str, str]) -> None:
    """Append each view's rows to the store table it is named after (columns by name)."""
    for name, view in views.items():
        con.execute(f"INSERT INTO {quote_ident(name)} BY NAME SELECT * FROM {quote_ident(view)}")


def _naive_utc(moment: dt.datetime) -> dt.datetime:
    return moment.astimezone(dt.UTC).replace(tzinfo=None) if moment.tzinfo else moment


class StoreWriter:
    """Writes one experiment's rows to a DuckDB store file.

    Args:
        path: The store file; created (with its schema) when missing.
        lock_timeout: Seconds to wait for another process that holds the file.
    """

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = 30.0) -> None:
        self.path = str(path)
        self.lock_timeout = lock_timeout
        self.experiment_id: str | None = None
        self.succeeded = 0
        self.failed = 0
        #: Set by :meth:`reopen`: writes replace a pair's older rows, counts come from the store.
        self.resuming = False
        #: The status :meth:`finish` recorded.
        self.final_status: str | None = None

    def _transaction(self, con: duckdb.DuckDBPyConnection) -> _Transaction:
        return _Transaction(con)

    def begin(self, record: ExperimentRecord, scorers: Sequence[ScorerRecord]) -> None:
        """Create or migrate the store, and record the experiment as ``running``."""
        with connection(self.path, lock_timeout=self.lock_timeout) as con:
            migrate(con, where=self.path)
            with self._transaction(con):
                con.execute(
                    "INSERT INTO experiments (id, name, description, dataset, config, metadata,"
                    " status, total_items, succeeded_count, failed_count, started_at,"
                    " evalkit_version, writer_pid, writer_host, heartbeat_at, partial)"
                    " VALUES (?, ?, ?, ?, ?, ?, 'running', ?, 0, 0, ?, ?, ?, ?, ?, ?)",
                    [
                        record.id,
                        record.name,
                        record.description,
                        record.dataset,
                        json_text(redact(record.config)),
                        json_text(redact(record.metadata)) if record.metadata else None,
                        record.total_items,
                        _naive_utc(record.started_at),
                        record.evalkit_version,
                        os.getpid(),
                        this_host(),
                        _naive_utc(dt.datetime.now(dt.UTC)),
                        record.partial,
                    ],
                )
                if scorers:
                    self._insert_scorers(con, record.id, scorers)
        self.experiment_id = record.id

    def _insert_scorers(
        self, con: duckdb.DuckDBPyConnection, experiment_id: str, scorers: Sequence[ScorerRecord]
    ) -> None:
        con.executemany(
            "INSERT INTO experiment_scorers (experiment_id, scorer_id, scorer_name,"
            " description, position, threshold_min, threshold_max, higher_is_better, metadata)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [
                    experiment_id,
                    s.scorer_id,
                    s.scorer_name,
                    s.description,
                    s.position,
                    s.threshold_min,
                    s.threshold_max,
                    s.higher_is_better,
                    s.metadata,
                ]
                for s in scorers
            ],
        )

    def reopen(
        self,
        experiment_id: str,
        *,
        total_items: int,
        scorers: Sequence[ScorerRecord] = (),
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """Take over a stored experiment to resume it: ``running`` again, by this process.

        ``scorers`` the experiment lacks are added (a forced resume with a new scorer);
        ``config``, when given (a forced resume), replaces the stored one.
        """
        with connection(self.path, lock_timeout=self.lock_timeout) as con:
            migrate(con, where=self.path)
            with self._transaction(con):
                con.execute(
                    "UPDATE experiments SET status = 'running', completed_at = NULL,"
                    " total_items = ?, writer_pid = ?, writer_host = ?, heartbeat_at = ?,"
                    " config = coalesce(?, config) WHERE id = ?",
                    [
                        total_items,
                        os.getpid(),
                        this_host(),
                        _naive_utc(dt.datetime.now(dt.UTC)),
                        json_text(redact(config)) if config is not None else None,
                        experiment_id,
                    ],
                )
                known = {
                    r[0]
                    for r in con.execute(
                        "SELECT scorer_id FROM experiment_scorers WHERE experiment_id = ?",
                        [experiment_id],
                    ).fetchall()
                }
                added = [s for s in scorers if s.scorer_id not in known]
                if added:
                    self._insert_scorers(con, experiment_id, added)
        self.experiment_id = experiment_id
        self.resuming = True

    def write(self, batch: RowBatch) -> None:
        """Insert a batch of finished items and update the experiment's counts, atomically.

        The batch's tables are built here, on the writer's thread. When resuming, the batch's
        items and (item, scorer) pairs replace their older rows in the same transaction, so a
        pair always ends as exactly one score or one failure.
        """
        tables = batch.tables()
        if not tables:
            return
        experiment_id = self.experiment_id
        if experiment_id is None:
            raise StoreError(f"{self.path}: write() called before begin()")
        if self.resuming:
            self._write_resumed(experiment_id, tables)
            return
        succeeded = self.succeeded + batch.succeeded
        failed = self.failed + batch.failed
        config = writer_config(sum(t.nbytes for t in tables.values()))
        with (
            connection(self.path, lock_timeout=self.lock_timeout, config=config) as con,
            self._transaction(con),
        ):
            with registered(con, tables) as views:
                insert_views(con, views)
            con.execute(
                "UPDATE experiments SET succeeded_count = ?, failed_count = ?, heartbeat_at = ?"
                " WHERE id = ?",
                [succeeded, failed, _naive_utc(dt.datetime.now(dt.UTC)), experiment_id],
            )
        self.succeeded, self.failed = succeeded, failed

    def _write_resumed(self, experiment_id: str, tables: Mapping[str, pa.Table]) -> None:
        config = writer_config(sum(t.nbytes for t in tables.values()))
        with (
            connection(self.path, lock_timeout=self.lock_timeout, config=config) as con,
            self._transaction(con),
        ):
            with registered(con, tables) as views:
                replace_older_rows(con, experiment_id, views)
                insert_views(con, views)
                if "experiment_items" in views:
                    recount_items(con, experiment_id, views["experiment_items"])
            self.succeeded, self.failed = recount_experiment(con, experiment_id)

    def finish(
        self, *, status: str, completed_at: dt.datetime, dataset_fingerprint: str | None
    ) -> None:
        """Record the experiment's final status, end time and dataset fingerprint.

        A resumed experiment's counts and finished status are recomputed from the whole
        store (``failed`` / ``completed_with_errors`` / ``completed``), not from the last pass.
        """
        if self.experiment_id is None:
            raise StoreError(f"{self.path}: finish() called before begin()")
        with connection(self.path, lock_timeout=self.lock_timeout) as con, self._transaction(con):
            if self.resuming:
                self.succeeded, self.failed = recount_experiment(con, self.experiment_id)
                status = final_status(con, self.experiment_id, status)
            con.execute(
                "UPDATE experiments SET status = ?, completed_at = ?, dataset_fingerprint = ?,"
                " succeeded_count = ?, failed_count = ? WHERE id = ?",
                [
                    status,
                    _naive_utc(completed_at),
                    dataset_fingerprint,
                    self.succeeded,
                    self.failed,
                    self.experiment_id,
                ],
            )
        self.final_status = status


class _Transaction:
    """``BEGIN`` … ``COMMIT``, or ``ROLLBACK`` when the block raises."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def __enter__(self) -> None:
        self.con.execute("BEGIN TRANSACTION")

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self.con.execute("COMMIT" if exc_type is None else "ROLLBACK")
