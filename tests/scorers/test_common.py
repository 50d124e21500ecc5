from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from evalkit import ScorerInputError
from evalkit.scorer import ScorerRun
from evalkit.scorers._common import as_text, clip, ground_truth, is_missing, references


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("Paris", "Paris"),
        (None, ""),
        (b"caf\xc3\xa9", "café"),
        (42, "42"),
        (1.5, "1.5"),
        (True, "true"),
        ({"b": 1, "a": "é"}, '{"a": "é", "b": 1}'),
        ([1, "x"], '[1, "x"]'),
        (np.int64(7), "7"),
        (np.array([1, 2]), "[1, 2]"),
    ],
)
def test_as_text(value: Any, text: str) -> None:
    assert as_text(value) == text


@pytest.mark.parametrize(
    ("value", "missing"),
    [
        (None, True),
        (math.nan, True),
        (np.float64("nan"), True),
        (pd.NA, True),
        (pd.NaT, True),
        ("", False),
        (0, False),
        ("<NA>", False),
        (pd.Timestamp("2024-01-01"), False),
    ],
)
def test_is_missing(value: Any, missing: bool) -> None:
    assert is_missing(value) is missing


@pytest.mark.parametrize(
    ("value", "refs"),
    [
        ("Paris", ("Paris",)),
        (["Paris", "Lyon"], ("Paris", "Lyon")),
        (("Paris",), ("Paris",)),
        (np.array(["a", "b"]), ("a", "b")),
        ([1, 2], ("[1, 2]",)),
        (["a", 1], ('["a", 1]',)),
        ({"a": 1}, ('{"a": 1}',)),
        (3, ("3",)),
    ],
)
def test_references(value: Any, refs: tuple[str, ...]) -> None:
    assert references(value, "s") == refs


def test_references_refuse_an_empty_list() -> None:
    with pytest.raises(
        ScorerInputError, match=r"^s: ground_truth: an empty list gives no reference$"
    ):
        references([], "s")


def test_ground_truth() -> None:
    assert ground_truth(ScorerRun("i", "o", ""), "s") == ""
    with pytest.raises(ScorerInputError) as caught:
        ground_truth(ScorerRun("i", "o", None), "s")
    assert caught.value.to_dict() == {
        "name": "ScorerInputError",
        "message": "s: ground_truth: missing (this row has no ground truth)",
        "scorer": "s",
        "field": "ground_truth",
    }


def test_clip() -> None:
    assert clip("short") == "'short'"
    assert clip("x" * 70, 10) == repr("x" * 9 + "…")
