"""Opening the DuckDB file: lock waits, error translation and identifier quoting.

DuckDB lets one process write a file, or several read it, never both. The writer therefore
opens the file only for the moment of each flush, and both sides wait (a bounded time) for a
lock held by the other instead of failing at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import duckdb

from evalkit.errors import StoreError

#: The store used when none is named.
DEFAULT_STORE = "evalkit.duckdb"

_LOCK_POLL_S = 0.05


def quote_ident(name: str) -> str:
    """Quote an SQL identifier (table, view or column name) for DuckDB."""
    return '"' + name.replace('"', '""') + '"'


def _is_lock_conflict(exc: duckdb.Error) -> bool:
    return "lock" in str(exc).lower()


def _is_config_conflict(exc: duckdb.Error) -> bool:
    return "different configuration" in str(exc)


def open_connection(
    path: str | os.PathLike[str],
    *,
    read_only: bool = False,
    lock_timeout: float = 30.0,
    config: Mapping[str, str] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Connect to the store file, waiting up to ``lock_timeout`` s for another process's lock.

    ``config`` holds DuckDB settings for a database this call opens. When this process already
    has the file open with other settings (or for writing, when ``read_only`` is asked), that
    database is shared instead: DuckDB allows one configuration per file and process.

    Raises:
        StoreError: The file cannot be opened, or stayed locked.
    """
    where = str(path)
    if read_only and not Path(path).exists():
        raise StoreError(f"{where}: no such score store")
    deadline = time.monotonic() + lock_timeout
    while True:
        try:
            return duckdb.connect(where, read_only=read_only, config=dict(config or {}))
        except duckdb.ConnectionException as exc:
            if _is_config_conflict(exc) and (read_only or config):
                try:
                    return duckdb.connect(where)
                except duckdb.Error as again:
                    raise StoreError(f"{where}: cannot open the score store: {again}") from again
            raise StoreError(f"{where}: cannot open the score store: {exc}") from exc
        except duckdb.IOException as exc:
            if not _is_lock_conflict(exc):
                raise StoreError(f"{where}: cannot open the score store: {exc}") from exc
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"{where}: the score store is locked by another process (waited"
                    f" {lock_timeout:g} s; DuckDB allows one writer, or readers, at a time): {exc}"
                ) from exc
            time.sleep(_LOCK_POLL_S)
        except duckdb.Error as exc:
            raise StoreError(f"{where}: cannot open the score store: {exc}") from exc


@contextmanager
def connection(
    path: str | os.PathLike[str],
    *,
    read_only: bool = False,
    lock_timeout: float = 30.0,
    config: Mapping[str, str] | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """:func:`open_connection` as a context manager; DuckDB errors become :class:`StoreError`."""
    con = open_connection(path, read_only=read_only, lock_timeout=lock_timeout, config=config)
    try:
        yield con
    except duckdb.Error as exc:
        raise StoreError(f"{path}: {exc}") from exc
    finally:
        con.close()
