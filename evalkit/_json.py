"""Turning arbitrary step results into JSON-ready values (for ``to_dict`` and the store)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from collections.abc import Mapping
from typing import Any

_PLAIN = (str, int, bool, type(None))


def to_jsonable(value: Any) -> Any:
    """Convert ``value`` into plain JSON types (dict, list, str, int, float, bool, None).

    Dataclasses and pydantic models become dicts, tuples and sets become lists, numpy and Arrow
    scalars become Python numbers, dates become ISO strings. Non-finite floats become None,
    because JSON has no NaN. Anything else falls back to ``str(value)``.
    """
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict):
            return to_dict()
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return to_jsonable(model_dump(mode="json"))
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        try:
            return to_jsonable(item())
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)  # numpy arrays
    if callable(tolist):
        return to_jsonable(tolist())
    return str(value)


def dumps(value: Any) -> str:
    """Serialise ``value`` as compact JSON after :func:`to_jsonable`."""
    return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))
