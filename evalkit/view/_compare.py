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

from evalkit._scorer_ids import scorer_renames
from evalkit.compare import (
    DiffOrder,
    changes_by_slice,
    compare_experiments,
    diff_items,
    read_paired_scores,
    scorer_directions,
)
from evalkit.view import _queries
from evalkit.view._queries import reading

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


# Summaries by (store, the baseline's row, the candidate's row): the summary does not depend
# on the grid's filters or page, and two runs whose rows (status, counts, end) have not
# changed hold the same scores, whatever else is written to the store; a lake is cached too.
_SUMMARIES: OrderedDict[tuple[Any, ...], list[dict[str, Any]]] = OrderedDict()
_KEPT = 16


def _state(run: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((key, repr(value)) for key, value in run.items()))


def _kept(where: str, *key: Any, compute: Any) -> Any:
    """``compute()``, kept while the store file keeps its size and modification time (a
    slice's counts: light, so a lake, which has no such file, computes them each time)."""
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


#: The figures of a scorer's row, None for a scorer no pair was scored by.
_FIGURES = (
    *("baseline_mean", "candidate_mean", "delta", "ci_low", "ci_high", "p_value"),
    *("worse", "better", "down", "up", "detectable"),
)


@dataclass(frozen=True, slots=True)
class _Read:
    """What the summary is computed from, read while the store is open."""

    scores: tuple[Any, Any]
    directions: dict[str, Any]
    renamed: dict[str, str]
    order: list[str]


def _read(con: Any, base: str, cand: str) -> _Read:
    scores = read_paired_scores(con, base, cand)
    directions = scorer_directions(con, cand, paired_with=base)
    renamed = scorer_renames(con, base, cand)[1]
    order = con.execute(
        "SELECT scorer_id FROM experiment_scorers WHERE experiment_id = ? ORDER BY position",
        [cand],
    ).fetchall()
    return _Read(scores, directions, renamed, [stored for (stored,) in order])


def _summary(read: _Read) -> list[dict[str, Any]]:
    """Per scorer of the candidate, in its order: the figures `evalkit compare` prints, from
    the same functions (`evalkit.compare.compare_experiments` at its defaults over
    `evalkit.compare.read_paired_scores`), so the two screens cannot disagree
    (docs/pages/design/one-statistics-module.md). Computed after the store is released: the
    bootstrap of a large run takes seconds, and a writer waits for the viewer's reader."""
    judged = compare_experiments(*read.scores, directions=read.directions)
    compared = {c.scorer_id: c for c in judged}
    out = []
    for stored in read.order:
        scorer_id = read.renamed.get(stored, stored)
        c = compared.get(scorer_id)
        higher = read.directions.get(scorer_id, "higher") == "higher"
        row: dict[str, Any] = {"scorer_id": scorer_id, "higher_is_better": higher}
        row.update(dict.fromkeys(_FIGURES), n=0, verdict="not_comparable")
        if c is not None and c.n_paired:
            row.update(
                n=c.n_paired,
                baseline_mean=c.baseline_mean,
                candidate_mean=c.candidate_mean,
                delta=c.difference,
                ci_low=c.ci_low,
                ci_high=c.ci_high,
                p_value=c.p_value,
                verdict=c.verdict,
                detectable=c.detectable_drop,
                worse=c.worse,
                better=c.better,
                # Which way the pairs moved, whatever the direction (the grid's order).
                down=c.worse if higher else c.better,
                up=c.better if higher else c.worse,
            )
        out.append(row)
    return out


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
        key = (where, _state(base), _state(cand))
        summary = _SUMMARIES.get(key)
        read = _read(con, base["id"], cand["id"]) if summary is None else None
        total, grid, diff = _grid(con, p, base["id"], cand["id"])
        last = max(math.ceil(total / PAGE_SIZE), 1)
        if p.page > last:  # past the last page: the last page is shown
            p = replace(p, page=last)
            total, grid, diff = _grid(con, p, base["id"], cand["id"])
        keys = _queries.metadata_keys(con, cand["id"])
        by_slice = _by_slice(con, where, base["id"], cand["id"], p.scorer)
    if read is not None:
        summary = _SUMMARIES[key] = _summary(read)
        while len(_SUMMARIES) > _KEPT:
            _SUMMARIES.popitem(last=False)
    else:
        _SUMMARIES.move_to_end(key)
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
