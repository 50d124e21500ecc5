from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from evalkit import ConfigError
from evalkit.scorers import contains, exact_match, regex_match
from tests.scorers._helpers import input_error, score


@pytest.mark.parametrize(
    ("output", "truth", "params", "expected"),
    [
        ("Paris", "Paris", {}, 1.0),
        (" Paris\n", "Paris", {}, 1.0),
        (" Paris", "Paris", {"strip": False}, 0.0),
        ("paris", "Paris", {}, 0.0),
        ("paris", "Paris", {"ignore_case": True}, 1.0),
        ("STRASSE", "straße", {"ignore_case": True}, 1.0),
        ("Paris!", "Paris", {}, 0.0),
        ("Paris!", "Paris", {"ignore_punctuation": True}, 1.0),
        ("«Paris»…", "Paris", {"ignore_punctuation": True}, 1.0),
        ("$5", "5", {"ignore_punctuation": True}, 1.0),
        ("New  York", "NewYork", {"ignore_whitespace": True}, 1.0),
        ("New  York", "New York", {}, 0.0),
        ("", "", {}, 1.0),
        (None, "", {}, 1.0),
        ("", "Paris", {}, 0.0),
        ("Paris", "", {}, 0.0),
        (42, "42", {}, 1.0),
        ("42", 42, {}, 1.0),
        ({"b": 1, "a": 2}, {"a": 2, "b": 1}, {}, 1.0),
        ([1, 2], "[1, 2]", {}, 1.0),
        ("Lyon", ["Paris", "Lyon"], {}, 1.0),
        ("Nice", ["Paris", "Lyon"], {}, 0.0),
    ],
)
async def test_exact_match(
    output: Any, truth: Any, params: dict[str, Any], expected: float
) -> None:
    result = await score(exact_match(**params), output, truth)
    assert result.score == expected


async def test_exact_match_reasons() -> None:
    hit = await score(exact_match(), "Lyon", ["Paris", "Lyon"])
    assert hit.reason == "The output matches the ground truth (reference #2 of 2)."
    assert hit.preprocess_step_result == {
        "output": "Lyon",
        "references": ["Paris", "Lyon"],
        "matched": 1,
    }
    miss = await score(exact_match(ignore_case=True), "Lyon", "Paris")
    assert miss.reason == "The output 'lyon' does not match 'paris'."
    several = await score(exact_match(), "Nice", ["Paris", "Lyon"])
    assert several.reason == "The output 'Nice' does not match any of 2 references."


@pytest.mark.parametrize("truth", [None, math.nan, np.nan, pd.NA, pd.NaT])
async def test_exact_match_without_ground_truth_fails(truth: Any) -> None:
    error = await input_error(exact_match(), "Paris", truth)
    assert (error.scorer, error.field) == ("exact_match", "ground_truth")
    assert str(error) == "exact_match: ground_truth: missing (this row has no ground truth)"


async def test_an_empty_list_of_references_fails() -> None:
    error = await input_error(exact_match(), "Paris", [])
    assert error.problem == "an empty list gives no reference"


@pytest.mark.parametrize(
    ("output", "truth", "params", "expected"),
    [
        ("a b", None, {"values": ["a", "b"]}, 1.0),
        ("a", None, {"values": ["a", "b"]}, 0.0),
        ("a", None, {"values": ["a", "b"], "mode": "any"}, 1.0),
        ("c", None, {"values": ("a", "b"), "mode": "any"}, 0.0),
        ("A", None, {"values": ["a"]}, 0.0),
        ("A", None, {"values": ["a"], "ignore_case": True}, 1.0),
        ("I think it is Paris.", "Paris", {}, 1.0),
        ("Paris, France", ["Paris", "France"], {}, 1.0),
        ("Paris", ["Paris", "France"], {}, 0.0),
        ("Paris", ["Paris", "France"], {"mode": "any"}, 1.0),
        ("", "", {}, 1.0),
        ("", "Paris", {}, 0.0),
        ({"city": "Paris"}, '"city": "Paris"', {}, 1.0),
        ("anything", "Lyon", {"values": ["any"]}, 1.0),
    ],
)
async def test_contains(output: Any, truth: Any, params: dict[str, Any], expected: float) -> None:
    result = await score(contains(**params), output, truth)
    assert result.score == expected


async def test_contains_reason_lists_the_missing_strings() -> None:
    result = await score(contains(values=["alpha", "beta", "gamma"]), "alpha only")
    assert result.preprocess_step_result == {"found": ["alpha"], "missing": ["beta", "gamma"]}
    assert (
        result.reason == "Found 1 of 3 expected strings (all required); missing: 'beta', 'gamma'."
    )


async def test_contains_needs_values_or_a_ground_truth() -> None:
    error = await input_error(contains(), "Paris", None)
    assert error.field == "ground_truth"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"values": []}, "scorer 'contains', parameter 'values': give at least one string"),
        ({"values": "abc"}, "scorer 'contains', parameter 'values'"),
        ({"mode": "some"}, "scorer 'contains', parameter 'mode': Input should be 'all' or 'any'"),
    ],
)
def test_contains_rejects_bad_params(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(")):
        contains(**params)


@pytest.mark.parametrize(
    ("output", "truth", "params", "expected"),
    [
        ("order 123", None, {"pattern": r"\d{3}"}, 1.0),
        ("order 12", None, {"pattern": r"\d{3}"}, 0.0),
        ("123 abc", None, {"pattern": r"\d+", "full_match": True}, 0.0),
        ("123", None, {"pattern": r"\d+", "full_match": True}, 1.0),
        ("YES", None, {"pattern": "yes"}, 0.0),
        ("YES", None, {"pattern": "yes", "ignore_case": True}, 1.0),
        ("a\nb", None, {"pattern": "^b$"}, 0.0),
        ("a\nb", None, {"pattern": "^b$", "multiline": True}, 1.0),
        ("a\nb", None, {"pattern": "a.b"}, 0.0),
        ("a\nb", None, {"pattern": "a.b", "dotall": True}, 1.0),
        ("", None, {"pattern": "^$"}, 1.0),
        (None, None, {"pattern": "^$"}, 1.0),
        ("ID-42", r"ID-\d+", {}, 1.0),
        ("ID-x", [r"ID-\d+", r"ID-[a-z]"], {}, 1.0),
        ("ID-", [r"ID-\d+", r"ID-[a-z]"], {}, 0.0),
        ({"ok": True}, r'"ok": true', {}, 1.0),
    ],
)
async def test_regex_match(
    output: Any, truth: Any, params: dict[str, Any], expected: float
) -> None:
    result = await score(regex_match(**params), output, truth)
    assert result.score == expected


async def test_regex_match_reasons() -> None:
    hit = await score(regex_match(pattern=r"\d+"), "order 123")
    assert hit.reason == r"The output matches '\\d+': '123'."
    assert hit.preprocess_step_result == {"pattern": r"\d+", "match": "123"}
    miss = await score(regex_match(full_match=True), "ID-", [r"ID-\d+", r"ID-[a-z]"])
    assert miss.reason == "The output does not fully match any of 2 patterns."


def test_regex_match_rejects_an_invalid_pattern_when_built() -> None:
    with pytest.raises(ConfigError, match="scorer 'regex_match', parameter 'pattern': invalid"):
        regex_match(pattern="(unclosed")


async def test_regex_match_fails_on_an_invalid_ground_truth_pattern() -> None:
    error = await input_error(regex_match(), "text", "(unclosed")
    assert error.field == "ground_truth"
    assert "invalid regular expression '(unclosed'" in error.problem


# regex_match runs on the regex package (a time limit per match, which re has not): on
# ordinary patterns it must give re's answer, flags and full/partial match alike.
_RE_CORPUS = [
    (r"\bParis\b", "The capital is Paris."),
    (r"capital of (France|Spain)", "the capital of Spain"),
    (r"\d{3}-\d{4}", "call 555-0199 now"),
    (r"[\w.]+@[\w.]+\.\w+", "write to info@example.org"),
    (r"^\w+$", "Zürich"),
    (r"\d+", "٣ pommes"),
    (r"\bcafé\b", "un café"),
    (r"straße", "STRASSE"),
    (r"^yes$", "no\nYES\n"),
    (r"a.b", "a\nb"),
    (r"(\w)\1", "bookkeeper"),
    (r"(?<=\$)\d+", "costs $42"),
    (r"colou?r", "COLOR"),
    (r"", ""),
    (r"x*", "yyy"),
    (r"(?i)ǅ", "ǆ"),
    (r"[^\W\d_]+", "abc123"),
    (r"\s+$", "trailing   "),
]


@pytest.mark.parametrize(("pattern", "text"), _RE_CORPUS)
@pytest.mark.parametrize("full_match", [False, True])
@pytest.mark.parametrize("flags", [{}, {"ignore_case": True, "multiline": True, "dotall": True}])
async def test_regex_match_gives_the_re_module_s_answer(
    pattern: str, text: str, full_match: bool, flags: dict[str, bool]
) -> None:
    re_flags = (re.IGNORECASE | re.MULTILINE | re.DOTALL) if flags else 0
    compiled = re.compile(pattern, re_flags)
    expected = compiled.fullmatch(text) if full_match else compiled.search(text)
    for scorer, truth in (
        (regex_match(pattern=pattern, full_match=full_match, **flags), None),
        (regex_match(full_match=full_match, **flags), pattern),
    ):
        result = await score(scorer, text, truth)
        assert result.score == (0.0 if expected is None else 1.0)
        assert result.preprocess_step_result["match"] == (expected and expected.group(0))


async def test_a_catastrophic_pattern_fails_its_item_after_the_timeout() -> None:
    slow = r"(a|aa)+$"  # exponential backtracking the engine's safeguards do not catch
    error = await input_error(regex_match(timeout=0.05), "a" * 60 + "!", slow)
    assert error.field == "ground_truth"
    assert error.problem.startswith(
        "the regular expression '(a|aa)+$' took longer than 0.05 s to match a 61-character output"
    )
    fixed = await input_error(regex_match(pattern=slow, timeout=0.05), "a" * 60 + "!")
    assert fixed.field == "pattern"


async def test_regex_match_sees_through_the_patterns_of_issue_15_at_once() -> None:
    for pattern, text in ((r"(a+)+$", "a" * 40 + "!"), (r"^(\w+\s?)*$", "word" * 10 + "!")):
        result = await score(regex_match(timeout=30.0), text, pattern)
        assert result.score == 0.0


async def test_regex_match_accepts_the_regex_package_s_extensions() -> None:
    result = await score(regex_match(pattern=r"^\p{Lu}\p{Ll}+$"), "Éclair")
    assert result.score == 1.0


@pytest.mark.parametrize("timeout", [0, -1, math.nan, True, "1", math.inf, 1e15, 3600.5])
def test_regex_match_refuses_a_timeout_that_is_no_positive_number(timeout: Any) -> None:
    with pytest.raises(ConfigError, match="scorer 'regex_match', parameter 'timeout'"):
        regex_match(timeout=timeout)
