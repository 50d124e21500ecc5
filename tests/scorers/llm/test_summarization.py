from __future__ import annotations

from typing import Any

import pytest

from evalkit import ConfigError, Judge
from evalkit.scorers import summarization
from evalkit.scorers._summarization import (
    COVERAGE,
    EMPTY_SUMMARY,
    INSTRUCTIONS,
    JUDGE_SOURCE,
    NOT_SCORABLE,
    REASON,
)
from evalkit.testing import FakeOpenAIServer
from tests.scorers.llm._helpers import assert_judged, refused, script, system_messages, user_prompts

SOURCE = "A long article about the Paris metro: 16 lines, opened in 1900, 4 million riders a day."


def judgement(supported: list[bool], questions: int) -> dict[str, Any]:
    return {
        "alignment": [
            {"claim": f"claim {i}", "reason": "r", "supported": ok}
            for i, ok in enumerate(supported)
        ],
        "questions": [f"question {i}?" for i in range(questions)],
    }


def coverage(*answered: bool) -> dict[str, Any]:
    return {
        "coverage": [
            {"question": f"question {i}?", "reason": "r", "answered": ok}
            for i, ok in enumerate(answered)
        ]
    }


async def test_the_lower_of_alignment_and_coverage(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {
            JUDGE_SOURCE: judgement([True, True, True, False], 5),
            COVERAGE: coverage(True, True, False, False, False),
            REASON: "Coverage limits it.",
        },
    )
    result = await summarization(judge=llm_judge).run(input=SOURCE, output="16 metro lines.")
    # alignment 3/4, coverage 2/5
    assert (result.score, result.reason) == (0.4, "Coverage limits it.")
    assert_judged(result, {"preprocess": 1, "analyze": 1, "generate_reason": 1})
    judge_source, judge_coverage, reason = user_prompts(llm_server)
    assert f"<source>\n{SOURCE}\n</source>" in judge_source
    assert "up to 10 closed questions" in judge_source
    assert SOURCE not in judge_coverage  # coverage is judged from the summary alone
    assert '<questions count="5">\n1. question 0?\n' in judge_coverage
    assert "alignment (0.75: " in reason
    assert "coverage (0.4: " in reason
    assert "1. claim 3" in reason
    assert system_messages(llm_server) == {INSTRUCTIONS}


async def test_questions_beyond_max_questions_are_dropped(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {JUDGE_SOURCE: judgement([True], 5), COVERAGE: coverage(True, False, True, True, True)},
    )
    scorer = summarization(judge=llm_judge, max_questions=2, explain=False)
    result = await scorer.run(input=SOURCE, output="Summary.")
    assert result.score == 0.5  # 1 of the 2 questions asked; extra answers ignored
    assert '<questions count="2">' in user_prompts(llm_server)[1]


async def test_unanswered_questions_count_against_coverage(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {JUDGE_SOURCE: judgement([True], 4), COVERAGE: coverage(True)})
    result = await summarization(judge=llm_judge, explain=False).run(input=SOURCE, output="S.")
    assert result.score == 0.25


@pytest.mark.parametrize(
    "reply", [judgement([], 3), judgement([True, True], 0)], ids=["no claims", "no questions"]
)
async def test_nothing_to_measure_scores_0_when_so_configured(
    llm_server: FakeOpenAIServer, llm_judge: Judge, reply: dict[str, Any]
) -> None:
    script(llm_server, {JUDGE_SOURCE: reply, COVERAGE: coverage(True, True, True)})
    scorer = summarization(judge=llm_judge, empty_extraction="score")
    result = await scorer.run(input=SOURCE, output="Summary.")
    assert (result.score, result.reason) == (0.0, NOT_SCORABLE)
    assert "generate_reason" not in result.judge
    assert len(result.judge["preprocess"].executions) == 2


async def test_an_empty_summary_scores_0_without_calls(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    result = await summarization(judge=llm_judge).run(input=SOURCE, output="")
    assert (result.score, result.reason) == (0.0, EMPTY_SUMMARY)
    assert result.judge == {}
    assert llm_server.stats.requests == 0


async def test_the_source_can_be_the_row_context(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {JUDGE_SOURCE: judgement([True], 1), COVERAGE: coverage(True)})
    scorer = summarization(judge=llm_judge, source="context", explain=False)
    result = await scorer.run(
        input="Summarise the document.",
        output="Summary.",
        request_context={"context": ["Part one.", "Part two."]},
    )
    assert result.score == 1.0
    assert "<source>\nPart one.\n\nPart two.\n</source>" in user_prompts(llm_server)[0]


async def test_a_missing_source_fails_before_any_call(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    cause = await refused(summarization(judge=llm_judge), input=None, output="S.")
    assert cause.field == "input"
    cause = await refused(summarization(judge=llm_judge, source="context"), output="S.")
    assert cause.field == "request_context"
    assert llm_server.stats.requests == 0


def test_max_questions_is_at_least_1() -> None:
    with pytest.raises(
        ConfigError, match="'max_questions' must be an integer from 1 to 1,000, got 0"
    ):
        summarization(max_questions=0)
