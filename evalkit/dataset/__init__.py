"""Datasets: Parquet, CSV/TSV, JSON Lines, JSON, DuckDB queries, Hugging Face datasets,
DataFrames, Arrow tables and lists of dicts as items.

A new kind of input is a [`Source`][evalkit.dataset.Source] (three methods yielding `ColumnBatch`
es); [`open_source`][evalkit.dataset.open_source] picks the source of a path by ``format`` or
suffix; [`Dataset`][evalkit.Dataset] turns any source into [`Item`][evalkit.Item] s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.dataset._columns import ColumnMap
    from evalkit.dataset._csv import CsvSource
    from evalkit.dataset._dataset import (
        ArrowTabular,
        DataFrameLike,
        Dataset,
        DatasetLike,
        ItemBatches,
        load_dataset,
    )
    from evalkit.dataset._duckdb_read import DuckDBSource
    from evalkit.dataset._hf import HFSource
    from evalkit.dataset._item import Item
    from evalkit.dataset._json_source import JsonSource
    from evalkit.dataset._open import open_source
    from evalkit.dataset._query import QuerySource
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
        "evalkit.dataset._csv": ("CsvSource",),
        "evalkit.dataset._duckdb_read": ("DuckDBSource",),
        "evalkit.dataset._hf": ("HFSource",),
        "evalkit.dataset._json_source": ("JsonSource",),
        "evalkit.dataset._open": ("open_source",),
        "evalkit.dataset._query": ("QuerySource",),
        "evalkit.dataset._dataset": (
            "ArrowTabular",
            "DataFrameLike",
            "Dataset",
            "DatasetLike",
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
        "evalkit.dataset._columns": ("ColumnMap",),
    },
)

__all__ = [
    "ArrowTabular",
    "ColumnBatch",
    "ColumnMap",
    "CsvSource",
    "DataFrameLike",
    "Dataset",
    "DatasetLike",
    "DuckDBSource",
    "Duplicate",
    "HFSource",
    "Item",
    "ItemBatches",
    "JsonSource",
    "ParquetSource",
    "QuerySource",
    "Source",
    "arrow_to_python",
    "load_dataset",
    "open_source",
]
