"""What a DuckLake store's errors mean: a busy catalog (retry), a catalog out of reach (wait
for it, as for a busy one), a data path that cannot be written (say which and why).

DuckDB raises all of them as ``duckdb.Error`` with only its message to tell them apart; the
writers (``_connect.py``, ``_writer.py``, ``_pending.py``) decide from these what to retry
(docs/pages/design/locked-store-recovery.md).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import duckdb

from evalkit.errors import StoreError


def busy(exc: BaseException) -> bool:
    """Whether ``exc`` is a DuckLake commit or catalog access that may succeed when retried."""
    text = str(exc)
    return isinstance(exc, duckdb.Error) and (
        "Failed to commit DuckLake transaction" in text
        or "database is locked" in text  # the SQLite catalog's busy answer
        or "Could not set lock on file" in text  # a DuckDB catalog held by another process
        or "Transaction conflict" in text
        or "could not serialize access" in text  # PostgreSQL
        or "deadlock detected" in text
    )


#: What DuckDB's postgres extension says when the catalog's server cannot be reached: down,
#: shutting down, starting up, or the connection dropped.
_UNREACHABLE = (
    "Unable to connect to Postgres",
    "server closed the connection unexpectedly",
    "Connection refused",
    "could not connect to server",
    "no connection to the server",
    "could not receive data from server",
    "could not send data to server",
    "terminating connection due to administrator command",
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is in recovery mode",
    "SSL SYSCALL error",
)


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the lake's catalog server could not be reached (a catalog outage:
    the same work may succeed once it is back)."""
    return isinstance(exc, duckdb.Error) and any(s in str(exc) for s in _UNREACHABLE)


def unwritable(exc: BaseException) -> str | None:
    """For DuckDB's error on a file or folder of a local data path that it could not create
    (its own message says "No such file or directory" for a read-only one): what to say
    instead, naming the folder, what the operating system says when a file is written there,
    and the file; else ``None``."""
    found = re.search(r'(?:Failed to create directory|Could not write file) "([^"]+)"', str(exc))
    if not isinstance(exc, duckdb.Error) or found is None:
        return None
    target = found.group(1)
    folder = Path(target).parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    try:
        with tempfile.TemporaryFile(dir=folder) as probe:
            probe.write(b"\0")
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as failed:
        return (
            f"cannot write the DuckLake store's data path: {folder} ({failed.strerror}); it is"
            f" full, read-only or not writable by this user (writing {target})"
        )
    return None


class CatalogUnreachableError(StoreError):
    """The DuckLake store's catalog could not be reached (its server stopped or restarting,
    the connection dropped): a writer keeps its rows and tries again, as for a busy store."""
