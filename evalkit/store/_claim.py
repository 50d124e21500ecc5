"""Taking over a stored experiment to resume it, atomically.

Two resumes of one experiment started together both read it as resumable (``interrupted``,
its writer dead) before either writes. Each then *claims* it with one ``UPDATE`` whose
``WHERE`` names the row as that resume read it (its stored status, writer pid and host): the
first claim changes the row, so the second matches nothing and is refused, as a live run is
never resumed. DuckDB lets one process write the file at a time, and the claim runs inside
the writer's transaction, so no third state can slip between the check and the write
(docs/pages/design/stale-running-by-pid.md).
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import duckdb

from evalkit._proc import this_host
from evalkit.errors import ConfigError

#: A stored experiment's writer state as read before resuming: its stored status (not the
#: effective one), writer pid and writer host.
ClaimState = tuple[str, int | None, str | None]


def claim(
    con: duckdb.DuckDBPyConnection,
    experiment_id: str,
    expected: ClaimState | None,
    *,
    total_items: int | None,
    config: str | None,
) -> None:
    """Mark the experiment ``running`` by this process, if it is still as ``expected``.

    Without ``expected`` (a caller that did not read the row first) the row is claimed as
    it is.

    Raises:
        ConfigError: Another process claimed (or changed) the experiment since it was read.
    """
    sql = (
        "UPDATE experiments SET status = 'running', completed_at = NULL,"
        " total_items = coalesce(?, total_items), writer_pid = ?, writer_host = ?,"
        " heartbeat_at = ?, config = coalesce(?, config) WHERE id = ?"
    )
    params: list[Any] = [
        total_items,
        os.getpid(),
        this_host(),
        dt.datetime.now(dt.UTC).replace(tzinfo=None),
        config,
        experiment_id,
    ]
    if expected is not None:
        sql += (
            " AND status = ? AND writer_pid IS NOT DISTINCT FROM ?"
            " AND writer_host IS NOT DISTINCT FROM ?"
        )
        params += list(expected)
    row = con.execute(sql, params).fetchone()
    if expected is not None and (row is None or int(row[0]) == 0):
        now = con.execute(
            "SELECT status, writer_pid, writer_host FROM experiments WHERE id = ?",
            [experiment_id],
        ).fetchone()
        status, pid, host = now if now is not None else ("gone", None, None)
        raise ConfigError(
            f"experiment {experiment_id} is still running (pid {pid} on {host}): another"
            f" resume took it over first (it is {status} now, was {expected[0]} when this one"
            " checked it); a live run is never resumed"
        )


def maybe_alive(expected: ClaimState | None) -> bool:
    """Whether the writer a take-over replaced may still be running: a ``running`` row of
    another host, or without a pid (taken over with ``--force``: it could not be checked). Its
    staged files are then left (a commit of its may be about to register them)."""
    if expected is None:
        return False
    status, pid, host = expected
    return status == "running" and (pid is None or host != this_host())
