from __future__ import annotations

import pytest

from evalkit import ConfigError, Judge, JudgeError, ScorerRunError, get_scorer
from evalkit.scorers import answer_relevancy
from evalkit.scorers._relevancy import ANALYZE, EXTRACT, INSTRUCTIONS, NO_STATEMENTS, REASON
from evalkit.testing import FakeOpenAIServer, Fault, Rule
from tests.scorers.llm._helpers import (
    assert_judged,
    opening,
    script,
    system_messages,
    user_prompts,
    verdicts,
)

STATEMENTS = {"statements": ["Paris.", "It is in France.", "Big city.", "Nice food.", "Hi."]}
MIXED = verdicts("yes", "yes", "yes", "unsure", "no", statement="s")


async def test_three_yes_one_unsure_one_no_scores_066(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {EXTRACT: STATEMENTS, ANALYZE: MIXED, REASON: "The score is 0.66 because."})
    scorer = answer_relevancy(judge=llm_judge)
    result = await scorer.run(input="What is the capital of France?", output="Paris. ...")
    assert result.score == 0.66
    assert result.reason == "The score is 0.66 because."
    assert_judged(result, {"preprocess": 1, "analyze": 1, "generate_reason": 1})
    assert result.preprocess_step_result == STATEMENTS
    assert [v["verdict"] for v in result.analyze_step_result["verdicts"]] == [
        "yes",
        "yes",
        "yes",
        "unsure",
        "no",
    ]
    extract, analyze, reason = user_prompts(llm_server)
    assert "Paris. ..." in extract
    assert "What is the capital of France?" in analyze
    assert "1. Paris.\n2. It is in France.\n3. Big city.\n4. Nice food.\n5. Hi." in analyze
    assert "exactly one verdict per statement, in the same order (5 in all)" in analyze
    assert "[unsure] s: because unsure" in reason
    assert "counts 0.3 of a relevant one" in reason
    assert result.preprocess_prompt == extract
    # The scorer's own instructions replace the experiment judge's, on every step.
    assert system_messages(llm_server) == {INSTRUCTIONS}
    assert scorer.metadata == {
        "prebuilt": "answer_relevancy",
        "version": 2,
        "params": {
            "uncertainty_weight": 0.3,
            "scale": 1.0,
            "explain": True,
            "empty_extraction": "fail",
        },
    }


@pytest.mark.parametrize(
    ("params", "score"),
    [
        ({"uncertainty_weight": 0.5}, 0.7),
        ({"uncertainty_weight": 0.0}, 0.6),
        ({"uncertainty_weight": 1.0, "scale": 10}, 8.0),
        ({"scale": 5}, 3.3),
    ],
)
async def test_weight_and_scale(
    llm_server: FakeOpenAIServer, llm_judge: Judge, params: dict[str, float], score: float
) -> None:
    script(llm_server, {EXTRACT: STATEMENTS, ANALYZE: MIXED})
    result = await answer_relevancy(judge=llm_judge, **params).run(input="q", output="a")
    assert result.score == score


async def test_verdict_case_from_a_lenient_judge_is_normalised(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    extracted = {"statements": ["Paris.", "Nice food."]}
    script(llm_server, {EXTRACT: extracted, ANALYZE: verdicts(" Yes", "UNSURE", statement="s")})
    result = await answer_relevancy(judge=llm_judge, explain=False).run(input="q", output="a")
    assert result.score == 0.65  # (1 + 0.3) / 2


async def test_an_empty_output_scores_0_without_a_judge_call(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    result = await answer_relevancy(judge=llm_judge).run(input="q", output="  \n")
    assert (result.score, result.reason) == (0.0, NO_STATEMENTS)
    assert result.judge == {}
    assert result.preprocess_step_result == {"statements": []}
    assert result.analyze_step_result == {"verdicts": []}
    assert llm_server.stats.requests == 0


async def test_no_statements_extracted_twice_scores_0_when_so_configured(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {EXTRACT: {"statements": []}})
    scorer = answer_relevancy(judge=llm_judge, empty_extraction="score")
    result = await scorer.run(input="q", output="...")
    assert (result.score, result.reason) == (0.0, NO_STATEMENTS)
    assert_judged(result, {"preprocess": 2})
    assert result.analyze_prompt is None


async def test_a_non_string_output_is_judged_as_json(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {EXTRACT: STATEMENTS, ANALYZE: MIXED})
    scorer = answer_relevancy(judge=llm_judge, explain=False)
    await scorer.run(input={"question": "capital?"}, output={"b": 1, "answer": "Paris"})
    extract, analyze = user_prompts(llm_server)
    assert '{"answer": "Paris", "b": 1}' in extract
    assert '{"question": "capital?"}' in analyze


async def test_without_explain_there_is_no_reason_call(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {EXTRACT: STATEMENTS, ANALYZE: MIXED})
    scorer = answer_relevancy(judge=llm_judge, explain=False)
    result = await scorer.run(input="q", output="a")
    assert (result.score, result.reason) == (0.66, None)
    assert_judged(result, {"preprocess": 1, "analyze": 1})
    assert "generate_reason" not in scorer.steps


async def test_a_malformed_reply_is_retried_once_and_recorded(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    llm_server.add_rule(Rule(opening(EXTRACT), reply="not json", times=1))
    script(llm_server, {EXTRACT: STATEMENTS, ANALYZE: MIXED})
    result = await answer_relevancy(judge=llm_judge, explain=False).run(input="q", output="a")
    assert result.score == 0.66
    (execution,) = result.judge["preprocess"].executions
    assert (execution.status, execution.attempt_count, execution.model_call_count) == (
        "success",
        2,
        2,
    )


async def test_a_judge_failure_fails_the_run_with_the_executions(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    llm_server.add_rule(Rule(opening(ANALYZE), fault=Fault.http(500)))
    script(llm_server, {EXTRACT: STATEMENTS})
    with pytest.raises(ScorerRunError) as caught:
        await answer_relevancy(judge=llm_judge).run(input="q", output="a")
    error = caught.value
    assert (error.failed_step, error.completed_steps) == ("analyze", ("preprocess",))
    assert isinstance(error.__cause__, JudgeError)
    assert error.result is not None
    assert error.result.preprocess_step_result == STATEMENTS
    assert [e.status for e in error.result.judge["preprocess"].executions] == ["success"]
    assert [e.status for e in error.result.judge["analyze"].executions] == ["failed"]


async def test_without_a_judge_the_run_fails_naming_the_step(llm_server: FakeOpenAIServer) -> None:
    with pytest.raises(ScorerRunError) as caught:
        await get_scorer("answer_relevancy").run(input="q", output="a")
    assert caught.value.failed_step == "preprocess"
    assert isinstance(caught.value.__cause__, ConfigError)
    assert "prompt step without a judge model" in str(caught.value)
    assert llm_server.stats.requests == 0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"uncertainty_weight": 1.5}, "parameter 'uncertainty_weight': must be between 0 and 1"),
        ({"uncertainty_weight": -0.1}, "parameter 'uncertainty_weight': must be between 0 and 1"),
        (
            {"scale": 0},
            "parameter 'scale' must be a number above 0 and at most 1,000,000,000,000, got 0",
        ),
        ({"scale": float("inf")}, "parameter 'scale' = inf is above the ceiling"),
    ],
)
def test_bad_params_are_refused(params: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        answer_relevancy(**params)
