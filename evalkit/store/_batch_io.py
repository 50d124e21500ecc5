"""What a store writer writes, and how: the records of a run, batches as Arrow tables
registered as views, the settings of a writing connection and its transaction.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import duckdb
import pyarrow as pa

from evalkit._sql import quote_ident


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
    """What `StoreWriter.write` takes: the rows of whole items, as Arrow tables.

    The run's ``RowBuffer`` (evalkit/run/_rows.py) is one: it turns a run's finished items
    into rows (see docs/pages/design/store-takes-arrow.md).
    """

    @property
    def succeeded(self) -> int:
        """Items of the batch that succeeded."""

    @property
    def failed(self) -> int:
        """Items of the batch that failed."""

    def tables(self) -> Mapping[str, pa.Table]:
        """The rows by store table name, each with its `ARROW_SCHEMAS` (evalkit/store/_arrow.py)
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


def naive_utc(moment: dt.datetime) -> dt.datetime:
    return moment.astimezone(dt.UTC).replace(tzinfo=None) if moment.tzinfo else moment


class Transaction:
    """``BEGIN`` … ``COMMIT``, or ``ROLLBACK`` when the block raises."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def __enter__(self) -> None:
        self.con.execute("BEGIN TRANSACTION")

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self.con.execute("COMMIT" if exc_type is None else "ROLLBACK")
