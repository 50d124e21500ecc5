"""The agreement of scorers with human labels in the store: what it is computed from, and
where it is kept (``scorer_agreement``, and the ``agreement_summary`` view over it), read and
written through the store's public names (the table's DDL is the store's schema).

The labels are item metadata (``experiment_items.metadata``); the scores are the successful
scores of the item's last pass.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, cast

from evalkit.store import connection, migrate, schema_version
from evalkit.store._connect import retry_busy


@dataclass(frozen=True, slots=True)
class LabeledScores:
    """One scorer's scored pairs with the item's label columns, in item order.

    Attributes:
        item_ids: The items with a successful score.
        scores: Their scores.
        reasons: The scorer's reasons (None where it gave none).
        labels: Per label column, the label of each item as read from its metadata (None
            where the item has none).
        truncated: Per item, whether its reason is a judge reply cut at its token limit
            (empty: not known, none flagged).
    """

    item_ids: tuple[str, ...]
    scores: tuple[float, ...]
    reasons: tuple[str | None, ...]
    labels: Mapping[str, tuple[Any, ...]]
    truncated: tuple[bool, ...] = ()


def read_labeled_scores(
    store: str | os.PathLike[str], experiment_id: str, scorer_id: str, columns: Sequence[str]
) -> LabeledScores:
    """The successful scores of ``scorer_id`` in one experiment beside each item's labels."""
    picks = "".join(f", json_extract(i.metadata, ${n + 3})" for n in range(len(columns)))
    paths = [f"$.{json.dumps(column)}" for column in columns]
    with connection(store, read_only=True) as con:
        # A reason cut at the judge's token limit: its generate_reason execution (the pair's
        # own, not a repeat's) flagged truncated, which a store before version 7 has not.
        cut = (
            "EXISTS (SELECT 1 FROM judge_executions j WHERE j.experiment_id = s.experiment_id"
            " AND j.run_id = s.run_id AND j.item_id = s.item_id AND j.scorer_id = s.scorer_id"
            " AND j.step = 'generate_reason' AND coalesce(j.repeat_index, 0) = 0"
            " AND j.truncated)"
            if schema_version(con) >= 7
            else "false"
        )
        sql = f"""
            SELECT s.item_id, s.score, s.reason, {cut}{picks}
            FROM scores s
            JOIN experiment_items i ON i.experiment_id = s.experiment_id
                 AND i.run_id = s.run_id AND i.item_id = s.item_id
            WHERE s.experiment_id = $1 AND s.scorer_id = $2
            ORDER BY i.item_index, s.item_id
        """
        rows = con.execute(sql, [experiment_id, scorer_id, *paths]).fetchall()
    labels = {
        column: tuple(None if row[4 + k] is None else json.loads(row[4 + k]) for row in rows)
        for k, column in enumerate(columns)
    }
    return LabeledScores(
        tuple(row[0] for row in rows),
        tuple(float(row[1]) for row in rows),
        tuple(row[2] for row in rows),
        labels,
        tuple(bool(row[3]) for row in rows),
    )


class StoredAgreement(TypedDict):
    """One row of the store's ``scorer_agreement`` table as
    [`read_agreement`][evalkit.agreement.read_agreement] returns it: one metric of one scorer
    against one set of labels (``compared_with``: a label column, ``consensus``, ``raters`` or
    ``repeats``), with ``levels`` and ``confusion`` decoded from their JSON text."""

    scorer_id: str
    compared_with: str
    kind: str
    metric: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    missing: int
    levels: list[float] | None
    confusion: list[list[int]] | None


def write_agreement(
    store: str | os.PathLike[str],
    experiment_id: str,
    rows: Sequence[StoredAgreement],
    *,
    repeats: bool = False,
) -> None:
    """Replace the experiment's agreement rows with ``rows`` (one transaction): its agreement
    with labels, or with ``repeats`` its judges' agreement with themselves (the rows
    ``compared_with = 'repeats'``)."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    values = [
        (experiment_id, r["scorer_id"], r["compared_with"], r["kind"], r["metric"], r["value"],
         r["ci_low"], r["ci_high"], r["n"], r["missing"],
         None if r["levels"] is None else json.dumps(r["levels"]),
         None if r["confusion"] is None else json.dumps(r["confusion"]), now)
        for r in rows
    ]  # fmt: skip

    def write() -> None:
        with connection(store) as con:
            migrate(con, where=str(store))
            con.execute("BEGIN TRANSACTION")
            try:
                con.execute(
                    "DELETE FROM scorer_agreement WHERE experiment_id = ? AND"
                    f" (compared_with = 'repeats') = {'true' if repeats else 'false'}",
                    [experiment_id],
                )
                if values:
                    con.executemany(
                        "INSERT INTO scorer_agreement"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        values,
                    )
            except BaseException:
                con.execute("ROLLBACK")
                raise
            # A COMMIT that fails has ended the transaction itself.
            con.execute("COMMIT")

    # Two runs of a DuckLake store may replace their rows at once: a lost commit runs again.
    retry_busy(write)


def read_agreement(store: str | os.PathLike[str], experiment_id: str) -> list[StoredAgreement]:
    """The agreement rows a run kept in ``store`` (its scorers against their labels, and its
    judges against themselves across repeats), by scorer, comparison and metric; the table
    the store schema page describes as ``scorer_agreement``. To have them as the run held
    them, use [`agreement_from_store`][evalkit.agreement.agreement_from_store]."""
    with connection(store, read_only=True) as con:
        cursor = con.execute(
            "SELECT scorer_id, compared_with, kind, metric, value, ci_low, ci_high, n, missing,"
            " levels, confusion FROM scorer_agreement WHERE experiment_id = ?"
            " ORDER BY scorer_id, compared_with <> 'consensus', compared_with, metric",
            [experiment_id],
        )
        names = [d[0] for d in cursor.description or ()]
        rows = cursor.fetchall()
    found = [dict(zip(names, row, strict=True)) for row in rows]
    for row in found:
        for key in ("levels", "confusion"):
            row[key] = None if row[key] is None else json.loads(row[key])
    # The SELECT above names StoredAgreement's keys (tests/store/test_row_types.py).
    return cast(list[StoredAgreement], found)


def read_repeats(
    store: str | os.PathLike[str], experiment_id: str
) -> dict[str, list[list[float | None]]]:
    """Per repeated scorer, each pair's executions' scores in execution order (None where an
    execution failed), pairs in item order (``score_repeats``)."""
    with connection(store, read_only=True) as con:
        rows = con.execute(
            "SELECT r.scorer_id, list(r.score ORDER BY r.repeat_index)"
            " FROM score_repeats r LEFT JOIN experiment_items i"
            " ON i.experiment_id = r.experiment_id AND i.item_id = r.item_id"
            " WHERE r.experiment_id = ? GROUP BY r.scorer_id, r.item_id"
            " ORDER BY r.scorer_id, any_value(i.item_index), r.item_id",
            [experiment_id],
        ).fetchall()
    found: dict[str, list[list[float | None]]] = {}
    for scorer_id, scores in rows:
        found.setdefault(scorer_id, []).append(list(scores))
    return found


def read_fresh_shares(store: str | os.PathLike[str], experiment_id: str) -> dict[str, float]:
    """Per repeated scorer, the share of its repeated pairs whose execution 0 asked the judge
    (some call of it not answered by the judge cache)."""
    with connection(store, read_only=True) as con:
        rows = con.execute(
            "SELECT r.scorer_id, avg(CASE WHEN j.fresh THEN 1.0 ELSE 0.0 END)"
            " FROM (SELECT DISTINCT scorer_id, item_id FROM score_repeats"
            "       WHERE experiment_id = $1) r"
            " LEFT JOIN (SELECT scorer_id, item_id, bool_or(NOT coalesce(cached, false)) AS fresh"
            "       FROM judge_executions WHERE experiment_id = $1 AND repeat_index = 0"
            "       GROUP BY ALL) j ON j.scorer_id = r.scorer_id AND j.item_id = r.item_id"
            " GROUP BY r.scorer_id",
            [experiment_id],
        ).fetchall()
    return {scorer_id: float(share) for scorer_id, share in rows}
