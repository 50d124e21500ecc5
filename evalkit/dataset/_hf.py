"""Hugging Face ``datasets``: a ``datasets.Dataset``, or a folder written by ``save_to_disk``.

Optional (``pip install 'evalkit-runner[hf]'``). A Hugging Face dataset is a memory-mapped
Arrow table, so its rows are read as Arrow batches straight from that table: no copy into pandas or
Python first. A dataset with an indices mapping (after ``shuffle`` or ``select``) is read in
that order through ``datasets``' own Arrow-formatted iteration.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalkit._arrow_python import arrow_to_python
from evalkit.dataset._sources import ColumnBatch, Duplicate, first_duplicate
from evalkit.errors import ConfigError, DatasetError


def is_hf_dataset(data: Any) -> bool:
    """Whether ``data`` is a ``datasets.Dataset`` (without importing ``datasets``)."""
    kind = type(data)
    return kind.__module__.split(".")[0] == "datasets" and kind.__name__ == "Dataset"


def is_saved_hf_folder(path: Path) -> bool:
    """Whether ``path`` is a folder written by ``save_to_disk`` (a dataset or a dict of splits)."""
    return path.is_dir() and (
        (path / "state.json").is_file() or (path / "dataset_dict.json").is_file()
    )


class HFSource:
    """A Hugging Face ``datasets.Dataset``, or the folder ``Dataset.save_to_disk`` wrote."""

    def __init__(self, data: Any) -> None:
        if is_hf_dataset(data):
            self.name = "<Hugging Face dataset>"
            self.dataset = data
        else:
            self.name = str(data)
            self.dataset = _load_from_disk(Path(data))
        self.num_rows = int(self.dataset.num_rows)

    def column_names(self) -> list[str]:
        return list(self.dataset.column_names)

    def _tables(self, columns: Sequence[str], batch_size: int) -> Iterator[pa.Table]:
        picked = self.dataset.select_columns(list(columns))
        if getattr(picked, "_indices", None) is None:
            table: pa.Table = picked.data.table  # the memory-mapped table itself
            yield from (pa.Table.from_batches([b]) for b in table.to_batches(batch_size))
        else:
            yield from picked.with_format("arrow").iter(batch_size=batch_size)

    def batches(self, columns: Sequence[str], batch_size: int) -> Iterator[ColumnBatch]:
        try:
            for table in self._tables(columns, batch_size):
                data = {
                    name: arrow_to_python(table.column(name), self.name, name) for name in columns
                }
                yield self.name, data, table.num_rows
        except (OSError, pa.ArrowException) as exc:
            raise DatasetError(self.name, f"cannot read rows: {exc}") from exc

    def duplicate_of(self, column: str) -> Duplicate | None:
        chunks = [t.column(column) for t in self._tables([column], 65536)]
        arrays = [c for ch in chunks for c in ch.chunks]
        if not arrays:
            return None
        found, duplicate = first_duplicate(pa.chunked_array(arrays))
        return (self.name, duplicate) if found else None


def _load_from_disk(path: Path) -> Any:
    try:
        datasets: Any = importlib.import_module("datasets")
    except ImportError as exc:
        raise ConfigError(
            f"{path} is a Hugging Face dataset folder; reading it needs the optional "
            "'datasets' library: pip install 'evalkit-runner[hf]'"
        ) from exc
    if (path / "dataset_dict.json").is_file():
        splits = [p.name for p in sorted(path.iterdir()) if p.is_dir()]
        raise DatasetError(
            str(path),
            "holds several splits (a DatasetDict); point at one split's folder, e.g. "
            f"{path / (splits[0] if splits else 'train')}",
        )
    _check_info(datasets, path / "dataset_info.json")
    _check_state(path / "state.json")
    try:
        return datasets.load_from_disk(str(path))
    except (OSError, ValueError, pa.ArrowException, KeyError) as exc:
        raise DatasetError(
            str(path), f"cannot read as a saved Hugging Face dataset: {exc}"
        ) from exc
    except (TypeError, AttributeError) as exc:
        # A metadata value of a shape the checks above do not know; never a bare traceback.
        raise DatasetError(
            str(path), f"its saved metadata is malformed: {type(exc).__name__}: {exc}"
        ) from exc


def _read_object(file: Path) -> dict[str, Any] | None:
    """A metadata file's JSON object; None when the file is absent or not JSON (then
    ``datasets`` names the problem itself)."""
    try:
        value = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
        raise DatasetError(
            str(file),
            f"the file must hold a JSON object ({{...}}), not {kind.get(type(value), 'a number')}",
        )
    return value


def _check_info(datasets: Any, file: Path) -> None:
    """Each key of ``dataset_info.json`` as ``datasets`` reads it, one at a time, so the key
    whose value it cannot take is named (it would raise a bare TypeError or AttributeError)."""
    info = _read_object(file)
    for key, value in (info or {}).items():
        try:
            datasets.DatasetInfo.from_dict({key: value})
        except (TypeError, AttributeError, ValueError, KeyError) as exc:
            raise DatasetError(
                str(file), f"the value of {key!r} is malformed ({type(exc).__name__}: {exc})"
            ) from exc


def _check_state(file: Path) -> None:
    """``state.json``'s list of Arrow files, the one key a saved dataset cannot do without."""
    state = _read_object(file)
    if state is None:
        return
    files = state.get("_data_files")
    if not isinstance(files, list) or not all(
        isinstance(f, dict) and isinstance(f.get("filename"), str) for f in files
    ):
        raise DatasetError(
            str(file),
            'the value of \'_data_files\' must be a list of {"filename": "..."} objects, '
            f"got {json.dumps(files)[:100]}",
        )
