from __future__ import annotations

import json
import math
from typing import Any

import pytest

from evalkit import EvalkitError, InvalidScoreError, ScorerRunError, create_scorer


def boom(message: str) -> Any:
    def fn() -> Any:
        raise RuntimeError(message)

    return fn


async def run_failing(scorer: Any) -> ScorerRunError:
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(input="q", output="a", ground_truth="g", run_id="r-1")
    return info.value


async def test_preprocess_failure_has_no_result() -> None:
    scorer = create_scorer("flaky").preprocess(boom("no data")).generate_score(lambda: 1)
    error = await run_failing(scorer)
    assert error.failed_step == "preprocess"
    assert error.completed_steps == ()
    assert error.result is None
    assert isinstance(error.__cause__, RuntimeError)
    assert str(error) == "Scorer 'flaky' failed at preprocess: no data"


async def test_analyze_failure_keeps_preprocess_result_and_no_score() -> None:
    scorer = (
        create_scorer("flaky")
        .preprocess(lambda run: {"words": 3})
        .analyze(boom("analysis exploded"))
        .generate_score(lambda: 1)
    )
    error = await run_failing(scorer)
    assert error.failed_step == "analyze"
    assert error.completed_steps == ("preprocess",)
    assert error.result is not None
    assert error.result.preprocess_step_result == {"words": 3}
    assert error.result.analyze_step_result is None
    assert error.result.score is None
    assert (error.result.run_id, error.result.input, error.result.ground_truth) == (
        "r-1",
        "q",
        "g",
    )


async def test_analyze_failing_first_has_no_result() -> None:
    scorer = create_scorer("flaky").analyze(boom("x")).generate_score(lambda: 1)
    error = await run_failing(scorer)
    assert (error.failed_step, error.completed_steps, error.result) == ("analyze", (), None)


async def test_generate_reason_failure_after_zero_score_keeps_the_score() -> None:
    scorer = (
        create_scorer("flaky")
        .preprocess(lambda: "p")
        .analyze(lambda: "a")
        .generate_score(lambda: 0)
        .generate_reason(boom("reason exploded"))
    )
    error = await run_failing(scorer)
    assert error.failed_step == "generate_reason"
    assert error.completed_steps == ("preprocess", "analyze", "generate_score")
    assert error.result is not None
    assert error.result.score == 0
    assert error.result.reason is None
    assert (error.result.preprocess_step_result, error.result.analyze_step_result) == ("p", "a")
    assert str(error) == "Scorer 'flaky' failed at generate_reason: reason exploded"


async def test_async_step_failure_is_reported_like_a_sync_one() -> None:
    async def failing() -> float:
        raise ValueError("async boom")

    error = await run_failing(create_scorer("flaky").generate_score(failing))
    assert error.failed_step == "generate_score"
    assert isinstance(error.__cause__, ValueError)


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, "0.5", None, True, False, [1.0], 1 + 2j]
)
async def test_non_finite_or_non_numeric_score_fails_generate_score(value: Any) -> None:
    scorer = create_scorer("Weird").preprocess(lambda: "p").generate_score(lambda: value)
    error = await run_failing(scorer)
    assert error.failed_step == "generate_score"
    assert error.completed_steps == ("preprocess",)
    assert isinstance(error.__cause__, InvalidScoreError)
    assert error.result is not None
    assert error.result.score is None
    assert "not a finite number" in str(error)


@pytest.mark.parametrize("value", [0, 1, -3, 0.5, 10**6])
async def test_finite_real_scores_become_floats(value: float) -> None:
    result = await create_scorer("Num").generate_score(lambda: value).run(input=1, output=2)
    assert result.score == float(value)
    assert type(result.score) is float


async def test_non_text_reason_fails_generate_reason() -> None:
    scorer = create_scorer("R").generate_score(lambda: 1).generate_reason(lambda: 42)
    error = await run_failing(scorer)
    assert error.failed_step == "generate_reason"
    assert error.result is not None
    assert error.result.score == 1.0


async def test_serialisation_omits_result() -> None:
    scorer = (
        create_scorer("flaky", id="flaky-v1")
        .preprocess(lambda: {"secret_payload": "x" * 50})
        .generate_score(boom("score exploded"))
    )
    error = await run_failing(scorer)
    assert error.result is not None
    data = error.to_dict()
    assert data == {
        "name": "ScorerRunError",
        "message": "Scorer 'flaky' failed at generate_score: score exploded",
        "scorer_id": "flaky-v1",
        "failed_step": "generate_score",
        "completed_steps": ["preprocess"],
        "cause": {"name": "RuntimeError", "message": "score exploded"},
    }
    assert "secret_payload" not in json.dumps(data)
    assert "secret_payload" not in str(error)
    assert isinstance(error, EvalkitError)


async def test_cause_without_message_is_named_by_its_class() -> None:
    def fails() -> float:
        raise KeyError

    error = await run_failing(create_scorer("flaky").generate_score(fails))
    assert str(error) == "Scorer 'flaky' failed at generate_score: KeyError"
