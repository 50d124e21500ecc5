"""The compare page: per scorer what changed between two runs, and the item diff as a grid
filtered, sorted and paginated in DuckDB, so a page of a million-row store reads one page of
rows (see docs/pages/design/viewer-stack.md).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Any

from multidict import MultiMapping

from evalkit.store import read_experiment
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


def _summary(con: Any, base: str, cand: str) -> list[dict[str, Any]]:
    """Per scorer of the candidate: pairs, items of one run only, means, the mean change with
    a 95% t interval over the pairs, and how many pairs got worse or better."""
    return rows(
        con,
        """
        WITH b AS (SELECT item_id, scorer_id, score FROM scores WHERE experiment_id = ?),
        c AS (SELECT item_id, scorer_id, score FROM scores WHERE experiment_id = ?),
        j AS (SELECT scorer_id, b.score AS bs, c.score AS cs
              FROM b FULL JOIN c USING (item_id, scorer_id)),
        s AS (SELECT scorer_id, count(*) FILTER (WHERE bs IS NOT NULL AND cs IS NOT NULL) AS n,
                     count(*) FILTER (WHERE cs IS NULL) AS only_baseline,
                     count(*) FILTER (WHERE bs IS NULL) AS only_candidate,
                     avg(bs) AS baseline_mean, avg(cs) AS candidate_mean,
                     avg(cs - bs) AS delta, stddev_samp(cs - bs) AS sd,
                     count(*) FILTER (WHERE cs < bs) AS down,
                     count(*) FILTER (WHERE cs > bs) AS up
              FROM j GROUP BY scorer_id)
        SELECT es.scorer_id, coalesce(es.higher_is_better, true) AS higher_is_better, s.*
            EXCLUDE (scorer_id),
            evalkit_t975(s.n - 1) * s.sd / sqrt(s.n) AS half_width
        FROM experiment_scorers es LEFT JOIN s USING (scorer_id)
        WHERE es.experiment_id = ? ORDER BY es.position
        """,
        [base, cand, cand],
    )


def _grid(con: Any, p: Params, base: str, cand: str) -> tuple[int, list[dict[str, Any]]]:
    """One page of the item diff and the number of rows all pages hold."""
    one = " AND scorer_id = ?" if p.scorer else ""
    params: list[Any] = [base, *[p.scorer][: bool(one)], cand, *[p.scorer][: bool(one)], cand]
    where: list[str] = []
    if p.changed:
        where.append("j.baseline_score IS DISTINCT FROM j.candidate_score")
    if p.q:
        where.append(
            "j.item_id IN (SELECT item_id FROM experiment_items WHERE experiment_id IN (?, ?)"
            " AND (contains(lower(item_id), ?) OR contains(lower(CAST(output AS VARCHAR)), ?)"
            " OR contains(lower(CAST(input AS VARCHAR)), ?)))"
        )
        params += [base, cand, *[p.q.lower()] * 3]
    if "=" in p.slice:
        key, value = (part.strip() for part in p.slice.split("=", 1))
        where.append(
            "j.item_id IN (SELECT item_id FROM experiment_items WHERE experiment_id = ?"
            " AND json_extract_string(metadata, ?) = ?)"
        )
        params += [cand, '$."' + key.replace('"', '\\"') + '"', value]
    params += [cand, PAGE_SIZE, (p.page - 1) * PAGE_SIZE, cand, base]
    sql = f"""
        WITH b AS (SELECT item_id, scorer_id, score, reason FROM scores
                   WHERE experiment_id = ?{one}),
        c AS (SELECT item_id, scorer_id, score, reason FROM scores
              WHERE experiment_id = ?{one}),
        j AS (SELECT item_id, scorer_id, b.score AS baseline_score, c.score AS candidate_score,
                     b.reason AS baseline_reason, c.reason AS candidate_reason
              FROM b FULL JOIN c USING (item_id, scorer_id)),
        d AS (
            SELECT j.*, j.candidate_score - j.baseline_score AS delta,
                   CASE WHEN coalesce(es.higher_is_better, true)
                        THEN j.candidate_score - j.baseline_score
                        ELSE j.baseline_score - j.candidate_score END AS gain
            FROM j LEFT JOIN experiment_scorers es
                ON es.experiment_id = ? AND es.scorer_id = j.scorer_id
            {"WHERE " + " AND ".join(where) if where else ""}
        ),
        page AS (
            SELECT d.*, i.item_index, count(*) OVER () AS total FROM d
            LEFT JOIN experiment_items i ON i.experiment_id = ? AND i.item_id = d.item_id
            ORDER BY {SORTS[p.sort]} LIMIT ? OFFSET ?
        )
        SELECT page.*, {_snippet("ci.output")} AS candidate_output,
               {_snippet("bi.output")} AS baseline_output,
               {_snippet("ci.ground_truth")} AS ground_truth
        FROM page
        LEFT JOIN experiment_items ci ON ci.experiment_id = ? AND ci.item_id = page.item_id
        LEFT JOIN experiment_items bi ON bi.experiment_id = ? AND bi.item_id = page.item_id
        ORDER BY {SORTS[p.sort]}
    """
    found = rows(con, sql, params)
    return (int(found[0]["total"]) if found else 0), found


def page(store: str | os.PathLike[str], p: Params) -> dict[str, Any]:
    """Everything the compare page shows.

    Raises:
        StoreError: Either run is not in the store.
    """
    base = read_experiment(store, p.baseline)
    cand = read_experiment(store, p.candidate)
    p = replace(p, baseline=base["id"], candidate=cand["id"])
    with reading(store) as con:
        summary = _summary(con, base["id"], cand["id"])
        total, grid = _grid(con, p, base["id"], cand["id"])
        if not grid and p.page > 1:  # past the last page: show the last one
            _, grid = _grid(con, replace(p, page=1), base["id"], cand["id"])
            total = int(grid[0]["total"]) if grid else 0
            p = replace(p, page=max(math.ceil(total / PAGE_SIZE), 1))
            total, grid = _grid(con, p, base["id"], cand["id"])
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
