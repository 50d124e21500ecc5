"""Datasets: Parquet, CSV/TSV, JSON Lines, JSON, DuckDB queries, Hugging Face datasets,
DataFrames, Arrow tables and lists of dicts as items.

A new kind of input is a [`Source`][evalkit.dataset.Source] (three methods yielding `ColumnBatch`
es); [`open_source`][evalkit.dataset.open_source] picks the source of a path by ``format`` or
suffix; [`Dataset`][evalkit.Dataset] turns any source into [`Item`][evalkit.Item] s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.dataset._columns import ColumnMap as ColumnMap
    from evalkit.dataset._csv import CsvSource as CsvSource
    from evalkit.dataset._dataset import ArrowTabular as ArrowTabular
    from evalkit.dataset._dataset import DataFrameLike as DataFrameLike
    from evalkit.dataset._dataset import Dataset as Dataset
    from evalkit.dataset._dataset import DatasetLike as DatasetLike
    from evalkit.dataset._dataset import ItemBatches as ItemBatches
    from evalkit.dataset._dataset import load_dataset as load_dataset
    from evalkit.dataset._duckdb_read import DuckDBSource as DuckDBSource
    from evalkit.dataset._hf import HFSource as HFSource
    from evalkit.dataset._item import Item as Item
    from evalkit.dataset._json_source import JsonSource as JsonSource
    from evalkit.dataset._open import open_source as open_source
    from evalkit.dataset._query import QuerySource as QuerySource
    from evalkit.dataset._sources import ColumnBatch as ColumnBatch
    from evalkit.dataset._sources import Duplicate as Duplicate
    from evalkit.dataset._sources import ParquetSource as ParquetSource
    from evalkit.dataset._sources import Source as Source

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())
