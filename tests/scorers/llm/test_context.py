from __future__ import annotations

from typing import Any

import pytest

from evalkit import ConfigError, Judge
from evalkit.scorers import context_precision, context_relevance
from evalkit.scorers._context import (
    EMPTY_ANSWER,
    PRECISION_ANALYZE,
    PRECISION_INSTRUCTIONS,
    PRECISION_REASON,
    RELEVANCE_ANALYZE,
    RELEVANCE_INSTRUCTIONS,
    RELEVANCE_REASON,
    average_precision,
)
from evalkit.testing import FakeOpenAIServer
from tests.scorers.llm._helpers import assert_judged, refused, script, system_messages, user_prompts

CONTEXT = ["Paris is the capital of France.", "Bananas are yellow.", "France is in Europe.", "x"]
ROW: dict[str, Any] = {
    "input": "Capital of France?",
    "output": "Paris.",
    "request_context": {"context": CONTEXT},
}


def precision(*verdicts: tuple[int, str]) -> dict[str, Any]:
    return {
        "verdicts": [
            {"context_index": index, "reason": f"r{index}", "verdict": verdict}
            for index, verdict in verdicts
        ]
    }


@pytest.mark.parametrize(
    ("relevant", "expected"),
    [
        ([True, False, True, False], (1 + 2 / 3) / 2),
        ([False, True], 0.5),
        ([True, True, True], 1.0),
        ([False, False], 0.0),
        ([], 0.0),
    ],
)
def test_average_precision(relevant: list[bool], expected: float) -> None:
    assert average_precision(relevant) == pytest.approx(expected)


async def test_context_precision_is_the_mean_average_precision(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {
            PRECISION_ANALYZE: precision((1, "yes"), (2, "no"), (3, "yes"), (4, "no")),
            PRECISION_REASON: "Useful pieces first.",
        },
    )
    result = await context_precision(judge=llm_judge).run(**ROW)
    assert (result.score, result.reason) == (0.83, "Useful pieces first.")
    assert_judged(result, {"analyze": 1, "generate_reason": 1})
    assert result.preprocess_step_result == {"context": CONTEXT}
    analyze, reason = user_prompts(llm_server)
    assert "<answer>\nParis.\n</answer>" in analyze
    assert '<context count="4">\n1. Paris is the capital of France.\n2. Bananas' in analyze
    assert "piece 3: [yes] r3" in reason
    assert system_messages(llm_server) == {PRECISION_INSTRUCTIONS}


async def test_verdicts_are_placed_by_index_not_by_order(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    reply = precision((3, "yes"), (2, "yes"), (4, "no"), (1, "no"))
    script(llm_server, {PRECISION_ANALYZE: reply})
    result = await context_precision(judge=llm_judge, explain=False).run(**ROW)
    assert result.score == 0.58  # useful at ranks 2 and 3: (1/2 + 2/3) / 2


async def test_no_useful_piece_scores_0(llm_server: FakeOpenAIServer, llm_judge: Judge) -> None:
    script(llm_server, {PRECISION_ANALYZE: precision(*((i, "no") for i in range(1, 5)))})
    result = await context_precision(judge=llm_judge, explain=False).run(**ROW)
    assert result.score == 0.0


async def test_precision_against_the_ground_truth(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {PRECISION_ANALYZE: precision((1, "yes"), (2, "no"), (3, "no"), (4, "no"))})
    scorer = context_precision(judge=llm_judge, reference="ground_truth", scale=2, explain=False)
    result = await scorer.run(**ROW, ground_truth="Paris is the capital.")
    assert result.score == 2.0
    assert "<answer>\nParis is the capital.\n</answer>" in user_prompts(llm_server)[0]
    cause = await refused(scorer, **ROW)
    assert (cause.field, cause.problem) == (
        "ground_truth",
        "missing (this row has no ground truth)",
    )


@pytest.mark.parametrize(
    ("params", "row"),
    [({}, {"output": " "}), ({"reference": "ground_truth"}, {"ground_truth": ""})],
)
async def test_an_empty_answer_has_no_useful_piece(
    llm_server: FakeOpenAIServer, llm_judge: Judge, params: dict[str, Any], row: dict[str, Any]
) -> None:
    scorer = context_precision(judge=llm_judge, **params)
    result = await scorer.run(**{**ROW, **row})
    assert (result.score, result.reason) == (0.0, EMPTY_ANSWER)
    assert result.judge == {}
    assert llm_server.stats.requests == 0


@pytest.mark.parametrize("factory", [context_precision, context_relevance])
async def test_a_row_without_context_fails_before_any_call(
    llm_server: FakeOpenAIServer, llm_judge: Judge, factory: Any
) -> None:
    cause = await refused(factory(judge=llm_judge), input="q", output="a")
    assert cause.field == "request_context"
    assert llm_server.stats.requests == 0


def relevance(levels: list[tuple[str, bool]], missing: list[str]) -> dict[str, Any]:
    return {
        "evaluations": [
            {"context_index": i, "reasoning": "r", "relevance_level": level, "was_used": used}
            for i, (level, used) in enumerate(levels, 1)
        ],
        "missing_context": missing,
        "overall_assessment": "ok",
    }


@pytest.mark.parametrize(
    ("levels", "missing", "score"),
    [
        # (1 + 1 + 0.3) / 3 - 0.1 (one high piece unused) - 0.15 (one missing item)
        ([("high", True), ("high", False), ("low", True)], ["the population"], 0.52),
        ([("high", True), ("medium", True), ("none", False)], [], 0.57),
        # missing items: 5 * 0.15 capped at 0.5
        ([("high", True)], ["a", "b", "c", "d", "e"], 0.5),
        # never below 0
        ([("none", False), ("high", False)], ["a", "b", "c", "d"], 0.0),
    ],
)
async def test_context_relevance_formula(
    llm_server: FakeOpenAIServer,
    llm_judge: Judge,
    levels: list[tuple[str, bool]],
    missing: list[str],
    score: float,
) -> None:
    script(llm_server, {RELEVANCE_ANALYZE: relevance(levels, missing)})
    row = {**ROW, "request_context": {"context": CONTEXT[: len(levels)]}}
    result = await context_relevance(judge=llm_judge, explain=False).run(**row)
    assert result.score == score
    assert_judged(result, {"analyze": 1})


async def test_context_relevance_penalties_and_reason(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {
            RELEVANCE_ANALYZE: relevance([("high", False), ("low", True)], ["a", "b"]),
            RELEVANCE_REASON: "Half used.",
        },
    )
    scorer = context_relevance(
        judge=llm_judge,
        context=["Piece one.", "Piece two."],
        unused_high_relevance_penalty=0.2,
        missing_context_penalty=0.05,
        scale=10,
    )
    result = await scorer.run(input="q", output="a")
    # (1 + 0.3) / 2 - 0.2 - 2 * 0.05 = 0.35, times 10
    assert (result.score, result.reason) == (3.5, "Half used.")
    assert_judged(result, {"analyze": 1, "generate_reason": 1})
    analyze, reason = user_prompts(llm_server)
    assert '<context count="2">\n1. Piece one.\n2. Piece two.\n</context>' in analyze
    assert "piece 1: high, not used: r" in reason
    assert "minus 0.2 for each highly relevant piece" in reason
    assert system_messages(llm_server) == {RELEVANCE_INSTRUCTIONS}


@pytest.mark.parametrize(
    "params",
    [
        {"unused_high_relevance_penalty": 2.0},
        {"missing_context_penalty": -1.0},
        {"max_missing_context_penalty": 1.5},
    ],
)
def test_penalties_are_between_0_and_1(params: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="must be between 0 and 1"):
        context_relevance(**params)
