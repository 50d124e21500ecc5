"""The compare page: per scorer what changed between two runs, and the item diff
(`evalkit.compare.diff_items`) as a grid filtered, sorted and paginated in DuckDB, so a
page of a million-row store reads one page of rows (see docs/pages/design/viewer-stack.md).
"""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, cast

from multidict import MultiMapping

from evalkit import _stable_sql as stable_sql
from evalkit._scorer_ids import renamed_sql, scorer_renames
from evalkit.compare import DiffOrder, changes_by_slice, diff_items
from evalkit.view import _queries
from evalkit.view._queries import reading, rows

#: Rows of the grid per page.
PAGE_SIZE = 50

#: The grid's orders: the page's name → :data:`evalkit.compare.DiffOrder`.
SORTS: dict[str, DiffOrder] = {
    "worst": "drop",
    "best": "gain",
    "item": "item",
    "baseline": "baseline",
    "candidate": "candidate",
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
        page = _queries.page_number(query)
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


def labels(metadata: str | None) -> list[tuple[str, str]]:
    """An item's metadata as ``(key, value)`` labels: its text and number values, at most 3
    (each a link to the slice filter, here and in the run page's item table)."""
    try:
        found = json.loads(metadata) if metadata else None
    except ValueError:
        return []
    if not isinstance(found, dict):
        return []
    shown = [(str(k), str(v)) for k, v in found.items() if isinstance(v, str | int | float)]
    return shown[:3]


# Differences of scores near the float limit overflow: a pair of groups is scaled (as a whole)
# when either run's scores reach 2**400 (evalkit/_stable_sql.py).
_PAIRS_BIG = f"max(greatest(abs(b.score), abs(c.score))) >= {stable_sql.BIG}"
_SCALED = f"c.score * {stable_sql.DOWN} - b.score * {stable_sql.DOWN}"

# {b_id}, {c_id}, {es_id}: each run's scorer ids as compared, a prebuilt scorer's old stored
# id paired with its new one (docs/pages/design/one-scorer-id-rule.md).
_SUMMARY = f"""
    WITH b AS (SELECT hash(item_id, {{b_id}}) AS h, item_id, {{b_id}} AS scorer_id, score
               FROM scores WHERE experiment_id = ?),
    c AS (SELECT hash(item_id, {{c_id}}) AS h, item_id, {{c_id}} AS scorer_id, score
          FROM scores WHERE experiment_id = ?),
    s AS (
        SELECT b.scorer_id, count(*) AS n, {stable_sql.mean("b.score")} AS baseline_mean,
               {stable_sql.mean("c.score")} AS candidate_mean,
               {stable_sql.mean("c.score - b.score", _PAIRS_BIG, _SCALED)} AS delta,
               {stable_sql.stddev("c.score - b.score", _PAIRS_BIG, _SCALED)} AS sd,
               count(*) FILTER (WHERE c.score < b.score) AS down,
               count(*) FILTER (WHERE c.score > b.score) AS up
        FROM b JOIN c ON c.h = b.h
        WHERE c.item_id = b.item_id AND c.scorer_id = b.scorer_id
        GROUP BY b.scorer_id)
    SELECT {{es_id}} AS scorer_id, coalesce(es.higher_is_better, true) AS higher_is_better,
           s.* EXCLUDE (scorer_id), s.sd / sqrt(s.n) * evalkit_t975(s.n - 1) AS half_width
    FROM experiment_scorers es LEFT JOIN s ON s.scorer_id = {{es_id}}
    WHERE es.experiment_id = ? ORDER BY es.position
"""

# Summaries by (store file, its size and modification time, baseline, candidate): the
# summary does not depend on the grid's filters or page, and a store file that has not
# changed cannot hold other scores.
_SUMMARIES: OrderedDict[tuple[Any, ...], list[dict[str, Any]]] = OrderedDict()
_KEPT = 16


def _kept(where: str, *key: Any, compute: Any) -> Any:
    """``compute()``, kept while the store file keeps its size and modification time."""
    try:
        stat = os.stat(where)
        full: tuple[Any, ...] | None = (where, stat.st_size, stat.st_mtime_ns, *key)
    except OSError:
        full = None
    if full is not None and full in _SUMMARIES:
        _SUMMARIES.move_to_end(full)
        return _SUMMARIES[full]
    found = compute()
    if full is not None:
        _SUMMARIES[full] = found
        while len(_SUMMARIES) > _KEPT:
            _SUMMARIES.popitem(last=False)
    return found


def _summary(con: Any, where: str, base: str, cand: str) -> list[dict[str, Any]]:
    """Per scorer of the candidate, over the pairs both runs scored: n, both means, the mean
    change with a 95% t interval, and how many pairs went down or up."""

    def compute() -> list[dict[str, Any]]:
        b_names, c_names = scorer_renames(con, base, cand)
        b_id, b_params = renamed_sql(b_names)
        c_id, c_params = renamed_sql(c_names)
        es_id, es_params = renamed_sql(c_names, "es.scorer_id")
        sql = _SUMMARY.replace("{b_id}", b_id).replace("{c_id}", c_id).replace("{es_id}", es_id)
        params = [*b_params, *b_params, base, *c_params, *c_params, cand]
        return rows(con, sql, [*params, *es_params, *es_params, cand])

    return cast(list[dict[str, Any]], _kept(where, "summary", base, cand, compute=compute))


#: Declared slice keys of the candidate shown on the page, at most.
SLICE_KEYS = 3


def _by_slice(con: Any, where: str, base: str, cand: str, scorer: str) -> list[dict[str, Any]]:
    """Per slice key the candidate run declared (``slices = [...]``) and value: pairs,
    dropped and improved pairs (`evalkit.compare.changes_by_slice`), most drops first."""
    found = con.execute(
        "SELECT CAST(config->'$.slices' AS VARCHAR) FROM experiments WHERE id = ?", [cand]
    ).fetchone()
    try:
        keys = json.loads(found[0]) if found and found[0] else []
    except ValueError:
        keys = []
    out = []
    for key in [k for k in keys if isinstance(k, str)][:SLICE_KEYS]:

        def compute(key: str = key) -> list[dict[str, Any]]:
            frame = changes_by_slice(con, base, cand, key, scorer=scorer or None)
            return cast(list[dict[str, Any]], frame.to_dict("records"))

        values = _kept(where, "slices", base, cand, key, scorer, compute=compute)
        out.append({"key": key, "values": values})
    return out


def _grid(con: Any, p: Params, base: str, cand: str) -> tuple[int, list[dict[str, Any]], Any]:
    """One page of the item diff, the pairs all pages hold, and the diff itself."""
    key, _, value = p.slice.partition("=")
    sliced = bool(p.slice) and bool(key.strip()) and "=" in p.slice
    diff = diff_items(
        con,
        base,
        cand,
        scorer=p.scorer or None,
        slice_key=key.strip() if sliced else None,
        slice_value=value.strip() if sliced else None,
        changed_only=p.changed,
        search=p.q or None,
        order=SORTS[p.sort],
        offset=(p.page - 1) * PAGE_SIZE,
        limit=PAGE_SIZE,
    )
    found = cast(list[dict[str, Any]], diff.pairs.to_dict("records"))
    for row in found:
        row["slices"] = labels(row.get("metadata"))
        row["gain"] = row["improvement"]
    return diff.total, found, diff


def page(store: _queries.Source, p: Params) -> dict[str, Any]:
    """Everything the compare page shows.

    Raises:
        StoreError: Either run is not in the store.
    """
    where = _queries.name_of(store)
    with reading(store) as con:
        base = _queries.find_run(con, p.baseline, where)
        cand = _queries.find_run(con, p.candidate, where)
        p = replace(p, baseline=base["id"], candidate=cand["id"])
        summary = _summary(con, where, base["id"], cand["id"])
        total, grid, diff = _grid(con, p, base["id"], cand["id"])
        last = max(math.ceil(total / PAGE_SIZE), 1)
        if p.page > last:  # past the last page: the last page is shown
            p = replace(p, page=last)
            total, grid, diff = _grid(con, p, base["id"], cand["id"])
        keys = _queries.metadata_keys(con, cand["id"])
        by_slice = _by_slice(con, where, base["id"], cand["id"], p.scorer)
    return {
        "by_slice": by_slice,
        "baseline": base,
        "candidate": cand,
        "summary": summary,
        "rows": grid,
        "total": total,
        "pages": last,
        "only_in_baseline": diff.only_in_baseline,
        "only_in_candidate": diff.only_in_candidate,
        "params": p.as_query(),
        "filters": p,
        "sorts": list(SORTS),
        "slice_keys": keys,
    }
