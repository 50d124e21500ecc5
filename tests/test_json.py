from __future__ import annotations

import datetime as dt
import json
import math
import os
import subprocess
import sys
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import evalkit._json
from evalkit._json import (
    dumps,
    is_pandas_missing,
    loads_stored,
    stored_config,
    stored_string,
    to_jsonable,
)

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


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        (frozenset({"delta", "alpha", "charlie", "bravo"}), ["alpha", "bravo", "charlie", "delta"]),
        ({3, 1.5, 2}, [1.5, 2, 3]),
        ({"b", 1, None}, ["b", 1, None]),  # by JSON text: '"b"' < '1' < 'null'
        ({("b", 2), ("a", 1)}, [["a", 1], ["b", 2]]),
        ({"outer": [frozenset({"y", "x"})]}, {"outer": [["x", "y"]]}),
    ],
)
def test_sets_serialise_sorted(value: Any, plain: Any) -> None:
    assert to_jsonable(value) == plain


def test_a_set_serialises_alike_under_every_hash_seed() -> None:
    # String hashes, so a set's iteration order, change with PYTHONHASHSEED.
    code = (
        "from evalkit._json import dumps\n"
        "words = 'alpha bravo charlie delta echo foxtrot golf hotel'.split()\n"
        "print(' '.join(frozenset(words)))\n"
        "print(dumps({'w': frozenset(words), 't': {(1, 'a')}}))\n"
    )
    orders, outputs = set(), set()
    for seed in ("1", "2", "3"):
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        order, text = done.stdout.splitlines()
        orders.add(order)
        outputs.add(text)
    assert len(orders) > 1  # the seeds do reorder the set
    assert outputs == {
        '{"w":["alpha","bravo","charlie","delta","echo","foxtrot","golf","hotel"],"t":[[1,"a"]]}'
    }


@pytest.mark.parametrize(
    ("stored", "decoded", "string"),
    [
        ('"a \\u00e9 b"', "a \u00e9 b", "a \u00e9 b"),
        ('{"k": 1}', {"k": 1}, '{"k": 1}'),
        ("3", 3, "3"),
        ("not json", "not json", "not json"),
        ('"unterminated', '"unterminated', '"unterminated'),
        (None, None, None),
        (2.5, 2.5, 2.5),
    ],
)
def test_stored_json_text_is_read_one_way(stored: Any, decoded: Any, string: Any) -> None:
    # The one reader of stored JSON text for evalkit diff, evalkit sql and the viewer.
    assert loads_stored(stored) == decoded
    assert stored_string(stored) == string


@pytest.mark.parametrize(
    ("stored", "config"),
    [
        (
            '{"slices": ["lang"], "shard": {"index": 0}}',
            {"slices": ["lang"], "shard": {"index": 0}},
        ),
        ({"labels": {}}, {"labels": {}}),
        ("", {}),
        (None, {}),
        ("not json", {}),
        ("[1, 2]", {}),
        ('"text"', {}),
    ],
)
def test_a_runs_stored_config_is_read_one_way(stored: Any, config: dict[str, Any]) -> None:
    # The agreement, compare, merge and resume readers all read a run's config through it.
    assert stored_config(stored) == config
