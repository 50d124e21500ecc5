from __future__ import annotations

from typing import Any

import pytest

from evalkit import ConfigError
from evalkit.scorers import json_match, json_valid
from evalkit.scorers._json_scorers import json_difference
from tests.scorers._helpers import input_error, score

FENCED = '```json\n{"a": 1}\n```'


@pytest.mark.parametrize(
    ("output", "params", "expected", "reason"),
    [
        ('{"a": 1}', {}, 1.0, "The output is valid JSON (a object)."),
        ("[1, 2]", {}, 1.0, "The output is valid JSON (a array)."),
        ("42", {}, 1.0, "The output is valid JSON (a number)."),
        ('"text"', {}, 1.0, "The output is valid JSON (a string)."),
        ("null", {}, 1.0, "The output is valid JSON (a null)."),
        ({"a": 1}, {}, 1.0, "The output is valid JSON (a object)."),
        (True, {}, 1.0, "The output is valid JSON (a boolean)."),
        (b"[1]", {}, 1.0, "The output is valid JSON (a array)."),
        ("", {}, 0.0, "The output is not valid JSON: the output is empty."),
        (None, {}, 0.0, "The output is not valid JSON: the output is empty (None)."),
        (
            "{a: 1}",
            {},
            0.0,
            "The output is not valid JSON: Expecting property name enclosed in double quotes "
            "at line 1, column 2.",
        ),
        ("[NaN]", {}, 0.0, "The output is not valid JSON: NaN is not valid JSON."),
        (
            '{"a": 1} trailing',
            {},
            0.0,
            "The output is not valid JSON: Extra data at line 1, column 10.",
        ),
        (FENCED, {}, 0.0, "The output is not valid JSON: Expecting value at line 1, column 1."),
        (FENCED, {"allow_code_fence": True}, 1.0, "The output is valid JSON (a object)."),
        ("```\n[1]\n```", {"allow_code_fence": True}, 1.0, "The output is valid JSON (a array)."),
    ],
)
async def test_json_valid(
    output: Any, params: dict[str, Any], expected: float, reason: str
) -> None:
    result = await score(json_valid(**params), output)
    assert result.score == expected
    assert result.reason == reason


@pytest.mark.parametrize(
    ("expected", "actual", "subset", "difference"),
    [
        ({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, False, None),
        (1, 1.0, False, None),
        (True, 1, False, "$: expected true, got 1"),
        (1, True, False, "$: expected 1, got true"),
        (None, None, False, None),
        ("1", 1, False, '$: expected "1", got 1'),
        ({"a": 1}, {"a": 1, "c": 2}, False, "$: unexpected key 'c'"),
        ({"a": 1}, {"a": 1, "c": 2}, True, None),
        ({"a": {"b": 1}}, {"a": {"b": 1, "x": 0}, "y": 0}, True, None),
        ({"a": {"b": 1}}, {"a": {}}, True, "$.a.b: missing"),
        ({"a": {"b": 1}}, {"a": {"b": 2}}, True, "$.a.b: expected 1, got 2"),
        ({"a b": 1}, {"a b": 2}, False, "$['a b']: expected 1, got 2"),
        ([1, 2], [2, 1], False, "$[0]: expected 1, got 2"),
        ([1, 2], [1, 2, 3], True, "$: expected 2 items, got 3"),
        ([{"id": 1}], [{"id": 1, "x": 2}], True, None),
        ({"a": 1}, [1], False, "$: expected an object, got an array"),
        ([1], {"a": 1}, False, "$: expected an array, got an object"),
        (1, {"a": 1}, False, "$: expected 1, got an object"),
    ],
)
def test_json_difference(expected: Any, actual: Any, subset: bool, difference: str | None) -> None:
    assert json_difference(expected, actual, subset=subset) == difference


@pytest.mark.parametrize(
    ("output", "truth", "params", "expected"),
    [
        ('{"b": [1, 2], "a": 1}', '{"a": 1, "b": [1, 2]}', {}, 1.0),
        ('{"a": 1}', {"a": 1.0}, {}, 1.0),
        ({"a": 1}, '{"a": 1}', {}, 1.0),
        ('{"a": 1, "extra": 0}', '{"a": 1}', {}, 0.0),
        ('{"a": 1, "extra": 0}', '{"a": 1}', {"mode": "subset"}, 1.0),
        ('{"answer": {"city": "Paris"}}', "Paris", {"path": "$.answer.city"}, 1.0),
        ('{"answer": {"city": "Lyon"}}', "Paris", {"path": "$.answer.city"}, 0.0),
        ('{"answer": {}}', "Paris", {"path": "$.answer.city"}, 0.0),
        ('{"items": [{"id": 1}, {"id": 2}]}', [1, 2], {"path": "$.items[*].id"}, 1.0),
        ('{"items": []}', [], {"path": "$.items[*].id"}, 1.0),
        (
            '{"result": {"total": 3}}',
            {"expected": {"total": 3}},
            {"path": "$.result", "ground_truth_path": "$.expected"},
            1.0,
        ),
        ("not json", "not json", {}, 0.0),
        ('"not json"', "not json", {}, 1.0),
        ("42", "42", {}, 1.0),
        ("42", 42, {}, 1.0),
        (FENCED, {"a": 1}, {}, 0.0),
        (FENCED, {"a": 1}, {"allow_code_fence": True}, 1.0),
        (None, {"a": 1}, {}, 0.0),
        ("", "", {}, 0.0),
    ],
)
async def test_json_match(output: Any, truth: Any, params: dict[str, Any], expected: float) -> None:
    result = await score(json_match(**params), output, truth)
    assert result.score == expected


async def test_json_match_reasons_name_the_difference() -> None:
    ok = await score(json_match(mode="subset"), '{"a": 1, "b": 2}', {"a": 1})
    assert ok.reason == "The output's JSON contains the expected value."
    wrong = await score(json_match(path="$.answer"), '{"answer": {"n": 2}}', {"n": 1})
    assert wrong.reason == "The output's JSON at $.answer does not match: $.n: expected 1, got 2."
    assert wrong.preprocess_step_result == {
        "expected": {"n": 1},
        "actual": {"n": 2},
        "difference": "$.n: expected 1, got 2",
    }
    missing = await score(json_match(path="$.answer"), "{}", 1)
    assert missing.reason == (
        "The output's JSON at $.answer does not match: path '$.answer' selects nothing in the "
        "output."
    )
    invalid = await score(json_match(), "{", 1)
    assert invalid.reason == (
        "The output's JSON does not match: the output is not valid JSON: Expecting property "
        "name enclosed in double quotes at line 1, column 2."
    )


async def test_json_match_fails_without_ground_truth() -> None:
    error = await input_error(json_match(), "{}", None)
    assert error.field == "ground_truth"


async def test_json_match_fails_when_the_ground_truth_path_selects_nothing() -> None:
    error = await input_error(json_match(ground_truth_path="$.expected"), "{}", {"other": 1})
    assert error.problem == "ground_truth_path '$.expected' selects nothing"


@pytest.mark.parametrize("param", ["path", "ground_truth_path"])
def test_json_match_rejects_an_invalid_path(param: str) -> None:
    with pytest.raises(ConfigError, match=f"scorer 'json_match', parameter '{param}': invalid"):
        json_match(**{param: "$.["})
