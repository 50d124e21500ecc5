"""CSV and TSV files, read by DuckDB's ``read_csv`` with its own type inference.

The dialect is fixed, not sniffed: a header row, ``,`` (``\\t`` for TSV) between fields,
``"`` quoting, strict mode (a row with too many or too few fields is an error, not a guess).
DuckDB infers each column's type from a sample of rows; a cell that does not fit its column's
type later in the file is a located error. Empty cells read as null. See
docs/pages/design/datasets-read-by-duckdb.md.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from evalkit.dataset._duckdb_read import MAX_CELL_BYTES, DuckDBSource, Location, sql_text
from evalkit.errors import DatasetError


class CsvSource(DuckDBSource):
    """A CSV (or, with ``delimiter="\\t"``, TSV) file with a header row.

    Raises:
        DatasetError: The file is missing, not UTF-8, ragged, cut off inside a quoted field,
            or a cell does not fit its column's type; the message names the line and, when
            DuckDB says, the column.
    """

    def __init__(self, path: str | os.PathLike[str], *, delimiter: str = ",") -> None:
        self.path = Path(path)
        self.delimiter = delimiter
        if not self.path.is_file():
            raise DatasetError(str(path), "no such file")
        if self.path.stat().st_size == 0:
            raise DatasetError(str(path), "the file is empty (not even a header row)")
        select = (
            f"select * from read_csv({sql_text(str(self.path))}, header = true, skip = 0, "
            f"delim = {sql_text(delimiter)}, quote = '\"', escape = '\"', strict_mode = true, "
            f"max_line_size = {MAX_CELL_BYTES}, encoding = 'utf-8')"
        )
        super().__init__(str(path), select, fallback=self._locate)

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
