"""JSON Lines files and JSON files holding an array of records, read by DuckDB's ``read_json``.

DuckDB parses and streams the file (in parallel, with the line or record of a malformed value
in its error). Its sniffer names the columns and their types; columns it finds to hold text
are read as text, every other column as DuckDB's ``JSON`` type, decoded here with
`json.loads`: numbers, booleans, mixed types and nested objects and lists (tool calls,
message lists) arrive exactly as written, without the null keys a merged ``STRUCT`` type
would add or a date guessed from a string. The sniffer's guess that records with many
different keys are one ``MAP`` is switched off: each record's keys are its fields. Its sample
is the file's first records, so the keys are also gathered from every record (a key that
first appears late is a column too), and two keys DuckDB would take for one name (``input``
and ``Input``) are refused. See docs/pages/design/datasets-read-by-duckdb.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

import duckdb

from evalkit._duckdb import connect_offline
from evalkit.dataset._columns import check_column_count
from evalkit.dataset._duckdb_read import (
    MAX_CELL_BYTES,
    DuckDBSource,
    case_clash,
    located,
    sql_text,
)
from evalkit.errors import DatasetError

#: What a JSON value that is not an object is, in an error message.
_KINDS = {"ARRAY": "an array ([...])", "VARCHAR": "a string", "BIGINT": "a number",
          "UBIGINT": "a number", "DOUBLE": "a number", "BOOLEAN": "true or false",
          "NULL": "null"}  # fmt: skip


class JsonSource(DuckDBSource):
    """A JSON Lines file (``records="lines"``) or a JSON array of objects (``"array"``).

    Raises:
        DatasetError: The file is missing, is not UTF-8, holds malformed JSON or a value that
            is not an object, or only empty objects; the message names the line (JSON Lines)
            or record (array). Two keys differ only in case, or there are more keys than the
            column ceiling.
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
        # map_inference_threshold = -1: records with many different keys stay records (by
        # default DuckDB reads 50 records of one extra key each as a MAP, not as records).
        sniffed = f"select * from {read}, maximum_depth = 2, map_inference_threshold = -1)"
        try:
            with connect_offline() as con:
                keys = _keys(con, self.path, layout)
                # Counted before DuckDB's sniffer builds a type of that many fields.
                check_column_count(str(path), len(keys))
                _check_keys(str(path), keys)
                described = con.execute(f"describe {sniffed}").fetchall()
        except (duckdb.Error, OSError) as exc:
            raise _error(exc, self.path, layout) from exc
        # The sniffer's order (each record's own) first, then keys it did not sample, by name.
        every = set(keys)
        sampled = [str(name) for name, *_ in described if str(name) in every]
        seen = set(sampled)
        keys = [*sampled, *(key for key in keys if key not in seen)]
        text = {str(name) for name, kind, *_ in described if kind == "VARCHAR"}
        types = ", ".join(
            f"{sql_text(key)}: '{'VARCHAR' if key in text else 'JSON'}'" for key in keys
        )
        super().__init__(str(path), f"select * from {read}, columns = {{{types}}})")


def _keys(con: duckdb.DuckDBPyConnection, path: Path, layout: str) -> list[str]:
    """Every key of every record, by name (no row order: the pass stays parallel)."""
    found = con.execute(
        "select distinct unnest(json_keys(json)) as key from read_json_objects("
        f"{sql_text(str(path))}, format = '{layout}', maximum_object_size = {MAX_CELL_BYTES}) "
        "order by key"
    ).fetchall()
    return [str(row[0]) for row in found]


def _check_keys(path: str, keys: list[str]) -> None:
    """Refuse two keys DuckDB takes for one column name (it ignores case in names)."""
    if clash := case_clash(keys):
        first, key = clash
        raise DatasetError(
            path,
            f"the records have the keys {first!r} and {key!r}, one column name to DuckDB "
            "(which ignores case in names); give each field its own name",
            column=key,
        )


def _error(exc: BaseException, path: Path, layout: str) -> DatasetError:
    if "expected records" not in str(exc):
        return located(exc, str(path))
    lines = layout == "newline_delimited"
    where = "line" if lines else "record"
    if lines:
        found = _first_non_object_line(path)
    else:
        # The error path only: DuckDB finds the record, reading the file as plain JSON values.
        find = (
            "select n, kind from (select row_number() over () as n, json_type(json) as kind "
            f"from read_json({sql_text(str(path))}, format = 'array', records = 'false', "
            f"maximum_object_size = {MAX_CELL_BYTES})) where kind <> 'OBJECT' limit 1"
        )
        try:
            with connect_offline() as con:
                rows = con.execute(find).fetchall()
        except (duckdb.Error, OSError):
            rows = []
        found = (int(rows[0][0]), _KINDS.get(str(rows[0][1]), "not an object")) if rows else None
    if found is None:
        # Every record is an object, yet DuckDB found no record: they are all empty.
        return DatasetError(
            str(path),
            "every record is an empty object ({}), so the file has no columns (not even 'input')",
            line=1 if lines else None,
            row=None if lines else 1,
        )
    number, kind = found
    problem = f"the {where} holds {kind}, not a JSON object ({{...}}); every record must be one"
    return DatasetError(
        str(path), problem, line=number if lines else None, row=None if lines else number
    )


def _first_non_object_line(path: Path) -> tuple[int, str] | None:
    """The first line of a JSON Lines file holding something other than an object, and what."""
    with path.open("rb") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                return number, "malformed JSON"
            if not isinstance(value, dict):
                return number, _python_kind(value)
    return None


def _python_kind(value: object) -> str:
    if isinstance(value, list):
        return _KINDS["ARRAY"]
    if isinstance(value, str):
        return _KINDS["VARCHAR"]
    if isinstance(value, bool):
        return _KINDS["BOOLEAN"]
    return _KINDS["DOUBLE"] if value is not None else _KINDS["NULL"]
