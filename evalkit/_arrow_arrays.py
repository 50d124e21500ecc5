"""Arrow arrays from Python lists, without importing pandas.

``pa.array`` asks pyarrow's pandas shim whether its input is a pandas object before it converts
anything, and the shim's first question imports pandas when it is installed: 0.3 s of a 0.6 s
quickstart (issue 31; docs/pages/design/arrow-without-pandas.md). The store's columns hold text,
numbers, booleans and timestamps (as microseconds), which Arrow lays out as plain buffers, so
`arrow_array` writes those buffers itself for lists of exactly those Python types, and hands
anything else (another type, a value out of range) to ``pa.array``, whose conversion and errors
stay the reference. Text UTF-8 cannot encode is stored with U+FFFD (`storable_text`).

Laying buffers out in Python costs 2-8 times what ``pa.array``'s C loop does (about 5 ms per
100,000 values more): worth it for a short run, not for a long one, which converts millions
of values and pays pandas' import once. So a process lays out its first `BUDGET` values, and
converts with ``pa.array`` once pandas is imported anyway or the budget is spent.
"""

from __future__ import annotations

import array
import operator
import sys
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa

from evalkit._utf8 import storable_text

_NONE = type(None)
#: Arrow type -> (the Python types laid out directly, the `array` typecode of the values).
_FIXED: dict[pa.DataType, tuple[frozenset[type], str]] = {
    pa.float64(): (frozenset({float, int, _NONE}), "d"),
    pa.int64(): (frozenset({int, _NONE}), "q"),
    pa.int32(): (frozenset({int, _NONE}), "i"),
    pa.timestamp("us"): (frozenset({int, _NONE}), "q"),
}
_TEXT = frozenset({str, _NONE})
_FLAGS = frozenset({bool, _NONE})
_LAID_OUT = frozenset({pa.string(), pa.bool_(), *_FIXED})
_INT32_MAX = 2**31 - 1
_EXACT = 2**53  # the largest integer a double holds exactly, and every one below it
#: Values a process lays out before it converts with ``pa.array`` (a 300-item run of three
#: scorers converts about 20,000).
BUDGET = 500_000
_spent = 0


def arrow_array(values: list[Any], kind: pa.DataType) -> pa.Array:
    """``pa.array(values, kind)``, built from buffers (within the `BUDGET`, before pandas is
    imported) when ``kind`` is text, a number, a boolean or a timestamp and every value is
    ``None`` or that Python type; a text column UTF-8 cannot encode is made storable with
    `storable_text` (only a column that failed pays)."""
    global _spent
    try:
        if _spent < BUDGET and "pandas" not in sys.modules:
            _spent += len(values)
            built = from_buffers(values, kind)
            if built is not None:
                return built
        return pa.array(values, kind)
    except UnicodeEncodeError:
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise
        return arrow_array([storable_text(v) for v in values], kind)


def from_buffers(values: list[Any], kind: pa.DataType) -> pa.Array | None:
    """The array laid out directly, or None when ``values`` need ``pa.array``'s conversion."""
    types = set(map(type, values))
    count = len(values)
    if types <= {_NONE} and kind in _LAID_OUT:  # every value null (a column no row used)
        return pa.nulls(count, kind)
    validity = _validity(values, count)
    if kind == pa.string() and types <= _TEXT:
        return _text(values, count, validity)
    if kind == pa.bool_() and types <= _FLAGS:
        bits = np.fromiter(map(operator.is_, values, repeat(True)), np.bool_, count)
        return pa.Array.from_buffers(kind, count, [validity, _packed(bits)])
    fixed = _FIXED.get(kind)
    if fixed is None or not types <= fixed[0]:
        return None
    if (
        kind == pa.float64()
        and int in types
        and not all(-_EXACT <= v <= _EXACT for v in values if type(v) is int)
    ):  # pa.array refuses an integer a double cannot hold exactly
        return None
    try:
        plain = values if validity is None else [0 if v is None else v for v in values]
        data = array.array(fixed[1], plain)
    except OverflowError:  # past the type's range: pa.array says so in its words
        return None
    return pa.Array.from_buffers(kind, count, [validity, pa.py_buffer(data)])


def _text(values: list[str | None], count: int, validity: pa.Buffer | None) -> pa.Array | None:
    texts: list[str] = values if validity is None else [v or "" for v in values]  # type: ignore[assignment]
    joined = "".join(texts)
    data = joined.encode()
    if len(data) == len(joined):  # ASCII: a byte a character, no string encoded alone
        lengths = np.fromiter(map(len, texts), np.int64, count)
    else:
        encoded = [text.encode() for text in texts]
        lengths = np.fromiter(map(len, encoded), np.int64, count)
    offsets = np.zeros(count + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > _INT32_MAX:  # past 2 GiB of text: a large string column's job
        return None
    buffers = [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), count, buffers)


def _validity(values: list[Any], count: int) -> pa.Buffer | None:
    """The bitmap of non-null values, or None when there is no null."""
    if None not in values:
        return None
    return _packed(np.fromiter(map(operator.is_not, values, repeat(None)), np.bool_, count))


def _packed(flags: np.ndarray) -> pa.Buffer:
    """One bit per flag, least significant bit first, as Arrow lays out validity and booleans."""
    return pa.py_buffer(np.packbits(flags, bitorder="little"))


def arrow_scalar(value: Any, kind: pa.DataType) -> pa.Scalar:
    """``pa.scalar(value, kind)`` without the pandas probe (a compute function given a Python
    value converts it with ``pa.scalar``, which asks the shim too)."""
    return arrow_array([value], kind)[0]


def numpy_values(values: pa.Array | pa.ChunkedArray, kind: pa.DataType) -> np.ndarray:
    """A column as a numpy array of ``kind`` (``pa.float64()``: a null is NaN; ``pa.bool_()``
    or an integer type: no null allowed), as ``to_numpy(zero_copy_only=False)`` gives it
    without its pandas probe."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    array = array.cast(kind)
    count = len(array)
    if count == 0:
        return np.empty(0, dtype=np.bool_ if kind == pa.bool_() else kind.to_pandas_dtype())
    if kind == pa.bool_():
        if array.null_count:
            raise ValueError("a null in a boolean column has no numpy value")
        bits = np.unpackbits(np.frombuffer(array.buffers()[1], np.uint8), bitorder="little")
        return bits[array.offset : array.offset + count].astype(np.bool_)
    dtype = np.dtype(kind.to_pandas_dtype())
    start = array.offset * dtype.itemsize
    out = np.frombuffer(array.buffers()[1], dtype, count=count, offset=start)
    if not array.null_count:
        return out.copy()
    if kind != pa.float64():
        raise ValueError(f"a null in a {kind} column has no numpy value")
    out = out.copy()
    valid = np.unpackbits(np.frombuffer(array.buffers()[0], np.uint8), bitorder="little")
    out[~valid[array.offset : array.offset + count].astype(np.bool_)] = np.nan
    return out
