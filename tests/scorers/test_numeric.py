from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from evalkit import ConfigError
from evalkit.scorers import numeric_match
from evalkit.scorers._numeric import extract_numbers
from tests.scorers._helpers import input_error, score


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("The answer is 42.", [42.0]),
        ("1,234.5 and -3", [1234.5, -3.0]),
        ("$1,000,000", [1_000_000.0]),
        ("1,2,3", [1.0, 2.0, 3.0]),
        ("2024-05-01", [2024.0, 5.0, 1.0]),
        ("H2O and v2", []),
        ("1e3 or 2.5E-2", [1000.0, 0.025]),
        ("\u22127 degrees", [-7.0]),
        ("about .5 of it", [0.5]),
        ("50% done", [50.0]),
        ("+4", [4.0]),
        ("version 1.5.3", [1.5]),
        ("no digits", []),
    ],
)
def test_extract_numbers(text: str, numbers: list[float]) -> None:
    assert extract_numbers(text) == numbers


@pytest.mark.parametrize(
    ("output", "truth", "params", "expected"),
    [
        ("The answer is 42", 42, {}, 1.0),
        ("The answer is 42", "42", {}, 1.0),
        ("The answer is 42", "Natalia sold 48/2 = 24 clips... #### 42", {}, 1.0),
        ("The answer is 43", 42, {}, 0.0),
        (0.1 + 0.2, 0.3, {}, 1.0),
        ("41.95", 42, {"abs_tol": 0.1}, 1.0),
        ("41.8", 42, {"abs_tol": 0.1}, 0.0),
        ("41.6", 42, {"rel_tol": 0.01}, 1.0),
        ("41.5", 42, {"rel_tol": 0.01}, 0.0),
        ("from 3 to 5", 3, {}, 0.0),
        ("from 3 to 5", 3, {"extract": "first"}, 1.0),
        ("from 3 to 5", 5, {"extract": "first"}, 0.0),
        ("from 3 to 5 to 7", 5, {"extract": "any"}, 1.0),
        ("from 3 to 7", 5, {"extract": "any"}, 0.0),
        (42, 42.0, {}, 1.0),
        (np.int64(42), np.float64(42.0), {}, 1.0),
        ("1,234", 1234, {}, 1.0),
        ("no number here", 1, {}, 0.0),
        ("", 1, {}, 0.0),
        (None, 1, {}, 0.0),
        (True, 1, {}, 0.0),
        ({"total": 12}, 12, {}, 1.0),
    ],
)
async def test_numeric_match(
    output: Any, truth: Any, params: dict[str, Any], expected: float
) -> None:
    result = await score(numeric_match(**params), output, truth)
    assert result.score == expected


async def test_numeric_match_reasons() -> None:
    hit = await score(numeric_match(abs_tol=0.5), "It costs 9.8 euros", "10")
    assert (
        hit.reason
        == "Expected 10; the output's last number is 9.8, within abs_tol 0.5, rel_tol 1e-09."
    )
    assert hit.preprocess_step_result == {"expected": 10.0, "numbers": [9.8], "candidate": 9.8}
    miss = await score(numeric_match(extract="any"), "3 or 4", 5)
    assert (
        miss.reason
        == "Expected 5; no number of the output (3, 4) is within abs_tol 0, rel_tol 1e-09."
    )
    found = await score(numeric_match(extract="any"), "3 or 5", 5)
    assert found.reason == "Expected 5; the output contains 5 (abs_tol 0, rel_tol 1e-09)."
    none = await score(numeric_match(), "no idea", 5)
    assert none.reason == "Expected 5; the output contains no number."


@pytest.mark.parametrize("truth", [None, "no number", True, {"a": 1}, math.inf])
async def test_numeric_match_needs_a_number_as_ground_truth(truth: Any) -> None:
    error = await input_error(numeric_match(), "42", truth)
    assert error.field == "ground_truth"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"abs_tol": -1}, "parameter 'abs_tol': must be a finite number ≥ 0, got -1"),
        ({"rel_tol": math.nan}, "parameter 'rel_tol': must be a finite number ≥ 0, got nan"),
        ({"abs_tol": "0.1"}, "parameter 'abs_tol': Input should be a valid number"),
        ({"extract": "middle"}, "parameter 'extract': Input should be 'last', 'first' or 'any'"),
    ],
)
def test_numeric_match_rejects_bad_params(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        numeric_match(**params)
    assert str(caught.value).startswith(f"scorer 'numeric_match', {message}")
