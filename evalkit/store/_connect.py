"""Opening the DuckDB file: lock waits, error translation and identifier quoting.

DuckDB lets one process write a file, or several read it, never both. The writer therefore
opens the file only for the moment of each flush, and both sides wait (a bounded time) for a
lock held by the other instead of failing at once. A DuckLake store (``ducklake:…``) is
opened through the same function (docs/pages/design/store-location.md).
Written by hand rather than with a library: docs/pages/design/hand-written-pieces.md.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

import duckdb

from evalkit._defaults import DEFAULT_STORE as DEFAULT_STORE  # exported by evalkit.store
from evalkit._duckdb import OFFLINE, store_too_new
from evalkit.errors import StoreError
from evalkit.store._lake import forget_shared, lake_error, open_lake
from evalkit.store._lake_errors import CatalogUnreachableError, busy, unreachable, unwritable
from evalkit.store._location import StoreLocation, store_location
from evalkit.store._object_store import credentials_hint
from evalkit.store._shared_db import attach, attach_as_default, detach

_T = TypeVar("_T")


#: Rows per row group of the data evalkit writes to a store (DuckDB's default is 122,880).
#: Each flush ends with a checkpoint that recompresses the partly filled last row group of every
#: table it appended to, so this bounds what a flush writes again: with the default size a
#: flush of 100,000 score rows recompressed about 60,000 older rows on average, and the
#: runner's usual flush of 20,000 rows several times its own size. Smaller groups write less
#: again but compress less well (16,384: 5% less CPU than this size in B6, a 15% larger file).
#: Every writing connection of evalkit uses it: a checkpoint by a connection with a larger size
#: merges smaller row groups into its own size (see docs/pages/design/small-row-groups.md).
WRITE_ROW_GROUP_SIZE = 32_768

_LOCK_POLL_S = 0.05

# What close() raises for a connection still busy with a query; DuckDB 1.5 (which the
# ducklake extra pins) has no class of its own for it.
_IN_USE: type[duckdb.Error] = getattr(duckdb, "ResourceInUseException", duckdb.Error)


class StoreLockedError(StoreError):
    """The store stayed locked by another process (or connection) for the whole wait."""


class StoreBusyError(StoreLockedError):
    """A DuckLake store's commit lost to another writer's, or its catalog was busy: the whole
    transaction may be run again (`retry_busy`)."""


#: Seconds a whole transaction of a DuckLake store is retried while it keeps losing to others.
DEFAULT_BUSY_TIMEOUT = 300.0

_BUSY_FIRST_S = 0.05
_BUSY_MAX_S = 1.0


def retry_busy(
    action: Callable[[], _T], *, timeout: float = DEFAULT_BUSY_TIMEOUT, outage: bool = False
) -> _T:
    """Run ``action`` (one whole transaction on a store: it opens the store with
    [`connection`][evalkit.store.connection], writes and commits), again while it fails
    because a DuckLake store was busy: its commit lost to another writer's, or its catalog was
    busy (the [`StoreError`][evalkit.errors.StoreError] that `connection` raises then is a
    ``StoreBusyError``). Returns what ``action`` returns.

    Waits grow from 50 ms to 1 s with jitter, so writers that collided do not collide again.
    A store file never raises it: there the lock is waited for when the file is opened.

    Args:
        action: The transaction, run from its start each time.
        timeout: Seconds to keep trying.
        outage: Also run it again while the lake's catalog is out of reach
            (``CatalogUnreachableError``).

    Raises:
        StoreError: The store stayed busy (or, with ``outage``, out of reach) for ``timeout``
            seconds, or ``action`` failed otherwise.
    """
    deadline = time.monotonic() + timeout
    wait = _BUSY_FIRST_S
    retried: tuple[type[StoreError], ...] = (StoreBusyError,)
    if outage:
        retried += (CatalogUnreachableError,)
    while True:
        try:
            return action()
        except retried:
            if time.monotonic() >= deadline:
                raise
        time.sleep(wait * (0.5 + random.random()))
        wait = min(wait * 2, _BUSY_MAX_S)


def _is_lock_conflict(exc: duckdb.Error) -> bool:
    return "lock" in str(exc).lower()


def _is_config_conflict(exc: duckdb.Error) -> bool:
    return "different configuration" in str(exc)


def _is_attached_here(exc: duckdb.Error) -> bool:
    # Another database of this process has the file open (DuckDB refuses a second handle).
    return "already attached" in str(exc)


def _attach(
    where: str, *, config: Mapping[str, str], row_group_size: int
) -> duckdb.DuckDBPyConnection:
    # The row group size is an option of ATTACH, not of connect(): a fresh in-memory database
    # attaches the file and makes it the default catalog, named as connect(path) names it.
    con = duckdb.connect(":memory:", config=dict(config))
    try:
        attach_as_default(con, where, f"(ROW_GROUP_SIZE {int(row_group_size)})")
    except BaseException:
        con.close()
        raise
    return con


def open_connection(
    path: str | os.PathLike[str] | StoreLocation,
    *,
    read_only: bool = False,
    lock_timeout: float = 30.0,
    config: Mapping[str, str] | None = None,
    row_group_size: int = WRITE_ROW_GROUP_SIZE,
    private: bool = False,
    pinned: bool = False,
) -> duckdb.DuckDBPyConnection:
    """Connect to the store file, waiting up to ``lock_timeout`` s for another process's lock.

    ``config`` holds DuckDB settings for a database this call opens. A writing connection
    appends row groups of ``row_group_size`` rows (`WRITE_ROW_GROUP_SIZE`). When this
    process already has the file open through ``duckdb.connect(path)`` (a user's connection),
    that database is shared instead, with its own settings and row group size: DuckDB allows
    one database per file and process. A connection of evalkit that holds the file (another
    thread's flush) is waited for like another process's lock.

    A DuckLake store (``ducklake:…``, see
    [`evalkit.store.store_location`][evalkit.store.store_location]) is attached in an in-memory
    database instead (``_lake.py``), shared by the process's connections to it unless ``private``:
    it has no file lock to wait for. ``pinned`` (with ``read_only``) reads a lake at the snapshot
    that was newest when it was opened, not each query's newest (a store file opened read-only
    cannot change while it is open).

    Raises:
        StoreError: The file cannot be opened, or stayed locked.
    """
    location = store_location(path)
    if location.is_lake:
        return open_lake(
            location, read_only=read_only, lock_timeout=lock_timeout, config=config,
            private=private, pinned=pinned,
        )  # fmt: skip
    where = location.target
    # Nothing installed or loaded from the network behind evalkit's back (evalkit/_duckdb.py).
    config = {**OFFLINE, **(config or {})}
    _check_file(location, read_only=read_only)
    deadline = time.monotonic() + lock_timeout
    while True:
        try:
            if read_only:
                return duckdb.connect(where, read_only=True, config=dict(config))
            return _attach(where, config=config, row_group_size=row_group_size)
        except duckdb.ConnectionException as exc:
            if _is_config_conflict(exc):
                try:
                    return duckdb.connect(where)
                except duckdb.Error as again:
                    raise _cannot_open(where, again) from again
            raise _cannot_open(where, exc) from exc
        except duckdb.IOException as exc:
            if not _is_lock_conflict(exc):
                raise _cannot_open(where, exc) from exc
            _wait_or_fail(
                deadline,
                f"{where}: the score store is locked by another process (waited"
                f" {lock_timeout:g} s; DuckDB allows one writer, or readers, at a time): {exc}",
                exc,
            )
        except duckdb.Error as exc:
            if not _is_attached_here(exc):
                raise _cannot_open(where, exc) from exc
            try:
                return duckdb.connect(where)
            except duckdb.Error as again:
                if not _is_attached_here(again):
                    raise _cannot_open(where, again) from again
                _wait_or_fail(
                    deadline,
                    f"{where}: the score store is held by another connection of this"
                    f" process (waited {lock_timeout:g} s): {again}",
                    again,
                )


def _check_file(location: StoreLocation, *, read_only: bool) -> None:
    if read_only and not location.exists():
        raise StoreError(f"{location.target}: no such score store")
    _refuse_other_files(location.target)


def _refuse_other_files(where: str) -> None:
    """Refuse an existing file that is not a DuckDB database (a Parquet or CSV file given as
    ``--store`` by mistake), before DuckDB says something less clear about it."""
    try:
        with open(where, "rb") as handle:
            head = handle.read(12)
    except OSError:
        return  # missing (a new store), a folder or unreadable: DuckDB says which
    if not head or head[8:12] == b"DUCK":  # an empty file or DuckDB's header
        return
    kind = " (it is a Parquet file)" if head.startswith(b"PAR1") else ""
    raise StoreError(
        f"{where}: not an evalkit score store: the file is not a DuckDB database{kind}; give"
        " the store's .duckdb file, or a new path to start a store"
    )


def _cannot_open(where: str, exc: duckdb.Error) -> StoreError:
    if (newer := store_too_new(where)) is not None:
        # DuckDB's own message names neither release, and points at its internals page.
        return StoreError(f"{where}: cannot open the score store: {newer}")
    return StoreError(f"{where}: cannot open the score store: {exc}")


def _wait_or_fail(deadline: float, message: str, exc: duckdb.Error) -> None:
    """Sleep before the next attempt, or raise ``message`` once ``deadline`` has passed."""
    if time.monotonic() >= deadline:
        raise StoreLockedError(message) from exc
    time.sleep(_LOCK_POLL_S)


@contextmanager
def connection(
    path: str | os.PathLike[str] | StoreLocation,
    *,
    read_only: bool = False,
    lock_timeout: float = 30.0,
    config: Mapping[str, str] | None = None,
    row_group_size: int = WRITE_ROW_GROUP_SIZE,
    private: bool = False,
    pinned: bool = False,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A DuckDB connection to the score store at ``path``, opened as evalkit opens it, and
    closed on leaving the block: for reading (or writing) the store with SQL from Python.

    ```python
    from evalkit.store import connection

    with connection("evalkit.duckdb", read_only=True) as con:
        rows = con.execute("SELECT scorer_id, avg(score) FROM scores GROUP BY ALL").fetchall()
    ```

    A lock held by another process (a run's flush) is waited for, up to ``lock_timeout``
    seconds, instead of failing at once: DuckDB lets one process write a file, or several
    read it, never both, so keep the block short while a run writes the store. A DuckLake
    store (``ducklake:…``, see [`store_location`][evalkit.store.store_location]) is attached
    with its catalog, data path and credentials as a run attaches it. DuckDB errors raised in
    the block become [`StoreError`][evalkit.errors.StoreError] naming the store (a lake's
    object store refusing its files says where their credentials come from). To run a user's
    query that must not write anything, use
    [`read_only_connection`][evalkit.store.read_only_connection].

    A store file is attached to an in-memory DuckDB database that the process keeps, and
    detached when the block ends (its checkpoint written, its lock released): a block that
    starts while that database is in use (another thread's, a nested block) gets a database
    of its own, as does a file another process holds while the lock is waited for. A cursor
    made in the block (``con.cursor()``) starts in that database's own catalog: ``USE`` the
    store's, ``con.execute("SELECT current_database()")``, in it.

    Args:
        path: The store: a ``.duckdb`` file or a ``ducklake:…`` string.
        read_only: Open it for reading only (several processes may read a file at once; a
            missing file is an error instead of a new store).
        lock_timeout: Seconds to wait for another process's lock.
        config: DuckDB settings for the database this call opens (``duckdb.connect``'s
            ``config``); a file this process already has open is shared as it is.
        row_group_size: Rows per row group of what this connection writes.
        private: The store gets a database of its own instead of the one the process's
            connections share (a connection that changes the database's own settings, as
            [`read_only_connection`][evalkit.store.read_only_connection] does).
        pinned: With ``read_only``, a DuckLake store is read at the snapshot that was newest
            when it was opened, not at each query's newest.

    Raises:
        StoreError: The store cannot be opened, stayed locked for ``lock_timeout`` seconds,
            is not an evalkit store, or a query in the block failed.
    """
    location = store_location(path)
    attached = None
    if not location.is_lake and not private:
        # A file is attached to the process's database when it is free: creating a database
        # of its own for each block was most of a small run's store time
        # (docs/pages/design/one-database-per-process.md).
        _check_file(location, read_only=read_only)
        attached = attach(location.target, read_only=read_only, config=config,
                          row_group_size=row_group_size)  # fmt: skip
    con = attached.con if attached is not None else open_connection(
        location,
        read_only=read_only,
        lock_timeout=lock_timeout,
        config=config,
        row_group_size=row_group_size,
        private=private,
        pinned=pinned,
    )  # fmt: skip
    interrupted = False
    try:
        yield con
    except KeyboardInterrupt:
        interrupted = True
        raise
    except duckdb.CatalogException as exc:
        if _has_experiments(con):
            raise StoreError(f"{path}: {exc}") from exc
        raise StoreError(
            f"{path}: not an evalkit score store: the DuckDB database has no experiments"
            " table; give the store's .duckdb file, or a new path to start a store"
        ) from exc
    except duckdb.Error as exc:
        if busy(exc):
            raise StoreBusyError(f"{path}: the DuckLake store is busy: {exc}") from exc
        if unreachable(exc):
            location = store_location(path)
            forget_shared(location)
            raise lake_error(location, exc) from exc
        if (problem := unwritable(exc)) is not None:
            raise StoreError(f"{path}: {problem}") from exc
        raise StoreError(f"{path}: {exc}{credentials_hint(con, exc)}") from exc
    finally:
        try:
            if attached is not None:
                detach(attached)
            else:
                con.close()
        except _IN_USE:
            # A query stopped by Ctrl-C (execute_interruptibly) can leave the connection busy,
            # refusing close(): the process is on its way out and releases the file with it.
            if not interrupted:
                raise


def _has_experiments(con: duckdb.DuckDBPyConnection) -> bool:
    try:
        found = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'experiments'"
        ).fetchone()
    except duckdb.Error:
        return True  # cannot tell: keep DuckDB's own message
    return bool(found and found[0])
