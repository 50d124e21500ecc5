"""``evalkit sql``: run a query against the store, read-only unless ``--write``.

Read-only means the store's own tables and views (and a lake's own data files) and nothing
else: [`evalkit.store.read_only_connection`][evalkit.store.read_only_connection] (see
    docs/pages/design/read-only-sql.md).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb

from evalkit._defaults import DEFAULT_STORE
from evalkit._interruptible import execute_interruptibly
from evalkit._json import stored_string
from evalkit.cli._exit import EXIT_OK
from evalkit.cli._format import csv_chunks, json_chunks, text_table
from evalkit.store import connection, read_only_connection, refuse_file_writes
from evalkit.store._read_only import query_failed

#: Rows fetched from DuckDB at a time for ``--format csv`` and ``json``, which stream: a result
#: of any size prints in flat memory (the table needs every row to size its columns).
BATCH_ROWS = 1000


def _batches(cursor: duckdb.DuckDBPyConnection) -> Iterator[list[Any]]:
    """The query's rows, `BATCH_ROWS` at a time, as DuckDB's streaming result yields them."""
    while rows := cursor.fetchmany(BATCH_ROWS):
        yield rows


def _table_rows(types: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    json_columns = [i for i, kind in enumerate(types) if kind == "JSON"]
    shown = [list(row) for row in rows]
    for row in shown:
        for i in json_columns:
            row[i] = stored_string(row[i])
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
    opened = connection(store, private=True) if args.write else read_only_connection(store)
    with opened as con:
        try:
            if not args.write:
                refuse_file_writes(con, store, args.query)
            else:  # the read-only connection has it off already: no progress bar in the output
                con.execute("SET enable_progress_bar = false")
            cursor = execute_interruptibly(con, args.query)
        except duckdb.Error as exc:
            raise query_failed(con, store, exc, read_only=not args.write) from exc
        columns = [d[0] for d in cursor.description] if cursor.description else []
        types = [str(d[1]) for d in cursor.description] if cursor.description else []
        if args.format in ("csv", "json"):
            batches = _batches(cursor) if columns else iter(())
            chunks = csv_chunks if args.format == "csv" else json_chunks
            try:
                for chunk in chunks(columns, batches):
                    sys.stdout.write(chunk)
            except duckdb.Error as exc:  # a row past the first batch failed (a cast, ...)
                sys.stdout.flush()
                raise query_failed(con, store, exc, read_only=not args.write) from exc
            if args.format == "json":
                sys.stdout.write("\n")
            return EXIT_OK
        rows = cursor.fetchall() if columns else []
    if columns:
        # Cells are cut only to fit a terminal: into a pipe or a file, every value whole.
        table = _table_rows(types, rows)
        print(text_table(columns, table, max_cell=None, width=_terminal_width()))
        print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return EXIT_OK
