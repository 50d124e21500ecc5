"""Writes of a resumed experiment: a batch replaces the older rows of its items and pairs.

All of it runs inside the writer's batch transaction, so a kill leaves either the older rows or
the newer ones, never both: an (experiment, item, scorer) pair has at most one ``scores`` or
``scorer_errors`` row (and one set of ``score_repeats``), and an item one
``experiment_items`` row. ``judge_executions`` rows of
earlier attempts are kept: those calls were made and paid for. Why no unique index:
docs/pages/design/resume-by-replacement.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import duckdb
import pyarrow as pa

from evalkit._sql import quote_ident
from evalkit.store._batch_io import insert_views, registered


def write_replacing(
    con: duckdb.DuckDBPyConnection, experiment_id: str, tables: Mapping[str, pa.Table]
) -> tuple[int, int]:
    """Insert a resumed pass's ``tables`` over the older rows of their items and pairs, then
    recount the items and the experiment; returns the experiment's (succeeded, failed).
    Runs in the caller's transaction."""
    with registered(con, tables) as views:
        replace_older_rows(con, experiment_id, views)
        insert_views(con, views)
        if "experiment_items" in views:
            recount_items(con, experiment_id, views["experiment_items"])
    return recount_experiment(con, experiment_id)


def replace_older_rows(
    con: duckdb.DuckDBPyConnection, experiment_id: str, views: Mapping[str, str]
) -> None:
    """Delete the rows the registered batch ``views`` (table name → view name) supersede."""
    pair_views = [views[t] for t in ("scores", "scorer_errors") if t in views]
    if pair_views:
        pairs = " UNION ".join(
            f"SELECT item_id, scorer_id FROM {quote_ident(v)}" for v in pair_views
        )
        # A pair run again replaces its earlier executions too (score_repeats, --repeat).
        for table in ("scores", "scorer_errors", "score_repeats"):
            name = quote_ident(table)
            con.execute(
                f"DELETE FROM {name} WHERE experiment_id = ? AND EXISTS (SELECT 1 FROM ({pairs})"
                f" p WHERE p.item_id = {name}.item_id AND p.scorer_id = {name}.scorer_id)",
                [experiment_id],
            )
    if "experiment_items" in views:
        con.execute(
            "DELETE FROM experiment_items WHERE experiment_id = ? AND item_id IN"
            f" (SELECT item_id FROM {quote_ident(views['experiment_items'])})",
            [experiment_id],
        )


def recount_items(con: duckdb.DuckDBPyConnection, experiment_id: str, view: str) -> None:
    """Recompute the per-item counts and status of the batch's items over every pass."""
    con.execute(
        """
        UPDATE experiment_items SET
            scorers_succeeded = (SELECT count(*) FROM scores s
                WHERE s.experiment_id = experiment_items.experiment_id
                  AND s.item_id = experiment_items.item_id),
            scorers_failed = (SELECT count(*) FROM scorer_errors e
                WHERE e.experiment_id = experiment_items.experiment_id
                  AND e.item_id = experiment_items.item_id),
            status = CASE WHEN error IS NULL AND NOT EXISTS (SELECT 1 FROM scorer_errors e
                WHERE e.experiment_id = experiment_items.experiment_id
                  AND e.item_id = experiment_items.item_id) THEN 'success' ELSE 'failed' END
        WHERE experiment_id = ? AND item_id IN (SELECT item_id FROM """
        + quote_ident(view)
        + ")",
        [experiment_id],
    )


def recount_experiment(con: duckdb.DuckDBPyConnection, experiment_id: str) -> tuple[int, int]:
    """Set the experiment's item counts from its stored items; returns (succeeded, failed)."""
    row = con.execute(
        "SELECT count(*) FILTER (WHERE status = 'success'),"
        " count(*) FILTER (WHERE status <> 'success')"
        " FROM experiment_items WHERE experiment_id = ?",
        [experiment_id],
    ).fetchone()
    succeeded, failed = (int(row[0]), int(row[1])) if row else (0, 0)
    con.execute(
        "UPDATE experiments SET succeeded_count = ?, failed_count = ?,"
        " heartbeat_at = now()::TIMESTAMP WHERE id = ?",
        [succeeded, failed, experiment_id],
    )
    return succeeded, failed


def final_status(con: duckdb.DuckDBPyConnection, experiment_id: str, status: str) -> str:
    """A resumed experiment's status at the end of a pass, over all its passes.

    A cancelled or fatally failed pass keeps its status. Otherwise: items still never
    evaluated (``--retry-errors`` does not run them) leave it ``interrupted``; with every item
    evaluated it is ``completed``, ``completed_with_errors``, or ``failed`` without any score.
    """
    row = con.execute(
        "SELECT x.total_items,"
        " (SELECT count(*) FROM experiment_items i WHERE i.experiment_id = x.id),"
        " (SELECT count(*) FROM experiment_items i WHERE i.experiment_id = x.id"
        "  AND i.status <> 'success'),"
        " (SELECT count(*) FROM scores s WHERE s.experiment_id = x.id)"
        " FROM experiments x WHERE x.id = ?",
        [experiment_id],
    ).fetchone()
    if row is None or status == "cancelled":
        return status
    total, items, failed, scores = (int(v) for v in row)
    if items < total:
        return "failed" if status == "failed" else "interrupted"
    if failed == 0:
        return "completed"
    return "completed_with_errors" if scores else "failed"
