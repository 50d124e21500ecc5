"""``evalkit sql``: run a query against the store, read-only unless ``--write``.

Read-only means the store's own tables and views and nothing else: DuckDB's own switches, set
once the store is open (:data:`_READ_ONLY`) and then locked, so no statement can set them back
(see docs/pages/design/read-only-sql.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import duckdb

from evalkit.cli._format import csv_text, json_text, records, text_table
from evalkit.cli._main import EXIT_OK
from evalkit.errors import StoreError
from evalkit.store import (
    DEFAULT_STORE,
    connection,
    credentials_hint,
    execute_interruptibly,
    is_lake,
    is_remote,
    lake_data_path,
    sql_literal,
)

# Order matters: the store is attached first (with external access off, DuckDB may refuse to
# open a file), lock_configuration comes last, and after it nothing can be changed back.
_READ_ONLY = (
    ("enable_external_access", "false"),  # files but the store, URLs, ATTACH, INSTALL/LOAD
    ("allow_community_extensions", "false"),
    ("autoinstall_known_extensions", "false"),
    ("autoload_known_extensions", "false"),
    ("allow_persistent_secrets", "false"),
    ("lock_configuration", "true"),
)

_REFUSED = (
    "file system operations are disabled",
    "external",  # "Loading external extensions is disabled", "Cannot enable external access"
    "configuration has been locked",
    "secrets are disabled",
    "read-only mode",
    "attached in read-only",
    "read only",
)


def _lock_down(con: duckdb.DuckDBPyConnection, store: str) -> None:
    # A DuckLake store has used the secret manager already (its catalog, its data path may
    # need a secret), which DuckDB then keeps as it is: the lake is attached read-only.
    lake = is_lake(store)
    try:
        data_path = lake_data_path(con) if lake else None
        if data_path is not None and is_remote(data_path):
            # The lake's Parquet files on object storage stay readable, and only they.
            con.execute(f"SET allowed_directories = [{sql_literal(data_path)}]")
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


#: Statements that write files. Read-only, a lake's data path is the one place files may be
#: reached (its Parquet files), and DuckDB's allowed directories let writes through as well.
_WRITES_FILES = {duckdb.StatementType.COPY, duckdb.StatementType.EXPORT}


def _refuse_writes(con: duckdb.DuckDBPyConnection, store: str, query: str) -> None:
    try:
        kinds = {s.type for s in con.extract_statements(query)}
    except duckdb.Error as exc:
        raise _query_failed(con, store, exc, write=False) from exc
    if kinds & _WRITES_FILES:
        raise StoreError(
            f"{store}: query refused: COPY … TO and EXPORT DATABASE write files\n(evalkit sql is"
            " read-only: it reads the store's own tables and views only, see `evalkit sql"
            " --help`; --write lifts every limit)"
        )


def _query_failed(
    con: duckdb.DuckDBPyConnection, store: str, exc: duckdb.Error, *, write: bool
) -> StoreError:
    message = f"{store}: query failed: {exc}{credentials_hint(con, exc)}"
    if not write and any(hint in str(exc) for hint in _REFUSED):
        message += (
            "\n(evalkit sql is read-only: it reads the store's own tables and views only,"
            " see `evalkit sql --help`; --write lifts every limit)"
        )
    return StoreError(message)


def _json_text(value: Any) -> Any:
    """A JSON column's value as a table shows it: a JSON string as its text, else as is."""
    if isinstance(value, str) and value.startswith('"'):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return decoded if isinstance(decoded, str) else value
    return value


def _table_rows(types: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    json_columns = [i for i, kind in enumerate(types) if kind == "JSON"]
    shown = [list(row) for row in rows]
    for row in shown:
        for i in json_columns:
            row[i] = _json_text(row[i])
    return shown


def _terminal_width() -> int | None:
    """The terminal's width when the table goes to one; into a file or a pipe, None."""
    try:
        on_terminal = sys.stdout.isatty()
    except (AttributeError, OSError, ValueError):
        return None
    return shutil.get_terminal_size().columns if on_terminal else None


def cmd_sql(args: argparse.Namespace) -> int:
    """Print the query's result as a table, CSV or JSON."""
    store = args.store or DEFAULT_STORE
    with connection(store, read_only=not args.write, private=True) as con:
        if not args.write:
            _lock_down(con, store)
            _refuse_writes(con, store, args.query)
        try:
            cursor = execute_interruptibly(con, args.query)
        except duckdb.Error as exc:
            raise _query_failed(con, store, exc, write=args.write) from exc
        columns = [d[0] for d in cursor.description] if cursor.description else []
        types = [str(d[1]) for d in cursor.description] if cursor.description else []
        rows = cursor.fetchall() if columns else []
    if args.format == "csv":
        print(csv_text(columns, rows), end="")
    elif args.format == "json":
        print(json_text(records(columns, rows)))
    elif columns:
        # Cells are cut only to fit a terminal: into a pipe or a file, every value whole.
        table = _table_rows(types, rows)
        print(text_table(columns, table, max_cell=None, width=_terminal_width()))
        print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return EXIT_OK
