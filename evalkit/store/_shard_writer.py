"""Recording a sharded run: each finished shard's rows and its ``shards_done`` record in one
transaction, so a resumed run knows exactly which shards are finished.

A ``retry_errors`` pass rewrites finished shards instead (`ShardWriter.rewrite_shard`):
its rows replace the failed pairs' older ones, as an in-process resume's do, and the shard's
summary is recomputed from the rows it now has.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from evalkit import _stable_sql as stable_sql
from evalkit._json import json_text
from evalkit._proc import this_host
from evalkit._redaction import redact
from evalkit.store._batch_io import Transaction, insert_views, registered, writer_config
from evalkit.store._connect import connection, retry_busy
from evalkit.store._migrate import migrate
from evalkit.store._replace import write_replacing
from evalkit.store._writer import StoreWriter


@dataclass(frozen=True, slots=True)
class ShardRecord:
    """A ``shards_done`` row: which shard, and its summary state (JSON) for a resumed run."""

    shard_index: int
    file: str
    row_group: int
    item_offset: int
    rows: int
    summary: str


class ShardWriter(StoreWriter):
    """A `StoreWriter` that writes whole shards."""

    def write_shard(
        self,
        tables: dict[str, pa.Table],
        record: ShardRecord,
        *,
        succeeded: int,
        failed: int,
    ) -> None:
        """Insert a shard's rows, its ``shards_done`` row and the new counts, atomically
        (again, whole, when a DuckLake store's commit lost to another writer's)."""

        def write() -> None:
            self._write_shard(tables, record, succeeded=succeeded, failed=failed)

        retry_busy(write, timeout=self.lock_timeout)

    def _write_shard(
        self,
        tables: dict[str, pa.Table],
        record: ShardRecord,
        *,
        succeeded: int,
        failed: int,
    ) -> None:
        assert self.experiment_id is not None
        total_succeeded = self.succeeded + succeeded
        total_failed = self.failed + failed
        config = writer_config(sum(t.nbytes for t in tables.values()))
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        with (
            self._turns.turn(),
            connection(self.path, lock_timeout=self.lock_timeout, config=config) as con,
            Transaction(con),
        ):
            with registered(con, tables) as views:
                insert_views(con, views)
            con.execute(
                "INSERT INTO shards_done VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    self.experiment_id,
                    record.shard_index,
                    record.file,
                    record.row_group,
                    record.item_offset,
                    record.rows,
                    record.summary,
                    now,
                ],
            )
            con.execute(
                "UPDATE experiments SET succeeded_count = ?, failed_count = ?,"
                " heartbeat_at = ? WHERE id = ?",
                [total_succeeded, total_failed, now, self.experiment_id],
            )
        self.succeeded, self.failed = total_succeeded, total_failed

    def rewrite_shard(
        self,
        tables: dict[str, pa.Table],
        record: ShardRecord,
        summarize: Callable[[Mapping[str, Any]], str],
    ) -> None:
        """Write a ``retry_errors`` pass's rows of a finished shard, atomically.

        Each (item, scorer) pair's older row is replaced and the counts are recomputed from
        the store (as a resumed in-process run's batch is, see `StoreWriter.reopen`);
        the shard's ``shards_done`` summary becomes ``summarize`` of the counts of the rows it
        now holds (`shard_counts`). ``record.summary`` is not used.
        """
        retry_busy(
            lambda: self._rewrite_shard(tables, record, summarize), timeout=self.lock_timeout
        )

    def _rewrite_shard(
        self,
        tables: dict[str, pa.Table],
        record: ShardRecord,
        summarize: Callable[[Mapping[str, Any]], str],
    ) -> None:
        assert self.experiment_id is not None
        assert self.resuming, "rewrite_shard() needs reopen() first"
        experiment_id = self.experiment_id
        config = writer_config(sum(t.nbytes for t in tables.values()))
        with (
            self._turns.turn(),
            connection(self.path, lock_timeout=self.lock_timeout, config=config) as con,
            Transaction(con),
        ):
            self.succeeded, self.failed = write_replacing(con, experiment_id, tables)
            counts = shard_counts(con, experiment_id, record.item_offset, record.rows)
            con.execute(
                "UPDATE shards_done SET summary = ?, completed_at = ?"
                " WHERE experiment_id = ? AND shard_index = ?",
                [
                    summarize(counts),
                    dt.datetime.now(dt.UTC).replace(tzinfo=None),
                    experiment_id,
                    record.shard_index,
                ],
            )

    def resume(
        self, experiment_id: str, *, config: Mapping[str, Any] | None = None
    ) -> dict[int, str]:
        """Continue ``experiment_id``: load its counts; return its finished shards' summaries.

        The experiment is ``running`` again, by this process (so no other resume takes it
        over while it runs); ``config``, when given (a forced resume), replaces the stored one.

        Raises:
            StoreError: No such experiment in the store.
        """
        from evalkit.errors import StoreError

        with connection(self.path, lock_timeout=self.lock_timeout) as con:
            migrate(con, where=self.path)
            row = con.execute(
                "SELECT succeeded_count, failed_count FROM experiments WHERE id = ?",
                [experiment_id],
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: no experiment {experiment_id!r} to resume")
            done = con.execute(
                "SELECT shard_index, summary FROM shards_done WHERE experiment_id = ?",
                [experiment_id],
            ).fetchall()
            con.execute(
                "UPDATE experiments SET status = 'running', completed_at = NULL,"
                " writer_pid = ?, writer_host = ?, heartbeat_at = ?, config = coalesce(?, config)"
                " WHERE id = ?",
                [
                    os.getpid(),
                    this_host(),
                    dt.datetime.now(dt.UTC).replace(tzinfo=None),
                    json_text(redact(config)) if config is not None else None,
                    experiment_id,
                ],
            )
        self.experiment_id = experiment_id
        self.succeeded, self.failed = int(row[0]), int(row[1])
        return {int(index): str(summary) for index, summary in done}


def shard_counts(
    con: duckdb.DuckDBPyConnection, experiment_id: str, offset: int, rows: int
) -> dict[str, Any]:
    """Counts over the stored rows of the items ``offset .. offset + rows - 1`` (by
    ``item_index``) of an experiment.

    Returns:
        ``processed``, ``succeeded`` and ``target_failed`` items, and ``scorers``: per scorer
        id, ``n``, ``errors``, ``mean``, ``m2`` and ``k`` (the sum of squared deviations is
        ``m2 * 2**k``: k is 0 unless the scores reach 2**400), ``min`` and ``max`` of its
        successful scores.
    """
    window = (
        "FROM experiment_items i WHERE i.experiment_id = ? AND i.item_index >= ?"
        " AND i.item_index < ?"
    )
    params = [experiment_id, offset, offset + rows]
    head = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE i.status = 'success'),"
        f" count(*) FILTER (WHERE i.error IS NOT NULL) {window}",
        params,
    ).fetchone()
    assert head is not None
    # Scores near the float limit (±1e308) neither overflow the mean nor make var_samp refuse
    # ("out of range"): evalkit/_stable_sql.py. m2 is m2s * 2**k, as the run's summary holds it.
    m2s, k = stable_sql.scaled_m2("s.score")
    scored = con.execute(
        f"SELECT s.scorer_id, count(*), {stable_sql.mean('s.score')}, {m2s}, {k},"
        " min(s.score), max(s.score)"
        " FROM scores s"
        f" WHERE s.experiment_id = ? AND s.item_id IN (SELECT i.item_id {window})"
        " GROUP BY s.scorer_id",
        [experiment_id, *params],
    ).fetchall()
    failed = con.execute(
        "SELECT e.scorer_id, count(*) FROM scorer_errors e"
        f" WHERE e.experiment_id = ? AND e.item_id IN (SELECT i.item_id {window})"
        " GROUP BY e.scorer_id",
        [experiment_id, *params],
    ).fetchall()
    scorers: dict[str, dict[str, Any]] = {}
    for sid, n, mean, m2, k, low, high in scored:
        scorers[sid] = {
            "n": int(n), "errors": 0, "mean": mean, "m2": m2, "k": int(k), "min": low, "max": high
        }  # fmt: skip
    for sid, errors in failed:
        empty = {"n": 0, "errors": 0, "mean": None, "m2": 0.0, "k": 0, "min": None, "max": None}
        scorers.setdefault(sid, empty)["errors"] = int(errors)
    return {
        "processed": int(head[0]),
        "succeeded": int(head[1]),
        "target_failed": int(head[2]),
        "scorers": scorers,
    }
