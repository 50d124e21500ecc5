"""Recording a sharded run: each finished shard's rows and its ``shards_done`` record in one
transaction, so a resumed run knows exactly which shards are finished.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from evalkit._json import json_text
from evalkit.store._batch_io import insert_views, registered, writer_config
from evalkit.store._connect import connection
from evalkit.store._liveness import this_host
from evalkit.store._migrate import migrate
from evalkit.store._redact import redact
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
    """A :class:`StoreWriter` that writes whole shards."""

    def write_shard(
        self,
        tables: dict[str, pa.Table],
        record: ShardRecord,
        *,
        succeeded: int,
        failed: int,
    ) -> None:
        """Insert a shard's rows, its ``shards_done`` row and the new counts, atomically."""
        assert self.experiment_id is not None
        total_succeeded = self.succeeded + succeeded
        total_failed = self.failed + failed
        config = writer_config(sum(t.nbytes for t in tables.values()))
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        with (
            connection(self.path, lock_timeout=self.lock_timeout, config=config) as con,
            self._transaction(con),
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
