"""The compare page: per scorer what changed between two runs, and the item diff as a grid
filtered, sorted and paginated in DuckDB, so a page of a million-row store reads one page of
rows (see docs/pages/design/viewer-stack.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any

from multidict import MultiMapping

from evalkit.view import _queries
from evalkit.view._queries import reading, rows

#: Rows of the grid per page.
PAGE_SIZE = 50
#: Characters of each text cell the grid shows (the item page shows the whole text).
SNIPPET = 400

#: The grid's orders: name → ORDER BY clause over the diff's columns.
SORTS = {
    "worst": "gain ASC NULLS LAST, item_id, scorer_id",
    "best": "gain DESC NULLS LAST, item_id, scorer_id",
    "item": "item_index NULLS LAST, item_id, scorer_id",
    "baseline": "baseline_score DESC NULLS LAST, item_id, scorer_id",
    "candidate": "candidate_score DESC NULLS LAST, item_id, scorer_id",
}


@dataclass(frozen=True, slots=True)
class Params:
    """What the compare page shows: the two runs and the grid's filters, order and page."""

    baseline: str
    candidate: str
    scorer: str = ""
    changed: bool = True
    q: str = ""
    slice: str = ""
    sort: str = "worst"
    page: int = 1

    @classmethod
    def from_query(cls, query: MultiMapping[str]) -> Params:
        """Read the page's query string; unknown values fall back to the defaults."""
        # The form sends a hidden ``changed=0`` and, when the box is ticked, ``changed=1``.
        changed = query.getall("changed", [])
        try:
            page = max(int(query.get("page", "1")), 1)
        except ValueError:
            page = 1
        sort = query.get("sort", "worst")
        return cls(
            baseline=query.get("baseline", ""),
            candidate=query.get("candidate", ""),
            scorer=query.get("scorer", ""),
            changed="1" in changed or not changed,
            q=query.get("q", "").strip(),
            slice=query.get("slice", "").strip(),
            sort=sort if sort in SORTS else "worst",
            page=page,
        )

    def as_query(self) -> dict[str, Any]:
        """The parameters for links to other pages and orders of the same grid."""
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "scorer": self.scorer,
            "changed": "1" if self.changed else "0",
            "q": self.q,
            "slice": self.slice,
            "sort": self.sort,
            "page": self.page,
        }


def _snippet(column: str) -> str:
    """SQL for the start of a JSON column as text: a JSON string's own characters, else the
    JSON text (as a JSON string, so the page shows it as it is)."""
    return (
        f"CASE WHEN json_type({column}) = 'VARCHAR' THEN to_json(left({column}->>'$',"
        f" {SNIPPET})) ELSE to_json(left(CAST({column} AS VARCHAR), {SNIPPET})) END"
    )


def _pair(con: Any, base: str, cand: str) -> None:
    """Join the two runs' scores once per page, into the connection's own TEMP table
    ``pairs``: one row per item and scorer of either run, with both scores (None in the run
    that lacks it). The summary and the grid both read it."""
    con.execute(
        """
        CREATE TEMP TABLE pairs AS
        SELECT item_id, scorer_id, b.score AS baseline_score, c.score AS candidate_score
        FROM (SELECT item_id, scorer_id, score FROM scores WHERE experiment_id = ?) b
        FULL JOIN (SELECT item_id, scorer_id, score FROM scores WHERE experiment_id = ?) c
        USING (item_id, scorer_id)
        """,
        [base, cand],
    )


def _labels(metadata: str | None) -> list[tuple[str, str]]:
    """An item's metadata as ``(key, value)`` labels: its text and number values, at most 3
    (each a link to the slice filter)."""
    try:
        found = json.loads(metadata) if metadata else None
    except ValueError:  # cut at SNIPPET characters
        return []
    if not isinstance(found, dict):
        return []
    shown = [(str(k), str(v)) for k, v in found.items() if isinstance(v, str | int | float)]
    return shown[:3]


def _summary(con: Any, cand: str) -> list[dict[str, Any]]:
    """Per scorer of the candidate: pairs, items of one run only, means, the mean change with
    a 95% t interval over the pairs, and how many pairs went down or up."""
    return rows(
        con,
        """
        WITH s AS (
            SELECT scorer_id,
                   count(candidate_score - baseline_score) AS n,
                   count(*) FILTER (WHERE candidate_score IS NULL) AS only_baseline,
                   count(*) FILTER (WHERE baseline_score IS NULL) AS only_candidate,
                   avg(baseline_score) AS baseline_mean, avg(candidate_score) AS candidate_mean,
                   avg(candidate_score - baseline_score) AS delta,
                   stddev_samp(candidate_score - baseline_score) AS sd,
                   count(*) FILTER (WHERE candidate_score < baseline_score) AS down,
                   count(*) FILTER (WHERE candidate_score > baseline_score) AS up
            FROM pairs GROUP BY scorer_id)
        SELECT es.scorer_id, coalesce(es.higher_is_better, true) AS higher_is_better,
               s.* EXCLUDE (scorer_id),
               evalkit_t975(s.n - 1) * s.sd / sqrt(s.n) AS half_width
        FROM experiment_scorers es LEFT JOIN s USING (scorer_id)
        WHERE es.experiment_id = ? ORDER BY es.position
        """,
        [cand],
    )


def _filters(p: Params, base: str, cand: str) -> tuple[str, list[Any]]:
    """The WHERE clause over ``pairs`` for the grid's filters, and its parameters."""
    where = ["true"]
    params: list[Any] = []
    if p.scorer:
        where.append("pairs.scorer_id = ?")
        params.append(p.scorer)
    if p.changed:
        where.append("baseline_score IS DISTINCT FROM candidate_score")
    if p.q:
        where.append(
            "pairs.item_id IN (SELECT item_id FROM experiment_items WHERE experiment_id IN (?, ?)"
            " AND (contains(lower(item_id), ?) OR contains(lower(CAST(output AS VARCHAR)), ?)"
            " OR contains(lower(CAST(input AS VARCHAR)), ?)))"
        )
        params += [base, cand, *[p.q.lower()] * 3]
    if "=" in p.slice:
        key, value = (part.strip() for part in p.slice.split("=", 1))
        where.append(
            "pairs.item_id IN (SELECT item_id FROM experiment_items WHERE experiment_id = ?"
            " AND json_extract_string(metadata, ?) = ?)"
        )
        params += [cand, '$."' + key.replace('"', '\\"') + '"', value]
    return " AND ".join(where), params


def _grid(con: Any, p: Params, base: str, cand: str) -> tuple[int, list[dict[str, Any]]]:
    """The number of pairs the filters keep, and one page of them (with both reasons, both
    outputs and the ground truth)."""
    where, params = _filters(p, base, cand)
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE kept AS
        SELECT pairs.*, candidate_score - baseline_score AS delta,
               CASE WHEN coalesce(es.higher_is_better, true)
                    THEN candidate_score - baseline_score
                    ELSE baseline_score - candidate_score END AS gain
        FROM pairs LEFT JOIN experiment_scorers es
            ON es.experiment_id = ? AND es.scorer_id = pairs.scorer_id
        WHERE {where}
        """,
        [cand, *params],
    )
    counted = con.execute("SELECT count(*) FROM kept").fetchone()
    total = int(counted[0]) if counted else 0
    last = max(math.ceil(total / PAGE_SIZE), 1)
    offset = (min(p.page, last) - 1) * PAGE_SIZE
    order = SORTS[p.sort]
    # Only the dataset order needs the items' positions of every kept pair.
    indexed = (
        "SELECT kept.*, i.item_index FROM kept LEFT JOIN experiment_items i"
        " ON i.experiment_id = ? AND i.item_id = kept.item_id"
        if p.sort == "item"
        else "SELECT kept.*, NULL AS item_index FROM kept WHERE ? IS NOT NULL"
    )
    found = rows(con, f"{indexed} ORDER BY {order} LIMIT ? OFFSET ?", [cand, PAGE_SIZE, offset])
    if not found:
        return total, found
    # The page's texts, looked up by the page's item ids (a scan the ids prune), never
    # joined with the whole runs.
    ids = sorted({r["item_id"] for r in found})
    texts = {
        (row["experiment_id"], row["item_id"]): row
        for row in rows(
            con,
            f"SELECT experiment_id, item_id, {_snippet('output')} AS output,"
            f" {_snippet('ground_truth')} AS ground_truth, left(CAST(metadata AS VARCHAR),"
            f" {SNIPPET}) AS metadata FROM experiment_items"
            " WHERE experiment_id IN (?, ?) AND item_id IN (SELECT unnest(?))",
            [base, cand, ids],
        )
    }
    reasons = {
        (row["experiment_id"], row["item_id"], row["scorer_id"]): row["reason"]
        for row in rows(
            con,
            "SELECT experiment_id, item_id, scorer_id, left(reason, ?) AS reason FROM scores"
            " WHERE experiment_id IN (?, ?) AND item_id IN (SELECT unnest(?))",
            [SNIPPET, base, cand, ids],
        )
    }
    for row in found:
        item_id, scorer_id = row["item_id"], row["scorer_id"]
        mine, theirs = texts.get((cand, item_id), {}), texts.get((base, item_id), {})
        row["candidate_output"] = mine.get("output")
        row["baseline_output"] = theirs.get("output")
        row["ground_truth"] = mine.get("ground_truth", theirs.get("ground_truth"))
        row["slices"] = _labels(mine.get("metadata"))
        row["candidate_reason"] = reasons.get((cand, item_id, scorer_id))
        row["baseline_reason"] = reasons.get((base, item_id, scorer_id))
    return total, found


def page(store: _queries.Source, p: Params) -> dict[str, Any]:
    """Everything the compare page shows.

    Raises:
        StoreError: Either run is not in the store.
    """
    with reading(store) as con:
        runs = _queries.all_runs(con)
        base = _queries.find_run(runs, p.baseline, _queries.name_of(store))
        cand = _queries.find_run(runs, p.candidate, _queries.name_of(store))
        p = replace(p, baseline=base["id"], candidate=cand["id"])
        _pair(con, base["id"], cand["id"])
        summary = _summary(con, cand["id"])
        total, grid = _grid(con, p, base["id"], cand["id"])
        # Past the last page: the last page is shown.
        p = replace(p, page=min(p.page, max(math.ceil(total / PAGE_SIZE), 1)))
        keys = _queries.metadata_keys(con, cand["id"])
    return {
        "baseline": base,
        "candidate": cand,
        "summary": summary,
        "rows": grid,
        "total": total,
        "pages": max(math.ceil(total / PAGE_SIZE), 1),
        "params": p.as_query(),
        "filters": p,
        "sorts": list(SORTS),
        "slice_keys": keys,
    }
