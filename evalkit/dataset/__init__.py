"""Datasets: Parquet files or folders, DataFrames, Arrow tables and lists of dicts as items.

A new kind of input is a :class:`Source` (three methods yielding :data:`ColumnBatch` es);
:class:`Dataset` turns any source into :class:`Item` s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.dataset._columns import ALIASES, ColumnMap
    from evalkit.dataset._dataset import DEFAULT_BATCH_SIZE, Dataset, ItemBatches, load_dataset
    from evalkit.dataset._item import Item
    from evalkit.dataset._sources import (
        ColumnBatch,
        Duplicate,
        ParquetSource,
        Source,
        arrow_to_python,
    )

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.dataset._columns": (
            "ALIASES",
            "ColumnMap",
        ),
        "evalkit.dataset._dataset": (
            "DEFAULT_BATCH_SIZE",
            "Dataset",
            "ItemBatches",
            "load_dataset",
        ),
        "evalkit.dataset._item": ("Item",),
        "evalkit.dataset._sources": (
            "ColumnBatch",
            "Duplicate",
            "ParquetSource",
            "Source",
            "arrow_to_python",
        ),
    },
)

__all__ = [
    "ALIASES",
    "DEFAULT_BATCH_SIZE",
    "ColumnBatch",
    "ColumnMap",
    "Dataset",
    "Duplicate",
    "Item",
    "ItemBatches",
    "ParquetSource",
    "Source",
    "arrow_to_python",
    "load_dataset",
]
