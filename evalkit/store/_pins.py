"""Pinned baselines: a team's "this run is the new normal", kept in ``baseline_pins``.

Each pin and unpin is a row (an unpin has no ``experiment_id``); the newest row of an
experiment name is in force, and the rows are the history of who moved the bar and why.
How ``baseline = "latest"`` uses a pin is `evalkit.compare`'s (``baseline_candidates``;
docs/pages/design/failed-nights-never-the-bar.md).
"""

from __future__ import annotations

import datetime as dt
import getpass
import os
from dataclasses import dataclass
from typing import Any

from evalkit.errors import ConfigError, StoreError
from evalkit.store._batch_io import Transaction
from evalkit.store._commit_lock import CatalogTurns
from evalkit.store._connect import DEFAULT_BUSY_TIMEOUT, connection, retry_busy
from evalkit.store._lake import store_exists
from evalkit.store._location import StoreLocation
from evalkit.store._migrate import migrate, schema_version


@dataclass(frozen=True, slots=True)
class BaselinePin:
    """One row of ``baseline_pins``: a pin, or an unpin (``experiment_id`` None).

    Attributes:
        experiment_name: The experiment name whose baseline it sets.
        experiment_id: The run pinned, or None for an unpin.
        pinned_by: Who pinned or unpinned (a user name).
        note: Why, in the team's words, or None.
        created_at: When (UTC, naive).
    """

    experiment_name: str
    experiment_id: str | None
    pinned_by: str | None
    note: str | None
    created_at: dt.datetime

    @property
    def reason(self) -> str:
        """``pinned by alice: v2 is the new normal`` (the note only when there is one)."""
        who = f"pinned by {self.pinned_by}" if self.pinned_by else "pinned"
        return f"{who}: {self.note}" if self.note else who

    def to_dict(self) -> dict[str, Any]:
        """The row's fields and [`reason`][evalkit.store.BaselinePin.reason], JSON-ready but for
        ``created_at``."""
        return {
            "experiment_name": self.experiment_name,
            "experiment_id": self.experiment_id,
            "pinned_by": self.pinned_by,
            "note": self.note,
            "created_at": self.created_at,
            "reason": self.reason,
        }


def current_user() -> str | None:
    """The user name from the environment (``LOGNAME``, ``USER``, ``LNAME`` or ``USERNAME``,
    else the account's login name)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a bare container)
        return None


def _add(store: str, row: BaselinePin, lock_timeout: float) -> None:
    turns = CatalogTurns(store, lock_timeout)

    def write() -> None:
        with turns.turn(), connection(store, lock_timeout=lock_timeout) as con:
            migrate(con, where=store)
            with Transaction(con):
                con.execute(
                    "INSERT INTO baseline_pins (experiment_name, experiment_id, pinned_by, note,"
                    " created_at) VALUES (?, ?, ?, ?, ?)",
                    [row.experiment_name, row.experiment_id, row.pinned_by, row.note,
                     row.created_at],
                )  # fmt: skip

    retry_busy(write, timeout=lock_timeout)


def pin_baseline(
    store: str | os.PathLike[str],
    experiment_id: str,
    *,
    by: str | None = None,
    note: str | None = None,
    lock_timeout: float = DEFAULT_BUSY_TIMEOUT,
) -> BaselinePin:
    """Pin the run ``experiment_id`` as the baseline of the runs of its name.

    Checking that the run can be a baseline is the caller's (``evalkit baseline pin``).

    Args:
        store: The store.
        experiment_id: The run that becomes the bar (its exact id).
        by: Who pins (default: `current_user`).
        note: Why, e.g. "v2 is the new normal".
        lock_timeout: Seconds a busy store is retried.
    """
    with connection(store, read_only=True) as con:
        found = con.execute("SELECT name FROM experiments WHERE id = ?", [experiment_id]).fetchall()
    if not found:
        raise StoreError(f"{store}: no experiment with id {experiment_id!r} to pin")
    row = BaselinePin(found[0][0], experiment_id, by or current_user(), note, _now())
    _add(str(store), row, lock_timeout)
    return row


def unpin_baseline(
    store: str | os.PathLike[str],
    name: str,
    *,
    by: str | None = None,
    note: str | None = None,
    lock_timeout: float = DEFAULT_BUSY_TIMEOUT,
) -> BaselinePin:
    """End the pin in force for ``name`` (``latest`` is the newest passing run again).

    Raises:
        ConfigError: No pin of ``name`` is in force.
    """
    if read_pin(store, name) is None:
        raise ConfigError(f"{store}: no baseline is pinned for experiment {name!r}")
    row = BaselinePin(name, None, by or current_user(), note, _now())
    _add(str(store), row, lock_timeout)
    return row


def pin_history(store: str | os.PathLike[str], name: str) -> list[BaselinePin]:
    """Every pin and unpin of ``name``, newest first."""
    if not store_exists(str(store)):
        return []
    with connection(store, read_only=True) as con:
        if schema_version(con) < 8:
            return []
        rows = con.execute(
            "SELECT experiment_name, experiment_id, pinned_by, note, created_at"
            " FROM baseline_pins WHERE experiment_name = ? ORDER BY created_at DESC",
            [name],
        ).fetchall()
    return [BaselinePin(*row) for row in rows]


def read_pin(store: str | os.PathLike[str], name: str) -> BaselinePin | None:
    """The pin in force for ``name``, or None (never pinned, or unpinned since)."""
    history = pin_history(store, name)
    if not history or history[0].experiment_id is None:
        return None
    return history[0]


def copy_pins(source: StoreLocation, destination: StoreLocation, experiment_ids: list[str]) -> int:
    """Copy the pins and unpins of the names of ``experiment_ids`` that ``destination``
    lacks (``evalkit store copy``; one transaction); returns how many were copied."""
    if not experiment_ids:
        return 0
    with connection(source, read_only=True) as con:
        rows = con.execute(
            "SELECT experiment_name, experiment_id, pinned_by, note, created_at"
            " FROM baseline_pins WHERE experiment_name IN"
            " (SELECT name FROM experiments WHERE list_contains(?, id))",
            [experiment_ids],
        ).fetchall()
    if not rows:
        return 0
    turns = CatalogTurns(destination.text, DEFAULT_BUSY_TIMEOUT)
    with turns.turn(), connection(destination) as con, Transaction(con):
        held = set(
            con.execute(
                "SELECT experiment_name, experiment_id, pinned_by, note, created_at"
                " FROM baseline_pins"
            ).fetchall()
        )
        new = [row for row in rows if tuple(row) not in held]
        if new:
            con.executemany("INSERT INTO baseline_pins VALUES (?, ?, ?, ?, ?)", new)
    return len(new)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)
