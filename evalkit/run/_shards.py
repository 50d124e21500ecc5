"""Shards of a Parquet dataset: one (file, row group) each, planned on the driver.

A shard is the unit a worker evaluates and the driver records: its rows are read straight
from the row group, with item indexes continuing from the rows of the shards before it, so a
sharded run numbers items (and builds run ids) exactly like a single-process run. Why row
groups: docs/pages/design/sharding-by-row-group.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from evalkit._arrow_python import arrow_to_python
from evalkit.dataset import ColumnBatch, Duplicate, ParquetSource
from evalkit.errors import ConfigError, DatasetError


@dataclass(frozen=True, slots=True)
class Shard:
    """One row group of one Parquet file.

    Attributes:
        index: The shard's position in the plan (0-based); the key of ``shards_done``.
        file: The Parquet file.
        row_group: The row group inside the file.
        offset: Rows of the dataset before this shard (its first item's index).
        rows: Rows in the shard (after any ``limit``).
    """

    index: int
    file: str
    row_group: int
    offset: int
    rows: int


def plan_shards(path: str, *, limit: int | None = None) -> tuple[Shard, ...]:
    """Plan the shards of a Parquet file or folder from the footers only.

    Raises:
        DatasetError: A file cannot be read as Parquet.
    """
    files = ParquetSource(path).files
    shards: list[Shard] = []
    offset = 0
    remaining = limit
    for file in files:
        try:
            metadata = pq.read_metadata(file)
        except (OSError, pa.ArrowException) as exc:
            raise DatasetError(str(file), f"cannot read as Parquet: {exc}") from exc
        for group in range(metadata.num_row_groups):
            rows = metadata.row_group(group).num_rows
            if remaining is not None:
                rows = min(rows, remaining)
                remaining -= rows
            if rows:
                shards.append(Shard(len(shards), str(file), group, offset, rows))
                offset += rows
            if remaining == 0:
                return tuple(shards)
    return tuple(shards)


_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard_spec(spec: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """``"i/n"`` (or ``(i, n)``) checked: ``0 <= i < n``.

    Raises:
        ConfigError: The spec is malformed or out of range.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        match = _SPEC.match(spec)
        if match is None:
            raise ConfigError(f"shard must look like 'i/n' (e.g. '0/4'), got {spec!r}")
        index, count = int(match.group(1)), int(match.group(2))
    else:
        index, count = spec
    if count < 1 or not 0 <= index < count:
        raise ConfigError(f"shard {index}/{count}: need 0 <= i < n")
    return index, count


def select_shards(shards: Sequence[Shard], spec: tuple[int, int] | None) -> tuple[Shard, ...]:
    """The shards of slice ``i`` of ``n`` (round robin), or all of them.

    Raises:
        ConfigError: ``n`` is more than the shards (row groups): some slices would be empty,
            and an empty slice would pass its gates with nothing evaluated.
    """
    if spec is None:
        return tuple(shards)
    index, count = spec
    if count > len(shards):
        raise ConfigError(
            f"shard {index}/{count}: the dataset has {len(shards)} row group(s), the most"
            f" slices it can be cut into; use n of at most {len(shards)} (or write the"
            " Parquet file with smaller row groups)"
        )
    return tuple(s for s in shards if s.index % count == index)


class RowGroupSource:
    """The rows of one shard, as a dataset source (see [`Dataset`][evalkit.Dataset])."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        self.name = shard.file
        self.num_rows = shard.rows

    def column_names(self) -> list[str]:
        names: list[str] = list(pq.read_schema(self.shard.file).names)
        return names

    def batches(self, columns: Sequence[str], batch_size: int) -> Iterator[ColumnBatch]:
        shard = self.shard
        try:
            with pq.ParquetFile(shard.file) as reader:
                for batch in reader.iter_batches(
                    batch_size=batch_size, row_groups=[shard.row_group], columns=list(columns)
                ):
                    data = {
                        name: arrow_to_python(batch.column(name), shard.file, name)
                        for name in columns
                    }
                    yield shard.file, data, batch.num_rows
        except (OSError, pa.ArrowException) as exc:
            raise DatasetError(
                shard.file, f"cannot read row group {shard.row_group}: {exc}"
            ) from exc

    def duplicate_of(self, column: str) -> Duplicate | None:
        return None  # checked on the driver over the whole dataset


def shard_dataset(path: str | Path) -> bool:
    """Whether ``path`` names Parquet data that can be sharded (a file or a folder)."""
    return isinstance(path, (str, Path)) and Path(path).exists()
