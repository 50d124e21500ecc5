"""JSON Lines files and JSON files holding an array of records, read by DuckDB's ``read_json``.

DuckDB parses and streams the file (in parallel, with the line or record of a malformed value
in its error). Its sniffer names the columns and their types; columns it finds to hold text
are read as text, every other column as DuckDB's ``JSON`` type, decoded here with
:func:`json.loads`: numbers, booleans, mixed types and nested objects and lists (tool calls,
message lists) arrive exactly as written, without the null keys a merged ``STRUCT`` type
would add or a date guessed from a string. See docs/pages/design/datasets-read-by-duckdb.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import duckdb

from evalkit.dataset._duckdb_read import MAX_CELL_BYTES, DuckDBSource, located, sql_text
from evalkit.errors import DatasetError


class JsonSource(DuckDBSource):
    """A JSON Lines file (``records="lines"``) or a JSON array of objects (``"array"``).

    Raises:
        DatasetError: The file is missing, is not UTF-8, holds malformed JSON or a value that
            is not an object; the message names the line (JSON Lines) or record (array).
    """

    def __init__(
        self, path: str | os.PathLike[str], *, records: Literal["lines", "array"] = "lines"
    ) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise DatasetError(str(path), "no such file")
        layout = "newline_delimited" if records == "lines" else "array"
        read = (
            f"read_json({sql_text(str(self.path))}, format = '{layout}', records = 'true', "
            f"maximum_object_size = {MAX_CELL_BYTES}"
        )
        sniffed = f"select * from {read}, maximum_depth = 2)"
        try:
            with duckdb.connect() as con:
                described = con.execute(f"describe {sniffed}").fetchall()
        except (duckdb.Error, OSError) as exc:
            raise _error(exc, str(path)) from exc
        types = ", ".join(
            f"{sql_text(str(name))}: '{'VARCHAR' if kind == 'VARCHAR' else 'JSON'}'"
            for name, kind, *_ in described
        )
        super().__init__(str(path), f"select * from {read}, columns = {{{types}}})")


def _error(exc: BaseException, origin: str) -> DatasetError:
    if "expected records" in str(exc):
        return DatasetError(origin, "every record must be a JSON object ({...})")
    return located(exc, origin)
