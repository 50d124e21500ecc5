"""Printing rows: aligned text tables, CSV and JSON."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Sequence
from typing import Any

from evalkit._json import to_jsonable
from evalkit.report import visible

_MAX_CELL = 60


def cell(value: Any) -> str:
    """A value as table text: floats to 3 decimals, times to seconds, long text cut."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    text = value if isinstance(value, str) else json.dumps(to_jsonable(value), ensure_ascii=False)
    # Store content may hold anything a model wrote: no ESC sequence reaches the terminal.
    text = visible(text.replace("\n", " "))
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def text_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns aligned under a header and a rule; numbers right-aligned."""
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
    """Indented JSON of ``value`` after :func:`evalkit._json.to_jsonable`."""
    return json.dumps(to_jsonable(value), ensure_ascii=False, indent=2)


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as a list of ``{column: value}`` dicts."""
    return [dict(zip(columns, row, strict=True)) for row in rows]
