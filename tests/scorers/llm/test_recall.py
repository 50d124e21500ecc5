from __future__ import annotations

import pytest

from evalkit import Judge, ScorerRunError
from evalkit.scorers import context_recall
from evalkit.scorers._recall import ANALYZE, EXTRACT, INSTRUCTIONS, NO_CLAIMS, REASON
from evalkit.testing import FakeOpenAIServer
from tests.scorers.llm._helpers import (
    assert_judged,
    refused,
    script,
    system_messages,
    user_prompts,
    verdicts,
)

CONTEXT = {"context": ["Paris is the capital of France.", "It has 2.1 million people."]}
CLAIMS = {"claims": ["Paris is the capital.", "Paris has 2.1M people.", "Paris hosts the Louvre."]}


async def test_context_recall_is_the_share_of_attributed_claims(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {EXTRACT: CLAIMS, ANALYZE: verdicts("yes", "yes", "no", claim="c"), REASON: "No Louvre."},
    )
    result = await context_recall(judge=llm_judge).run(
        input="q",
        output="ignored",
        ground_truth="Paris, capital, 2.1M, Louvre.",
        request_context=CONTEXT,
    )
    assert (result.score, result.reason) == (0.67, "No Louvre.")
    assert_judged(result, {"preprocess": 1, "analyze": 1, "generate_reason": 1})
    extract, analyze, reason = user_prompts(llm_server)
    assert "<reference>\nParis, capital, 2.1M, Louvre.\n</reference>" in extract
    assert "1. Paris is the capital of France.\n2. It has 2.1 million people." in analyze
    assert "3. [no] c: because no" in reason
    assert system_messages(llm_server) == {INSTRUCTIONS}


async def test_more_verdicts_than_claims_fail_the_analysis(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {EXTRACT: {"claims": ["one"]}, ANALYZE: verdicts("yes", "yes", claim="c")})
    scorer = context_recall(judge=llm_judge, scale=4, explain=False)
    with pytest.raises(ScorerRunError) as caught:
        await scorer.run(input="q", output="a", ground_truth="one", request_context=CONTEXT)
    assert caught.value.failed_step == "analyze"
    assert "2 verdicts for the 1 items sent" in str(caught.value)


async def test_the_scale_multiplies_the_share(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server, {EXTRACT: {"claims": ["one", "two"]}, ANALYZE: verdicts("yes", "no", claim="c")}
    )
    scorer = context_recall(judge=llm_judge, scale=4, explain=False)
    result = await scorer.run(input="q", output="a", ground_truth="gt", request_context=CONTEXT)
    assert result.score == 2.0


async def test_an_empty_ground_truth_scores_0_without_calls(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    scorer = context_recall(judge=llm_judge)
    result = await scorer.run(input="q", output="a", ground_truth=" ", request_context=CONTEXT)
    assert (result.score, result.reason) == (0.0, NO_CLAIMS)
    assert result.judge == {}
    assert llm_server.stats.requests == 0


async def test_missing_ground_truth_or_context_fails_before_any_call(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    scorer = context_recall(judge=llm_judge)
    cause = await refused(scorer, request_context=CONTEXT)
    assert cause.field == "ground_truth"
    cause = await refused(scorer, ground_truth="Paris.")
    assert cause.field == "request_context"
    assert llm_server.stats.requests == 0
