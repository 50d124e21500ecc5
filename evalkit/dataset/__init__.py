"""Datasets: Parquet files or folders, DataFrames, Arrow tables and lists of dicts as items."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.dataset._columns import ALIASES, ColumnMap
    from evalkit.dataset._dataset import DEFAULT_BATCH_SIZE, Dataset, ItemBatches, load_dataset
    from evalkit.dataset._item import Item

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
    },
)

__all__ = [
    "ALIASES",
    "DEFAULT_BATCH_SIZE",
    "ColumnMap",
    "Dataset",
    "Item",
    "ItemBatches",
    "load_dataset",
]
