"""A connection that reads the store's own tables and views and nothing else (``evalkit sql``).

Read-only is DuckDB's own switches, set once the store is open (`_READ_ONLY`) and then
locked, so no statement can set them back. A DuckLake store's data lives in Parquet files
(locally or on object storage), which DuckDB then reads as files: those files, and only they,
stay readable (``allowed_paths``), listed from the lake's catalog at a snapshot the connection
is pinned to, so a file another writer commits later is neither needed nor readable. An
allowed file could also be written, and DuckLake's maintenance writes new files even into a
lake attached read-only: listing files rather than the data folder keeps every new file
refused, and the statements that write to a path they are given (``COPY … TO``, ``EXPORT``)
are refused before they run (docs/pages/design/read-only-sql.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from evalkit.errors import StoreError
from evalkit.store._connect import connection
from evalkit.store._lake import in_lake
from evalkit.store._location import StoreLocation
from evalkit.store._object_store import credentials_hint

# Order matters: the store is attached first (with external access off, DuckDB may refuse to
# open a file), lock_configuration comes last, and after it nothing can be changed back.
_READ_ONLY = (
    ("enable_external_access", "false"),  # files but the store, URLs, ATTACH, INSTALL/LOAD
    ("allow_community_extensions", "false"),
    ("autoinstall_known_extensions", "false"),
    ("autoload_known_extensions", "false"),
    ("allow_persistent_secrets", "false"),
    # DuckDB draws its progress bar on stdout once a query has run 2 s: into the CSV or JSON
    # `evalkit sql` prints (seen under load).
    ("enable_progress_bar", "false"),
    ("lock_configuration", "true"),
)

#: Statements that write files to a path they name, which an allowed file (a lake's Parquet
#: file) would let through.
_WRITES_FILES = {duckdb.StatementType.COPY, duckdb.StatementType.EXPORT}

#: DuckDB attaches even a lake's Parquet file, read-write, as a database of its own.
_OPENS_FILES = {duckdb.StatementType.ATTACH}

_READ_ONLY_HINT = (
    "\n(evalkit sql is read-only: it reads the store's own tables and views only, see `evalkit"
    " sql --help`; --write lifts every limit)"
)

_FILES_VARIABLE = "evalkit_lake_files"

#: What DuckDB says when a read-only connection's limits refuse a statement.
_REFUSED = (
    "file system operations are disabled",
    "external",  # "Loading external extensions is disabled", "Cannot enable external access"
    "configuration has been locked",
    "secrets are disabled",
    "read-only mode",
    "attached in read-only",
    "read only",
    "readonly database",  # DuckLake's maintenance on a lake attached read-only
)


@contextmanager
def read_only_connection(
    store: str | os.PathLike[str] | StoreLocation, *, lock_timeout: float = 30.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to ``store`` that reads its tables and views and nothing else.

    No file is written, attached, installed or loaded, no other file is read and no setting
    can be changed back; a DuckLake store's own data files stay readable (locally or on
    object storage), as of the snapshot that was newest when it was opened. Check each query
    with [`refuse_file_writes`][evalkit.store.refuse_file_writes] before running it.

    Raises:
        StoreError: The store cannot be opened, or not made read-only.
    """
    with connection(
        store, read_only=True, private=True, pinned=True, lock_timeout=lock_timeout
    ) as con:
        _lock_down(con, str(store))
        yield con


def _lake_files(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every data and delete file the lake's tables read at the connection's snapshot."""
    files: list[str] = []
    tables = con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name ="
        " current_database()"
    ).fetchall()
    for schema, table in tables:
        rows = con.execute(
            "SELECT data_file, delete_file FROM"
            " ducklake_list_files(current_database(), ?, schema => ?)",
            [table, schema],
        ).fetchall()
        files.extend(path for row in rows for path in row if path)
    return files


def _lock_down(con: duckdb.DuckDBPyConnection, store: str) -> None:
    # A DuckLake store has used the secret manager already (its catalog, its data path may
    # need a secret), which DuckDB then keeps as it is: the lake is attached read-only.
    lake = in_lake(con)
    try:
        if lake:
            # A parameter, not a literal: a lake of thousands of files makes a long statement.
            con.execute(f"SET VARIABLE {_FILES_VARIABLE} = ?", [_lake_files(con)])
            con.execute(f"SET allowed_paths = getvariable('{_FILES_VARIABLE}')")
            con.execute(f"RESET VARIABLE {_FILES_VARIABLE}")
        for name, value in _READ_ONLY:
            if not (lake and name == "allow_persistent_secrets"):
                con.execute(f"SET {name} = {value}")
        locked = con.execute(
            "SELECT current_setting('enable_external_access'),"
            " current_setting('lock_configuration')"
        ).fetchone()
    except duckdb.Error as exc:
        raise StoreError(f"{store}: cannot open the store read-only for SQL: {exc}") from exc
    if locked != (False, True):
        raise StoreError(f"{store}: cannot open the store read-only for SQL ({locked})")


def refuse_file_writes(con: duckdb.DuckDBPyConnection, store: str, query: str) -> None:
    """Refuse ``query`` when one of its statements writes or opens a file (``COPY … TO``,
    ``EXPORT DATABASE``, ``ATTACH``), which a
    [`read_only_connection`][evalkit.store.read_only_connection] would let reach a lake's own files.

    Raises:
        StoreError: The query writes or attaches files (naming what is refused and why).
        duckdb.Error: The query does not parse.
    """
    kinds = {s.type for s in con.extract_statements(query)}
    if kinds & _WRITES_FILES:
        raise StoreError(
            f"{store}: query refused: COPY … TO and EXPORT DATABASE write files{_READ_ONLY_HINT}"
        )
    if kinds & _OPENS_FILES:
        raise StoreError(f"{store}: query refused: ATTACH opens other databases{_READ_ONLY_HINT}")


def query_failed(
    con: duckdb.DuckDBPyConnection, store: str, exc: duckdb.Error, *, read_only: bool = True
) -> StoreError:
    """The error to raise for a query on ``con`` (a connection to ``store``) that failed with
    ``exc``: ``"<store>: query failed: <DuckDB's message>"``, with what it means when a DuckLake
    store's object store refused the data files or was not reached (where the files are, where
    their credentials come from) and, with ``read_only`` (a
    [`read_only_connection`][evalkit.store.read_only_connection]), when the read-only limits
    refused the query. What ``evalkit sql`` prints for a failed query.
    """
    message = f"{store}: query failed: {exc}{credentials_hint(con, exc)}"
    if read_only and any(hint in str(exc) for hint in _REFUSED):
        message += _READ_ONLY_HINT
    return StoreError(message)
