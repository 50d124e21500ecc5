"""An experiment's own rows: its record and scorers when it begins, the scorers a forced
resume adds, its outcome when it ends. Each runs in the caller's transaction
(``_writer.py`` decides when and how a write is retried)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence

import duckdb

from evalkit._json import json_text
from evalkit._proc import this_host
from evalkit._redaction import redact
from evalkit.store._batch_io import ExperimentRecord, ScorerRecord, naive_utc


def insert_experiment(
    con: duckdb.DuckDBPyConnection, record: ExperimentRecord, scorers: Sequence[ScorerRecord]
) -> None:
    """Record ``record`` as ``running``, written by this process, with its ``scorers``."""
    con.execute(
        "INSERT INTO experiments (id, name, description, dataset, config, metadata,"
        " status, total_items, succeeded_count, failed_count, started_at,"
        " evalkit_version, writer_pid, writer_host, heartbeat_at, partial)"
        " VALUES (?, ?, ?, ?, ?, ?, 'running', ?, 0, 0, ?, ?, ?, ?, ?, ?)",
        [
            record.id,
            record.name,
            record.description,
            record.dataset,
            json_text(redact(record.config)),
            json_text(redact(record.metadata)) if record.metadata else None,
            record.total_items,
            naive_utc(record.started_at),
            record.evalkit_version,
            os.getpid(),
            this_host(),
            naive_utc(dt.datetime.now(dt.UTC)),
            record.partial,
        ],
    )
    _insert_scorers(con, record.id, scorers)


def add_missing_scorers(
    con: duckdb.DuckDBPyConnection, experiment_id: str, scorers: Sequence[ScorerRecord]
) -> None:
    """Add the ``scorers`` a stored experiment lacks (a forced resume with a new scorer)."""
    known = {
        r[0]
        for r in con.execute(
            "SELECT scorer_id FROM experiment_scorers WHERE experiment_id = ?", [experiment_id]
        ).fetchall()
    }
    _insert_scorers(con, experiment_id, [s for s in scorers if s.scorer_id not in known])


def record_outcome(
    con: duckdb.DuckDBPyConnection,
    experiment_id: str,
    *,
    status: str,
    completed_at: dt.datetime,
    dataset_fingerprint: str | None,
    counts: tuple[int, int],
) -> None:
    """Record how the experiment ended: its status, end time, dataset fingerprint and its
    ``(succeeded, failed)`` counts."""
    con.execute(
        "UPDATE experiments SET status = ?, completed_at = ?, dataset_fingerprint = ?,"
        " succeeded_count = ?, failed_count = ? WHERE id = ?",
        [status, naive_utc(completed_at), dataset_fingerprint, *counts, experiment_id],
    )


def _insert_scorers(
    con: duckdb.DuckDBPyConnection, experiment_id: str, scorers: Sequence[ScorerRecord]
) -> None:
    if not scorers:
        return
    con.executemany(
        "INSERT INTO experiment_scorers (experiment_id, scorer_id, scorer_name,"
        " description, position, threshold_min, threshold_max, higher_is_better, metadata)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            [
                experiment_id,
                s.scorer_id,
                s.scorer_name,
                s.description,
                s.position,
                s.threshold_min,
                s.threshold_max,
                s.higher_is_better,
                s.metadata,
            ]
            for s in scorers
        ],
    )
