from __future__ import annotations

from typing import Any

import pytest

from evalkit import Judge, ScorerRunError
from evalkit.scorers import prompt_alignment
from evalkit.scorers._alignment import ANALYZE, EMPTY_OUTPUT, INSTRUCTIONS, REASON
from evalkit.testing import FakeOpenAIServer
from tests.scorers.llm._helpers import (
    assert_judged,
    opening,
    refused,
    script,
    system_messages,
    user_prompts,
)


def analysis(
    intent: float, requirements: float, completeness: float, form: float
) -> dict[str, Any]:
    return {
        "intent_alignment": {
            "primary_intent": "get a function",
            "reasoning": "r",
            "is_addressed": True,
            "score": intent,
        },
        "requirements_fulfillment": {
            "requirements": [{"requirement": "Python", "reasoning": "r", "is_fulfilled": True}],
            "overall_score": requirements,
        },
        "completeness": {"missing_elements": [], "reasoning": "r", "score": completeness},
        "response_appropriateness": {
            "reasoning": "r",
            "format_alignment": True,
            "tone_alignment": True,
            "score": form,
        },
        "overall_assessment": "fine",
    }


async def test_user_mode_weighs_intent_requirements_completeness_form(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {ANALYZE["user"]: analysis(1, 0.5, 0.8, 1), REASON: "Half the reqs."})
    scorer = prompt_alignment(judge=llm_judge)
    result = await scorer.run(input="Write a Python factorial.", output="def f(n): ...")
    # 0.4 * 1 + 0.3 * 0.5 + 0.2 * 0.8 + 0.1 * 1
    assert (result.score, result.reason) == (0.81, "Half the reqs.")
    assert_judged(result, {"analyze": 1, "generate_reason": 1})
    assert result.preprocess_step_result == {"user": "Write a Python factorial.", "system": ""}
    analyze, reason = user_prompts(llm_server)
    assert "<user_prompt>\nWrite a Python factorial.\n</user_prompt>" in analyze
    assert "<response>\ndef f(n): ...\n</response>" in analyze
    assert "intent 0.4, requirements 0.3" in reason
    assert '"overall_assessment": "fine"' in reason
    assert system_messages(llm_server) == {INSTRUCTIONS}


async def test_system_mode_uses_the_system_weights(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {ANALYZE["system"]: analysis(1, 0.5, 0.8, 1)})
    scorer = prompt_alignment(
        judge=llm_judge, evaluation_mode="system", system_prompt="Answer in French.", scale=10
    )
    result = await scorer.run(input="Hello", output="Bonjour")
    # 0.35 + 0.35 * 0.5 + 0.15 * 0.8 + 0.15 = 0.795, rounded half-up
    assert result.score == 7.95
    assert "<system_prompt>\nAnswer in French.\n</system_prompt>" in user_prompts(llm_server)[0]


async def test_both_mode_combines_two_analyses(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {ANALYZE["both"]: {"user": analysis(1, 0.5, 0.8, 1), "system": analysis(0.5, 0, 1, 0)}},
    )
    scorer = prompt_alignment(judge=llm_judge, evaluation_mode="both", explain=False)
    result = await scorer.run(
        input=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Explain DNS."},
        ],
        output="DNS maps names to addresses.",
    )
    # 0.7 * 0.81 + 0.3 * (0.35 * 0.5 + 0.15 * 1) = 0.567 + 0.0975
    assert result.score == 0.66
    assert result.preprocess_step_result == {"user": "Explain DNS.", "system": "Be brief."}
    assert_judged(result, {"analyze": 1})


async def test_the_system_prompt_can_come_from_the_row(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {ANALYZE["system"]: analysis(1, 1, 1, 1)})
    scorer = prompt_alignment(judge=llm_judge, evaluation_mode="system", explain=False)
    result = await scorer.run(
        input="Hi", output="Hello", request_context={"system_prompt": "Greet politely."}
    )
    assert result.score == 1.0
    assert result.preprocess_step_result["system"] == "Greet politely."


@pytest.mark.parametrize(
    ("mode", "row", "field"),
    [
        ("user", {"input": "  "}, "input"),
        ("system", {"input": "Hi"}, "request_context"),
        ("both", {"input": [{"role": "user", "content": "Hi"}]}, "request_context"),
    ],
)
async def test_a_missing_prompt_fails_before_any_call(
    llm_server: FakeOpenAIServer,
    llm_judge: Judge,
    mode: Any,
    row: dict[str, Any],
    field: str,
) -> None:
    cause = await refused(prompt_alignment(judge=llm_judge, evaluation_mode=mode), **row)
    assert cause.field == field
    assert llm_server.stats.requests == 0


async def test_an_empty_output_scores_0_without_calls(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    result = await prompt_alignment(judge=llm_judge).run(input="Explain DNS.", output="")
    assert (result.score, result.reason) == (0.0, EMPTY_OUTPUT)
    assert result.judge == {}
    assert llm_server.stats.requests == 0


async def test_a_dimension_score_above_1_is_a_judge_format_failure(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {ANALYZE["user"]: analysis(1.5, 1, 1, 1)})
    with pytest.raises(ScorerRunError) as caught:
        await prompt_alignment(judge=llm_judge).run(input="q", output="a")
    assert caught.value.failed_step == "analyze"
    assert "must be between 0 and 1, got 1.5" in str(caught.value)
    assert caught.value.result is not None
    (failed,) = caught.value.result.judge["analyze"].executions
    assert failed.error is not None
    assert (failed.attempt_count, failed.error.code) == (2, "format")
    assert opening(ANALYZE["user"]) in failed.prompt
