"""One commit at a time into a DuckLake store whose catalog is a SQLite file.

DuckLake's SQLite catalog opens its commit as a reader and then writes: two processes
committing at once meet SQLite's "database is locked" at once (a reader cannot become the
writer; SQLite's busy timeout does not wait for it), and the loser's whole transaction is
run again. The processes sharing a SQLite catalog share its machine, so a file lock beside
the catalog makes them take turns for the short COMMIT (the Parquet files are written
before it, side by side) (docs/pages/design/store-location.md).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import duckdb

from evalkit.store._batch_io import Transaction
from evalkit.store._location import store_location


def commit_lock_file(store: str) -> Path | None:
    """The lock file beside ``store``'s SQLite catalog; ``None`` for any other store."""
    location = store_location(store)
    if not location.is_lake or location.catalog != "sqlite" or location.file is None:
        return None
    return location.file.with_name(location.file.name + ".commit-lock")


class LockedCommit(Transaction):
    """A :class:`Transaction` whose COMMIT holds the file lock ``lock``."""

    def __init__(self, con: duckdb.DuckDBPyConnection, lock: Path) -> None:
        super().__init__(con)
        self.lock = lock

    def __enter__(self) -> None:
        self.fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            super().__enter__()
        except BaseException:
            os.close(self.fd)
            raise

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        try:
            super().__exit__(exc_type, *rest)
        finally:
            os.close(self.fd)  # releases the lock
