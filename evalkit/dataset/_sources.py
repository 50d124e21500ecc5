"""Where rows come from: Parquet files or folders, Arrow tables, DataFrames, lists of dicts.

Every source yields *column batches*: ``(origin, {column: python values}, row count)``, read
a bounded number of rows at a time so that a file larger than memory streams through.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evalkit._arrow_python import arrow_to_python
from evalkit.errors import DatasetError

ColumnBatch = tuple[str, dict[str, list[Any]], int]
"""``(origin, {column: python values}, row count)``: what a [`Source`][evalkit.dataset.Source]
yields."""

Duplicate = tuple[str, Any]
"""``(origin, value)`` of the first null or repeated value of an id column."""


class Source(Protocol):
    """Rows of one kind of dataset object: the extension point for new kinds of input.

    A [`Dataset`][evalkit.Dataset] reads every source through these three methods
    (a sharded run's row groups are one); ``name`` is how errors name the source.
    """

    name: str
    num_rows: int

    def column_names(self) -> list[str]:
        """The columns of the source (for a folder: checked to agree file by file)."""
        ...

    def batches(self, columns: Sequence[str], batch_size: int) -> Iterator[ColumnBatch]:
        """Yield the given columns as Python lists, ``batch_size`` rows at a time."""
        ...

    def duplicate_of(self, column: str) -> Duplicate | None:
        """Where and which value of ``column`` is null (value None) or repeated, else None."""
        ...


_NULL = object()


def _first_duplicate(array: pa.ChunkedArray | pa.Array) -> Any:
    """The first repeated value, None for a null, or ``_NULL`` when every value is unique."""
    if array.null_count:
        return None
    if pa.types.is_floating(array.type) and pc.any(pc.is_nan(array)).as_py():
        return math.nan  # no id either, and NaN equals nothing, not even itself
    try:
        counts = pc.value_counts(array)
    except pa.ArrowException as exc:
        raise DatasetError(
            "the dataset", f"ids must be text or numbers, not {array.type} ({exc})", column="id"
        ) from exc
    if len(counts) == len(array):  # every value once (comparing to a Python 1 imports pandas)
        return _NULL
    repeated = counts.filter(pc.greater(counts.field("counts"), 1))
    return repeated.field("values")[0].as_py()


def first_duplicate(array: pa.ChunkedArray | pa.Array) -> tuple[bool, Any]:
    """``(True, value)`` for the first null (value None) or repeated value, else
    ``(False, None)``."""
    found = _first_duplicate(array)
    return (False, None) if found is _NULL else (True, found)


_GLOB = frozenset("*?[")


class ParquetSource:
    """A Parquet file, every ``*.parquet`` file under a folder, or the files a glob matches
    (``data/part-*.parquet``), in sorted path order.

    Only the footers are read up front (columns and row counts); each file is opened while its
    rows are read, so a folder of many files never holds them all open.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        root = Path(path)
        self.name = str(path)
        if _GLOB & set(str(path)) and not root.exists():
            anchor = Path(root.anchor) if root.is_absolute() else Path()
            pattern = str(root.relative_to(anchor)) if root.is_absolute() else str(root)
            self.files = sorted(p for p in anchor.glob(pattern) if p.is_file())
            if not self.files:
                raise DatasetError(self.name, "the pattern matches no files")
        elif root.is_dir():
            self.files = sorted(p for p in root.rglob("*.parquet") if p.is_file())
            if not self.files:
                raise DatasetError(self.name, "folder holds no .parquet files")
        elif root.is_file():
            self.files = [root]
        else:
            raise DatasetError(self.name, "no such file or folder")
        footers = [self._footer(f) for f in self.files]
        self._names = [names for names, _ in footers]
        self.num_rows = sum(rows for _, rows in footers)

    @staticmethod
    def _footer(file: Path) -> tuple[list[str], int]:
        try:
            metadata = pq.read_metadata(file)
            return list(metadata.schema.to_arrow_schema().names), metadata.num_rows
        except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
            raise DatasetError(str(file), f"cannot read as Parquet: {exc}") from exc

    def column_names(self) -> list[str]:
        first = self._names[0]
        for file, names in zip(self.files[1:], self._names[1:], strict=True):
            if set(names) != set(first):
                missing = sorted(set(first) - set(names)) or sorted(set(names) - set(first))
                raise DatasetError(
                    str(file),
                    f"its columns differ from {str(self.files[0])!r} "
                    f"({', '.join(names)} vs {', '.join(first)})",
                    column=missing[0],
                )
        return list(first)

    def batches(self, columns: Sequence[str], batch_size: int) -> Iterator[ColumnBatch]:
        for file in self.files:
            origin = str(file)
            try:
                reader = pq.ParquetFile(file)
            except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
                raise DatasetError(origin, f"cannot read as Parquet: {exc}") from exc
            with reader:
                batches = reader.iter_batches(batch_size=batch_size, columns=list(columns))
                done = 0
                while True:
                    try:
                        batch = next(batches)
                    except StopIteration:
                        break
                    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
                        raise DatasetError(origin, f"cannot read rows: {exc}") from exc
                    data = {
                        name: arrow_to_python(batch.column(name), origin, name, first_row=done + 1)
                        for name in columns
                    }
                    yield origin, data, batch.num_rows
                    done += batch.num_rows

    def duplicate_of(self, column: str) -> Duplicate | None:
        # Only the id column is read, in Arrow form: cheap even for a very large dataset.
        chunks: list[pa.ChunkedArray] = []
        for file in self.files:
            try:
                with pq.ParquetFile(file) as reader:  # pq.read_table's dataset layer imports pandas
                    chunks.append(reader.read(columns=[column]).column(column))
            except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
                raise DatasetError(str(file), f"cannot read: {exc}", column=column) from exc
        arrays = [c for ch in chunks for c in ch.chunks]
        found = _first_duplicate(pa.chunked_array(arrays)) if arrays else _NULL
        if found is _NULL:
            return None
        holders = [
            str(file)
            for file, values in zip(self.files, chunks, strict=True)
            if _holds(values, found)
        ]
        return ", ".join(holders) or self.name, found


def _holds(values: pa.ChunkedArray, found: Any) -> bool:
    """Whether ``values`` holds ``found`` (None: a null; NaN: a NaN)."""
    if found is None:
        return bool(pc.any(pc.is_null(values)).as_py())
    if isinstance(found, float) and math.isnan(found):
        return pa.types.is_floating(values.type) and bool(pc.any(pc.is_nan(values)).as_py())
    return bool(pc.any(pc.equal(values, found)).as_py())


class ArrowSource:
    """A ``pyarrow.Table`` (or record batch) held in memory."""

    def __init__(self, table: pa.Table, name: str = "<Arrow table>") -> None:
        self.name = name
        self.table = table
        self.num_rows = table.num_rows

    def column_names(self) -> list[str]:
        names: list[str] = list(self.table.column_names)
        return names

    def batches(self, columns: Sequence[str], batch_size: int) -> Iterator[ColumnBatch]:
        done = 0
        for batch in self.table.select(list(columns)).to_batches(max_chunksize=batch_size):
            data = {
                name: arrow_to_python(batch.column(name), self.name, name, first_row=done + 1)
                for name in columns
            }
            yield self.name, data, batch.num_rows
            done += batch.num_rows

    def duplicate_of(self, column: str) -> Duplicate | None:
        found = _first_duplicate(self.table.column(column))
        return None if found is _NULL else (self.name, found)


class ColumnsSource:
    """Python columns already in memory: a pandas DataFrame or a list of dicts."""

    def __init__(self, columns: Mapping[str, list[Any]], num_rows: int, name: str) -> None:
        self.name = name
        self.columns = columns
        self.num_rows = num_rows

    @classmethod
    def from_records(cls, records: Sequence[Mapping[str, Any]]) -> ColumnsSource:
        """Columns gathered from a list of dicts (a key missing in a row reads as None)."""
        names: dict[str, None] = {}
        for i, row in enumerate(records):
            if not isinstance(row, Mapping):
                raise DatasetError(
                    "<list of dicts>", f"row {i} is a {type(row).__name__}, not a dict"
                )
            names.update(dict.fromkeys(row))
        columns = {name: [row.get(name) for row in records] for name in names}
        return cls(columns, len(records), "<list of dicts>")

    @classmethod
    def from_pandas(cls, frame: Any) -> ColumnsSource:
        """Columns of a pandas DataFrame; missing cells (NaN, NA, NaT) become None."""
        names = [str(name) for name in frame.columns]
        repeated = sorted(name for name, count in Counter(names).items() if count > 1)
        if repeated:
            raise DatasetError(
                "<DataFrame>",
                f"the column name {repeated[0]!r} appears more than once",
                column=repeated[0],
            )
        columns: dict[str, list[Any]] = {}
        for name in frame.columns:
            series = frame[name]
            missing = series.isna().tolist()
            columns[str(name)] = [
                None if gone else _plain(value)
                for value, gone in zip(series.tolist(), missing, strict=True)
            ]
        return cls(columns, len(frame), "<DataFrame>")

    def column_names(self) -> list[str]:
        return list(self.columns)

    def batches(self, columns: Sequence[str], batch_size: int) -> Iterator[ColumnBatch]:
        for start in range(0, self.num_rows, batch_size):
            stop = min(start + batch_size, self.num_rows)
            data = {name: self.columns[name][start:stop] for name in columns}
            yield self.name, data, stop - start

    def duplicate_of(self, column: str) -> Duplicate | None:
        seen: set[str] = set()
        for value in self.columns[column]:
            if value is None:
                return self.name, None
            key = str(value)
            if key in seen:
                return self.name, value
            seen.add(key)
        return None


def _plain(value: Any) -> Any:
    # numpy arrays and scalars inside object columns become plain lists and numbers.
    if type(value) in (str, int, float, bool, dict, list) or value is None:
        return value
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    return value
