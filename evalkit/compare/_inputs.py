"""Per-item scores of one experiment, from a DataFrame, an Arrow table or a mapping."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from evalkit._arrow_arrays import arrow_scalar, numpy_values
from evalkit.errors import DatasetError

if TYPE_CHECKING:  # pandas only ever comes with a DataFrame the caller passes (is_frame)
    import pandas as pd

ScoreTable: TypeAlias = "pd.DataFrame | pa.Table | Mapping[str, Mapping[str, float | None]]"
"""One experiment's per-item scores, in one of three shapes:

- a pandas DataFrame or an Arrow table with columns ``item_id``, ``scorer_id``, ``score`` and
  optionally ``status`` (``"success"`` or ``"failed"``), one row per item and scorer: what
  ``ExperimentResult.to_pandas()`` gives, or the store's ``scores`` rows together with its
  ``scorer_errors`` rows (status ``"failed"``, score null);
- a mapping ``{scorer_id: {item_id: score}}`` where a None score marks a failed run.

Without a ``status`` column a row is a success when its score is a finite number and a failure
when the score is null. A failed row's score (a recovered score) is never used.
"""

_REQUIRED = ("item_id", "scorer_id", "score")
_STATUSES = frozenset({"success", "failed"})


def is_frame(data: Any) -> TypeGuard[pd.DataFrame]:
    """Whether ``data`` is a pandas DataFrame, without importing pandas (0.16 s of a run's
    start, issue 31): a DataFrame exists only once its caller imported pandas."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(data, pandas.DataFrame)


@dataclass(frozen=True, slots=True)
class ScorerScores:
    """One scorer's runs in one experiment, sorted by item id.

    Attributes:
        item_ids: The item ids, unique and sorted (an object array of str).
        scores: The scores, NaN where the run failed.
        ok: True where the run succeeded with a finite score.
    """

    item_ids: npt.NDArray[np.object_]
    scores: npt.NDArray[np.float64]
    ok: npt.NDArray[np.bool_]


def scores_by_scorer(data: ScoreTable, *, label: str) -> dict[str, ScorerScores]:
    """Split one experiment's per-item scores by scorer id.

    Args:
        data: The scores, in one of the shapes of `ScoreTable`.
        label: Names the experiment in errors (``"baseline"``, ``"candidate"``).

    Raises:
        DatasetError: A missing column, a null id, a duplicate item for a scorer, an unknown
            status, or a successful row without a finite score.
    """
    if is_frame(data) or isinstance(data, pa.Table | pa.RecordBatch):
        # Sorted by scorer and item id in Arrow (byte order of UTF-8 is code-point order,
        # as for Python strings), several times faster than numpy's lexsort of objects.
        items, scorers, scores, ok = _from_table(_score_columns(data, label=label), label=label)
    elif not isinstance(data, Mapping):
        raise DatasetError(
            label,
            f"expected a DataFrame, an Arrow table or a {{scorer_id: {{item_id: score}}}} "
            f"mapping, got {type(data).__name__}",
        )
    else:
        items, scorers, scores, ok = _from_mapping(data, label=label)
        order = np.lexsort((items, scorers))
        items, scorers, scores, ok = items[order], scorers[order], scores[order], ok[order]
    result: dict[str, ScorerScores] = {}
    boundaries = np.flatnonzero(scorers[1:] != scorers[:-1]) + 1
    for chunk in np.split(np.arange(items.size), boundaries):
        if chunk.size == 0:
            continue
        scorer_id = str(scorers[chunk[0]])
        chunk_items = items[chunk]
        repeated = np.flatnonzero(chunk_items[1:] == chunk_items[:-1])
        if repeated.size:
            raise DatasetError(
                label,
                f"item {chunk_items[repeated[0]]!r} appears more than once for scorer "
                f"{scorer_id!r}",
                column="item_id",
            )
        result[scorer_id] = ScorerScores(chunk_items, scores[chunk], ok[chunk])
    return result


_Columns: TypeAlias = tuple[
    npt.NDArray[np.object_],
    npt.NDArray[np.object_],
    npt.NDArray[np.float64],
    npt.NDArray[np.bool_],
]


def _score_columns(data: pd.DataFrame | pa.Table | pa.RecordBatch, *, label: str) -> pa.Table:
    """Only the columns a comparison reads, as an Arrow table.

    A frame from ``ExperimentResult.to_pandas()`` also holds inputs, outputs and step results
    of mixed types that Arrow cannot convert; they are never needed here, so never converted.
    """
    names = [str(name) for name in data.columns] if is_frame(data) else list(data.column_names)
    for name in _REQUIRED:
        if name not in names:
            raise DatasetError(label, "required column is missing", column=name)
    wanted = [*_REQUIRED, "status"] if "status" in names else list(_REQUIRED)
    for name in wanted:
        if names.count(name) > 1:
            raise DatasetError(label, "the column appears more than once", column=name)
    try:
        if is_frame(data):
            return pa.Table.from_pandas(data[wanted], preserve_index=False)
        table = cast("pa.Table | pa.RecordBatch", data).select(wanted)  # not a frame (above)
        return table if isinstance(table, pa.Table) else pa.Table.from_batches([table])
    except pa.ArrowException as exc:
        raise DatasetError(label, f"columns {wanted} cannot be read: {exc}") from exc


def _from_table(table: pa.Table, *, label: str) -> _Columns:
    """The table's columns checked, then sorted by scorer id and item id."""
    ids = {name: _strings(table[name], label=label, column_name=name) for name in _REQUIRED[:2]}
    try:
        score_column = table["score"].cast(pa.float64())
    except pa.ArrowException as exc:
        raise DatasetError(label, f"scores must be numbers: {exc}", column="score") from exc
    scores = numpy_values(score_column, pa.float64())
    finite = np.isfinite(scores)
    if "status" in table.column_names:
        status = table["status"]
        unknown = {value for value in pc.unique(status).to_pylist() if value not in _STATUSES}
        if unknown:
            raise DatasetError(
                label,
                f"status must be 'success' or 'failed', got {sorted(map(repr, unknown))[0]}",
                column="status",
            )
        ok = numpy_values(pc.equal(status, arrow_scalar("success", status.type)), pa.bool_())
        broken = np.flatnonzero(ok & ~finite)
        if broken.size:
            row = int(broken[0])
            raise DatasetError(
                label,
                f"item {ids['item_id'][row].as_py()!r} of scorer "
                f"{ids['scorer_id'][row].as_py()!r} succeeded without a finite score "
                f"({scores[row]!r})",
                column="score",
            )
    else:
        ok = finite
    keys = pa.table({"s": ids["scorer_id"], "i": ids["item_id"]})
    order = pc.sort_indices(keys, sort_keys=[("s", "ascending"), ("i", "ascending")])
    numpy_order = numpy_values(order, pa.uint64())
    return (
        _objects(ids["item_id"].take(order)),
        _objects(ids["scorer_id"].take(order)),
        scores[numpy_order],
        ok[numpy_order],
    )


def _objects(column: pa.ChunkedArray) -> npt.NDArray[np.object_]:
    return np.array(column.to_pylist(), dtype=np.object_)


def _strings(column: pa.ChunkedArray, *, label: str, column_name: str) -> pa.ChunkedArray:
    if column.null_count:
        raise DatasetError(label, "ids must not be null", column=column_name)
    try:
        return column.cast(pa.string())
    except pa.ArrowException as exc:
        raise DatasetError(
            label, f"ids must be text or numbers: {exc}", column=column_name
        ) from exc


def _from_mapping(data: Mapping[str, Mapping[str, float | None]], *, label: str) -> _Columns:
    items: list[str] = []
    scorers: list[str] = []
    scores: list[float] = []
    ok: list[bool] = []
    for scorer_id, by_item in data.items():
        if not isinstance(by_item, Mapping):
            raise DatasetError(
                label,
                f"scorer {scorer_id!r} must map item ids to scores, got {type(by_item).__name__}",
            )
        for item_id, score in by_item.items():
            if score is None:
                value, succeeded = math.nan, False
            elif isinstance(score, bool) or not isinstance(score, int | float):
                raise DatasetError(
                    label,
                    f"item {item_id!r} of scorer {scorer_id!r} has score {score!r}, "
                    "not a number or None",
                )
            else:
                value, succeeded = float(score), math.isfinite(score)
            items.append(str(item_id))
            scorers.append(str(scorer_id))
            scores.append(value)
            ok.append(succeeded)
    return (
        np.asarray(items, dtype=np.object_),
        np.asarray(scorers, dtype=np.object_),
        np.asarray(scores, dtype=np.float64),
        np.asarray(ok, dtype=np.bool_),
    )
