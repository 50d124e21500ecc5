"""``evalkit sql``: run a query against the store, read-only unless ``--write``."""

from __future__ import annotations

import argparse

import duckdb

from evalkit.cli._format import csv_text, json_text, records, text_table
from evalkit.cli._main import EXIT_OK
from evalkit.errors import StoreError
from evalkit.store import DEFAULT_STORE, connection


def cmd_sql(args: argparse.Namespace) -> int:
    """Print the query's result as a table, CSV or JSON."""
    store = args.store or DEFAULT_STORE
    with connection(store, read_only=not args.write) as con:
        try:
            cursor = con.execute(args.query)
        except duckdb.Error as exc:
            raise StoreError(f"{store}: query failed: {exc}") from exc
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = cursor.fetchall() if columns else []
    if args.format == "csv":
        print(csv_text(columns, rows), end="")
    elif args.format == "json":
        print(json_text(records(columns, rows)))
    elif columns:
        print(text_table(columns, rows))
        print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return EXIT_OK
