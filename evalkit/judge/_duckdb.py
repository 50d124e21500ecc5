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

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalkit.errors import StoreError


def when(epoch: float) -> datetime:
    """``epoch`` seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(epoch, UTC)


def connect(path: Path, schemas: Sequence[str]) -> Any:
    """Open (creating if needed) the cache file and create the tables ``schemas`` declare.

    Args:
        path: The file.
        schemas: Each owner's DDL (idempotent ``CREATE TABLE IF NOT EXISTS`` statements).

    Raises:
        StoreError: The file cannot be opened (e.g. another process holds it), or it is not
            a usable cache file.
    """
    import duckdb

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        con = duckdb.connect(str(path))
    except (OSError, duckdb.Error) as exc:
        raise StoreError(
            f"judge cache {path}: cannot open it ({exc}); pass another cache path, "
            "or run without the cache (cache=False, --no-cache)"
        ) from exc
    try:
        for schema in schemas:
            con.execute(schema)
    except duckdb.Error as exc:
        con.close()
        raise StoreError(f"judge cache {path}: not a usable cache file ({exc})") from exc
    return con


def insert(con: Any, table: str, rows: pa.Table) -> None:
    """Append the Arrow table ``rows`` to ``table`` (its columns in the table's order)."""
    view = f"evalkit_{table}_rows"
    con.register(view, rows)
    try:
        con.execute(f"INSERT INTO {table} SELECT * FROM {view}")
    finally:
        con.unregister(view)
