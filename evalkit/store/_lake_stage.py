"""A DuckLake flush's large tables written as Parquet files before its commit.

Writers sharing a SQLite catalog commit one at a time (``_commit_lock.py``). When a flush's
``INSERT`` wrote its Parquet files inside that turn, four shard jobs wrote one after another:
twice the time of one job writing the same rows (DL2, measured 2.12x). So a flush first
writes each large table of its batch to a Parquet file of its own in the table's folder under
the data path, outside any transaction, and its commit only registers the files
(``ducklake_add_data_files``, which hands them to DuckLake as if it had written them) beside
the small tables' inserts: the turn is the catalog's work alone, and the jobs' Parquet
writing runs side by side (docs/pages/design/store-location.md).

A table is staged when it has at least `STAGE_MIN_ROWS` rows and its files can be named
as DuckLake names them: unpartitioned, or partitioned by ``experiment_id`` alone with one
value in the batch. An encrypted lake's tables are never staged (DuckLake writes their keys).
A staged file whose transaction is rolled back before its COMMIT is deleted (a local data
path), as is one whose writing failed (a full or read-only data path). One whose COMMIT was
tried and failed (the catalog lost meanwhile) may have gone through: it is handed back to the
writer, which learns at its next attempt whether the batch landed and deletes the files if not
(``StoreWriter``). Files a writer left at all (killed, or its rows spilled) are deleted by the
resume of its experiment (`sweep`). On object storage such files are orphans for
DuckLake's ``ducklake_delete_orphaned_files`` (docs/pages/design/locked-store-recovery.md).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping, MutableSequence
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from evalkit._data_path import is_remote
from evalkit._sql import quote_ident, sql_literal
from evalkit._verified_extensions import LAKE_SETTINGS
from evalkit.errors import StoreError
from evalkit.store._batch_io import Transaction, insert_views, registered
from evalkit.store._lake import LAKE_ALIAS
from evalkit.store._object_store import refresh_credentials, use_object_store

#: Rows from which a table of a flush is written before the commit rather than inserted in
#: it: a few rows are inlined in the catalog or make a small file at once.
STAGE_MIN_ROWS = 1_000

_METADATA = f"__ducklake_metadata_{LAKE_ALIAS}"

#: How the name of a file a flush stages begins (a uuid and ``.parquet`` follow).
STAGED_PREFIX = "evalkit-"


@dataclass(frozen=True, slots=True)
class LakeTable:
    """Where a lake table's files go and what its columns are."""

    folder: str
    columns: tuple[tuple[str, str], ...]
    #: The column it is partitioned by (``experiment_id``), else ``None``.
    partition: str | None


@dataclass(frozen=True, slots=True)
class Layout:
    """A lake's tables that a flush may stage, by name, and the DuckDB database that writes
    their files: one of its own, which never touches the lake's catalog (a query of the lake's
    database reads it, and with a SQLite catalog beside other writers that costs seconds)."""

    tables: Mapping[str, LakeTable]
    files: duckdb.DuckDBPyConnection
    #: The lake's data path when it is on object storage (credentials read at each flush).
    remote: str | None = None


def read_layout(con: duckdb.DuckDBPyConnection) -> Layout:
    """The layout of ``con``'s lake."""
    tables, data_path = _lake_tables(con)
    files = duckdb.connect(":memory:", config=dict(LAKE_SETTINGS))
    remote = data_path if data_path is not None and is_remote(data_path) else None
    if remote is not None:
        use_object_store(files, remote)
    return Layout(tables, files, remote)


def _lake_tables(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, LakeTable], str | None]:
    """The lake's tables that a flush may stage, by name (none in an encrypted lake), and its
    data path: read in one transaction, so from one reading of the catalog."""
    with Transaction(con):
        options = dict(
            con.execute(
                "SELECT option_name, value FROM ducklake_options(?)", [LAKE_ALIAS]
            ).fetchall()
        )
        if options.get("encrypted", "false") != "false" or not options.get("data_path"):
            return {}, None
        paths = con.execute(
            f"SELECT t.table_id, t.table_name, s.path, s.path_is_relative, t.path,"
            f" t.path_is_relative FROM {_METADATA}.ducklake_table t"
            f" JOIN {_METADATA}.ducklake_schema s USING (schema_id)"
            " WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL AND s.schema_name = 'main'"
        ).fetchall()
        partitioned = con.execute(
            f"SELECT p.table_id, c.column_name, p.transform"
            f" FROM {_METADATA}.ducklake_partition_column p"
            f" JOIN {_METADATA}.ducklake_partition_info i USING (partition_id, table_id)"
            f" JOIN {_METADATA}.ducklake_column c"
            " ON c.table_id = p.table_id AND c.column_id = p.column_id AND c.end_snapshot IS NULL"
            " WHERE i.end_snapshot IS NULL"
        ).fetchall()
        described = con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns()"
            " WHERE database_name = ? AND schema_name = 'main' ORDER BY column_index",
            [LAKE_ALIAS],
        ).fetchall()
    data_path = str(options["data_path"])
    partitions: dict[int, list[tuple[str, str]]] = {}
    for table_id, name, transform in partitioned:
        partitions.setdefault(table_id, []).append((name, transform))
    columns: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in described:
        columns.setdefault(table, []).append((column, kind))
    tables = {}
    for table_id, table, schema_path, schema_relative, table_path, table_relative in paths:
        parts = partitions.get(table_id, [])
        if parts and (len(parts) > 1 or parts[0][1] != "identity"):
            continue  # DuckLake alone names such files
        folder = table_path if not table_relative else schema_path + table_path
        if table_relative and schema_relative:
            folder = data_path + folder
        tables[table] = LakeTable(
            folder, tuple(columns.get(table, ())), parts[0][0] if parts else None
        )
    return tables, data_path


def append_to_lake(
    con: duckdb.DuckDBPyConnection,
    layout: Layout,
    tables: Mapping[str, pa.Table],
    transaction: AbstractContextManager[None],
    uncertain: MutableSequence[str],
) -> None:
    """Append ``tables`` to ``con``'s lake in ``transaction``: the large ones staged before it
    (by ``layout.files``) and registered in it, the others inserted in it. The staged files
    of a COMMIT that was tried and failed (it may have gone through) are added to
    ``uncertain``."""
    if layout.remote is not None:
        refresh_credentials(layout.files, layout.remote)
    with registered(layout.files, tables) as views:
        staged = stage(layout.files, layout.tables, tables, views)
    rest = {n: t for n, t in tables.items() if n not in staged}
    reached_commit = False
    try:
        with transaction:
            with registered(con, rest) as views:
                register(con, staged)
                insert_views(con, views)
            reached_commit = True
    except BaseException:
        # Rolled back: the files are nobody's. Once COMMIT was tried they may be the lake's
        # (it may have gone through): the caller learns which later.
        if reached_commit:
            uncertain.extend(staged.values())
        else:
            discard(staged)
        raise


def stage(
    con: duckdb.DuckDBPyConnection,
    layout: Mapping[str, LakeTable],
    tables: Mapping[str, pa.Table],
    views: Mapping[str, str],
) -> dict[str, str]:
    """Write each large table of ``tables`` (registered as ``views``) to a new Parquet file
    of its lake table; returns the files by table. Runs outside any transaction."""
    staged: dict[str, str] = {}
    try:
        for name, table in tables.items():
            target = layout.get(name)
            folder = _folder(target, table) if table.num_rows >= STAGE_MIN_ROWS else None
            if target is None or folder is None:
                continue
            if not is_remote(folder):
                try:
                    Path(folder).mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise data_path_error(folder, exc.strerror or str(exc)) from exc
            file = f"{folder}{STAGED_PREFIX}{uuid.uuid4().hex}.parquet"
            present = set(table.column_names)
            select = ", ".join(
                f"CAST({quote_ident(c)} AS {t}) AS {quote_ident(c)}"
                if c in present
                else f"CAST(NULL AS {t}) AS {quote_ident(c)}"
                for c, t in target.columns
            )
            # Listed before it is written: a write that fails part way (a full disk) leaves
            # part of a file, deleted with the others.
            staged[name] = file
            try:
                con.execute(
                    f"COPY (SELECT {select} FROM {quote_ident(views[name])})"
                    f" TO {sql_literal(file)} (FORMAT parquet)"
                )
            except duckdb.IOException as exc:
                raise data_path_error(folder, _cause(exc)) from exc
    except BaseException:
        discard(staged)
        raise
    return staged


def data_path_error(folder: str, cause: str) -> StoreError:
    """A flush's Parquet files could not be written to the lake's data path ``folder``."""
    return StoreError(
        f"{folder}: cannot write the DuckLake store's data files there ({cause}): the data"
        " path is full, read-only or not writable by this user"
    )


def _cause(exc: duckdb.Error) -> str:
    """The operating system's reason in a DuckDB I/O error (``No space left on device``)."""
    text = str(exc).splitlines()[0]
    found = re.search(r'"[^"]*": (.+)$', text)
    return found.group(1).strip() if found else text


def _folder(target: LakeTable | None, table: pa.Table) -> str | None:
    """The folder a staged file of ``table`` goes to, or ``None`` if it cannot be staged."""
    if target is None or target.partition is None:
        return target.folder if target is not None else None
    if target.partition not in table.column_names:
        return None
    values = pc.unique(table.column(target.partition))
    if len(values) != 1 or not values[0].is_valid:
        return None
    # DuckLake's own Hive-style folder for the value (percent-encoded).
    return f"{target.folder}{target.partition}={quote(str(values[0].as_py()), safe='')}/"


def register(con: duckdb.DuckDBPyConnection, staged: Mapping[str, str]) -> None:
    """Hand the staged files to the lake, inside the flush's transaction."""
    for name, file in staged.items():
        con.execute(
            f"CALL ducklake_add_data_files({sql_literal(LAKE_ALIAS)}, {sql_literal(name)},"
            f" {sql_literal(file)}, allow_missing => true)"
        )


def discard(staged: Mapping[str, str]) -> None:
    """Delete staged files that no commit registered (local data paths only)."""
    discard_files(staged.values())


def discard_files(files: Iterable[str]) -> None:
    """Delete the staged ``files`` (those on object storage are left: see above). A file that
    cannot be deleted (its data path turned read-only) is left: the batch it belonged to is
    kept or spilled by its writer either way, which an error here would prevent."""
    for file in files:
        if not is_remote(file):
            with suppress(OSError):
                Path(file).unlink(missing_ok=True)


def sweep(con: duckdb.DuckDBPyConnection, layout: Layout, experiment_id: str) -> int:
    """Delete the staged files of ``experiment_id`` that its lake never registered (left by a
    writer that was killed, or whose rows were spilled); returns how many. Only the
    experiment's own writer stages files there, so run it only while holding the experiment
    (a resume's take-over). Local data paths only."""
    with Transaction(con):
        names = {
            str(row[0]).rsplit("/", 1)[-1]
            for row in con.execute(f"SELECT path FROM {_METADATA}.ducklake_data_file").fetchall()
        }
    removed = 0
    for target in layout.tables.values():
        if target.partition != "experiment_id" or is_remote(target.folder):
            continue
        folder = Path(f"{target.folder}{target.partition}={quote(experiment_id, safe='')}")
        for file in folder.glob(f"{STAGED_PREFIX}*.parquet"):
            if file.name not in names:
                try:
                    file.unlink(missing_ok=True)
                except OSError:
                    continue  # a read-only data path: left, as the writer could not help it
                removed += 1
    return removed
