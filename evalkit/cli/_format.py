"""Printing rows: aligned text tables, CSV and JSON.

Tables and :func:`one_line` show control and bidi characters as escapes wherever they go, JSON
writes them as its own ``\\u`` escapes (the same value once parsed), and CSV keeps the exact
text; on a terminal the stream itself escapes it (see :mod:`evalkit.cli._output` and
docs/pages/design/cli-output-streams.md).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Sequence
from typing import Any

from evalkit._json import to_jsonable
from evalkit.report import visible, visible_json

_MAX_CELL = 60


def one_line(value: Any) -> str:
    """``value`` as text on one line: line breaks as spaces, control characters as escapes."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(to_jsonable(value), ensure_ascii=False)
    # Store content may hold anything a model wrote: no ESC sequence reaches the terminal.
    return visible(text.replace("\r\n", "\n").replace("\n", " "))


def cell(value: Any) -> str:
    """A value as table text: floats to 3 decimals, times to seconds, long text cut."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    text = one_line(value)
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def text_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns aligned under a header and a rule; numbers right-aligned."""
    columns = [one_line(c) for c in columns]
    texts = [[cell(v) for v in row] for row in rows]
    widths = [len(c) for c in columns]
    for row in texts:
        widths = [max(w, len(t)) for w, t in zip(widths, row, strict=True)]
    numeric = [
        bool(rows) and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows)
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
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if v is None else to_jsonable(v) for v in row])
    return out.getvalue()


def json_text(value: Any) -> str:
    """Indented JSON of ``value`` after :func:`evalkit._json.to_jsonable`, control and bidi
    characters as ``\\u`` escapes."""
    return visible_json(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2))


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as a list of ``{column: value}`` dicts."""
    return [dict(zip(columns, row, strict=True)) for row in rows]
