"""Rows a run could not write: spilled beside the store, loaded into it later.

When the store stays locked past the writer's ``lock_timeout``, its unwritten batches are
written to ``<store>.recovery/<experiment id>/<batch>/<table>.arrow`` (Arrow IPC files,
written in a hidden folder and renamed into place, so a batch is there whole or not at all).
[`recover`][evalkit.store.recover] (run by every writer that opens the store, and by a resume before
it plans) loads each batch in one transaction, replacing the older rows of its items and pairs as a
resumed batch does, and deletes the batch's folder once the load is committed. A loader
claims a batch by renaming its folder first, so two processes never load the same batch.
See docs/pages/design/locked-store-recovery.md.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc

from evalkit._proc import process_alive
from evalkit.store._batch_io import Transaction
from evalkit.store._commit_lock import CatalogTurns
from evalkit.store._connect import connection, retry_busy
from evalkit.store._location import store_location
from evalkit.store._replace import write_replacing

_BATCH = ".batch"
_LOADING = ".loading-"


def recovery_dir(store: str | os.PathLike[str]) -> Path:
    """The folder beside ``store`` that holds its spilled rows (``<file>.recovery``; for a
    DuckLake store, beside its catalog file, see
    [`StoreLocation.recovery_dir`][evalkit.store.StoreLocation.recovery_dir])."""
    return store_location(store).recovery_dir()


def spill(
    store: str | os.PathLike[str],
    experiment_id: str,
    batches: Sequence[Mapping[str, pa.Table]],
) -> Path:
    """Write ``batches`` (tables by store table name) to the recovery folder; return the
    experiment's folder there."""
    folder = recovery_dir(store) / experiment_id
    for tables in batches:
        name = f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        hidden = folder / f".{name}.tmp"
        hidden.mkdir(parents=True)
        try:
            for table_name, table in tables.items():
                target = hidden / f"{table_name}.arrow"
                with pa.OSFile(str(target), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
                    w.write_table(table)
                with open(target, "rb") as written:
                    os.fsync(written.fileno())
        except BaseException:
            shutil.rmtree(hidden, ignore_errors=True)  # a full disk: no half batch left
            raise
        os.rename(hidden, folder / f"{name}{_BATCH}")
    return folder


def pending_batches(store: str | os.PathLike[str]) -> list[Path]:
    """The spilled batches waiting to be loaded, oldest first (all experiments)."""
    root = recovery_dir(store)
    if not root.is_dir():
        return []
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for batch in sorted(folder.iterdir()):
            if batch.name.endswith(_BATCH) or _abandoned(batch):
                found.append(batch)
    return found


def _abandoned(batch: Path) -> bool:
    # A batch claimed by a loader that died before deleting it (its load may or may not have
    # been committed; loading it again replaces the same rows).
    _, sep, pid = batch.name.rpartition(_LOADING)
    return bool(sep) and pid.isdigit() and not process_alive(int(pid))


def recover(store: str | os.PathLike[str], *, lock_timeout: float = 30.0) -> int:
    """Load every spilled batch of ``store`` into it; return how many batches were loaded.

    Each batch is loaded in one transaction (its items' and pairs' older rows replaced), and
    its files are deleted once that is committed. Nothing to do costs one directory listing.

    Raises:
        StoreError: The store cannot be opened (it stayed locked for ``lock_timeout`` s);
            the batches not yet loaded stay where they are.
    """
    loaded = 0
    for batch in pending_batches(store):
        claimed = batch.with_name(f"{batch.name.split('.')[0]}{_LOADING}{os.getpid()}")
        try:
            os.rename(batch, claimed)
        except FileNotFoundError:
            continue  # another loader took it
        try:
            _load(store, claimed.parent.name, claimed, lock_timeout)
        except BaseException:
            os.rename(claimed, batch.with_name(f"{batch.name.split('.')[0]}{_BATCH}"))
            raise
        shutil.rmtree(claimed)
        loaded += 1
    _tidy(recovery_dir(store))
    return loaded


def _load(store: str | os.PathLike[str], experiment_id: str, batch: Path, wait: float) -> None:
    tables = {}
    for file in sorted(batch.glob("*.arrow")):
        with pa.OSFile(str(file), "rb") as source:
            tables[file.stem] = pa.ipc.open_file(source).read_all()
    if not tables:
        return

    turns = CatalogTurns(store, wait)

    def load() -> None:
        # In the writers' turn: a SQLite catalog used by two processes at once stalls both.
        with turns.turn(), connection(store, lock_timeout=wait) as con, Transaction(con):
            write_replacing(con, experiment_id, tables)

    retry_busy(load, timeout=wait)


def _tidy(root: Path) -> None:
    """Remove the recovery folders left empty."""
    if not root.is_dir():
        return
    # A spill may be creating a folder meanwhile: one not empty any more is left.
    with contextlib.suppress(OSError):
        for folder in root.iterdir():
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        root.rmdir()
