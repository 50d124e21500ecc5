from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
import sys
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import evalkit._json
from evalkit._json import dumps, is_pandas_missing, to_jsonable

json_module = evalkit._json.__file__


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        (pd.NA, None),
        (pd.NaT, None),
        (pa.scalar(3), 3),
        (pa.scalar("x"), "x"),
        (pa.scalar(None, pa.int64()), None),
        (pa.scalar({"a": 1, "b": [1.5, None]}), {"a": 1, "b": [1.5, None]}),
        (pa.scalar(None, pa.struct([("a", pa.int64())])), None),
        (pa.scalar([1, 2]), [1, 2]),
        (pa.scalar(Decimal("1.25")), 1.25),
        (Decimal("2.5"), 2.5),
        (Decimal("NaN"), None),
        (Decimal("Infinity"), None),
        (np.float32("nan"), None),
        (np.int64(7), 7),
        (pd.Timestamp("2024-01-02 03:04:05"), "2024-01-02T03:04:05"),
        (dt.date(2024, 1, 2), "2024-01-02"),
        (
            {"cell": pd.NA, "when": pd.NaT, "n": pa.scalar(1.5)},
            {"cell": None, "when": None, "n": 1.5},
        ),
        ([pd.NA, Decimal("1"), math.inf], [None, 1.0, None]),
    ],
)
def test_to_jsonable(value: Any, plain: Any) -> None:
    result = to_jsonable(value)
    assert result == plain
    assert type(result) is type(plain)
    json.dumps(result, allow_nan=False)


def test_a_row_from_pandas_serialises_without_placeholders() -> None:
    frame = pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "t": [pd.Timestamp(0), pd.NaT]})
    row = frame.iloc[1].to_dict()
    assert dumps(row) == '{"a":null,"t":null}'


@pytest.mark.parametrize(
    ("value", "missing"),
    [(pd.NA, True), (pd.NaT, True), (None, False), (math.nan, False), ("NaT", False)],
)
def test_is_pandas_missing(value: Any, missing: bool) -> None:
    assert is_pandas_missing(value) is missing


def test_the_module_does_not_import_pandas() -> None:
    # Loaded on its own (the package's __init__ imports pandas for other reasons).
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('j', {json_module!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "assert module.to_jsonable({'a': [1.5]}) == {'a': [1.5]}\n"
        "print('pandas' in sys.modules, 'pyarrow' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
