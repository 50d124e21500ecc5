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

#: Rows per row group written by the store's bulk writes (DuckDB's default is 122,880).
#: Every flush's checkpoint recompresses the partly filled last row group of each table it
#: appended to, so this bounds the rows a flush writes again: with the default size a flush of
#: 100,000 score rows recompressed about 60,000 older ones on average, and the runner's usual
#: flush of 20,000 rows several times its own size. See the README's "Design" section.
WRITE_ROW_GROUP_SIZE = 16_384

# The catalog name of a store attached by a writer (any name that cannot clash with DuckDB's
# own ``memory``, ``system`` and ``temp``).
_WRITE_ALIAS = "evalkit_store"

_LOCK_POLL_S = 0.05


def quote_ident(name: str) -> str:
    """Quote an SQL identifier (table, view or column name) for DuckDB."""
    return '"' + name.replace('"', '""') + '"'


def _is_lock_conflict(exc: duckdb.Error) -> bool:
    return "lock" in str(exc).lower()


def _is_config_conflict(exc: duckdb.Error) -> bool:
    return "different configuration" in str(exc)


def _is_attached_here(exc: duckdb.Error) -> bool:
    # Another database of this process has the file open (DuckDB refuses a second handle).
    return "already attached" in str(exc)


def _connect(
    where: str, *, read_only: bool, config: Mapping[str, str], row_group_size: int | None
) -> duckdb.DuckDBPyConnection:
    if row_group_size is None:
        return duckdb.connect(where, read_only=read_only, config=dict(config))
    # The row group size is an option of ATTACH only: a fresh in-memory database attaches the
    # file with it and makes it the default catalog, so SQL reads as against connect(path).
    con = duckdb.connect(":memory:", config=dict(config))
    try:
        con.execute(
            f"ATTACH ? AS {_WRITE_ALIAS} (READ_ONLY {str(read_only).upper()},"
            f" ROW_GROUP_SIZE {int(row_group_size)})",
            [where],
        )
        con.execute(f"USE {_WRITE_ALIAS}")
    except BaseException:
        con.close()
        raise
    return con


def open_connection(
    path: str | os.PathLike[str],
    *,
    read_only: bool = False,
    lock_timeout: float = 30.0,
    config: Mapping[str, str] | None = None,
    row_group_size: int | None = None,
) -> duckdb.DuckDBPyConnection:
    """Connect to the store file, waiting up to ``lock_timeout`` s for another process's lock.

    ``config`` holds DuckDB settings for a database this call opens. When this process already
    has the file open with other settings (or for writing, when ``read_only`` is asked), that
    database is shared instead: DuckDB allows one configuration per file and process.
    ``row_group_size`` sets the rows per row group of the data this connection appends (see
    :data:`WRITE_ROW_GROUP_SIZE`); a database of this process that already has the file open
    is shared with its own size.

    Raises:
        StoreError: The file cannot be opened, or stayed locked.
    """
    where = str(path)
    if read_only and not Path(path).exists():
        raise StoreError(f"{where}: no such score store")
    deadline = time.monotonic() + lock_timeout
    while True:
        try:
            return _connect(
                where, read_only=read_only, config=config or {}, row_group_size=row_group_size
            )
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
            if row_group_size is not None and _is_attached_here(exc):
                try:
                    return duckdb.connect(where)
                except duckdb.Error as again:
                    raise StoreError(f"{where}: cannot open the score store: {again}") from again
            raise StoreError(f"{where}: cannot open the score store: {exc}") from exc


@contextmanager
def connection(
    path: str | os.PathLike[str],
    *,
    read_only: bool = False,
    lock_timeout: float = 30.0,
    config: Mapping[str, str] | None = None,
    row_group_size: int | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """:func:`open_connection` as a context manager; DuckDB errors become :class:`StoreError`."""
    con = open_connection(
        path,
        read_only=read_only,
        lock_timeout=lock_timeout,
        config=config,
        row_group_size=row_group_size,
    )
    try:
        yield con
    except duckdb.Error as exc:
        raise StoreError(f"{path}: {exc}") from exc
    finally:
        con.close()
