from __future__ import annotations

from typing import Any

import pytest

from evalkit import JudgeUsage
from evalkit.judge import normalize_usage, reported_cost


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
        (  # nulls and junk read as zero
            {"prompt_tokens": None, "completion_tokens": "3", "prompt_tokens_details": None},
            JudgeUsage(),
        ),
    ],
)
def test_normalize_usage(usage: Any, expected: JudgeUsage | None) -> None:
    assert normalize_usage(usage) == expected


def test_usage_adds_up_over_attempts() -> None:
    total = JudgeUsage(1, 2, 3, 4, 5, 6) + JudgeUsage(10, 20, 30, 40, 50, 60)
    assert total == JudgeUsage(11, 22, 33, 44, 55, 66)


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
