"""JSON Lines files and JSON files holding an array of records, read by DuckDB's ``read_json``.

DuckDB parses and streams the file (in parallel, with the line or record of a malformed value
in its error). Its sniffer names the columns and their types; columns it finds to hold text
are read as text, every other column as DuckDB's ``JSON`` type, decoded here with
:func:`json.loads`: numbers, booleans, mixed types and nested objects and lists (tool calls,
message lists) arrive exactly as written, without the null keys a merged ``STRUCT`` type
would add or a date guessed from a string. See docs/pages/design/datasets-read-by-duckdb.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

import duckdb

from evalkit._duckdb import connect_offline
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
        if self.path.stat().st_size == 0:
            raise DatasetError(str(path), "the file is empty")
        layout = "newline_delimited" if records == "lines" else "array"
        read = (
            f"read_json({sql_text(str(self.path))}, format = '{layout}', records = 'true', "
            f"maximum_object_size = {MAX_CELL_BYTES}"
        )
        sniffed = f"select * from {read}, maximum_depth = 2)"
        try:
            with connect_offline() as con:
                described = con.execute(f"describe {sniffed}").fetchall()
        except (duckdb.Error, OSError) as exc:
            raise _error(exc, self.path, layout) from exc
        types = ", ".join(
            f"{sql_text(str(name))}: '{'VARCHAR' if kind == 'VARCHAR' else 'JSON'}'"
            for name, kind, *_ in described
        )
        super().__init__(str(path), f"select * from {read}, columns = {{{types}}})")


def _error(exc: BaseException, path: Path, layout: str) -> DatasetError:
    if "expected records" not in str(exc):
        return located(exc, str(path))
    problem = "every record must be a JSON object ({...})"
    if layout == "newline_delimited":
        return DatasetError(str(path), problem, line=_first_non_object_line(path))
    # The error path only: DuckDB finds the record, reading the file as plain JSON values.
    find = (
        "select n from (select row_number() over () as n, json_type(json) as kind from "
        f"read_json({sql_text(str(path))}, format = 'array', records = 'false', "
        f"maximum_object_size = {MAX_CELL_BYTES})) where kind <> 'OBJECT' limit 1"
    )
    try:
        with connect_offline() as con:
            found = con.execute(find).fetchall()
    except (duckdb.Error, OSError):
        found = []
    return DatasetError(str(path), problem, row=int(found[0][0]) if found else None)


def _first_non_object_line(path: Path) -> int | None:
    """The first line of a JSON Lines file holding something other than an object."""
    with path.open("rb") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                if not isinstance(json.loads(line), dict):
                    return number
            except ValueError:
                return number
    return None
