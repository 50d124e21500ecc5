"""Which source reads a dataset: by an explicit ``format``, else by the path's suffix.

Parquet (a file, a folder of ``*.parquet`` files, a glob), CSV, TSV, JSON Lines, JSON (an
array of records), a folder saved by Hugging Face ``datasets``, a DuckDB query (optionally
against a ``.duckdb`` file), and the in-memory inputs (a DataFrame, an Arrow table, a list of
dicts, a ``datasets.Dataset``, any object implementing [`Source`][evalkit.dataset.Source]).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalkit.dataset._csv import CsvSource
from evalkit.dataset._hf import HFSource, is_hf_dataset, is_saved_hf_folder
from evalkit.dataset._json_source import JsonSource
from evalkit.dataset._query import QuerySource
from evalkit.dataset._sources import ArrowSource, ColumnsSource, ParquetSource, Source
from evalkit.errors import ConfigError, DatasetError

#: The values of ``format=`` (and of the experiment file's ``format``).
FORMATS = ("parquet", "csv", "tsv", "jsonl", "json", "hf", "duckdb")

_SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".duckdb": "duckdb",
    ".db": "duckdb",
}


def format_of(path: str | os.PathLike[str]) -> str:
    """The format a path's suffix names; a folder is Parquet unless ``save_to_disk`` wrote it."""
    root = Path(path)
    if is_saved_hf_folder(root):
        return "hf"
    if root.is_dir():
        return "parquet"
    return _SUFFIXES.get(root.suffix.lower(), "parquet")


def open_source(
    data: Any = None,
    *,
    format: str | None = None,
    query: str | None = None,
    folder: str | os.PathLike[str] | None = None,
) -> Source:
    """The [`Source`][evalkit.dataset.Source] reading ``data``.

    Args:
        data: A path (file, folder or glob), an in-memory dataset, or a source; with
            ``query``, an optional ``.duckdb`` file the query reads (None for none).
        format: One of `FORMATS`; None picks it by the path's suffix (Parquet when it
            has none).
        query: A DuckDB ``SELECT`` giving the rows.
        folder: Where a query's relative file names are looked for; None for the working
            folder.

    Raises:
        ConfigError: An unknown format, or data of a kind no source reads.
        DatasetError: The file cannot be read as that format.
    """
    if format is not None and format not in FORMATS:
        raise ConfigError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if query is not None:
        if data is not None and not isinstance(data, (str, os.PathLike)):
            raise ConfigError("with query=, data is the .duckdb file it reads (or None)")
        return QuerySource(query, database=data, folder=folder)
    if isinstance(data, (str, os.PathLike)):
        return _file_source(data, format or format_of(data))
    if format is not None:
        raise ConfigError("format= applies to a path; this data is already in memory")
    return _object_source(data)


def _file_source(path: str | os.PathLike[str], kind: str) -> Source:
    if kind == "parquet":
        return ParquetSource(path)
    if kind == "csv":
        return CsvSource(path)
    if kind == "tsv":
        return CsvSource(path, delimiter="\t")
    if kind == "jsonl":
        return JsonSource(path, records="lines")
    if kind == "json":
        return JsonSource(path, records="array")
    if kind == "hf":
        return HFSource(path)
    raise DatasetError(
        str(path), "a DuckDB database file needs a query naming what to read (query = ...)"
    )


def _object_source(data: Any) -> Source:
    if isinstance(data, pa.RecordBatch):
        return ArrowSource(pa.Table.from_batches([data]))
    if isinstance(data, pa.Table):
        return ArrowSource(data)
    if is_hf_dataset(data):
        return HFSource(data)
    if type(data).__module__.startswith("pandas") and hasattr(data, "columns"):
        return ColumnsSource.from_pandas(data)
    if all(hasattr(data, a) for a in ("batches", "column_names", "duplicate_of", "num_rows")):
        source: Source = data
        return source
    if isinstance(data, Sequence) and not isinstance(data, (bytes, bytearray, str)):
        return ColumnsSource.from_records(data)
    raise ConfigError(
        "data must be a path (Parquet, CSV, TSV, JSON Lines, JSON, a saved Hugging Face "
        "dataset), a pandas DataFrame, a pyarrow Table, a datasets.Dataset, a list of dicts "
        f"or a Source, not {type(data).__name__}"
    )
