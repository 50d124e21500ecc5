"""The run page's item table: a run's items searched, filtered, sorted and paginated in DuckDB,
so a page over a million score rows reads one page of rows (docs/pages/design/viewer-stack.md).

The items a page shows are found on narrow columns first (item id, row id, the sorting score);
only that page's inputs, outputs, scores and errors are read, by row id or item id. Every value
reaches DuckDB as a parameter; only fixed SQL fragments are put together here.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import duckdb
from multidict import MultiMapping

from evalkit._error_pattern import error_pattern
from evalkit._json import json_pointer
from evalkit._snapshot import in_one_transaction
from evalkit.view import _queries
from evalkit.view._compare import labels
from evalkit.view._queries import reading, rows

#: Items of the table per page.
PAGE_SIZE = 50

#: The scorer id of a failure group of the target (the item has no output, no scorer ran).
TARGET = "(target)"


def _number(text: str | None) -> float | None:
    """A score bound from the query string: a finite number, or None (no bound)."""
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _group(text: str | None) -> tuple[str, str | None, str | None, str] | None:
    """A failure group from the query string: the JSON list ``[scorer, error type, failed
    step, pattern]`` its link carries, or None."""
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(found, list) or len(found) != 4:
        return None
    scorer, error, step, pattern = found
    if not isinstance(scorer, str) or not isinstance(pattern, str):
        return None
    if not all(v is None or isinstance(v, str) for v in (error, step)):
        return None
    return scorer, error, step, pattern


def group_key(group: dict[str, Any]) -> str:
    """The ``group`` parameter of a link to a failure group's items."""
    key = [group["scorer_id"], group["error_name"], group["failed_step"], group["pattern"]]
    return json.dumps(key, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Params:
    """What the item table shows: its filters, order and page.

    ``scorer`` narrows the score range and *failed* to one scorer; ``sort`` is ``item``
    (item id), ``-item``, ``score:ID`` (that scorer's score, lowest first; items it has no
    score for last) or ``-score:ID`` (highest first).
    """

    q: str = ""
    scorer: str = ""
    min: float | None = None
    max: float | None = None
    failed: bool = False
    slice: str = ""
    group: tuple[str, str | None, str | None, str] | None = None
    sort: str = "item"
    page: int = 1

    @classmethod
    def from_query(cls, query: MultiMapping[str]) -> Params:
        """Read the page's query string; unknown values fall back to the defaults."""
        page = _queries.page_number(query)
        return cls(
            q=query.get("q", "").strip(),
            scorer=query.get("scorer", ""),
            min=_number(query.get("min")),
            max=_number(query.get("max")),
            failed=query.get("failed", "") == "1",
            slice=query.get("slice", "").strip(),
            group=_group(query.get("group")),
            sort=query.get("sort", "item"),
            page=page,
        )

    def as_query(self) -> dict[str, Any]:
        """The parameters for links to other pages and orders of the same table."""
        return {
            "q": self.q,
            "scorer": self.scorer,
            "min": "" if self.min is None else repr(self.min),
            "max": "" if self.max is None else repr(self.max),
            "failed": "1" if self.failed else "",
            "slice": self.slice,
            "group": json.dumps(list(self.group), ensure_ascii=False, separators=(",", ":"))
            if self.group
            else "",
            "sort": self.sort,
            "page": self.page,
        }

    @property
    def filtered(self) -> bool:
        """Whether any filter is set (an empty table then says so)."""
        return bool(
            self.q
            or self.scorer
            or self.min is not None
            or self.max is not None
            or self.failed
            or self.slice
            or self.group
        )


def _order(sort: str, scorers: list[str]) -> tuple[str, str | None, bool]:
    """``sort`` as (the normalised value, the scorer whose score orders, descending)."""
    descending = sort.startswith("-")
    name = sort[1:] if descending else sort
    if name.startswith("score:") and name[len("score:") :] in scorers:
        return sort, name[len("score:") :], descending
    if name == "item":
        return sort, None, descending
    return "item", None, False


def _group_messages(
    con: duckdb.DuckDBPyConnection, eid: str, group: tuple[str, str | None, str | None, str]
) -> list[str]:
    """The distinct messages of a failure group (they share its pattern), "" for none."""
    scorer, error, step, pattern = group
    if scorer == TARGET:
        found = con.execute(
            "SELECT DISTINCT coalesce(error->>'$.message', '') FROM experiment_items"
            " WHERE experiment_id = ? AND error IS NOT NULL"
            " AND (error->>'$.name') IS NOT DISTINCT FROM ?",
            [eid, error],
        ).fetchall()
    else:
        found = con.execute(
            "SELECT DISTINCT coalesce(error_message, '') FROM scorer_errors"
            " WHERE experiment_id = ? AND scorer_id = ? AND error_name IS NOT DISTINCT FROM ?"
            " AND failed_step IS NOT DISTINCT FROM ?",
            [eid, scorer, error, step],
        ).fetchall()
    return [m for (m,) in found if error_pattern(m) == pattern]


def _where(con: duckdb.DuckDBPyConnection, eid: str, p: Params) -> tuple[list[str], list[Any]]:
    """The conditions on the run's ``experiment_items`` rows that the filters ask for."""
    where = ["experiment_id = ?"]
    params: list[Any] = [eid]
    if p.q:
        where.append(
            "(contains(lower(CAST(input AS VARCHAR)), ?)"
            " OR contains(lower(CAST(ground_truth AS VARCHAR)), ?)"
            " OR contains(lower(CAST(output AS VARCHAR)), ?))"
        )
        params += [p.q.lower()] * 3
    key, _, value = p.slice.partition("=")
    if key.strip() and "=" in p.slice:
        where.append("json_extract_string(metadata, ?) = ?")
        params += [json_pointer(key.strip()), value.strip()]
    one = " AND scorer_id = ?" if p.scorer else ""
    if p.min is not None or p.max is not None:
        where.append(
            "item_id IN (SELECT item_id FROM scores WHERE experiment_id = ?"
            f"{one} AND (? IS NULL OR score >= ?) AND (? IS NULL OR score <= ?))"
        )
        params += [eid, *([p.scorer] if p.scorer else []), p.min, p.min, p.max, p.max]
    if p.failed:
        # A failed target ran no scorer: the item failed for every scorer.
        where.append(
            "(error IS NOT NULL OR item_id IN (SELECT item_id FROM scorer_errors"
            f" WHERE experiment_id = ?{one}))"
        )
        params += [eid, *([p.scorer] if p.scorer else [])]
    if p.group is not None:
        scorer, error, step, _ = p.group
        messages = _group_messages(con, eid, p.group)
        if scorer == TARGET:
            where.append(
                "error IS NOT NULL AND (error->>'$.name') IS NOT DISTINCT FROM ?"
                " AND list_contains(?, coalesce(error->>'$.message', ''))"
            )
            params += [error, messages]
        else:
            where.append(
                "item_id IN (SELECT item_id FROM scorer_errors WHERE experiment_id = ?"
                " AND scorer_id = ? AND error_name IS NOT DISTINCT FROM ?"
                " AND failed_step IS NOT DISTINCT FROM ?"
                " AND list_contains(?, coalesce(error_message, '')))"
            )
            params += [eid, scorer, error, step, messages]
    return where, params


def _page_ids(
    con: duckdb.DuckDBPyConnection, eid: str, p: Params, scorers: list[str]
) -> tuple[int, list[int]]:
    """How many items match, and the row ids of this page's items, in order."""
    where, params = _where(con, eid, p)
    _, by, descending = _order(p.sort, scorers)
    direction = "DESC" if descending else "ASC"
    if by is None:
        # Ordered by id: the narrow item rows only.
        chosen = f"SELECT item_id, rowid AS r FROM experiment_items WHERE {' AND '.join(where)}"
        order = f"item_id {direction}"
        score_params: list[Any] = []
    else:
        # Joined to one scorer's scores on a hash of the item id (several times faster than
        # on the strings, which are compared too); items without its score come last.
        chosen = f"""
            SELECT i.item_id, i.r, s.score FROM (
                SELECT hash(item_id) AS h, item_id, rowid AS r FROM experiment_items
                WHERE {" AND ".join(where)}) i
            LEFT JOIN (SELECT hash(item_id) AS h, item_id, score FROM scores
                       WHERE experiment_id = ? AND scorer_id = ?) s
                ON s.h = i.h AND s.item_id = i.item_id
        """
        order = f"score {direction} NULLS LAST, item_id ASC"
        score_params = [eid, by]
    # The count and the page in one statement over the filtered rows; the page's order is
    # applied again to its rows, as a join keeps none.
    sql = f"""
        WITH p AS MATERIALIZED ({chosen}),
        page AS (SELECT * FROM p ORDER BY {order} LIMIT ? OFFSET ?)
        SELECT t.total, page.r FROM (SELECT count(*) AS total FROM p) t
        LEFT JOIN page ON true ORDER BY {order}
    """
    found = con.execute(
        sql, [*params, *score_params, PAGE_SIZE, (p.page - 1) * PAGE_SIZE]
    ).fetchall()
    total = int(found[0][0]) if found else 0
    return total, [r for _, r in found if r is not None]


def _details(con: duckdb.DuckDBPyConnection, eid: str, ids: list[int]) -> list[dict[str, Any]]:
    """The page's items (by row id, in that order) with their texts and, per scorer, the
    score or the error, and whether a judge was called for them."""
    if not ids:
        return []
    items = rows(
        con,
        "SELECT rowid AS r, item_id, item_index, status, CAST(input AS VARCHAR) AS input,"
        " CAST(ground_truth AS VARCHAR) AS ground_truth, CAST(output AS VARCHAR) AS output,"
        " CAST(metadata AS VARCHAR) AS metadata, error->>'$.name' AS target_error,"
        " error->>'$.message' AS target_message"
        " FROM experiment_items WHERE rowid IN (SELECT unnest(?::BIGINT[]))",
        [ids],
    )
    names = [i["item_id"] for i in items]
    scores: dict[str, dict[str, Any]] = defaultdict(dict)
    for item_id, scorer_id, score in con.execute(
        "SELECT item_id, scorer_id, score FROM scores WHERE experiment_id = ?"
        " AND item_id IN (SELECT unnest(?::VARCHAR[]))",
        [eid, names],
    ).fetchall():
        scores[item_id][scorer_id] = {"score": score}
    for item_id, scorer_id, error_name, step in con.execute(
        "SELECT item_id, scorer_id, error_name, failed_step FROM scorer_errors"
        " WHERE experiment_id = ? AND item_id IN (SELECT unnest(?::VARCHAR[]))",
        [eid, names],
    ).fetchall():
        scores[item_id][scorer_id] = {"score": None, "error": error_name, "step": step}
    judged = {
        row[0]
        for row in con.execute(
            "SELECT DISTINCT item_id FROM judge_executions WHERE experiment_id = ?"
            " AND item_id IN (SELECT unnest(?::VARCHAR[]))",
            [eid, names],
        ).fetchall()
    }
    position = {r: i for i, r in enumerate(ids)}
    items.sort(key=lambda i: position[i.pop("r")])
    for item in items:
        item["scores"] = scores.get(item["item_id"], {})
        item["slices"] = labels(item["metadata"])
        item["judged"] = item["item_id"] in judged
    return items


def table(
    con: duckdb.DuckDBPyConnection, eid: str, p: Params, scorers: list[str]
) -> dict[str, Any]:
    """One page of the run's item table, on a connection to the store.

    Returns:
        ``rows`` (per item: ``item_id``, ``item_index``, ``status``, ``input``,
        ``ground_truth``, ``output``, ``metadata`` as text, ``target_error`` and
        ``target_message``, ``scores``: scorer id → ``score`` or ``error`` and ``step``,
        ``slices`` and ``judged``), ``total`` (items over every page), ``pages``, ``params``
        (the query of this page) and ``filters``.
    """
    sort, _, _ = _order(p.sort, scorers)
    p = replace(p, sort=sort, scorer=p.scorer if p.scorer in scorers else "")
    # One transaction, so the row ids the page found still name the same rows when read.
    return in_one_transaction(con, lambda: _table(con, eid, p, scorers))


def _table(
    con: duckdb.DuckDBPyConnection, eid: str, p: Params, scorers: list[str]
) -> dict[str, Any]:
    total, ids = _page_ids(con, eid, p, scorers)
    last = max(math.ceil(total / PAGE_SIZE), 1)
    if p.page > last:  # past the last page: the last page is shown
        p = replace(p, page=last)
        total, ids = _page_ids(con, eid, p, scorers)
    return {
        "rows": _details(con, eid, ids),
        "total": total,
        "pages": last,
        "params": p.as_query(),
        "filters": p,
    }


def run_page(store: _queries.Source, ref: str, p: Params) -> dict[str, Any]:
    """Everything the run page shows: `evalkit.view._queries.experiment`, one page of
    its item table (``items``, see `table`) and the metadata keys its slice filter can
    name (``slice_keys``).

    Raises:
        StoreError: No run has this id (or id prefix).
    """
    with reading(store) as con:
        data = _queries.experiment(con, ref, _queries.name_of(store))
        scorers = [s["scorer_id"] for s in data["scorers"]]
        data["items"] = table(con, data["run"]["id"], p, scorers)
        data["slice_keys"] = _queries.metadata_keys(con, data["run"]["id"])
    return data
