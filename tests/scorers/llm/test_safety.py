from __future__ import annotations

import pytest

from evalkit import Judge
from evalkit.scorers import bias, toxicity
from evalkit.scorers._safety import (
    BIAS_ANALYZE,
    BIAS_EXTRACT,
    BIAS_INSTRUCTIONS,
    BIAS_REASON,
    EMPTY_OUTPUT,
    TOXICITY_ANALYZE,
    TOXICITY_INSTRUCTIONS,
    TOXICITY_REASON,
)
from evalkit.testing import FakeOpenAIServer
from tests.scorers.llm._helpers import (
    assert_judged,
    script,
    system_messages,
    user_prompts,
    verdicts,
)


async def test_toxicity_is_the_share_of_toxic_statements(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {
            TOXICITY_ANALYZE: verdicts("no", "yes", "no", statement="s"),
            TOXICITY_REASON: "The score is 0.33 because 'idiot'.",
        },
    )
    scorer = toxicity(judge=llm_judge)
    result = await scorer.run(input="Review my essay", output="Fine. You idiot. Bye.")
    assert (result.score, result.reason) == (0.33, "The score is 0.33 because 'idiot'.")
    assert_judged(result, {"analyze": 1, "generate_reason": 1})
    analyze, reason = user_prompts(llm_server)
    assert "<input>\nReview my essay\n</input>" in analyze
    assert "<output>\nFine. You idiot. Bye.\n</output>" in analyze
    assert "2. [yes] s: because yes" in reason
    assert system_messages(llm_server) == {TOXICITY_INSTRUCTIONS}
    assert scorer.higher_is_better is False


async def test_toxicity_scale(llm_server: FakeOpenAIServer, llm_judge: Judge) -> None:
    script(llm_server, {TOXICITY_ANALYZE: verdicts("yes", "yes", "no", "no", statement="s")})
    result = await toxicity(judge=llm_judge, scale=10, explain=False).run(input="q", output="a")
    assert result.score == 5.0
    assert_judged(result, {"analyze": 1})


@pytest.mark.parametrize("factory", [toxicity, bias])
async def test_an_empty_output_scores_0_without_calls(
    llm_server: FakeOpenAIServer, llm_judge: Judge, factory: object
) -> None:
    result = await factory(judge=llm_judge).run(input="q", output="")  # type: ignore[operator]
    assert (result.score, result.reason) == (0.0, EMPTY_OUTPUT)
    assert result.judge == {}
    assert llm_server.stats.requests == 0


async def test_toxicity_with_no_verdicts_twice_scores_0_when_so_configured(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    # Mastra scores this 1; here nothing judged is no evidence of toxicity.
    script(llm_server, {TOXICITY_ANALYZE: {"verdicts": []}})
    scorer = toxicity(judge=llm_judge, explain=False, empty_extraction="score")
    result = await scorer.run(input="q", output="...")
    assert result.score == 0.0
    assert len(result.judge["analyze"].executions) == 2


async def test_bias_is_the_share_of_biased_opinions(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {
            BIAS_EXTRACT: {"opinions": ["Cities are dangerous.", "Tea is nice."]},
            BIAS_ANALYZE: verdicts("yes", "no", opinion="o"),
            BIAS_REASON: "The score is 0.5 because.",
        },
    )
    scorer = bias(judge=llm_judge)
    result = await scorer.run(input="q", output="Cities are dangerous. Tea is nice.")
    assert (result.score, result.reason) == (0.5, "The score is 0.5 because.")
    assert_judged(result, {"preprocess": 1, "analyze": 1, "generate_reason": 1})
    _, analyze, reason = user_prompts(llm_server)
    assert "1. Cities are dangerous.\n2. Tea is nice." in analyze
    assert "1. [yes] o: because yes" in reason
    assert system_messages(llm_server) == {BIAS_INSTRUCTIONS}
    assert scorer.higher_is_better is False


async def test_without_opinions_the_whole_output_is_judged(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {BIAS_EXTRACT: {"opinions": []}, BIAS_ANALYZE: verdicts("yes", opinion="o")},
    )
    result = await bias(judge=llm_judge, explain=False).run(input="q", output="Only men code.")
    assert result.score == 1.0
    assert_judged(result, {"preprocess": 1, "analyze": 1})
    assert '<opinions count="1">\n1. Only men code.\n</opinions>' in user_prompts(llm_server)[1]
