"""CSV and TSV files, read by DuckDB's ``read_csv`` with its own type inference.

The dialect is fixed, not sniffed: a header row, ``,`` (``\\t`` for TSV) between fields,
``"`` quoting, strict mode (a row with too many or too few fields is an error, not a guess).
DuckDB infers each column's type from a sample of rows, among booleans, integers, floats and
text only: a date or time is never guessed (``inf`` is a float, not DuckDB's infinite date);
a cell that does not fit its column's type later in the file is a located error. Empty cells
read as null. The header is read here first, so a repeated name (which DuckDB would rename
``name_1``) or more columns than the ceiling is refused before DuckDB reads the file. See
docs/pages/design/datasets-read-by-duckdb.md.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from evalkit.dataset._columns import check_column_count
from evalkit.dataset._duckdb_read import MAX_CELL_BYTES, DuckDBSource, Location, sql_text
from evalkit.errors import DatasetError

#: The types DuckDB may infer for a column; anything else is text. Its default candidates
#: include DATE, TIME and TIMESTAMP, which read ``inf`` as an infinite date no Python
#: ``date`` can hold, and would turn a text column of dates into values of another type.
TYPE_CANDIDATES = ("BOOLEAN", "BIGINT", "DOUBLE", "VARCHAR")


class CsvSource(DuckDBSource):
    """A CSV (or, with ``delimiter="\\t"``, TSV) file with a header row.

    Raises:
        DatasetError: The file is missing, not UTF-8, ragged, cut off inside a quoted field,
            or a cell does not fit its column's type; the message names the line and, when
            DuckDB says, the column. The header names a column twice (for DuckDB: ignoring
            case and surrounding spaces) or has more columns than the ceiling.
    """

    def __init__(self, path: str | os.PathLike[str], *, delimiter: str = ",") -> None:
        self.path = Path(path)
        self.delimiter = delimiter
        if not self.path.is_file():
            raise DatasetError(str(path), "no such file")
        if self.path.stat().st_size == 0:
            raise DatasetError(str(path), "the file is empty (not even a header row)")
        header = self._header()
        if header is not None:
            _check_header(str(path), header)
        candidates = ", ".join(sql_text(kind) for kind in TYPE_CANDIDATES)
        select = (
            f"select * from read_csv({sql_text(str(self.path))}, header = true, skip = 0, "
            f"delim = {sql_text(delimiter)}, quote = '\"', escape = '\"', strict_mode = true, "
            f"max_line_size = {MAX_CELL_BYTES}, encoding = 'utf-8', "
            f"auto_type_candidates = [{candidates}])"
        )
        super().__init__(str(path), select, fallback=self._locate)

    def _header(self) -> list[str] | None:
        """The header's names, or None when Python's csv module cannot read them (DuckDB then
        reads the file and names the problem as for any other line)."""
        try:
            with self.path.open(encoding="utf-8-sig", newline="") as f:
                reader = csv.reader(_bounded_lines(f), delimiter=self.delimiter, strict=True)
                return next(reader, None)
        except (UnicodeDecodeError, csv.Error, OSError, _LineTooLong):
            return None

    def _locate(self) -> Location | None:
        """Find a ragged row or an unclosed quote with Python's csv module (error path only)."""
        try:
            with self.path.open(encoding="utf-8", newline="") as f:
                reader = csv.reader(f, delimiter=self.delimiter, strict=True)
                header = next(reader, [])
                for row in reader:
                    if row and len(row) != len(header):
                        return (
                            f"the row has {len(row)} fields, the header {len(header)}",
                            reader.line_num,
                            None,
                            None,
                        )
        except UnicodeDecodeError as exc:
            return (
                f"the file is not UTF-8 text ({exc.reason} at byte {exc.start})",
                None,
                None,
                None,
            )
        except csv.Error as exc:
            return f"malformed CSV: {exc}", reader.line_num, None, None
        except OSError as exc:
            return f"cannot read: {exc.strerror or exc}", None, None, None
        return None


class _LineTooLong(Exception):
    pass


def _bounded_lines(f: TextIO) -> Iterator[str]:
    """The lines of ``f``, none read whole past `MAX_CELL_BYTES` (a file of one huge
    line is left to DuckDB's own limit, not read into memory here)."""
    while True:
        line = f.readline(MAX_CELL_BYTES)
        if not line:
            return
        if len(line) >= MAX_CELL_BYTES and not line.endswith("\n"):
            raise _LineTooLong
        yield line


def _check_header(path: str, names: list[str]) -> None:
    """Refuse a header past the column ceiling (docs/pages/design/ceilings-on-inputs.md), or
    naming a column twice.

    DuckDB would read a repeated name as ``name_1`` (and, its names being case-insensitive,
    ``Input`` after ``input`` too), so the second column would silently play no role.
    """
    check_column_count(path, len(names), line=1)
    seen: dict[str, int] = {}
    for number, name in enumerate(names, start=1):
        key = name.strip().lower()  # as DuckDB compares them
        if not key:
            continue  # DuckDB names an unnamed column itself (column1, column2...)
        if key in seen:
            first = names[seen[key] - 1]
            same = (
                f"names the column {name!r} twice"
                if first == name
                else f"names the columns {first!r} and {name!r}, one name to DuckDB (which "
                "ignores case and surrounding spaces in names)"
            )
            raise DatasetError(
                path,
                f"the header {same} (fields {seen[key]} and {number}); give each column its "
                "own name",
                column=name,
                line=1,
            )
        seen[key] = number
