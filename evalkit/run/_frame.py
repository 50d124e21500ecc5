"""A run's per-item results as columns: one row per item and scorer, for pandas and Arrow."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from evalkit._json import to_jsonable
from evalkit.run._outcome import ItemResult

if TYPE_CHECKING:
    import pyarrow as pa

COLUMNS = (
    "item_id", "item_index", "run_id", "scorer_id", "status", "score", "reason", "error",
    "failed_step", "completed_steps", "duration_ms", "input", "ground_truth", "output",
    "source", "item_status", "target_error",
)  # fmt: skip

#: Columns holding whatever the dataset or the target gave: text, or any nested value.
VALUE_COLUMNS = ("input", "ground_truth", "output")


def columns(items: Iterable[ItemResult]) -> dict[str, list[Any]]:
    """Every column of `COLUMNS` as a list, one entry per item and scorer.

    An item whose target failed has one row with empty scorer columns, so no item is
    silently missing.
    """
    data: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for result in items:
        item = result.item
        shared = {
            "item_id": item.id,
            "item_index": item.index,
            "run_id": result.run_id,
            "input": item.input,
            "ground_truth": item.ground_truth,
            "output": result.output,
            "source": result.source,
            "item_status": result.status,
            "target_error": result.error.message if result.error else None,
        }
        rows: list[dict[str, Any]] = [
            {
                "scorer_id": o.scorer_id,
                "status": o.status,
                "score": o.score,
                "reason": o.reason,
                "error": o.error.message if o.error else None,
                "failed_step": o.failed_step,
                "completed_steps": list(o.completed_steps),
                "duration_ms": o.duration_ms,
            }
            for o in result.outcomes
        ] or [{"status": "failed"}]
        for row in rows:
            for name in COLUMNS:
                data[name].append(row[name] if name in row else shared.get(name))
    return data


def _value_array(values: list[Any]) -> pa.Array:
    """Text as ``string`` when every value is text; otherwise every value as JSON text, typed
    ``arrow.json`` (a column of dicts, lists, numbers and text has no other one Arrow type)."""
    import pyarrow as pa

    if all(v is None or isinstance(v, str) for v in values):
        return pa.array(values, type=pa.string())
    texts = [None if v is None else json.dumps(to_jsonable(v), ensure_ascii=False) for v in values]
    return pa.array(texts, type=pa.json_())


def to_arrow(items: Iterable[ItemResult]) -> pa.Table:
    """The rows of `columns` as an Arrow table (see ``ExperimentResult.to_arrow``)."""
    import pyarrow as pa

    data = columns(items)
    text = pa.string()
    types: dict[str, pa.DataType] = {
        "item_index": pa.int64(),
        "score": pa.float64(),
        "duration_ms": pa.float64(),
        "completed_steps": pa.list_(text),
    }
    arrays = [
        _value_array(data[name])
        if name in VALUE_COLUMNS
        else pa.array(data[name], type=types.get(name, text))
        for name in COLUMNS
    ]
    return pa.Table.from_arrays(arrays, names=list(COLUMNS))
