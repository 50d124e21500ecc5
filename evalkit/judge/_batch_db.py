"""The batch journal: which provider batches hold which judge requests, in the cache's file.

Two tables beside ``judge_cache``: ``judge_batches`` (one row per submitted batch: id, endpoint
host, model, input file, request count, status, times, and the whole endpoint, scheme, host,
port and path, that a run looks its batches up by) and ``judge_batch_requests`` (the
request hash → ``custom_id`` mapping of each batch). A batch stays here while its results may
still be needed: ``submitted`` until it ends, ``completed`` until a run that read it ends
normally. A batch that failed, expired or was cancelled is removed, so its requests are asked
again. This module owns these tables (their DDL, `SCHEMA`, and every query on them); the
file is opened by ``_duckdb.py``. Every function is synchronous and blocking, called from the
cache's threads (``_batch_journal.py`` hands them over).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from evalkit.judge._duckdb import insert, utc, when

BATCHES = "judge_batches"
REQUESTS = "judge_batch_requests"
#: How long a batch is remembered at most (the provider keeps batch files about 30 days).
KEEP_SECONDS = 30 * 86400.0

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {BATCHES} (
    batch_id VARCHAR NOT NULL,
    host VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    input_file_id VARCHAR NOT NULL,
    request_count INTEGER NOT NULL,
    status VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS {REQUESTS} (
    batch_id VARCHAR NOT NULL,
    request_hash BLOB NOT NULL,
    custom_id VARCHAR NOT NULL
);
ALTER TABLE {BATCHES} ADD COLUMN IF NOT EXISTS endpoint VARCHAR;
"""

_REQUEST_SCHEMA = pa.schema(
    [("batch_id", pa.string()), ("request_hash", pa.binary()), ("custom_id", pa.string())]
)

#: A remembered request: request_hash, batch_id, custom_id, batch status.
Record = tuple[bytes, str, str, str]


def record(
    con: Any,
    *,
    batch_id: str,
    endpoint: str,
    host: str,
    model: str,
    input_file_id: str,
    requests: Sequence[tuple[bytes, str]],
    now: float,
) -> None:
    """Remember a submitted batch and its ``(request_hash, custom_id)`` pairs, in one
    transaction (the requests through Arrow)."""
    hashes = [h for h, _ in requests]
    table = pa.Table.from_arrays(
        [
            pa.array([batch_id] * len(requests), pa.string()),
            pa.array(hashes, pa.binary()),
            pa.array([c for _, c in requests], pa.string()),
        ],
        schema=_REQUEST_SCHEMA,
    )
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(
            f"INSERT INTO {BATCHES} (batch_id, endpoint, host, model, input_file_id,"
            " request_count, status, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 'submitted', ?, ?)",
            [batch_id, endpoint, host, model, input_file_id, len(requests), when(now), when(now)],
        )
        insert(con, REQUESTS, table)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def set_status(con: Any, batch_id: str, status: str, now: float) -> None:
    """Record a batch's new status."""
    con.execute(
        f"UPDATE {BATCHES} SET status = ?, updated_at = ? WHERE batch_id = ?",
        [status, when(now), batch_id],
    )


def forget(con: Any, batch_ids: Iterable[str]) -> None:
    """Remove batches and their requests."""
    ids = list(batch_ids)
    if not ids:
        return
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"DELETE FROM {REQUESTS} WHERE list_contains(?, batch_id)", [ids])
        con.execute(f"DELETE FROM {BATCHES} WHERE list_contains(?, batch_id)", [ids])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def prune(con: Any, now: float) -> None:
    """Remove batches older than `KEEP_SECONDS`."""
    old = [
        row[0]
        for row in con.execute(
            f"SELECT batch_id FROM {BATCHES} WHERE created_at < ?", [when(now - KEEP_SECONDS)]
        ).fetchall()
    ]
    forget(con, old)


def load(con: Any, endpoint: str, host: str, model: str) -> list[Record]:
    """The remembered requests of batches to ``model`` at ``endpoint``, newest batch last (so
    a request in two batches maps to the newer).

    Two endpoints on one host (two ports, two paths) are two servers: neither reads the
    other's batches. A batch recorded before the endpoint was kept (``endpoint`` NULL) is
    looked up by its ``host``; its requests' hashes name their endpoint anyway.
    """
    result = con.execute(
        f"SELECT r.request_hash, r.batch_id, r.custom_id, b.status FROM {REQUESTS} r "
        f"JOIN {BATCHES} b USING (batch_id) WHERE b.model = ? "
        "AND (b.endpoint = ? OR (b.endpoint IS NULL AND b.host = ?)) "
        "ORDER BY b.created_at",
        [model, endpoint, host],
    )
    return [
        (bytes(h), batch_id, custom_id, status)
        for h, batch_id, custom_id, status in result.fetchall()
    ]


def batches(con: Any) -> list[dict[str, Any]]:
    """Every remembered batch (for inspection)."""
    result = con.execute(
        f"SELECT batch_id, endpoint, host, model, input_file_id, request_count, status,"
        f" epoch_us(created_at) AS created_at, epoch_us(updated_at) AS updated_at"
        f" FROM {BATCHES} ORDER BY {BATCHES}.created_at"
    )
    names = [d[0] for d in result.description]
    rows = [dict(zip(names, row, strict=True)) for row in result.fetchall()]
    for row in rows:
        row["created_at"], row["updated_at"] = utc(row["created_at"]), utc(row["updated_at"])
    return rows
