from __future__ import annotations

from typing import Any

import pytest

from evalkit import JudgeUsage
from evalkit.judge._usage import normalize_usage, reported_cost


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, None),
        ("12 tokens", None),
        (
            {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            JudgeUsage(input_tokens=10, output_tokens=5, total_tokens=15),
        ),
        (  # total computed when the provider omits it
            {"prompt_tokens": 10, "completion_tokens": 5},
            JudgeUsage(input_tokens=10, output_tokens=5, total_tokens=15),
        ),
        (
            {
                "prompt_tokens": 100,
                "completion_tokens": 40,
                "total_tokens": 140,
                "prompt_tokens_details": {"cached_tokens": 64},
                "completion_tokens_details": {"reasoning_tokens": 30},
            },
            JudgeUsage(100, 40, 140, reasoning_tokens=30, cached_input_tokens=64),
        ),
        (  # Anthropic-compatible proxies report cache writes at the top level
            {"prompt_tokens": 100, "completion_tokens": 1, "cache_creation_input_tokens": 90},
            JudgeUsage(100, 1, 101, cache_creation_input_tokens=90),
        ),
        (
            {"prompt_tokens": 7, "prompt_tokens_details": {"cache_creation_tokens": 5}},
            JudgeUsage(7, 0, 7, cache_creation_input_tokens=5),
        ),
        (  # nulls read as zero
            {"prompt_tokens": None, "completion_tokens": None, "prompt_tokens_details": None},
            JudgeUsage(),
        ),
        (  # an integral float is a count
            {"prompt_tokens": 10.0, "completion_tokens": 5},
            JudgeUsage(input_tokens=10, output_tokens=5, total_tokens=15),
        ),
    ],
)
def test_normalize_usage(usage: Any, expected: JudgeUsage | None) -> None:
    assert normalize_usage(usage) == expected


def test_usage_adds_up_over_attempts() -> None:
    total = JudgeUsage(1, 2, 3, 4, 5, 6) + JudgeUsage(10, 20, 30, 40, 50, 60)
    assert total == JudgeUsage(11, 22, 33, 44, 55, 66)


@pytest.mark.parametrize(
    ("usage", "field", "shown"),
    [
        ({"completion_tokens": 1e20}, "output_tokens", "usage.completion_tokens 1e+20"),
        ({"completion_tokens": 10**20}, "output_tokens", "100000000000000000000"),
        ({"completion_tokens": 2**63}, "output_tokens", "9223372036854775808"),
        ({"prompt_tokens": -1}, "input_tokens", "usage.prompt_tokens -1"),
        ({"prompt_tokens": 2.5}, "input_tokens", "2.5"),
        ({"prompt_tokens": "3"}, "input_tokens", "'3'"),
        ({"prompt_tokens": True}, "input_tokens", "True"),
        ({"total_tokens": float("inf")}, "total_tokens", "inf"),
        (
            {"completion_tokens_details": {"reasoning_tokens": 1e30}},
            "reasoning_tokens",
            "completion_tokens_details.reasoning_tokens 1e+30",
        ),
        (
            {"prompt_tokens_details": {"cached_tokens": -3}},
            "cached_input_tokens",
            "prompt_tokens_details.cached_tokens -3",
        ),
        ({"cache_creation_input_tokens": 1e19}, "cache_creation_input_tokens", "1e+19"),
    ],
)
def test_a_count_that_is_not_a_count_is_absent_with_a_note(
    usage: dict[str, Any], field: str, shown: str
) -> None:
    normalized = normalize_usage(usage)
    assert normalized is not None
    assert getattr(normalized, field) is None
    (note,) = normalized.notes
    assert shown in note
    assert "recorded as absent" in note
    assert normalized.to_dict()["notes"] == [note]


def test_the_largest_int64_is_a_count_and_a_sum_past_it_is_absent() -> None:
    big = normalize_usage({"prompt_tokens": 2**63 - 1, "completion_tokens": 0})
    assert big == JudgeUsage(input_tokens=2**63 - 1, output_tokens=0, total_tokens=2**63 - 1)
    assert normalize_usage({"prompt_tokens": 2**63 - 1, "completion_tokens": 1}) == JudgeUsage(
        input_tokens=2**63 - 1, output_tokens=1, total_tokens=None
    )
    twice = big + big  # two attempts
    assert twice.input_tokens is None
    assert twice.output_tokens == 0


def test_an_absent_count_stays_absent_over_attempts() -> None:
    odd = normalize_usage({"prompt_tokens": 4, "completion_tokens": -1, "total_tokens": 4})
    assert odd is not None
    total = JudgeUsage(1, 2, 3) + odd
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (5, None, 7)
    assert total.notes == odd.notes
    assert len(total.notes) == 1


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"cost": 0.0012}, 0.0012),
        ({"cost": 0}, 0.0),
        ({}, None),
        ({"cost": None}, None),
        ({"cost": "0.1"}, None),
        ({"cost": -1}, None),
        ({"cost": float("nan")}, None),
        ({"cost": True}, None),
        (None, None),
    ],
)
def test_reported_cost_only_trusts_a_real_number(usage: Any, expected: float | None) -> None:
    assert reported_cost(usage) == expected
