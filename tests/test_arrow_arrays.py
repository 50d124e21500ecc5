"""evalkit/_arrow_arrays.py: the same arrays as ``pa.array``, and pandas is never imported."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit._arrow_arrays import BUDGET, arrow_array, arrow_scalar, from_buffers, numpy_values

_CASES: list[tuple[pa.DataType, st.SearchStrategy[Any]]] = [
    (pa.string(), st.text()),
    (pa.float64(), st.floats() | st.integers(-(2**53), 2**53)),
    (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    (pa.timestamp("us"), st.integers(0, 2**62)),
    (pa.bool_(), st.booleans()),
]


def _same(values: list[Any]) -> list[Any]:
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in values]


@pytest.mark.parametrize(("kind", "values"), _CASES, ids=[str(k) for k, _ in _CASES])
@settings(deadline=None)  # the first pa.array call imports pandas
@given(data=st.data())
def test_an_array_equals_the_one_pa_array_builds(
    kind: pa.DataType, values: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    column = data.draw(st.lists(st.none() | values, max_size=40))
    built = from_buffers(column, kind)  # arrow_array uses pa.array here: pandas is imported
    assert built is not None
    built.validate(full=True)
    expected = pa.array(column, kind)
    if kind == pa.float64():  # NaN equals no NaN, not even itself
        assert _same(built.to_pylist()) == _same(expected.to_pylist())
    else:
        assert built.equals(expected)
    assert built.null_count == column.count(None)


@pytest.mark.parametrize(
    ("kind", "column"),
    [
        (pa.float64(), [1.0, 2**53 + 1]),  # not exactly a double
        (pa.float64(), [2**1030]),
        (pa.int64(), [2**63]),  # past the type's range
        (pa.int32(), [2**31]),
        (pa.int64(), [True]),  # a bool is no integer to Arrow
        (pa.bool_(), [1]),
        (pa.string(), [b"bytes", 1]),
    ],
)
def test_values_outside_the_layouts_get_pa_arrays_outcome(
    kind: pa.DataType, column: list[Any]
) -> None:
    """Refused in pa.array's words, or converted as it converts."""
    try:
        expected = pa.array(column, kind)
    except (pa.ArrowException, OverflowError) as exc:
        assert from_buffers(column, kind) is None
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            arrow_array(column, kind)
    else:
        built = from_buffers(column, kind)
        assert (built if built is not None else arrow_array(column, kind)).equals(expected)


def test_other_types_are_pa_arrays_conversion() -> None:
    assert arrow_array([1.5, None], pa.float32()).equals(pa.array([1.5, None], pa.float32()))
    assert arrow_array(["a", None], pa.large_string()).equals(
        pa.array(["a", None], pa.large_string())
    )


def test_text_utf8_cannot_hold_is_stored_with_a_replacement_character() -> None:
    assert arrow_array(["ok", "\ud800x", None], pa.string()).to_pylist() == ["ok", "\ufffdx", None]
    with pytest.raises(UnicodeEncodeError):
        from_buffers(["\ud800"], pa.string())


def test_a_column_of_nulls_and_an_empty_one_are_laid_out() -> None:
    for kind in (pa.string(), pa.float64(), pa.bool_(), pa.timestamp("us")):
        for column in ([None] * 5, []):
            built = from_buffers(column, kind)
            assert built is not None
            assert built.equals(pa.array(column, kind))


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        (pa.float64(), [1.5, None, -2.0, float("inf")]),
        (pa.int64(), [3, -1, 2**40]),
        (pa.uint64(), [0, 7]),
        (pa.bool_(), [True, False, True, True, False, False, False, False, True]),
        (pa.float64(), []),
    ],
)
def test_numpy_values_are_what_to_numpy_gives(kind: pa.DataType, values: list[Any]) -> None:
    chunked = pa.chunked_array([pa.array(values[:2], kind), pa.array(values[2:], kind)], kind)
    for column in (chunked, chunked.combine_chunks().slice(1), pa.array(values, kind)):
        expected = column.to_numpy(zero_copy_only=False)
        got = numpy_values(column, kind)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_numpy_values_refuses_a_null_numpy_cannot_hold() -> None:
    with pytest.raises(ValueError, match="null"):
        numpy_values(pa.array([1, None], pa.int64()), pa.int64())


def test_a_scalar_is_pa_scalars() -> None:
    assert arrow_scalar("success", pa.string()).equals(pa.scalar("success", pa.string()))


def test_building_the_store_columns_imports_no_pandas() -> None:
    code = (
        "import sys, pyarrow as pa\n"
        "from evalkit._arrow_arrays import arrow_array, arrow_scalar, numpy_values\n"
        "for kind, values in [(pa.string(), ['a', None]), (pa.float64(), [1.0, 2, None]),\n"
        "        (pa.int64(), [1, None]), (pa.int32(), [3]), (pa.bool_(), [True, None]),\n"
        "        (pa.timestamp('us'), [1, None])]:\n"
        "    column = arrow_array(values, kind)\n"
        "    pa.table([column], names=['c'])\n"
        "    if kind == pa.float64(): numpy_values(column, kind)\n"
        "arrow_scalar('x', pa.string())\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_process_past_its_budget_converts_with_pa_array() -> None:
    """A long run converts millions of values: past the budget pa.array's C loop does it, and
    pandas is imported once (laying buffers out in Python costs 2-8 times as much)."""
    code = (
        "import sys, pyarrow as pa\n"
        "from evalkit._arrow_arrays import BUDGET, arrow_array\n"
        "arrow_array([1.0] * (BUDGET - 1), pa.float64())\n"
        "print('pandas' in sys.modules)\n"
        "arrow_array([1.0, 2.0], pa.float64())\n"
        "arrow_array([1.0], pa.float64())\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
    assert BUDGET >= 100_000  # a short run (the quickstart converts about 20,000) stays within
