"""Opening a DuckLake store: an in-memory DuckDB attaching the lake as its default catalog.

The lake is attached as ``evalkit_lake`` and made current (``USE``), so every query of the
store reads ``scores``, ``experiments``… as it does in a store file. A new lake is created by
the first attach, with its data path: the one given (``store_data_path``), else DuckLake's
default beside a local catalog file. An existing lake keeps the data path it was created with.

Several processes write one lake at once: DuckLake retries a commit that lost a race with
another when the two do not conflict, and a commit that still fails (the catalog busy, a real
conflict) is raised as ``StoreBusyError`` (``_connect.py``), which writers retry whole
(docs/pages/design/store-location.md).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping

import duckdb

from evalkit._data_path import is_remote, resolve_data_path
from evalkit._duckdb import OFFLINE
from evalkit._extensions import load_extensions
from evalkit._sql import sql_literal
from evalkit._verified_extensions import LAKE_SETTINGS
from evalkit.errors import ConfigError, StoreError
from evalkit.store._lake_errors import CatalogUnreachableError, busy, unreachable
from evalkit.store._location import StoreLocation, store_location
from evalkit.store._object_store import lake_data_path, refresh_credentials, use_object_store

#: The catalog name the lake is attached under.
LAKE_ALIAS = "evalkit_lake"

_POLL_S = 0.05

#: Milliseconds DuckLake waits before it retries a commit that lost to another's.
RETRY_WAIT_MS = 5

# The in-memory database a lake is attached in (duckdb.connect(":memory:") names it so).
_MEMORY = "memory"

#: Seconds an attach waits for a busy catalog when a lake is prepared.
DEFAULT_ATTACH_TIMEOUT = 60.0


def in_lake(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con``'s current catalog is a DuckLake (not a DuckDB file)."""
    rows = con.execute(
        "SELECT type FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    return bool(rows) and rows[0][0] == "ducklake"


def lake_ddl(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Run the schema's DDL ``sql``, as DuckLake takes it in a lake: DuckLake keeps NOT NULL
    as its only constraint, so a PRIMARY KEY is left out there (ids are fresh UUIDs, prices
    seeded once)."""
    if in_lake(con):
        sql = sql.replace(" PRIMARY KEY", "")
    con.execute(sql)


def partition_by_experiment(con: duckdb.DuckDBPyConnection, *tables: str) -> None:
    """In a lake, partition ``tables`` by ``experiment_id``: each run's rows go to files of
    their own (``experiment_id=…/``), so compaction never mixes two runs and retention drops
    whole files (docs/pages/ducklake-at-scale.md). Nothing in a store file."""
    if in_lake(con):
        for table in tables:
            con.execute(f"ALTER TABLE {table} SET PARTITIONED BY (experiment_id)")


def _extensions(location: StoreLocation) -> tuple[str, ...]:
    names = ["ducklake"]
    if location.catalog == "sqlite":
        names.append("sqlite_scanner")
    elif location.catalog == "postgres":
        names.append("postgres_scanner")
    return tuple(names)


def loaded(con: duckdb.DuckDBPyConnection, extension: str) -> bool:
    """Whether ``extension`` is loaded in ``con``."""
    rows = con.execute(
        "SELECT loaded FROM duckdb_extensions() WHERE extension_name = ?", [extension]
    ).fetchall()
    return bool(rows and rows[0][0])


# One database per process, lake and mode, its extensions loaded and the lake attached once:
# loading the extensions and reading the catalog cost about a second, which every flush and
# every read would pay again. Connections are cursors of it (DuckLake reads the newest
# snapshot at each transaction's start, so a kept attachment sees other processes' commits).
_SHARED: dict[tuple[int, str, bool], duckdb.DuckDBPyConnection] = {}
_SHARED_LOCK = threading.Lock()
# The data path of each shared database whose lake keeps its files on object storage: its
# credentials from the environment are made again at each use (refresh_credentials).
_REMOTE: dict[tuple[int, str, bool], str] = {}


def open_lake(
    location: StoreLocation,
    *,
    read_only: bool,
    lock_timeout: float,
    config: Mapping[str, str] | None = None,
    data_path: str | None = None,
    private: bool = False,
    pinned: bool = False,
) -> duckdb.DuckDBPyConnection:
    """Connect to the DuckLake at ``location`` (created when missing, unless ``read_only``).

    The connection is a cursor of the process's database for the lake (``config`` applies
    when that database is made), unless ``private`` or ``data_path`` ask for a database of
    its own, or the catalog is a DuckDB file (one process at a time, so never held between
    uses) (``evalkit sql`` locks its settings down; a data path matters only to the attach
    that creates the lake). ``pinned`` (read-only, a database of its own) attaches the lake at
    its newest snapshot and keeps it there: later commits of other writers are not seen.

    Raises:
        StoreError: The extensions are missing, the catalog cannot be reached, the lake is
            missing (read-only), or ``data_path`` differs from the lake's own.
    """
    if read_only and not location.exists():
        raise StoreError(f"{location}: no such score store")
    if pinned and not read_only:
        raise ValueError("a lake is pinned to a snapshot only when opened read-only")
    if private or pinned or data_path is not None or location.catalog == "duckdb":
        # A DuckDB catalog file takes one process at a time, as a store file does: it is held
        # only while used, never kept open by a process between its writes.
        return _attach(
            location, read_only, lock_timeout, config, data_path,
            checked=not (private or pinned), pinned=pinned,
        )  # fmt: skip
    key = (os.getpid(), location.target, read_only)
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            shared = _attach(location, read_only, lock_timeout, config, None)
            stored = lake_data_path(shared)
            if stored is not None and is_remote(stored):
                _REMOTE[key] = stored
            _SHARED[key] = shared
        elif key in _REMOTE:
            refresh_credentials(shared, _REMOTE[key])
        cursor = shared.cursor()  # under the lock: threads share the parent connection
    try:
        cursor.execute(f"USE {LAKE_ALIAS}")
    except duckdb.Error as exc:
        # USE reads the catalog's newest snapshot: a catalog that is down fails here.
        cursor.close()
        if unreachable(exc):
            forget_shared(location)
        raise lake_error(location, exc) from exc
    except BaseException:
        cursor.close()
        raise
    return cursor


def lake_error(location: StoreLocation | str, exc: duckdb.Error) -> StoreError:
    """``exc`` of a lake's connection as evalkit raises it: `CatalogUnreachableError`
    for a catalog that could not be reached, else [`StoreError`][evalkit.errors.StoreError]."""
    if unreachable(exc):
        return CatalogUnreachableError(
            f"{location}: the DuckLake store's catalog could not be reached: {exc}"
        )
    return StoreError(f"{location}: cannot open the DuckLake score store: {exc}")


def forget_shared(location: StoreLocation | str) -> None:
    """Drop this process's shared databases of ``location``'s lake (after its catalog was
    lost): the next connection attaches the lake again."""
    target = location.target if isinstance(location, StoreLocation) else str(location)
    with _SHARED_LOCK:
        for key in [k for k in _SHARED if k[0] == os.getpid() and k[1] == target]:
            _SHARED.pop(key)
            _REMOTE.pop(key, None)


def _attach(
    location: StoreLocation,
    read_only: bool,
    lock_timeout: float,
    config: Mapping[str, str] | None,
    data_path: str | None,
    *,
    checked: bool = True,
    pinned: bool = False,
) -> duckdb.DuckDBPyConnection:
    """``checked``: the extension files DuckDB checked once are loaded without its check
    (``_verified.py``); a private database (``evalkit sql``, whose user may LOAD) checks each.
    ``pinned``: attached again at the snapshot the first attach found newest."""
    if data_path is None and not location.exists():
        data_path = location.default_data_path()
    if not read_only and location.file is not None:
        # A new lake's catalog may name a folder not made yet (team/catalog.sqlite).
        location.file.parent.mkdir(parents=True, exist_ok=True)
    settings: dict[str, str | bool | int | float | list[str]] = {
        **(LAKE_SETTINGS if checked else OFFLINE),
        **(config or {}),
    }
    con = duckdb.connect(":memory:", config=settings)
    try:
        load_extensions(con, *_extensions(location))
        if data_path is not None and is_remote(data_path):
            use_object_store(con, data_path)
        options = []
        if data_path is not None:
            options.append(f"DATA_PATH {sql_literal(data_path)}")
        if location.catalog == "sqlite":
            # Readers beside a writer (WAL), and a busy catalog waited for by SQLite itself
            # before a commit is given up and retried whole.
            options.append("META_JOURNAL_MODE 'WAL', META_BUSY_TIMEOUT 5000")
        if read_only:
            options.append("READ_ONLY")
        deadline = time.monotonic() + lock_timeout
        _attach_lake(con, location, options, deadline, data_path)
        if pinned:
            # A lake reads its newest snapshot at each transaction's start: attached again at
            # the one found now, every query of the connection reads the same files.
            snapshot = con.execute(f"SELECT id FROM {LAKE_ALIAS}.current_snapshot()").fetchone()
            assert snapshot is not None
            con.execute(f"USE {_MEMORY}")
            con.execute(f"DETACH {LAKE_ALIAS}")
            options.append(f"SNAPSHOT_VERSION {int(snapshot[0])}")
            _attach_lake(con, location, options, deadline, data_path)
        stored = lake_data_path(con) if data_path is None else None
        if stored is not None and is_remote(stored):
            use_object_store(con, stored)
        # DuckLake's own wait before it commits again after losing to another writer's
        # commit (default 100 ms, growing 1.5x): concurrent appends are committed side by
        # side, so a short wait is all they need.
        con.execute(f"SET ducklake_retry_wait_ms = {RETRY_WAIT_MS}")
    except BaseException:
        con.close()
        raise
    return con


def _attach_lake(
    con: duckdb.DuckDBPyConnection,
    location: StoreLocation,
    options: list[str],
    deadline: float,
    data_path: str | None,
) -> None:
    """ATTACH the lake as `LAKE_ALIAS` and USE it, waiting for a busy catalog until
    ``deadline``."""
    clause = f" ({', '.join(options)})" if options else ""
    while True:
        try:
            con.execute(f"ATTACH {sql_literal(location.target)} AS {LAKE_ALIAS}{clause}")
            break
        except duckdb.Error as exc:
            if busy(exc) and time.monotonic() < deadline:
                time.sleep(_POLL_S)
                continue
            if "requires the extension httpfs" in str(exc) and not loaded(con, "httpfs"):
                # The lake's data path is on object storage (use_object_store below).
                load_extensions(con, "httpfs")
                continue
            raise _cannot_attach(location, data_path, exc) from exc
    con.execute(f"USE {LAKE_ALIAS}")


def store_exists(store: str | os.PathLike[str] | StoreLocation) -> bool:
    """Whether the store is there: its file, or its lake's local catalog file; a lake with a
    PostgreSQL catalog is asked (opened read-only)."""
    location = store_location(store)
    if location.file is not None:
        return location.file.exists()
    try:
        _attach(location, True, DEFAULT_ATTACH_TIMEOUT, None, None).close()
    except MissingLakeError:
        return False
    return True


class MissingLakeError(StoreError):
    """The catalog holds no DuckLake (and the connection was not to create one)."""


def _cannot_attach(location: StoreLocation, data_path: str | None, exc: duckdb.Error) -> StoreError:
    text = str(exc)
    if "creating a new DuckLake is explicitly disabled" in text:
        return MissingLakeError(f"{location}: no such score store")
    if "data_path is not set" in text:
        return StoreError(
            f"{location}: a new DuckLake store with a {location.catalog} catalog needs a data"
            " path for its Parquet files: give store_data_path (--store-data-path), a folder"
            " or an object-store URL"
        )
    if "does not match existing data path" in text:
        return StoreError(
            f"{location}: store_data_path {data_path!r} differs from the data path the store"
            f" was created with ({text.split('catalog')[-1].strip(' .').splitlines()[0]});"
            " leave store_data_path out to use the store's own"
        )
    return lake_error(location, exc)


def prepare_store(
    store: str | os.PathLike[str] | StoreLocation,
    *,
    data_path: str | os.PathLike[str] | None = None,
    base: str | os.PathLike[str] | None = None,
) -> str:
    """Check ``store`` and, for a DuckLake given ``data_path``, create it with that data path
    (or check an existing lake has it); returns the store as evalkit names it.

    ``data_path`` (``store_data_path``, ``--store-data-path``) is where a new DuckLake keeps
    its Parquet files: a local folder (made absolute from ``base``, else the working
    directory) or an object-store URL (``s3://…``, credentials from a DuckDB secret or the
    environment). Without it a new lake with a local catalog file keeps them in
    ``<catalog>.files/``; a PostgreSQL catalog needs one.

    Raises:
        ConfigError: ``data_path`` for a DuckDB store file, or a malformed attach string.
        StoreError: The lake cannot be created or opened, or has another data path.
    """
    location = store_location(store, base=base)
    if data_path is None:
        return location.text
    if not location.is_lake:
        raise ConfigError(
            f"store_data_path {os.fspath(data_path)!r}: only a DuckLake store"
            f' (store = "ducklake:…") has a data path; {location} is a DuckDB file'
        )
    resolved = resolve_data_path(data_path, base=base)
    _attach(location, False, DEFAULT_ATTACH_TIMEOUT, None, resolved).close()
    return location.text
