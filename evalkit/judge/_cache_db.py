"""The judge cache's table: one table, read by step and written in Arrow batches (and the
values read from it: `CachedReply`, [`JudgeCacheStats`][evalkit.JudgeCacheStats]).

This module owns the ``judge_cache`` table (its DDL, `SCHEMA`, and every query on it);
the file is opened by ``_duckdb.py``, and the batch journal's tables beside it are
``_batch_db.py``'s. Every function here is synchronous and blocking;
[`JudgeCache`][evalkit.JudgeCache] calls them from worker threads, never on the event loop,
holding the connection's lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

# duckdb is imported by the functions that need it: `import evalkit` stays free of its ~40 ms.
import pyarrow as pa

from evalkit._arrow_arrays import arrow_array
from evalkit.judge._duckdb import insert, utc, when

TABLE = "judge_cache"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    step_key BLOB NOT NULL,
    prompt_key BLOB NOT NULL,
    content VARCHAR NOT NULL,
    attempt_count INTEGER NOT NULL,
    model VARCHAR NOT NULL,
    host VARCHAR NOT NULL,
    step VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
)
"""

_ARROW_SCHEMA = pa.schema(
    [
        ("step_key", pa.binary()),
        ("prompt_key", pa.binary()),
        ("content", pa.string()),
        ("attempt_count", pa.int32()),
        ("model", pa.string()),
        ("host", pa.string()),
        ("step", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("expires_at", pa.timestamp("us", tz="UTC")),
    ]
)


@dataclass(frozen=True, slots=True)
class JudgeCacheStats:
    """What a judge cache holds, and what it did in this process.

    Attributes:
        path: The cache file.
        entries: Live (unexpired) entries.
        expired: Expired entries not yet deleted (they are deleted when a run opens the cache).
        size_bytes: The file's size on disk (0 when it does not exist).
        oldest: When the oldest entry was written (None when empty).
        newest: When the newest entry was written.
        by_model: Live entries per judge model.
        hits: Judge calls answered from the cache since this object was created.
        misses: Cacheable judge calls that had to be asked.
        writes: Entries written (or waiting to be written).
    """

    path: Path
    entries: int
    expired: int
    size_bytes: int
    oldest: datetime | None
    newest: datetime | None
    by_model: dict[str, int] = field(hash=False)
    hits: int
    misses: int
    writes: int


@dataclass(frozen=True, slots=True)
class CachedReply:
    """A cached judge reply: the content of the successful attempt and how many it took."""

    content: str
    attempt_count: int
    expires_at: float


#: One cached reply as written: step_key, prompt_key, content, attempt_count, model, host,
#: step kind, created_at and expires_at (epoch seconds).
Row = tuple[bytes, bytes, str, int, str, str, str, float, float]


def prune(con: Any, now: float) -> None:
    """Delete the expired entries."""
    con.execute(f"DELETE FROM {TABLE} WHERE expires_at <= ?", [when(now)])


def load(con: Any, step_key: bytes, now: float) -> list[tuple[bytes, str, int, float]]:
    """The live entries of one step: ``(prompt_key, content, attempt_count, expires_at)``,
    oldest first (so a later entry for the same prompt wins)."""
    result = con.execute(
        f"SELECT prompt_key, content, attempt_count, epoch(expires_at) FROM {TABLE} "
        "WHERE step_key = ? AND expires_at > ? ORDER BY created_at",
        [step_key, when(now)],
    )
    return [
        (bytes(key), content, attempts, expires)
        for key, content, attempts, expires in result.fetchall()
    ]


def write(con: Any, rows: Sequence[Row]) -> None:
    """Append ``rows`` in one transaction, through Arrow."""
    columns: list[list[Any]] = [list(column) for column in zip(*rows, strict=True)]
    columns[7] = [round(t * 1_000_000) for t in columns[7]]
    columns[8] = [round(t * 1_000_000) for t in columns[8]]
    table = pa.Table.from_arrays(
        # A reply with a lone surrogate is cached with U+FFFD, as the store holds it, rather
        # than losing the other entries of the write.
        [arrow_array(c, f.type) for c, f in zip(columns, _ARROW_SCHEMA, strict=True)],
        schema=_ARROW_SCHEMA,
    )
    insert(con, TABLE, table)


def summary(con: Any, now: float) -> dict[str, Any]:
    """Counts, age bounds and live entries per model."""
    at = when(now)
    live, expired, oldest, newest = con.execute(
        f"SELECT count(*) FILTER (WHERE expires_at > ?), count(*) FILTER (WHERE expires_at <= ?), "
        f"epoch_us(min(created_at)), epoch_us(max(created_at)) FROM {TABLE}",
        [at, at],
    ).fetchone() or (0, 0, None, None)
    models = con.execute(
        f"SELECT model, count(*) FROM {TABLE} WHERE expires_at > ? GROUP BY model ORDER BY model",
        [at],
    ).fetchall()
    return {
        "entries": live,
        "expired": expired,
        "oldest": utc(oldest),
        "newest": utc(newest),
        "by_model": dict(models),
    }


def delete(con: Any, before: float | None) -> int:
    """Delete entries created before ``before`` (all when None); return how many."""
    if before is None:
        row = con.execute(f"DELETE FROM {TABLE}").fetchone()
    else:
        row = con.execute(f"DELETE FROM {TABLE} WHERE created_at < ?", [when(before)]).fetchone()
    import duckdb

    with contextlib.suppress(duckdb.Error):
        con.execute("CHECKPOINT")
    return int(row[0]) if row else 0
