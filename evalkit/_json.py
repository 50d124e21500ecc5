"""Turning arbitrary step results into JSON-ready values (for ``to_dict`` and the store), and
metadata keys into the JSON pointers DuckDB reads them by."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any

_PLAIN = (str, int, bool, type(None))
# pandas' missing-value singletons, told by type so that importing this module (and reading
# values that are not from pandas) never imports pandas. NaT is also a datetime, so it must be
# recognised before dates are.
_PANDAS_MISSING = frozenset({"NAType", "NaTType"})


def is_pandas_missing(value: Any) -> bool:
    """True for ``pd.NA`` and ``pd.NaT``, without importing pandas."""
    kind = type(value)
    return kind.__name__ in _PANDAS_MISSING and kind.__module__.startswith("pandas")


def to_jsonable(value: Any) -> Any:
    """Convert ``value`` into plain JSON types (dict, list, str, int, float, bool, None).

    Dataclasses and pydantic models become dicts, tuples become lists, sets become sorted lists
    (the same set gives the same list in every process), numpy and Arrow scalars become Python
    values, decimals become floats, dates become ISO strings. Missing values (``pd.NA``,
    ``pd.NaT``, Arrow nulls) and non-finite floats become None, because JSON has no NaN.
    Anything else falls back to ``str(value)``.
    """
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return to_jsonable(float(value))
    if is_pandas_missing(value):
        return None
    as_py = getattr(value, "as_py", None)  # Arrow scalars, before Mapping: a struct is one
    if callable(as_py):
        return to_jsonable(as_py())
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return _sorted_set(value)
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


def _sorted_set(value: set[Any] | frozenset[Any]) -> list[Any]:
    """A set's converted members in a canonical order.

    A set iterates in hash order, and string hashes change with ``PYTHONHASHSEED``: listed as
    they come, the same set would serialise differently in each process, and a stored config
    (the fingerprint a resume compares) would not match the next run's. Strings, and numbers,
    are sorted by value; anything else (a mix, tuples, None) by its JSON text, a total order.
    """
    members = [to_jsonable(v) for v in value]
    if all(isinstance(m, str) for m in members) or all(
        isinstance(m, (int, float)) for m in members
    ):
        return sorted(members)
    return sorted(members, key=_canonical_text)


def _canonical_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def dumps(value: Any) -> str:
    """Serialise ``value`` as compact JSON after `to_jsonable`."""
    return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))


# One encoder, built once: json.dumps with options builds a new encoder on every call.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def json_text(value: Any) -> str | None:
    """``value`` as JSON text for a JSON column of the store; None stays SQL NULL."""
    if value is None:
        return None
    if type(value) is str:
        text: str = encode_basestring(value)
        return text
    try:
        return _encode(value)
    except (TypeError, ValueError):
        return _encode(to_jsonable(value))


def loads_stored(value: Any) -> Any:
    """A value read from a JSON column of the store, decoded: JSON text becomes its value (a
    JSON string its text); text that is not JSON, and a value that is not text, stay as they
    are. The one reader of stored JSON text for ``evalkit diff``, ``evalkit sql``, the reports
    and the viewer (docs/pages/design/one-implementation-each.md)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def stored_config(value: Any) -> dict[str, Any]:
    """A run's stored ``config`` (the ``experiments.config`` column, or a row's ``config``) as a
    dict: JSON text is decoded, a dict is kept; SQL NULL, text that is not JSON and JSON that
    is not an object read as no config. The one reader of a stored run's config."""
    decoded = loads_stored(value) if isinstance(value, str) else value
    return decoded if isinstance(decoded, dict) else {}


def stored_string(value: Any) -> Any:
    """A JSON column's value as a table shows it: a JSON string as its text, anything else
    (an object, a number, SQL NULL) as it is."""
    # Only JSON text starting with a quote can be a string: nothing else is decoded.
    if isinstance(value, str) and value.startswith('"'):
        decoded = loads_stored(value)
        if isinstance(decoded, str):
            return decoded
    return value


def json_pointer(key: str) -> str:
    """A metadata key as a JSON pointer (``a.b`` is key ``b`` inside ``a``), as the slice
    filters of ``evalkit diff`` and the viewer read it with ``json_extract_string``."""
    parts = [p.replace("~", "~0").replace("/", "~1") for p in key.split(".")]
    return "/" + "/".join(parts)
