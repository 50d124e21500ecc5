"""Printing rows: aligned text tables, CSV and JSON.

Tables and `one_line` show control and bidi characters as escapes wherever they go, JSON
writes them as its own ``\\u`` escapes (the same value once parsed), and CSV keeps the exact
text; on a terminal the stream itself escapes it (see `evalkit.cli._output` and
docs/pages/design/cli-output-streams.md).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import uuid
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any

from evalkit._json import to_jsonable
from evalkit._visible import visible, visible_json

_MAX_CELL = 60
#: A column cut to fit a terminal keeps at least this many characters (or its header's).
_MIN_CUT = 12
# Values whose ``str`` is how people write them: ``2026-01-02``, a UUID, ``1.50``, ``3:00:00``.
_AS_STR = (dt.date, dt.time, dt.timedelta, uuid.UUID, Decimal)


def one_line(value: Any) -> str:
    """``value`` as text on one line: line breaks as spaces, control characters as escapes."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(to_jsonable(value), ensure_ascii=False)
    # Store content may hold anything a model wrote: no ESC sequence reaches the terminal.
    return visible(text.replace("\r\n", "\n").replace("\n", " "))


def cell(value: Any, *, limit: int | None = _MAX_CELL) -> str:
    """A value as table text: floats to 3 decimals, times to seconds, dates, UUIDs and decimals
    as written, text over ``limit`` characters cut (None: never)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    text = one_line(str(value) if isinstance(value, _AS_STR) else value)
    return _cut(text, limit)


def _cut(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _fit(widths: list[int], floors: list[int], room: int) -> list[int]:
    """Column widths within ``room`` characters: the widest columns are cut first, none below
    its floor (a table that cannot fit even so is shown at its floors)."""
    gaps = 2 * (len(widths) - 1)

    def total(cap: int) -> int:
        return gaps + sum(min(w, max(cap, f)) for w, f in zip(widths, floors, strict=True))

    if total(max(widths, default=0)) <= room:
        return widths
    low, high = 0, max(widths)  # the largest cap that fits: total() grows with the cap
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if total(mid) <= room else (low, mid - 1)
    return [min(w, max(low, f)) for w, f in zip(widths, floors, strict=True)]


def text_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    max_cell: int | None = _MAX_CELL,
    width: int | None = None,
) -> str:
    """Columns aligned under a header and a rule; numbers right-aligned.

    Args:
        columns: The header.
        rows: The rows' values.
        max_cell: Text longer than this is cut (None: never).
        width: When given (a terminal's width), the widest columns are cut so that the table
            fits in it, if it can; a table that fits is never cut.
    """
    columns = [one_line(c) for c in columns]
    texts = [[cell(v, limit=max_cell) for v in row] for row in rows]
    widths = [len(c) for c in columns]
    for row in texts:
        widths = [max(w, len(t)) for w, t in zip(widths, row, strict=True)]
    if width is not None:
        floors = [min(w, max(len(c), _MIN_CUT)) for w, c in zip(widths, columns, strict=True)]
        widths = _fit(widths, floors, width)
        texts = [[_cut(t, w) for t, w in zip(row, widths, strict=True)] for row in texts]
    numeric = [
        bool(rows) and all(isinstance(r[i], (int, float, Decimal)) or r[i] is None for r in rows)
        for i in range(len(columns))
    ]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    return "\n".join([line(columns), line(["-" * w for w in widths]), *(line(r) for r in texts)])


def csv_text(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """RFC 4180 CSV with a header row."""
    return _csv_lines([columns]) + _csv_values(rows)


def _csv_values(rows: Iterable[Sequence[Any]]) -> str:
    return _csv_lines(["" if v is None else to_jsonable(v) for v in row] for row in rows)


def _csv_lines(rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def json_text(value: Any) -> str:
    """Indented JSON of ``value`` after `evalkit._json.to_jsonable`, control and bidi
    characters as ``\\u`` escapes."""
    return visible_json(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2))


def csv_chunks(columns: Sequence[str], batches: Iterable[Sequence[Sequence[Any]]]) -> Iterator[str]:
    """`csv_text` one batch of rows at a time: the header, then each batch's lines (the
    same text, joined)."""
    yield _csv_lines([columns])
    for rows in batches:
        yield _csv_values(rows)


def json_chunks(
    columns: Sequence[str], batches: Iterable[Sequence[Sequence[Any]]]
) -> Iterator[str]:
    """`json_text` of `records` one batch of rows at a time, without the final
    newline: the same text, joined."""
    first = True
    for rows in batches:
        for record in records(columns, rows):
            item = json_text(record).replace("\n", "\n  ")
            yield ("[\n  " if first else ",\n  ") + item
            first = False
    yield "[]" if first else "\n]"


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as a list of ``{column: value}`` dicts."""
    return [dict(zip(columns, row, strict=True)) for row in rows]
