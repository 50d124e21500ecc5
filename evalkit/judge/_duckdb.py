"""The one DuckDB helper of the judge cache's file: open it, create its owners' tables.

The file holds two owners' tables: the judge cache's entries (``_cache_db.py``) and the batch
journal (``_batch_db.py``). Each module owns its DDL and its queries; this module only opens
the file and runs each owner's ``CREATE TABLE IF NOT EXISTS`` statements (the migration), so
neither owner imports the other (docs/pages/design/judge-asks-only.md).

Every function here is synchronous and blocking: called from worker threads, never on the
event loop. duckdb is imported by the functions that need it: ``import evalkit`` stays free
of its ~40 ms.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalkit.errors import StoreError


def when(epoch: float) -> datetime:
    """``epoch`` seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(epoch, UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc(epoch_us: int | None) -> datetime | None:
    """A ``TIMESTAMPTZ`` column read as ``epoch_us(column)``, as an aware UTC datetime.

    Queries never hand a ``TIMESTAMPTZ`` to Python as it is: DuckDB before 2.0 converts one
    only with ``pytz`` installed (evalkit does not depend on it), and 2.0 converts it to the
    session's time zone.
    """
    return None if epoch_us is None else _EPOCH + timedelta(microseconds=epoch_us)


#: Seconds a cache operation waits for another process's short hold of the file.
LOCK_WAIT_S = 60.0


def connect(path: Path, schemas: Sequence[str], *, wait: float = LOCK_WAIT_S) -> Any:
    """Open (creating if needed) the cache file and create the tables ``schemas`` declare.

    Several runs share one cache file, each opening it only for one read or one write: a
    file held by another process is retried with back-off (10 ms doubling to 200 ms) for up
    to ``wait`` seconds (docs/pages/design/judge-cache-opened-briefly.md).

    Args:
        path: The file.
        schemas: Each owner's DDL (idempotent ``CREATE TABLE IF NOT EXISTS`` statements).
        wait: Seconds to retry a file locked by another process.

    Raises:
        StoreError: The file cannot be opened (e.g. another process held it for ``wait``
            seconds), or it is not a usable cache file.
    """
    import duckdb

    from evalkit._duckdb import connect_offline

    deadline = time.monotonic() + wait
    delay = 0.01
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            con = connect_offline(str(path))
            break
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or time.monotonic() >= deadline:
                raise _cannot_open(path, exc) from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
        except (OSError, duckdb.Error) as exc:
            raise _cannot_open(path, exc) from exc
    try:
        for schema in schemas:
            con.execute(schema)
    except duckdb.Error as exc:
        con.close()
        raise StoreError(f"judge cache {path}: not a usable cache file ({exc})") from exc
    return con


def _cannot_open(path: Path, exc: Exception) -> StoreError:
    from evalkit._duckdb import too_new

    if (newer := too_new(path)) is not None:  # DuckDB's own words name neither release
        return StoreError(
            f"judge cache {path}: cannot open it: {newer}; or pass another cache path, or run"
            " without the cache (cache=False, --no-cache)"
        )
    return StoreError(
        f"judge cache {path}: cannot open it ({exc}); pass another cache path, "
        "or run without the cache (cache=False, --no-cache)"
    )


def insert(con: Any, table: str, rows: pa.Table) -> None:
    """Append the Arrow table ``rows`` to ``table`` (its columns in the table's order)."""
    view = f"evalkit_{table}_rows"
    con.register(view, rows)
    try:
        con.execute(f"INSERT INTO {table} SELECT * FROM {view}")
    finally:
        con.unregister(view)
