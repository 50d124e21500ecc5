"""Item diff: the pairs of two stored runs whose score changed, straight from the store.

`diff_items` pairs a baseline's and a candidate's successful scores by item and scorer
id in DuckDB, filters and orders them there, and reads inputs, outputs and reasons only for the
page asked for, so a page over a million score rows costs one pass over the two runs' scores.
Every value reaches DuckDB as a parameter; only fixed SQL fragments are put together here.
Why the join is on a hash of the pair: docs/pages/design/diff-joins-on-a-hash.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import duckdb

from evalkit._json import json_pointer as _pointer
from evalkit._scorer_ids import compared_id, renamed_sql, scorer_renames, stored_id
from evalkit._snapshot import in_one_transaction
from evalkit.errors import ConfigError, StoreError

if TYPE_CHECKING:  # DuckDB's .df() imports pandas when a diff is asked for, not with evalkit
    import pandas as pd

DiffOrder: TypeAlias = Literal["drop", "gain", "delta", "item", "baseline", "candidate"]
"""How `diff_items` orders pairs: ``"drop"`` largest drop first (worse by the scorer's
direction), ``"gain"`` largest improvement first, ``"delta"`` most negative ``candidate -
baseline`` first, ``"item"`` by item id, ``"baseline"``/``"candidate"`` by that score."""

#: The ORDER BY clause of each order. Ties are broken by the pair's hash: a fixed order, so
#: pages never overlap, that costs a third less than sorting ties by the id strings.
_ORDERS: dict[str, str] = {
    "drop": "improvement ASC",
    "gain": "improvement DESC",
    "delta": "delta ASC",
    "item": "item_id ASC, scorer_id ASC",
    "baseline": "baseline_score ASC",
    "candidate": "candidate_score ASC",
}

#: The store version whose ``judge_executions`` has ``truncated`` (an older store, read
#: without being migrated, flags no reason).
_TRUNCATED_SINCE = 7

#: The columns of :attr:`ItemDiff.pairs`, in order (slice columns follow).
PAIR_COLUMNS = (
    "item_id",
    "scorer_id",
    "baseline_score",
    "candidate_score",
    "delta",
    "improvement",
    "input",
    "ground_truth",
    "baseline_output",
    "candidate_output",
    "baseline_reason",
    "candidate_reason",
    "baseline_reason_truncated",
    "candidate_reason_truncated",
    "metadata",
)


@dataclass(frozen=True, slots=True)
class ItemDiff:
    """One page of an item diff between two runs.

    Attributes:
        pairs: One row per (item, scorer) pair on this page: `PAIR_COLUMNS` (``input``,
            ``ground_truth``, the outputs and ``metadata`` as JSON text; ``delta`` is
            ``candidate - baseline``, ``improvement`` the change signed by the scorer's
            direction, negative when worse; ``*_reason_truncated`` is True when that run's
            reason is a judge reply cut at its token limit), then one ``slice:KEY`` column per
            slice key.
        total: Pairs matching the filters, over every page.
        only_in_baseline: Items evaluated in the baseline only (whatever the filters).
        only_in_candidate: Items evaluated in the candidate only.
        offset: The first pair's position in the whole result.
        limit: The page size asked for.
        dropped: Of the ``total`` pairs, those that got worse (by the scorer's direction).
        improved: Of the ``total`` pairs, those that got better.
    """

    pairs: pd.DataFrame
    total: int
    only_in_baseline: int
    only_in_candidate: int
    offset: int
    limit: int | None
    dropped: int = 0
    improved: int = 0


def _check(
    order: str, offset: int, limit: int | None, slice_key: str | None, slice_value: object
) -> None:
    if order not in _ORDERS:
        raise ConfigError(f"order must be one of {', '.join(_ORDERS)}, got {order!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ConfigError(f"offset must be a whole number >= 0, got {offset!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ConfigError(f"limit must be a whole number >= 0, got {limit!r}")
    if (slice_key is None) != (slice_value is None):
        raise ConfigError("slice_key and slice_value go together: give both or neither")
    if slice_key is not None and not slice_key.strip():
        raise ConfigError("slice_key must not be empty")


def diff_items(
    store: duckdb.DuckDBPyConnection | str | os.PathLike[str],
    baseline: str,
    candidate: str,
    *,
    scorer: str | None = None,
    slice_key: str | None = None,
    slice_value: str | None = None,
    changed_only: bool = True,
    improved: bool = False,
    dropped: bool = False,
    search: str | None = None,
    order: DiffOrder | None = None,
    offset: int = 0,
    limit: int | None = 50,
    slices: Sequence[str] = (),
) -> ItemDiff:
    """The scored pairs of two stored runs, filtered, ordered and paginated in the store.

    A pair is an item and scorer that both runs scored successfully (failed runs have no
    score to compare; see ``compare`` for their counts).

    Args:
        store: An open DuckDB connection to the store (read-only is enough), or its path.
        baseline: The baseline experiment id.
        candidate: The candidate experiment id.
        scorer: Only this scorer's pairs.
        slice_key: With ``slice_value``: only items whose metadata key ``slice_key`` (a dotted
            path for nested keys) has this value, compared as text.
        slice_value: The slice's value.
        changed_only: Only pairs whose score changed.
        improved: Only pairs that got better (by the scorer's direction); ordered largest gain
            first unless ``order`` says otherwise.
        dropped: Only pairs that got worse.
        search: Only items whose input, ground truth or either output contains this text
            (case-insensitive).
        order: See `DiffOrder`; default ``"drop"`` (``"gain"`` with ``improved``).
        offset: Skip this many pairs.
        limit: At most this many pairs (None: all of them).
        slices: Metadata keys to return as ``slice:KEY`` columns.

    Raises:
        ConfigError: An invalid option.
        StoreError: An experiment id is not in the store.
    """
    order = order or ("gain" if improved else "drop")
    _check(order, offset, limit, slice_key, slice_value)
    if isinstance(store, duckdb.DuckDBPyConnection):
        return _diff(store, baseline, candidate, locals())
    from evalkit.store import connection

    with connection(store, read_only=True) as con:
        return _diff(con, baseline, candidate, locals())


def _diff(
    con: duckdb.DuckDBPyConnection, baseline: str, candidate: str, opts: dict[str, Any]
) -> ItemDiff:
    # One transaction, so the row ids the page carries from the pairing query still name the
    # same rows when its texts are read (a connection already in one keeps its own).
    return in_one_transaction(con, lambda: _diff_in(con, baseline, candidate, opts))


def _diff_in(
    con: duckdb.DuckDBPyConnection, baseline: str, candidate: str, opts: dict[str, Any]
) -> ItemDiff:
    for ref in (baseline, candidate):
        if con.execute("SELECT 1 FROM experiments WHERE id = ?", [ref]).fetchone() is None:
            raise StoreError(f"no experiment has the id {ref!r}")
    # Pairs are joined on a 64-bit hash of (item id, scorer id), several times faster than on
    # the two strings, and the strings are compared too so a hash collision cannot pair two
    # different items. A resumed run replaces older rows, so a pair has one row per run.
    # A prebuilt scorer stored under its old id in one run pairs with its new id in the other
    # (docs/pages/design/one-scorer-id-rule.md): each side's ids are renamed in the query.
    names = scorer_renames(con, baseline, candidate)
    scorer = None if opts["scorer"] is None else compared_id(names, opts["scorer"])
    sides: list[tuple[str, list[Any]]] = []
    for renamed, experiment in zip(names, (baseline, candidate), strict=True):
        sid, sid_params = renamed_sql(renamed)
        side = f"SELECT hash(item_id, {sid}) AS h, item_id, {sid} AS scorer_id,"
        side += " scorer_id AS stored_id, score, rowid AS r FROM scores WHERE experiment_id = ?"
        side_params = [*sid_params, *sid_params, experiment]
        if scorer is not None:
            side += " AND scorer_id = ?"
            side_params.append(stored_id(renamed, scorer))
        sides.append((side, side_params))
    # The items a slice or a search keeps, found once and joined to both runs' scores.
    chosen = ""
    chosen_params: list[Any] = []
    if opts["search"] is not None:
        chosen = (
            "SELECT DISTINCT item_id FROM experiment_items WHERE experiment_id IN (?, ?)"
            " AND (contains(lower(CAST(input AS VARCHAR)), ?)"
            " OR contains(lower(CAST(ground_truth AS VARCHAR)), ?)"
            " OR contains(lower(CAST(output AS VARCHAR)), ?))"
        )
        chosen_params += [baseline, candidate, *[opts["search"].lower()] * 3]
    if opts["slice_key"] is not None:
        in_slice = (
            "SELECT item_id FROM experiment_items WHERE experiment_id = ?"
            " AND json_extract_string(metadata, ?) = ?"
        )
        chosen = f"{chosen} AND item_id IN ({in_slice})" if chosen else in_slice
        chosen_params += [candidate, _pointer(opts["slice_key"]), str(opts["slice_value"])]
    if chosen:
        sides = [(f"{side} AND item_id IN (SELECT item_id FROM chosen)", p) for side, p in sides]
    (b_run, b_params), (c_run, c_params) = sides
    where = ["b.item_id = c.item_id", "b.scorer_id = c.scorer_id"]
    if opts["changed_only"]:
        where.append("c.score <> b.score")
    sign = "CASE WHEN coalesce(es.higher_is_better, true) THEN 1 ELSE -1 END"
    if opts["improved"]:
        where.append(f"(c.score - b.score) * {sign} > 0")
    if opts["dropped"]:
        where.append(f"(c.score - b.score) * {sign} < 0")
    window = " LIMIT ? OFFSET ?" if opts["limit"] is not None else " OFFSET ?"
    # The pairs are kept narrow (ids are read for the page's rows only) unless ordered by id.
    ids = "b.item_id, b.scorer_id, " if opts["order"] == "item" else ""
    sql = f"""
        WITH {f"chosen AS MATERIALIZED ({chosen})," if chosen else ""}
        b AS ({b_run}), c AS ({c_run}),
        p AS MATERIALIZED (
            SELECT b.h, b.r AS b_row, c.r AS c_row, {ids}b.score AS baseline_score,
                   c.score AS candidate_score, c.score - b.score AS delta,
                   (c.score - b.score) * {sign} AS improvement
            FROM b JOIN c ON c.h = b.h
            LEFT JOIN experiment_scorers es
                 ON es.experiment_id = ? AND es.scorer_id = c.stored_id
            WHERE {" AND ".join(where)}
        ),
        page AS (
            SELECT * FROM p ORDER BY {_ORDERS[opts["order"]]}, h{window}
        )
        SELECT t.*, page.* FROM (
            SELECT count(*) AS total, count(*) FILTER (WHERE improvement < 0) AS n_dropped,
                   count(*) FILTER (WHERE improvement > 0) AS n_improved FROM p
        ) t LEFT JOIN page ON true
    """
    params = [*chosen_params, *b_params, *c_params, candidate]
    params += [opts["limit"], opts["offset"]] if opts["limit"] is not None else [opts["offset"]]
    head = con.execute(sql, params).df()
    counts = head[["total", "n_dropped", "n_improved"]]
    total, dropped, improved = (int(v) for v in counts.iloc[0]) if len(head) else (0, 0, 0)
    page = head[head["h"].notna()].drop(columns=[*counts.columns, "h"]).reset_index(drop=True)
    page = page.astype({"b_row": "int64", "c_row": "int64"})
    if not ids:
        keys = (
            con.execute(
                "SELECT rowid AS r, item_id, scorer_id FROM scores"
                " WHERE rowid IN (SELECT unnest(?::BIGINT[]))",
                [page["c_row"].tolist()],
            )
            .df()
            .set_index("r")
        )
        page = page.assign(
            item_id=page["c_row"].map(keys["item_id"]).astype(object),
            scorer_id=page["c_row"]
            .map(keys["scorer_id"])
            .map(lambda s: names[1].get(s, s))
            .astype(object),
        )
    only = con.execute(_ONLY_IN, [baseline, candidate]).fetchone()
    only_b, only_c = (int(only[0]), int(only[1])) if only else (0, 0)
    pairs = _details(con, page, baseline, candidate, list(opts["slices"]))
    return ItemDiff(pairs, total, only_b, only_c, opts["offset"], opts["limit"], dropped, improved)


_ONLY_IN = """
    WITH b AS (SELECT hash(item_id) AS h, item_id FROM experiment_items WHERE experiment_id = ?),
    c AS (SELECT hash(item_id) AS h, item_id FROM experiment_items WHERE experiment_id = ?),
    both_runs AS (SELECT count(*) AS n FROM b JOIN c ON c.h = b.h WHERE c.item_id = b.item_id)
    SELECT (SELECT count(*) FROM b) - n, (SELECT count(*) FROM c) - n FROM both_runs
"""


def _details(
    con: duckdb.DuckDBPyConnection,
    page: pd.DataFrame,
    baseline: str,
    candidate: str,
    slices: list[str],
) -> pd.DataFrame:
    """The page's pairs with inputs, outputs, reasons and slice values.

    Texts are read by row id: the page's item rows are found on the narrow ``item_id``
    column first, then only those rows are read; reasons come by the score rows' ids the
    pairing query carried. Both are several times cheaper than filtering the wide rows.
    """
    ids = sorted(set(page["item_id"]))
    slice_cols = "".join(
        f", json_extract_string(metadata, ?) AS {_alias(i)}" for i in range(len(slices))
    )
    rows = [
        row[0]
        for row in con.execute(
            "SELECT rowid FROM experiment_items WHERE experiment_id IN (?, ?)"
            " AND item_id IN (SELECT unnest(?::VARCHAR[]))",
            [baseline, candidate, ids],
        ).fetchall()
    ] if ids else []  # fmt: skip
    items = con.execute(
        "SELECT experiment_id, item_id, CAST(input AS VARCHAR) AS input,"
        " CAST(ground_truth AS VARCHAR) AS ground_truth, CAST(output AS VARCHAR) AS output,"
        f" CAST(metadata AS VARCHAR) AS metadata{slice_cols} FROM experiment_items"
        " WHERE rowid IN (SELECT unnest(?::BIGINT[]))",
        [*(_pointer(key) for key in slices), rows],
    ).df()
    by_row = con.execute(
        "SELECT rowid AS r, reason FROM scores WHERE rowid IN (SELECT unnest(?::BIGINT[]))",
        [[*page["b_row"].tolist(), *page["c_row"].tolist()]],
    ).df()
    reason = by_row.set_index("r")["reason"]
    cut = _truncated(con, [*page["b_row"].tolist(), *page["c_row"].tolist()])
    page = page.assign(
        baseline_reason=page["b_row"].map(reason),
        candidate_reason=page["c_row"].map(reason),
        baseline_reason_truncated=page["b_row"].isin(cut),
        candidate_reason_truncated=page["c_row"].isin(cut),
    ).drop(columns=["b_row", "c_row"])
    c_items = items[items["experiment_id"] == candidate].drop(columns="experiment_id")
    b_items = items[items["experiment_id"] == baseline].drop(columns="experiment_id")
    frame = page.merge(c_items, on="item_id", how="left").merge(
        b_items[["item_id", "output"]].rename(columns={"output": "baseline_output"}),
        on="item_id",
        how="left",
    )
    frame = frame.rename(columns={"output": "candidate_output"})
    frame = frame.rename(columns={_alias(i): f"slice:{key}" for i, key in enumerate(slices)})
    columns = [*PAIR_COLUMNS, *(f"slice:{key}" for key in slices)]
    frame = frame[columns]
    return frame.astype(object).where(frame.notna(), None)


def _truncated(con: duckdb.DuckDBPyConnection, rows: list[int]) -> set[int]:
    """The score rows among ``rows`` whose reason was cut at the judge's token limit: the
    generate_reason step's reply of that pair (its own execution, not a repeat's) was flagged
    ``truncated`` in ``judge_executions``."""
    from evalkit.store import schema_version

    if not rows or schema_version(con) < _TRUNCATED_SINCE:
        return set()
    found = con.execute(
        "SELECT DISTINCT s.rowid FROM scores s JOIN judge_executions j"
        " ON j.experiment_id = s.experiment_id AND j.run_id = s.run_id"
        " AND j.item_id = s.item_id AND j.scorer_id = s.scorer_id"
        " WHERE s.rowid IN (SELECT unnest(?::BIGINT[])) AND j.step = 'generate_reason'"
        " AND coalesce(j.repeat_index, 0) = 0 AND j.truncated",
        [rows],
    ).fetchall()
    return {int(row[0]) for row in found}


def _alias(index: int) -> str:
    return f"slice_{index}"
