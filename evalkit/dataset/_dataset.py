"""The dataset: a source of rows turned into [`Item`][evalkit.Item] batches, with ids and a
fingerprint.

Ids: a row's ``id`` column when the dataset has one (null or repeated ids are an error);
otherwise a 16-hex-digit hash of the row's input, ground truth and request context, so the
same case gets the same id across runs even when rows are reordered or outputs change. Rows
whose content is identical get ``-2``, ``-3``… appended in order of appearance.

Fingerprint: a hash over every row's id and content (all columns) in order, computed while the
rows stream through; it identifies exactly what was evaluated, whatever the format it was read
from (docs/pages/design/fingerprint-hashes-values.md).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

import numpy as np

from evalkit._ceilings import DATASET_BATCH, check_allowed
from evalkit.dataset._columns import (
    ColumnMap,
    check_column_count,
    check_overrides,
    resolve_columns,
)
from evalkit.dataset._item import Item
from evalkit.dataset._open import open_source
from evalkit.dataset._seen import SeenIds
from evalkit.dataset._sources import Source
from evalkit.dataset._values import canonical, content_digest, decode_json_cells
from evalkit.errors import DatasetError

#: Rows read per batch: large enough to amortise Arrow calls, small enough to bound memory.
DEFAULT_BATCH_SIZE = 1024


class Dataset:
    """A dataset of [`Item`][evalkit.Item] rows, read lazily in batches.

    Build one with [`load_dataset`][evalkit.load_dataset]. Iterating yields items;
    [`batches`][evalkit.Dataset.batches] yields lists of items and computes the fingerprint on the
    way.

    Attributes:
        source: The file, folder or kind of object the rows come from.
        columns: Which column plays which role.
        num_rows: The number of rows.
    """

    def __init__(self, source: Source, columns: ColumnMap, *, batch_size: int) -> None:
        self._source = source
        self.source = source.name
        self.columns = columns
        self.num_rows = source.num_rows
        self.batch_size = batch_size

    @property
    def has_output(self) -> bool:
        """Whether the dataset has an ``output`` column."""
        return self.columns.output is not None

    def __len__(self) -> int:
        return self.num_rows

    def __repr__(self) -> str:
        return f"Dataset({self.source!r}, rows={self.num_rows})"

    def __iter__(self) -> Iterator[Item]:
        for batch in self.batches():
            yield from batch

    def batches(self, *, limit: int | None = None, first_index: int = 0) -> ItemBatches:
        """Iterate over the rows as lists of at most ``batch_size`` items.

        Args:
            limit: Stop after this many rows.
            first_index: The ``Item.index`` of the first row (a shard's rows continue from
                the shards before it).
        """
        return ItemBatches(self, limit=limit, first_index=first_index)

    def fingerprint(self) -> str:
        """The content hash of the whole dataset (reads every row once)."""
        reader = self.batches()
        for _ in reader:
            pass
        assert reader.fingerprint is not None
        return reader.fingerprint

    def _column_batches(self) -> Iterator[tuple[str, dict[str, list[Any]], int]]:
        return self._source.batches(self.columns.all_columns(), self.batch_size)


class ItemBatches:
    """An iterator of item lists over a dataset; ``fingerprint`` is set once it is exhausted."""

    def __init__(self, dataset: Dataset, *, limit: int | None = None, first_index: int = 0) -> None:
        self._columns = dataset.columns
        self._first_index = first_index
        self._batches = dataset._column_batches()
        self._limit = dataset.num_rows if limit is None else min(limit, dataset.num_rows)
        self._hash = hashlib.blake2b(digest_size=16)
        self._seen = SeenIds()
        self._repeats: dict[int, int] = {}
        self.rows_read = 0
        self.fingerprint: str | None = None

    def __iter__(self) -> ItemBatches:
        return self

    def __next__(self) -> list[Item]:
        if self.rows_read >= self._limit:
            self._finish()
            raise StopIteration
        try:
            origin, data, count = next(self._batches)
        except StopIteration:
            self._finish()
            raise
        count = min(count, self._limit - self.rows_read)
        try:
            items = self._items(origin, data, count)
        except RecursionError:
            raise DatasetError(
                origin,
                "a cell is nested too deeply to read (past Python's recursion limit)",
                column=_too_deep(data),
            ) from None
        self.rows_read += count
        return items

    def _finish(self) -> None:
        if self.fingerprint is None:
            self._hash.update(str(self.rows_read).encode())
            self.fingerprint = self._hash.hexdigest()

    def _items(self, origin: str, data: dict[str, list[Any]], count: int) -> list[Item]:
        cols = self._columns
        none = [None] * count

        def column(name: str | None, *, decode: bool = True) -> list[Any]:
            if name is None:
                return none
            values = data[name][:count]
            return decode_json_cells(values) if decode else values

        inputs = column(cols.input)
        truths = column(cols.ground_truth)
        outputs = column(cols.output, decode=False)
        contexts = column(cols.request_context)
        metas = column(cols.metadata)
        if cols.metadata_columns:
            metas = _merged_metadata(
                origin, cols, metas, {n: column(n) for n in cols.metadata_columns}
            )
        extras = {name: column(name) for name in cols.extra}
        ids = data[cols.id][:count] if cols.id is not None else None

        identities = [
            f"{canonical(inputs[i])}\x1e{canonical(truths[i])}\x1e{canonical(contexts[i])}"
            for i in range(count)
        ]
        if ids is None:
            item_ids = self._derived_ids(identities)
        else:
            item_ids = [v if type(v) is str else _id_text(v, origin, cols) for v in ids]
        items: list[Item] = []
        keys: list[str] = []
        start = self._first_index + self.rows_read
        for i in range(count):
            extra = {name: values[i] for name, values in extras.items()} if extras else None
            keys.append(
                f"{item_ids[i]}\x1e{identities[i]}\x1e{canonical(outputs[i])}"
                f"\x1e{canonical(metas[i])}\x1e{canonical(extra)}\x1d"
            )
            items.append(
                Item(
                    item_ids[i],
                    inputs[i],
                    truths[i],
                    outputs[i],
                    contexts[i],
                    metas[i],
                    start + i,
                    extra,
                )
            )
        self._hash.update("".join(keys).encode("utf-8", "surrogatepass"))
        return items

    def _derived_ids(self, identities: list[str]) -> list[str]:
        digests = [content_digest(identity) for identity in identities]
        values = np.frombuffer(b"".join(digests), dtype=">u8").astype(np.uint64)
        item_ids = [d.hex() for d in digests]
        repeated = self._seen.contains(values)
        first = np.zeros(len(values), dtype=bool)
        first[np.unique(values, return_index=True)[1]] = True
        for i in np.flatnonzero(repeated | ~first).tolist():
            # Identical rows: number the repeats so each still has its own stable id.
            key = int(values[i])
            n = self._repeats.get(key, 1) + 1
            self._repeats[key] = n
            item_ids[i] = f"{item_ids[i]}-{n}"
        self._seen.add(values)
        return item_ids


class ArrowTabular(Protocol):
    """Columns by name and a row count: a ``pyarrow.Table`` or ``RecordBatch``, or a Hugging
    Face ``datasets.Dataset`` (read through Arrow)."""

    @property
    def column_names(self) -> Sequence[str]:
        """The columns' names."""
        ...

    @property
    def num_rows(self) -> int:
        """The number of rows."""
        ...


class DataFrameLike(Protocol):
    """A pandas ``DataFrame`` (read column by column)."""

    @property
    def columns(self) -> Any:
        """The columns' labels."""
        ...


#: What a run and [`load_dataset`][evalkit.load_dataset] read as data: a path (a Parquet file,
#: folder or glob, a CSV, TSV, JSON Lines or JSON file, a Hugging Face ``save_to_disk``
#: folder), a [`Dataset`][evalkit.Dataset], a [`Source`][evalkit.dataset.Source], a pyarrow
#: Table or RecordBatch, a ``datasets.Dataset``, a pandas DataFrame or a list of dicts.
DatasetLike: TypeAlias = (
    str
    | os.PathLike[str]
    | Dataset
    | Source
    | ArrowTabular
    | DataFrameLike
    | Sequence[Mapping[str, Any]]
)


def _merged_metadata(
    origin: str, cols: ColumnMap, metas: list[Any], kept: dict[str, list[Any]]
) -> list[Any]:
    """Each row's metadata: the listed columns as a dict, over the ``metadata`` cell's dict."""
    merged: list[Any] = []
    for i, meta in enumerate(metas):
        if meta is not None and not isinstance(meta, Mapping):
            raise DatasetError(
                origin,
                f"a metadata cell is a {type(meta).__name__}, not a dict, so the columns listed "
                "in 'metadata' cannot join it",
                column=cols.metadata,
            )
        row = dict(meta) if meta else {}
        row.update((name, values[i]) for name, values in kept.items())
        merged.append(row)
    return merged


def _too_deep(data: dict[str, list[Any]]) -> str | None:
    """The first column holding a value too deeply nested to serialise."""
    for name, values in data.items():
        try:
            for value in values:
                canonical(value)
        except RecursionError:
            return name
    return None


def _id_text(value: Any, origin: str, cols: ColumnMap) -> str:
    if value is None:
        raise DatasetError(origin, "an id is null; every row needs one", column=cols.id)
    return str(value)


def load_dataset(
    data: DatasetLike | None,
    *,
    columns: Mapping[str, Any] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    format: str | None = None,
    query: str | None = None,
) -> Dataset:
    """Open a dataset.

    Args:
        data: A path: a Parquet file, folder or glob, a CSV, TSV, JSON Lines (``.jsonl``) or
            JSON (``.json``, an array of records) file, a folder written by Hugging Face
            ``save_to_disk``; or a pandas DataFrame, a ``pyarrow.Table``, a
            ``datasets.Dataset``, a list of dicts, any [`Source`][evalkit.dataset.Source], or a
            [`Dataset`][evalkit.Dataset] (returned as is). With ``query``, a ``.duckdb`` file or
            None.
        columns: Map a role to a differently named column, e.g.
            ``{"input": "question", "ground_truth": "answer"}``. Without it, ``input`` is
            required and ``groundTruth``/``ground_truth``, ``output``,
            ``requestContext``/``request_context``, ``metadata`` and ``id`` are optional.
            ``"metadata"`` may map to a list of columns kept as each item's metadata dict.
        batch_size: Rows read at a time, 1 to 1,000,000.
        format: ``parquet``, ``csv``, ``tsv``, ``jsonl``, ``json``, ``hf`` or ``duckdb``;
            None picks it by the path's suffix.
        query: A DuckDB ``SELECT`` giving the rows (``read_parquet('s3://…')``, or the
            tables of the ``.duckdb`` file ``data`` names).

    Returns:
        The dataset, with its columns checked and (for an ``id`` column) its ids checked.

    Raises:
        DatasetError: Unreadable file, missing ``input`` column, null or repeated ids; the
            message names the file and the column.
    """
    if isinstance(data, Dataset):
        return data
    check_allowed("batch_size", batch_size, DATASET_BATCH)
    source = open_source(data, format=format, query=query)
    names = source.column_names()
    check_column_count(source.name, len(names))
    column_map = resolve_columns(names, source.name, check_overrides(columns))
    if column_map.id is not None:
        duplicate = source.duplicate_of(column_map.id)
        if duplicate is not None:
            origin, value = duplicate
            if value is None:
                problem = "an id is null; every row needs one"
            elif isinstance(value, float) and math.isnan(value):
                problem = "an id is NaN (not a number); every row needs one"
            else:
                problem = f"id {value!r} appears more than once; ids must be unique"
            raise DatasetError(origin, problem, column=column_map.id)
    return Dataset(source, column_map, batch_size=batch_size)
