"""The process's one in-memory DuckDB database, in which `connection` attaches a store file for
the length of its block and detaches it after (docs/pages/design/one-database-per-process.md).

Creating a DuckDB database costs about 15 ms (its threads, buffer manager and catalog), and a
run used to create one for each of its nine or ten store opens; attaching the file to a
database that is already there and detaching it costs 2 to 5 ms. Detaching writes the checkpoint
that closing a database wrote, and releases the file's lock, so between blocks the process
holds the store no more than before.

The database serves one block at a time. A block that finds it in use (another thread's
flush, a block nested in another), whose settings cannot be changed on a running database,
or whose file cannot be attached here (locked by another process, held by a user's
``duckdb.connect`` of this process) gets ``None``: `connection` then opens a database of its
own as it always did, with its lock waits and its error messages. Settings a block asks for
(the writer's thread count and memory limit) are set for the block and set back to the values
the database had after it; a database whose settings cannot be set back (a setting DuckDB
takes only at start, such as ``enable_external_access``) is closed, and the next block makes
a new one.

A forked child never uses its parent's database (DuckDB's threads do not survive a fork): a
database made in another process is left alone and a new one made; before a fork an idle
database is closed, so the fork copies no DuckDB thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass

import duckdb

from evalkit._duckdb import OFFLINE
from evalkit._sql import quote_ident, sql_literal

# The catalog name of a store whose file name would give the name of the in-memory database.
FALLBACK_ALIAS = "evalkit_store"

_lock = threading.Lock()
_database: duckdb.DuckDBPyConnection | None = None
_made_in: int | None = None
#: Databases never to be used or closed again: a parent's, copied by a fork (closing it would
#: wait for threads the child does not have), or one a Ctrl-C left busy (the process is on
#: its way out and releases its files with it).
_left: list[duckdb.DuckDBPyConnection] = []


@dataclass(slots=True)
class Attached:
    """A store file attached to the process's database for one block.

    Attributes:
        con: A connection of the process's database whose default catalog is the file.
        name: The file's catalog name.
        settings: The settings set for the block, set back when it ends.
        database: The process's database.
    """

    con: duckdb.DuckDBPyConnection
    name: str
    settings: tuple[str, ...]
    database: duckdb.DuckDBPyConnection


def attach(
    where: str, *, read_only: bool, config: Mapping[str, str] | None, row_group_size: int
) -> Attached | None:
    """Attach the store file ``where`` to the process's database and make it the default
    catalog of a new connection of it; None when the database is in use or the file (or a
    setting of ``config``) cannot be attached there: the caller opens a database of its own."""
    if not _lock.acquire(blocking=False):
        return None
    try:
        attached = _attach(where, read_only=read_only, config=config or {},
                           row_group_size=row_group_size)  # fmt: skip
    except BaseException:
        _lock.release()
        raise
    if attached is None:
        _lock.release()
    return attached


def _here() -> duckdb.DuckDBPyConnection:
    global _database, _made_in
    if _database is not None and _made_in != os.getpid():
        _left.append(_database)  # the parent's, copied by a fork
        _database = None
    if _database is None:
        _database = duckdb.connect(":memory:", config=dict(OFFLINE))
        _made_in = os.getpid()
    return _database


def _attach(
    where: str, *, read_only: bool, config: Mapping[str, str], row_group_size: int
) -> Attached | None:
    database = _here()
    con = database.cursor()
    settings: list[str] = []
    try:
        for key, value in config.items():
            if str(OFFLINE.get(key, "")).lower() == str(value).lower():
                continue  # the database was made with it (the offline settings)
            con.execute(f"SET GLOBAL {quote_ident(key)} = {sql_literal(value)}")
            settings.append(key)
        options = "(READ_ONLY)" if read_only else f"(ROW_GROUP_SIZE {int(row_group_size)})"
        name = attach_as_default(con, where, options)
    except duckdb.Error:
        con.close()
        _set_back(database, settings)
        return None
    return Attached(con, name, tuple(settings), database)


def attach_as_default(con: duckdb.DuckDBPyConnection, where: str, options: str) -> str:
    """Attach the file ``where`` (with ATTACH's ``options``) to ``con``'s in-memory database
    and make it ``con``'s default catalog, named as ``connect(path)`` names it; returns the
    catalog's name."""
    try:
        # A literal, not a parameter: DuckDB before 2.0 takes no parameters in ATTACH.
        con.execute(f"ATTACH {sql_literal(where)} {options}")
    except duckdb.BinderException:
        # A file named after the in-memory database itself (memory.duckdb).
        con.execute(f"ATTACH {sql_literal(where)} AS {FALLBACK_ALIAS} {options}")
    rows = con.execute(
        "SELECT database_name FROM duckdb_databases()"
        " WHERE NOT internal AND database_name <> current_database()"
    ).fetchall()
    name: str = rows[0][0]
    con.execute(f"USE {quote_ident(name)}")
    return name


def _set_back(database: duckdb.DuckDBPyConnection, settings: list[str] | tuple[str, ...]) -> None:
    """Give ``database`` back the settings it was made with (the offline ones, DuckDB's
    defaults for the others); a database that refuses one is closed (the next block makes a
    new one), never left changed."""
    global _database
    try:
        for key in settings:
            if key in OFFLINE:
                database.execute(f"SET GLOBAL {quote_ident(key)} = {sql_literal(OFFLINE[key])}")
            else:
                database.execute(f"RESET GLOBAL {quote_ident(key)}")
    except duckdb.Error:
        if _database is database:
            _database = None
        database.close()


def detach(attached: Attached) -> None:
    """End ``attached``'s block: close its connection, detach the file (writing its
    checkpoint and releasing its lock) and reset its settings.

    Raises:
        duckdb.Error: The connection was still busy (a query a Ctrl-C stopped) or the file
            could not be detached; the database is then left as it is and never used again.
    """
    global _database
    database = attached.database
    try:
        attached.con.close()
        database.execute(f"DETACH {quote_ident(attached.name)}")
    except BaseException:
        _left.append(database)
        if _database is database:
            _database = None
        _lock.release()
        raise
    try:
        _set_back(database, attached.settings)
    finally:
        _lock.release()


def _close_before_fork() -> None:
    global _database
    if _lock.acquire(blocking=False):
        try:
            if _database is not None and _made_in == os.getpid():
                _database.close()
            _database = None
        finally:
            _lock.release()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # a parent's thread may have held it: none holds it here


os.register_at_fork(before=_close_before_fork, after_in_child=_after_fork_in_child)
