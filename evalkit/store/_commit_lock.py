"""One commit at a time into a DuckLake store whose catalog is a SQLite file.

DuckLake's SQLite catalog opens its commit as a reader and then writes: two processes
committing at once meet SQLite's "database is locked" at once (a reader cannot become the
writer; SQLite's busy timeout does not wait for it), and the loser's whole transaction is
run again. The processes sharing a SQLite catalog share its machine, so a file lock beside
the catalog makes them take turns for their transactions, which are short: a flush's Parquet
files are written before it, side by side (``_lake_stage.py``), and it only registers them
(docs/pages/design/store-location.md).

The lock is waited for a bounded time (`COMMIT_LOCK_WAIT_S`), never for ever: a process
that holds it and does not let go (stopped, hung on a disk) makes the commit a
`StoreBusyError`, which a writer keeps and retries like a locked store, and past its
``lock_timeout`` spills to the recovery folder.
Written by hand rather than with a library: docs/pages/design/hand-written-pieces.md.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

import duckdb

from evalkit.store._batch_io import Transaction
from evalkit.store._connect import StoreBusyError
from evalkit.store._location import StoreLocation, store_location

#: Seconds a commit waits for the commit lock (as long as the SQLite catalog's own busy wait).
COMMIT_LOCK_WAIT_S = 5.0

_POLL_FIRST_S = 0.001
_POLL_MAX_S = 0.005


def commit_lock_file(store: str | os.PathLike[str] | StoreLocation) -> Path | None:
    """The lock file beside ``store``'s SQLite catalog; ``None`` for any other store."""
    location = store_location(store)
    if not location.is_lake or location.catalog != "sqlite" or location.file is None:
        return None
    return location.file.with_name(location.file.name + ".commit-lock")


def _acquire(fd: int, lock: Path, wait: float) -> None:
    """Take the lock on ``fd`` within ``wait`` s, or raise `StoreBusyError`."""
    deadline = time.monotonic() + wait
    pause = _POLL_FIRST_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise StoreBusyError(
                    f"{lock}: the commit lock of the DuckLake store's SQLite catalog stayed"
                    f" held by another process for {wait:g} s"
                ) from None
        time.sleep(pause)
        pause = min(pause * 2, _POLL_MAX_S)


@contextmanager
def catalog_turn(lock: Path, wait: float = COMMIT_LOCK_WAIT_S) -> Iterator[None]:
    """Hold the file lock ``lock``, waited for up to ``wait`` s (`StoreBusyError`)."""
    lock.parent.mkdir(parents=True, exist_ok=True)  # a new lake's catalog folder
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        _acquire(fd, lock, wait)
        yield
    finally:
        os.close(fd)  # releases the lock


class LockedCommit(Transaction):
    """A `Transaction` whose COMMIT holds the file lock ``lock``, waited for up to
    ``wait`` s (`StoreBusyError` after that)."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, lock: Path, *, wait: float = COMMIT_LOCK_WAIT_S
    ) -> None:
        super().__init__(con)
        self.turn = catalog_turn(lock, wait)

    def __enter__(self) -> None:
        self.turn.__enter__()
        try:
            super().__enter__()
        except BaseException:
            self.turn.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        try:
            super().__exit__(exc_type, *rest)
        finally:
            self.turn.__exit__(None, None, None)


class CatalogTurns:
    """A writer's turns at ``store``'s SQLite catalog (none for any other store), waited for
    up to ``lock_timeout`` s, `COMMIT_LOCK_WAIT_S` at most.

    The turn is held for every writing use of the catalog (a writer's, the recovery of
    spilled rows, the merge of shards), but not while a flush writes its Parquet files: two
    processes using a SQLite catalog at once stall each other a whole second (DuckDB's SQLite
    waits for a busy catalog in steps of 1 s; docs/pages/design/store-location.md). Turns do
    not nest: a process holding one waits for itself if it asks again.
    """

    def __init__(self, store: str | os.PathLike[str] | StoreLocation, lock_timeout: float) -> None:
        self.lock = commit_lock_file(store)
        self.wait = min(COMMIT_LOCK_WAIT_S, lock_timeout)

    def turn(self) -> AbstractContextManager[None]:
        """The turn alone (for opening the lake, or around a plain `Transaction`)."""
        return nullcontext() if self.lock is None else catalog_turn(self.lock, self.wait)

    def transaction(self, con: duckdb.DuckDBPyConnection) -> Transaction:
        """A transaction of ``con`` in the turn."""
        if self.lock is None:
            return Transaction(con)
        return LockedCommit(con, self.lock, wait=self.wait)
