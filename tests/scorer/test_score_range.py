"""``PromptStep(score_range=...)``: a generate_score prompt step declares the scores it asks for."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from evalkit import ConfigError, Judge, JudgeError, PromptStep, ScorerRunError, create_scorer
from evalkit.testing import FakeOpenAIServer, Rule


def ranged(score_range: Any = (0, 1)) -> PromptStep:
    return PromptStep(
        "grade", lambda run: f"Grade from 0 to 1: {run.output}", score_range=score_range
    )


async def test_a_score_outside_the_range_fails_naming_the_value_and_the_range(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Grade", reply={"score": 1e15}))
    scorer = create_scorer("Graded", judge=judge).generate_score(ranged())
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(input="q", output="a")

    error = info.value
    assert error.failed_step == "generate_score"
    assert isinstance(error.__cause__, JudgeError)
    assert error.__cause__.code == "format"
    message = str(error.__cause__)
    assert "the score 1e+15 is outside the step's range 0 to 1" in message
    assert '{"score": number from 0 to 1}' in message
    assert error.result is not None
    (execution,) = error.result.judge["generate_score"].executions
    assert (execution.status, execution.attempt_count) == ("failed", 2)
    assert execution.raw_output is not None
    assert json.loads(execution.raw_output) == {"score": 1e15}
    # The fallback, asked once more, is told the range.
    first, fallback = (request["messages"][-1]["content"] for request in server.requests)
    assert "must be from" not in first
    assert fallback.endswith("The score must be from 0 to 1.")


async def test_the_fallback_answering_within_the_range_scores(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Grade", reply={"score": 7}, response_format="json_schema"))
    server.add_rule(Rule("Grade", reply={"score": 0.7}, response_format="json_object"))
    scorer = create_scorer("Graded", judge=judge).generate_score(ranged())
    result = await scorer.run(input="q", output="a")
    assert result.score == 0.7
    (execution,) = result.judge["generate_score"].executions
    assert (execution.status, execution.attempt_count) == ("success", 2)


@pytest.mark.parametrize("score", [0, 1, 0.5, -0.0])
async def test_the_bounds_are_inside_the_range(
    server: FakeOpenAIServer, judge: Judge, score: float
) -> None:
    server.add_rule(Rule("Grade", reply={"score": score}))
    result = (
        await create_scorer("Graded", judge=judge)
        .generate_score(ranged())
        .run(input="q", output="a")
    )
    assert result.score == score
    assert len(server.requests) == 1


async def test_without_a_range_any_finite_score_is_taken(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Grade", reply={"score": 1e15}))
    result = (
        await create_scorer("Graded", judge=judge)
        .generate_score(ranged(None))
        .run(input="q", output="a")
    )
    assert result.score == 1e15


async def test_a_negative_range(server: FakeOpenAIServer, judge: Judge) -> None:
    server.add_rule(Rule("Grade", reply={"score": 0.5}))
    scorer = create_scorer("Graded", judge=judge).generate_score(ranged((-5, -1)))
    with pytest.raises(ScorerRunError, match=re.escape("0.5 is outside the step's range -5 to -1")):
        await scorer.run(input="q", output="a")


@pytest.mark.parametrize(
    ("score_range", "problem"),
    [
        ((1, 0), "with low below high; got (1, 0)"),
        ((1, 1), "with low below high; got (1, 1)"),
        ((0, float("inf")), "two finite numbers; got (0, inf)"),
        ((float("nan"), 1), "two finite numbers; got (nan, 1)"),
        ((0, 1, 2), "got (0, 1, 2)"),
        ((0,), "got (0,)"),
        ("01", "got '01'"),
        (1, "got 1"),
        ((0, "1"), "got (0, '1')"),
        ((False, True), "got (False, True)"),
    ],
)
def test_a_bad_score_range_is_refused_when_the_step_is_made(score_range: Any, problem: str) -> None:
    with pytest.raises(
        ConfigError, match=re.escape("PromptStep 'grade': score_range must be")
    ) as info:
        ranged(score_range)
    assert str(info.value).endswith(problem)


@pytest.mark.parametrize("kind", ["preprocess", "analyze", "generate_reason"])
def test_score_range_belongs_to_generate_score_steps_only(kind: str) -> None:
    step = PromptStep(
        "grade",
        lambda: "x",
        score_range=(0, 1),
        output_schema={"type": "object"} if kind in ("preprocess", "analyze") else None,
    )
    with pytest.raises(ConfigError, match=f"{kind} step: score_range applies to a generate_score"):
        getattr(create_scorer("Graded"), kind)(step)


def test_the_range_is_kept_as_floats() -> None:
    assert ranged([0, 10]).score_range == (0.0, 10.0)
