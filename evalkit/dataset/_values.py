"""Cell values: JSON text decoding, canonical text for hashing, and content-derived ids."""

from __future__ import annotations

import contextlib
import hashlib
import json
from json.encoder import encode_basestring
from typing import Any

from evalkit._json import to_jsonable

_JSON_OPENERS = ("{", "[")


def decode_json_cells(values: list[Any]) -> list[Any]:
    """Turn cells holding JSON object or array text into Python values, in place.

    Only text that starts with ``{`` or ``[`` and parses is decoded, so ``"42"`` or ``"true"``
    stays text. Other values are left alone.
    """
    for i, value in enumerate(values):
        if type(value) is str and value[:1] in _JSON_OPENERS:
            # Text nested past the recursion limit stays text, like any undecodable JSON.
            with contextlib.suppress(ValueError, RecursionError):
                values[i] = json.loads(value)
    return values


_encode_sorted = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
).encode


def canonical(value: Any) -> str:
    """A canonical JSON text of ``value``: equal values give equal text, whatever their source.

    Keys are sorted and non-JSON types go through `to_jsonable`, so a
    Parquet struct, a dict from a DataFrame and decoded JSON text of the same content agree.
    """
    if value is None:
        return "null"
    if type(value) is str:
        text: str = encode_basestring(value)
        return text
    try:
        return _encode_sorted(value)
    except (TypeError, ValueError):
        return _encode_sorted(to_jsonable(value))


def content_digest(identity: str) -> bytes:
    """The 8-byte hash of a row's identity text (input, ground truth, request context); its
    16 hex digits are the row's id."""
    # surrogatepass: a lone surrogate in Python text still hashes (and stays in the value).
    return hashlib.blake2b(identity.encode("utf-8", "surrogatepass"), digest_size=8).digest()
