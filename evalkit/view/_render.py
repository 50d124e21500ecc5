"""The viewer's pages: Jinja2 templates shipped in the package, autoescaped, and the filters
that make stored text safe and readable.

Every value reaches the page through autoescaping; on top of it, `shown` turns control
and bidi-override characters into visible escapes (a ``U+202E`` in a model's output would
otherwise reverse what the reader sees) and cuts very long text, so one 1 MB output does not
make a page of a megabyte (docs/pages/design/viewer-stack.md).
"""

from __future__ import annotations

import json
import math
from typing import Any
from urllib.parse import urlencode

import jinja2

from evalkit._json import loads_stored
from evalkit._numbers import MINUS, shown_number
from evalkit._visible import visible
from evalkit.view._items import group_key

_NONE = "\u2013"  # an en dash: no value

#: Characters of one value shown on a page; the rest is left out, with a note.
MAX_SHOWN = 20_000


def as_text(value: Any) -> str:
    """A stored value as text: JSON text decoded (a string stays as it is, anything else is
    indented JSON), None as an empty string."""
    if value is None:
        return ""
    decoded = loads_stored(value)
    if isinstance(decoded, str):
        return decoded
    return json.dumps(decoded, indent=2, ensure_ascii=False, default=str)


def shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """`as_text`, with unsafe characters as visible escapes, cut at ``limit`` characters
    (the note says how many there were)."""
    text = as_text(value)
    if len(text) > limit:
        text = text[:limit] + f"\n… [{len(text) - limit:,} more characters of {len(text):,}]"
    return visible(text)


def number(value: float | None, digits: int = 3) -> str:
    """A score or mean for a table: ``digits`` decimals, an en dash for none."""
    return shown_number(value, digits, missing=_NONE, minus=MINUS)


def signed(value: float | None, digits: int = 3) -> str:
    """A difference with its sign (``+0.125``, ``\u22120.500``)."""
    return shown_number(value, digits, signed=True, missing=_NONE, minus=MINUS)


def change_class(value: float | None, higher_is_better: bool = True) -> str:
    """``worse``, ``better`` or ``same``: the CSS class of a difference."""
    if value is None or value == 0 or math.isnan(value):
        return "same"
    return "better" if (value > 0) == higher_is_better else "worse"


def query(params: dict[str, Any], **changes: Any) -> str:
    """The query string of the current page with some parameters changed (None drops one)."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "", False)})


def environment() -> jinja2.Environment:
    """The template environment: templates from the package, autoescaped, undefined is an
    error (a typo in a template fails its test instead of rendering nothing)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("evalkit.view", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        shown=shown,
        number=number,
        signed=signed,
        change_class=change_class,
        safe_text=lambda v: visible(str(v)) if v is not None else "",
    )
    env.globals.update(query=query, group_key=group_key)
    return env
