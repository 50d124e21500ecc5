"""Persistent DuckDB secrets for the tests, written where a process whose ``HOME`` is ``home``
reads them (DuckDB's default secret directory, ``~/.duckdb/stored_secrets``)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from evalkit._duckdb import OFFLINE
from evalkit._extensions import load_extensions


def secret_directory(home: Path) -> Path:
    return home / ".duckdb" / "stored_secrets"


def create_secrets(home: Path, *statements: str) -> None:
    """Run ``CREATE PERSISTENT SECRET …`` ``statements`` into ``home``'s secret directory."""
    folder = secret_directory(home)
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(":memory:", config={**OFFLINE, "secret_directory": str(folder)})
    try:
        load_extensions(con, "ducklake", "postgres_scanner")
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()


def quoted(text: str | Path) -> str:
    return "'" + str(text).replace("'", "''") + "'"
