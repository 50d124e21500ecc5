"""Failure groups: a run's failures as distinct errors with counts, built from its items."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit import create_scorer, run_evals
from evalkit._error_pattern import error_pattern
from evalkit.report import FailureGroup, failure_groups
from evalkit.report._build import build_report


@pytest.mark.parametrize(
    ("message", "pattern"),
    [
        ("row 12 failed after 1.5 s", "row <n> failed after <n> s"),
        ("HTTP 500 after 3 retries", "HTTP 500 after <n> retries"),
        ("experiment 6b73d2d4d93a is locked", "experiment <hex> is locked"),
        (
            "run 0b5e8a52-1c4e-4f2a-9d33-5f1e2a3b4c5d lost",
            "run <uuid> lost",
        ),
        ("request req_8f3aB91c2dE4 refused", "request <id> refused"),
        ("got 'yes' and \"no\" instead", "got '…' and \"…\" instead"),
        ("upstream 10.0.0.2 refused", "upstream <n> refused"),
        # Endpoints stay readable: they say which server failed (issue 29 item 8).
        ("connect to 127.0.0.1:8000 failed", "connect to 127.0.0.1:8000 failed"),
        (
            "judge 'm' at http://127.0.0.1:8000/v1: no reply within the 300 s timeout",
            "judge '…' at http://127.0.0.1:8000/v1: no reply within the <n> s timeout",
        ),
        ("at http://[::1]:8080/v1 after 3 tries", "at http://[::1]:8080/v1 after <n> tries"),
        ("localhost:11434 refused 2 times", "localhost:11434 refused <n> times"),
        (
            "GET https://api.example.com/v1/batches/batch_8f3aB91c2dE4 failed",
            "GET https://api.example.com/v1/batches/<id> failed",
        ),
        ("judge-0.judges.svc:8080 said 503", "judge-0.judges.svc:8080 said <n>"),
        ("at 12:30 row 4", "at <n>:<n> row <n>"),
        ("no digits here", "no digits here"),
    ],
)
def test_error_patterns_replace_ids_numbers_and_quoted_values(message: str, pattern: str) -> None:
    assert error_pattern(message) == pattern


def scorer() -> Any:
    def score(run: Any) -> float:
        n = int(run.input[1:])
        if n % 4 == 0:
            raise TimeoutError(f"row {n} timed out after {n * 1.5} s (request {n:08x}ab)")
        if n % 4 == 1:
            raise ValueError(f"bad label 'x{n}'")
        return 1.0

    return create_scorer("picky").generate_score(score)


def target(input: str) -> str:
    if input in ("q2", "q6"):
        raise ConnectionError(f"upstream 10.0.0.{input[1:]} refused")
    return "out"


async def test_groups_count_distinct_errors_largest_first_with_an_example() -> None:
    data = [{"id": f"item-{n}", "input": f"q{n}"} for n in range(13)]
    result = await run_evals(data, [scorer()], target=target, store=None, progress=False)

    groups = failure_groups(result.items, scorer_ids=result.scorer_ids)
    assert [(g.scorer_id, g.error_type, g.count) for g in groups] == [
        ("(target)", "ConnectionError", 2),
        ("picky", "TimeoutError", 4),  # items 0, 4, 8, 12
        ("picky", "ValueError", 3),  # items 1, 5, 9
    ]
    timeout = groups[1]
    assert timeout == FailureGroup(
        scorer_id="picky",
        error_type="TimeoutError",
        pattern="row <n> timed out after <n> s (request <hex>)",
        count=4,
        example_item_id="item-0",
        example_message="row 0 timed out after 0.0 s (request 00000000ab)",
        failed_step="generate_score",
    )
    assert groups[2].pattern == "bad label '…'"
    assert groups[0].failed_step is None
    assert "upstream" in groups[0].example_message
    assert timeout.to_dict()["count"] == 4


async def test_the_report_carries_the_groups() -> None:
    data = [{"id": f"item-{n}", "input": f"q{n}"} for n in range(8)]
    result = await run_evals(data, [scorer()], target=target, store=None, progress=False)
    report = build_report(result)
    assert report.failure_groups == failure_groups(result.items, scorer_ids=result.scorer_ids)
    assert sum(g.count for g in report.failure_groups) == len(report.failures)


async def test_a_run_without_kept_results_has_no_groups() -> None:
    data = [{"id": f"item-{n}", "input": f"q{n}"} for n in range(8)]
    result = await run_evals(
        data, [scorer()], target=target, store=None, progress=False, keep_results=False
    )
    assert result.summary.failed > 0
    assert build_report(result).failure_groups == ()


async def test_failures_differing_by_a_count_group_together_with_their_endpoint_readable() -> None:
    url = "http://127.0.0.1:8000/v1"

    def judged(run: Any) -> float:
        n = int(run.input[1:])
        raise RuntimeError(f"judge 'm' at {url}: no reply within the 300 s timeout ({n} retries)")

    data = [{"id": f"item-{n}", "input": f"q{n}", "output": "a"} for n in range(5)]
    result = await run_evals(
        data, [create_scorer("slow").generate_score(judged)], store=None, progress=False
    )
    (group,) = failure_groups(result.items, scorer_ids=result.scorer_ids)
    assert group.count == 5
    assert group.pattern == (
        "judge '…' at http://127.0.0.1:8000/v1: no reply within the <n> s timeout (<n> retries)"
    )
