from __future__ import annotations

import json
from typing import Any

import pytest

from evalkit import ConfigError, Judge, ScorerRunError
from evalkit.scorers import faithfulness, hallucination
from evalkit.scorers._faithfulness import (
    ANALYZE,
    EXTRACT,
    INSTRUCTIONS,
    NO_CLAIMS,
    REASON,
    Kind,
)
from evalkit.testing import FakeOpenAIServer
from tests.scorers.llm._helpers import (
    assert_judged,
    refused,
    script,
    system_messages,
    user_prompts,
    verdicts,
)

CLAIMS = {"claims": ["Paris is in France.", "Paris has 2 million people.", "It is 3000 years old."]}
CONTEXT = ["Paris is the capital of France.", "About 2.1 million people live in Paris."]


def replies(kind: Kind, *values: str, reason: str = "The reason.") -> dict[Any, Any]:
    return {
        EXTRACT: {"claims": [f"claim {i}" for i in range(len(values))]},
        ANALYZE[kind]: verdicts(*values, claim="c"),
        REASON[kind]: reason,
    }


async def test_faithfulness_is_the_share_of_supported_claims(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, replies("faithfulness", "yes", "yes", "no", "unsure"))
    scorer = faithfulness(judge=llm_judge)
    result = await scorer.run(
        input="Tell me about Paris", output="Paris ...", request_context={"context": CONTEXT}
    )
    assert (result.score, result.reason) == (0.5, "The reason.")
    assert_judged(result, {"preprocess": 1, "analyze": 1, "generate_reason": 1})
    _, analyze, reason = user_prompts(llm_server)
    assert "1. Paris is the capital of France.\n2. About 2.1 million people" in analyze
    assert "1. claim 0\n2. claim 1\n3. claim 2\n4. claim 3" in analyze
    assert "[no] c: because no" in reason
    assert system_messages(llm_server) == {INSTRUCTIONS["faithfulness"]}
    assert scorer.higher_is_better is True


async def test_hallucination_is_the_share_of_hallucinated_claims(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, replies("hallucination", "no", "yes", "no", "no"))
    scorer = hallucination(judge=llm_judge, context=CONTEXT)
    result = await scorer.run(input="q", output="Paris ...")
    assert result.score == 0.25
    assert_judged(result, {"preprocess": 1, "analyze": 1, "generate_reason": 1})
    assert system_messages(llm_server) == {INSTRUCTIONS["hallucination"]}
    assert scorer.higher_is_better is False


async def test_unsure_is_not_a_hallucination_verdict(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    # "unsure" fails hallucination's yes/no schema twice (structured output, then JSON mode).
    script(llm_server, replies("hallucination", "unsure"))
    with pytest.raises(ScorerRunError, match="did not answer JSON matching") as caught:
        await hallucination(judge=llm_judge, context=CONTEXT).run(input="q", output="a")
    assert caught.value.failed_step == "analyze"
    assert caught.value.result is not None
    (failed,) = caught.value.result.judge["analyze"].executions
    assert failed.error is not None
    assert (failed.status, failed.attempt_count, failed.error.code) == ("failed", 2, "format")


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"request_context": {"context": CONTEXT}}, CONTEXT),
        ({"request_context": {"context": "One passage."}}, ["One passage."]),
        ({"request_context": json.dumps({"context": CONTEXT})}, CONTEXT),
        ({"request_context": {"context": json.dumps(CONTEXT)}}, CONTEXT),
        ({"request_context": {"context": ["", "  ", "Kept."]}}, ["Kept."]),
        ({"request_context": {"context": [{"id": 1}]}}, ['{"id": 1}']),
        ({"input": {"question": "q", "context": CONTEXT}}, CONTEXT),
        ({"request_context": {"docs": ["From docs."]}, "key": "docs"}, ["From docs."]),
        ({"request_context": {"context": ["Row."]}, "fixed": ["Param."]}, ["Param."]),
    ],
)
async def test_where_the_context_comes_from(
    llm_server: FakeOpenAIServer, llm_judge: Judge, row: dict[str, Any], expected: list[str]
) -> None:
    script(llm_server, replies("faithfulness", "yes"))
    scorer = faithfulness(
        judge=llm_judge,
        explain=False,
        context=row.pop("fixed", None),
        context_key=row.pop("key", "context"),
    )
    row.setdefault("input", "q")
    result = await scorer.run(output="answer", **row)
    assert result.score == 1.0
    _, analyze = user_prompts(llm_server)
    listed = "\n".join(f"{number}. {text}" for number, text in enumerate(expected, 1))
    assert f"<context>\n{listed}\n</context>" in analyze


@pytest.mark.parametrize("factory", [faithfulness, hallucination])
@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({}, "no 'context' key in the request context or the input"),
        ({"request_context": {"other": 1}}, "no 'context' key"),
        ({"request_context": {"context": None}}, "no 'context' key"),
        ({"request_context": {"context": []}}, "'context' holds no text"),
        ({"request_context": {"context": "  "}}, "'context' holds no text"),
    ],
)
async def test_a_row_without_context_fails_before_any_call(
    llm_server: FakeOpenAIServer,
    llm_judge: Judge,
    factory: Any,
    row: dict[str, Any],
    problem: str,
) -> None:
    cause = await refused(factory(judge=llm_judge), **row)
    assert cause.field == "request_context"
    assert problem in cause.problem
    assert llm_server.stats.requests == 0


@pytest.mark.parametrize("kind", ["faithfulness", "hallucination"])
async def test_an_empty_output_has_no_claims_and_scores_0_without_calls(
    llm_server: FakeOpenAIServer, llm_judge: Judge, kind: Kind
) -> None:
    scorer = (faithfulness if kind == "faithfulness" else hallucination)(judge=llm_judge)
    result = await scorer.run(input="q", output=None, request_context={"context": CONTEXT})
    assert (result.score, result.reason) == (0.0, NO_CLAIMS[kind])
    assert result.judge == {}
    assert llm_server.stats.requests == 0


async def test_no_claims_extracted_twice_scores_0_when_so_configured(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {EXTRACT: {"claims": []}})
    scorer = faithfulness(judge=llm_judge, context=CONTEXT, empty_extraction="score")
    result = await scorer.run(input="q", output="Hm.")
    assert (result.score, result.reason) == (0.0, NO_CLAIMS["faithfulness"])
    assert_judged(result, {"preprocess": 2})


async def test_claims_are_extracted_from_json_outputs(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {EXTRACT: CLAIMS, ANALYZE["faithfulness"]: verdicts("yes", "yes", "no", claim="c")},
    )
    scorer = faithfulness(judge=llm_judge, context=CONTEXT, explain=False)
    result = await scorer.run(input="q", output=["Paris", {"pop": 2}])
    assert result.score == 0.67
    assert '["Paris", {"pop": 2}]' in user_prompts(llm_server)[0]


@pytest.mark.parametrize("context", [[], ["", " "]])
def test_an_empty_context_param_is_refused(context: list[str]) -> None:
    with pytest.raises(ConfigError, match="scorer 'faithfulness', parameter 'context': holds no"):
        faithfulness(context=context)
