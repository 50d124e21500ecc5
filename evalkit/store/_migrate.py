"""Bringing a store file up to the schema version this evalkit writes.

Opening a store for writing applies every migration above its version in order, each in its
own transaction. A store written by a newer evalkit is refused rather than guessed at.
"""

from __future__ import annotations

import datetime as dt

import duckdb

from evalkit.errors import StoreError
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


def migrate(con: duckdb.DuckDBPyConnection, *, where: str) -> int:
    """Bring the store up to :data:`SCHEMA_VERSION`; returns the version found before.

    Raises:
        StoreError: The store was written by a newer evalkit.
    """
    found = schema_version(con)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"{where}: score store schema version {found} is newer than this evalkit's "
            f"({SCHEMA_VERSION}); upgrade evalkit to write to it"
        )
    for version in range(found, SCHEMA_VERSION):
        con.execute("BEGIN TRANSACTION")
        try:
            MIGRATIONS[version](con)
            con.execute(
                "INSERT INTO schema_version VALUES (?, ?)",
                [version + 1, dt.datetime.now(dt.UTC).replace(tzinfo=None)],
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return found
