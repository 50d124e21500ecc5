"""Arrow columns as Python values, for the dataset's sources and a sharded run's row groups.

Shared by the dataset and the run, no user's to call, so in the root layer:
docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from evalkit.errors import DatasetError


def arrow_to_python(
    array: pa.Array | pa.ChunkedArray, origin: str, column: str, *, first_row: int | None = None
) -> list[Any]:
    """The cells of an Arrow column as Python values (maps as dicts), for a
    [`Source`][evalkit.dataset.Source].

    Args:
        array: The column's cells.
        origin: How the error names the source.
        column: The column's name.
        first_row: The 1-based row (record) of the source the first cell is, so that a cell
            that cannot be converted is named by its row; None when not known.

    Raises:
        DatasetError: A cell cannot be converted (e.g. text that is not UTF-8, a date past
            what Python's ``date`` holds), naming ``origin``, ``column`` and the row.
    """
    try:
        return _to_pylist(array)
    except UnicodeDecodeError as exc:
        problem = f"a text cell is not valid UTF-8 ({exc.reason} at byte {exc.start})"
        error: Exception = exc
    except (pa.ArrowException, ValueError, OverflowError) as exc:
        problem = f"cannot convert the cells: {exc}"
        error = exc
    row = None if first_row is None else first_row + _first_failing(array)
    raise DatasetError(origin, problem, column=column, row=row) from error


def _to_pylist(array: pa.Array | pa.ChunkedArray) -> list[Any]:
    # maps_as_pydicts costs ~20x on any column (pyarrow 26), so only where there is a map.
    if _has_map(array.type):
        values: list[Any] = array.to_pylist(maps_as_pydicts="lossy")
        return values
    return list(array.to_pylist())


def _first_failing(array: pa.Array | pa.ChunkedArray) -> int:
    """The index of the first cell that cannot be converted (the error path only)."""
    for i in range(len(array)):
        try:
            _to_pylist(array.slice(i, 1))
        except (UnicodeDecodeError, pa.ArrowException, ValueError, OverflowError):
            return i
    return 0


def _has_map(kind: pa.DataType) -> bool:
    """Whether an Arrow type is, or holds, a map."""
    if pa.types.is_map(kind):
        return True
    return any(_has_map(kind.field(i).type) for i in range(kind.num_fields))
