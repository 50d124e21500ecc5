"""Reading with several queries from one snapshot of a store: row ids that one query found
still name the same rows when another reads them, whatever a writer commits in between."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import duckdb

T = TypeVar("T")


def in_one_transaction(con: duckdb.DuckDBPyConnection, read: Callable[[], T]) -> T:
    """``read()`` inside one transaction on ``con``, rolled back after (it only reads); a
    connection already in a transaction keeps its own."""
    try:
        con.begin()
    except duckdb.TransactionException:
        return read()
    try:
        return read()
    finally:
        con.rollback()
