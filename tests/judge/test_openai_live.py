"""One scorer against the real OpenAI API: runs only when OPENAI_API_KEY is set.

``EVALKIT_OPENAI_TEST_MODEL`` picks the model (default ``gpt-4o-mini``). Costs a fraction of a
cent per run.
"""

from __future__ import annotations

import os

import pytest
from pydantic import BaseModel

from evalkit import Judge, PromptStep, create_scorer

pytestmark = pytest.mark.skipif(
    not os.environ.get("OPENAI_API_KEY"), reason="OPENAI_API_KEY is not set (real OpenAI API)"
)


class Verdict(BaseModel):
    correct: bool
    explanation: str


async def test_a_prompt_scorer_against_the_real_openai_api() -> None:
    model = os.environ.get("EVALKIT_OPENAI_TEST_MODEL", "gpt-4o-mini")
    judge = Judge(model, "You grade answers to questions strictly and briefly.", max_tokens=300)
    scorer = (
        create_scorer("Live Correctness", judge=judge)
        .analyze(
            PromptStep(
                "verdict",
                lambda run: f"Question: {run.input}\nAnswer: {run.output}\nIs the answer correct?",
                output_schema=Verdict,
            )
        )
        .generate_score(
            PromptStep(
                "score",
                lambda results: (
                    f"Give a score from 0 to 1 for this verdict: {results.analyze_step_result}"
                ),
            )
        )
        .generate_reason(PromptStep("reason", lambda score: f"In one sentence, why {score}?"))
    )
    result = await scorer.run(
        input="What is the capital of France?", output="Paris is the capital of France."
    )

    assert result.analyze_step_result["correct"] is True
    assert result.score is not None
    assert 0.5 <= result.score <= 1.0
    assert result.reason
    for step in ("analyze", "generate_score", "generate_reason"):
        (execution,) = result.judge[step].executions
        assert execution.status == "success"
        assert execution.judge_model_id == model
        assert execution.attempt_count == 1  # native structured output worked first time
        assert execution.usage is not None
        assert execution.usage.input_tokens is not None
        assert execution.usage.input_tokens > 0
        assert (execution.usage.total_tokens or 0) >= execution.usage.input_tokens
        assert execution.cost is None  # OpenAI reports no cost in usage
