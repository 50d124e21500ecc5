"""Bringing a store file up to the schema version this evalkit writes.

Opening a store for writing applies every migration above its version in order, each in its
own transaction. A store written by a newer evalkit is refused rather than guessed at.
"""

from __future__ import annotations

import datetime as dt
import random
import time

import duckdb

from evalkit.errors import StoreError
from evalkit.store._lake_errors import busy
from evalkit.store._schema import MIGRATIONS, SCHEMA_VERSION


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The version of the store behind ``con`` (0 for an empty file)."""
    # fetchall, not fetchone: a half-fetched result would block the connection's next query.
    found = con.execute(
        "SELECT count(*) FROM information_schema.tables "
        "WHERE table_name = 'schema_version' AND table_schema = current_schema()"
        " AND table_catalog = current_database()"
    ).fetchall()
    if not found or not found[0][0]:
        return 0
    rows = con.execute("SELECT max(version) FROM schema_version").fetchall()
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def migrate(con: duckdb.DuckDBPyConnection, *, where: str, timeout: float = 300.0) -> int:
    """Bring the store up to `SCHEMA_VERSION`; returns the version found before.

    Writers of a DuckLake store may migrate it at the same moment: a migration that lost the
    race to another (the same tables created twice) is rolled back, and the version read again
    (for up to ``timeout`` s).

    Raises:
        StoreError: The store was written by a newer evalkit.
    """
    first: int | None = None
    deadline = time.monotonic() + timeout
    while True:
        # The version is read in the migration's own transaction: another writer may have
        # migrated the lake since this one last looked.
        con.execute("BEGIN TRANSACTION")
        try:
            found = schema_version(con)
            first = found if first is None else first
            if found > SCHEMA_VERSION:
                raise StoreError(
                    f"{where}: score store schema version {found} is newer than this"
                    f" evalkit's ({SCHEMA_VERSION}); upgrade evalkit to write to it"
                )
            # A new store takes every step in one transaction (each step committed, and the
            # version read again, took twice as long: issue 31 item 6); a store with rows
            # takes one step a transaction: DuckDB refuses to commit a transaction that
            # altered a table and then changed its rows.
            upto = SCHEMA_VERSION if found == 0 else min(found + 1, SCHEMA_VERSION)
            for version in range(found, upto):
                MIGRATIONS[version](con)
                con.execute(
                    "INSERT INTO schema_version VALUES (?, ?)",
                    [version + 1, dt.datetime.now(dt.UTC).replace(tzinfo=None)],
                )
        except BaseException:
            con.execute("ROLLBACK")
            raise
        try:
            # A COMMIT that fails has ended the transaction itself: nothing to roll back.
            con.execute("COMMIT")
        except duckdb.Error as exc:
            if not busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.05 + 0.2 * random.random())
            continue
        if upto == SCHEMA_VERSION:
            return first
