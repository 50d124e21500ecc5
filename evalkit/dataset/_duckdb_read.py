"""What the DuckDB-read sources share: a SELECT streamed as Arrow batches, counted, checked.

`DuckDBSource` runs one SQL text (``select * from read_csv(...)``, a user's query) on a
fresh in-memory connection per pass, so a source holds no open connection between passes and
a file larger than memory streams through in ``batch_size`` rows at a time. Columns DuckDB
types as ``JSON`` arrive as JSON text and are decoded here, so nested values are Python
structures. DuckDB's errors become [`DatasetError`][evalkit.errors.DatasetError] s located by the
line, record and column DuckDB names (see `located`). Why DuckDB:
docs/pages/design/datasets-read-by-duckdb.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import duckdb
import pyarrow as pa

from evalkit._arrow_python import arrow_to_python
from evalkit._duckdb import connect_offline
from evalkit.dataset._sources import ColumnBatch, Duplicate
from evalkit.errors import DatasetError

#: A cell (a CSV line, a JSON record) may be up to this large: a 10 MB answer reads.
MAX_CELL_BYTES = 64 * 2**20

_LINE = re.compile(r"(?:CSV Error on Line: |in line )(\d+)")
_RECORD = re.compile(r"in record/value (\d+)")
_COLUMN = re.compile(r'(?:converting column|column) "([^"]+)"')
_MALFORMED_JSON = re.compile(
    r'Malformed JSON in file "[^"]*", at byte (\d+) in (line|record/value) (\d+): ([^\n]*)'
)
_CAST = re.compile(r'Could not convert string "([^"\n]{0,200})" to \'(\w+)\'')
_PREFIX = re.compile(r"^[A-Za-z ]*Error: ")
_NOISE = ("CSV Error on Line", "Original Line", "Possible", "  ", "*", "Column ", "This type")

#: A located problem: ``(problem, line, record, column)``.
Location = tuple[str, int | None, int | None, str | None]


def located(exc: BaseException, origin: str, *, fallback: Location | None = None) -> DatasetError:
    """A DuckDB error as a [`DatasetError`][evalkit.errors.DatasetError] naming ``origin``, the line
    and the column.

    DuckDB writes the line (``CSV Error on Line: 3``, ``in line 4``), the record of a JSON
    array (``in record/value 3``) and a column (``converting column "n"``) into its message;
    they are read from there, and the message is cut to its first meaningful line (a CSV
    error otherwise repeats the whole offending line, which may be megabytes). ``fallback``
    is used when DuckDB names no line (e.g. a file its sniffer cannot make sense of).
    """
    text = str(exc)
    bad_json = _MALFORMED_JSON.search(text)
    if bad_json is not None:
        # DuckDB counts this line (or record) one past the one that is wrong (DuckDB 2.0).
        at, where, number, what = bad_json.groups()
        spot = max(int(number) - 1, 1)
        return DatasetError(
            origin,
            f"malformed JSON: {what.strip().rstrip('.')} (at byte {at} of the "
            f"{'line' if where == 'line' else 'record'})",
            line=spot if where == "line" else None,
            row=None if where == "line" else spot,
        )
    line = _number(_LINE, text)
    record = _number(_RECORD, text)
    column_match = _COLUMN.search(text)
    column = column_match.group(1) if column_match else None
    if fallback is not None and line is None and record is None:
        problem, line, record, column = fallback
        return DatasetError(origin, problem, column=column, line=line, row=record)
    cast = _CAST.search(text)
    if cast is not None:
        problem = (
            f"{cast.group(1)!r} does not fit the column's type {cast.group(2)}, which DuckDB "
            "inferred from the rows before it"
        )
    else:
        problem = _first_line(text)
    return DatasetError(origin, problem, column=column, line=line, row=record)


def _number(pattern: re.Pattern[str], text: str) -> int | None:
    match = pattern.search(text)
    return int(match.group(1)) if match else None


def _first_line(text: str) -> str:
    lines = [_PREFIX.sub("", line).strip() for line in text.splitlines()]
    useful = [ln for ln in lines if ln and not ln.startswith(_NOISE)]
    first = useful[0] if useful else (lines[0] if lines else "cannot read")
    first = re.sub(r'^(JSON transform error) in file "[^"]*",', r"\1", first)
    return first if len(first) <= 300 else first[:297] + "..."


def sql_text(value: str) -> str:
    """``value`` as a SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def decode_json_column(values: list[Any]) -> list[Any]:
    """JSON text cells (DuckDB's ``JSON`` type) as Python values; plain strings the quick way."""
    loads = json.loads
    return [
        None
        if v is None
        else v[1:-1]
        if v[:1] == '"' and "\\" not in v and v.count('"') == 2
        else loads(v)
        for v in values
    ]


class DuckDBSource:
    """The rows of one DuckDB SELECT, streamed; the base of the CSV, JSON and query sources.

    Args:
        name: How errors and the store name the source (a path, or the query).
        select: The SQL text of the rows, in a stable order.
        connect: Opens the connection the SQL runs on (by default an in-memory one that never
            installs or loads an extension from the network: ``evalkit._duckdb``).
        fallback: Called with the error when DuckDB names no line, to locate the problem
            another way (None when it cannot).
    """

    def __init__(
        self,
        name: str,
        select: str,
        *,
        connect: Callable[[], duckdb.DuckDBPyConnection] = connect_offline,
        fallback: Callable[[], Location | None] | None = None,
    ) -> None:
        self.name = name
        self._select = select
        self._connect = connect
        self._fallback = fallback
        with self._connection() as con:
            described = self._run(lambda: con.execute(f"describe {select}").fetchall())
            self._names = [str(row[0]) for row in described]
            _check_names(name, self._names)
            self._json = {str(row[0]) for row in described if str(row[1]) == "JSON"}
            count = self._run(lambda: con.execute(f"select count(*) from ({select})").fetchall())
        self.num_rows = int(count[0][0])

    def _connection(self) -> duckdb.DuckDBPyConnection:
        try:
            return self._connect()
        except (duckdb.Error, OSError) as exc:
            raise DatasetError(self.name, f"cannot open: {exc}") from exc

    def _run(self, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except (duckdb.Error, OSError) as exc:
            fallback = self._fallback() if self._fallback is not None else None
            raise located(exc, self.name, fallback=fallback) from exc

    def column_names(self) -> list[str]:
        return list(self._names)

    def batches(self, columns: Sequence[str], batch_size: int) -> Iterator[ColumnBatch]:
        picked = ", ".join(_quoted(c) for c in columns)
        with self._connection() as con:
            relation = self._run(lambda: con.sql(f"select {picked} from ({self._select})"))
            reader = self._run(lambda: _arrow_reader(relation, batch_size))
            done = 0
            while True:
                batch = self._run(lambda: _next_batch(reader))
                if batch is None:
                    return
                yield self.name, self._columns(batch, columns, done + 1), batch.num_rows
                done += batch.num_rows

    def _columns(
        self, batch: pa.RecordBatch, columns: Sequence[str], first_row: int
    ) -> dict[str, list[Any]]:
        data: dict[str, list[Any]] = {}
        for i, name in enumerate(columns):
            values = arrow_to_python(batch.column(i), self.name, name, first_row=first_row)
            if name in self._json:
                try:
                    values = decode_json_column(values)
                except (ValueError, RecursionError) as exc:
                    raise DatasetError(
                        self.name, f"a cell is not JSON: {exc}", column=name
                    ) from exc
            data[name] = values
        return data

    def duplicate_of(self, column: str) -> Duplicate | None:
        col = _quoted(column)
        with self._connection() as con:
            nulls = self._run(
                lambda: con.execute(
                    f"select count(*) from ({self._select}) where {col} is null"
                ).fetchall()
            )
            if nulls[0][0]:
                return self.name, None
            repeated = self._run(
                lambda: con.execute(
                    f"select {col}::varchar from ({self._select}) group by {col} "
                    "having count(*) > 1 limit 1"
                ).fetchall()
            )
        return (self.name, repeated[0][0]) if repeated else None


def _check_names(source: str, names: list[str]) -> None:
    """Refuse two columns DuckDB takes for one (it ignores case in names): selecting the
    second would read the first's values (a query's ``'a' as input, 'b' as INPUT``)."""
    if clash := case_clash(names):
        first, name = clash
        raise DatasetError(
            source,
            f"has the columns {first!r} and {name!r}, one name to DuckDB (which ignores "
            "case in names); give each column its own name",
            column=name,
        )


def case_clash(names: list[str]) -> tuple[str, str] | None:
    """The first two of ``names`` that differ only in case (one name to DuckDB), or None."""
    seen: dict[str, str] = {}
    for name in names:
        first = seen.setdefault(name.lower(), name)
        if first != name:
            return first, name
    return None


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _arrow_reader(relation: duckdb.DuckDBPyRelation, batch_size: int) -> pa.RecordBatchReader:
    # DuckDB 2 names it to_arrow_reader; 1.x, fetch_record_batch (deprecated in 2).
    make = getattr(relation, "to_arrow_reader", None) or relation.fetch_record_batch
    return make(batch_size)


def _next_batch(reader: pa.RecordBatchReader) -> pa.RecordBatch | None:
    try:
        batch: pa.RecordBatch = reader.read_next_batch()
    except StopIteration:
        return None
    return batch
