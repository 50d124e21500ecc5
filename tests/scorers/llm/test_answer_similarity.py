from __future__ import annotations

from typing import Any

import pytest

from evalkit import ConfigError, Judge
from evalkit.scorers import answer_similarity
from evalkit.scorers._answer_similarity import (
    ANALYZE,
    BOTH_EMPTY,
    EXTRACT,
    INSTRUCTIONS,
    NO_UNITS,
    REASON,
)
from evalkit.testing import FakeOpenAIServer
from tests.scorers.llm._helpers import assert_judged, refused, script, system_messages, user_prompts

UNITS = {"output_units": ["o1", "o2", "o3"], "ground_truth_units": ["g1", "g2", "g3"]}


def comparison(*types: str, extra: int = 0, contradictions: int = 0) -> dict[str, Any]:
    return {
        "matches": [
            {
                "ground_truth_unit": f"g{i}",
                "output_unit": None if kind == "missing" else f"o{i}",
                "explanation": "e",
                "match_type": kind,
            }
            for i, kind in enumerate(types, 1)
        ],
        "extra_in_output": [f"extra {i}" for i in range(extra)],
        "contradictions": [
            {"output_unit": "o", "ground_truth_unit": "g", "explanation": "opposite"}
        ]
        * contradictions,
    }


async def test_exact_semantic_missing_and_an_extra(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {
            EXTRACT: UNITS,
            ANALYZE: comparison("exact", "semantic", "missing", extra=1),
            REASON: "One unit missing.",
        },
    )
    result = await answer_similarity(judge=llm_judge).run(
        input="q", output="Paris, 2M people.", ground_truth="Paris, 2.1M people, Louvre."
    )
    # (1.2 + 0.8 - 0.15) / (3 * 1.2) - 0.05
    assert (result.score, result.reason) == (0.46, "One unit missing.")
    assert_judged(result, {"preprocess": 1, "analyze": 1, "generate_reason": 1})
    extract, analyze, reason = user_prompts(llm_server)
    assert "<answer>\nParis, 2M people.\n</answer>" in extract
    assert "<reference>\nParis, 2.1M people, Louvre.\n</reference>" in extract
    assert '<reference_units count="3">\n1. g1\n2. g2\n3. g3\n</reference_units>' in analyze
    assert "[missing] g3: e" in reason
    assert system_messages(llm_server) == {INSTRUCTIONS}


@pytest.mark.parametrize(
    ("comparison_", "params", "score"),
    [
        (comparison("exact", "exact", "exact"), {}, 1.0),
        (comparison("partial", "partial"), {}, 0.33),  # 0.4 / 1.2
        (comparison("semantic", "semantic"), {"semantic_weight": 0.6}, 0.5),
        (comparison("exact", contradictions=1), {}, 0.0),  # 1 - 1.0, clamped
        (comparison("exact", contradictions=1), {"contradiction_penalty": 0.3}, 0.7),
        (comparison("exact", extra=10), {}, 0.8),  # the extra penalty is capped at 0.2
        (comparison("missing", "missing"), {}, 0.0),  # negative, clamped
        (comparison("exact", "semantic"), {"exact_match_bonus": 0.0, "scale": 5}, 4.5),
        (comparison(), {}, 0.0),
    ],
)
async def test_formula(
    llm_server: FakeOpenAIServer,
    llm_judge: Judge,
    comparison_: dict[str, Any],
    params: dict[str, float],
    score: float,
) -> None:
    script(llm_server, {EXTRACT: UNITS, ANALYZE: comparison_})
    scorer = answer_similarity(judge=llm_judge, explain=False, **params)
    result = await scorer.run(input="q", output="a", ground_truth="b")
    assert result.score == score


@pytest.mark.parametrize(
    ("output", "ground_truth", "score", "reason"),
    [("", "", 1.0, BOTH_EMPTY), ("Paris", "  ", 0.0, NO_UNITS), (None, "", 1.0, BOTH_EMPTY)],
)
async def test_an_empty_ground_truth_needs_no_call(
    llm_server: FakeOpenAIServer,
    llm_judge: Judge,
    output: str | None,
    ground_truth: str,
    score: float,
    reason: str,
) -> None:
    result = await answer_similarity(judge=llm_judge).run(
        input="q", output=output, ground_truth=ground_truth
    )
    assert (result.score, result.reason) == (score, reason)
    assert result.judge == {}
    assert llm_server.stats.requests == 0


async def test_an_empty_output_is_still_compared(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(
        llm_server,
        {
            EXTRACT: {"output_units": [], "ground_truth_units": ["g1"]},
            ANALYZE: comparison("missing"),
        },
    )
    result = await answer_similarity(judge=llm_judge, explain=False).run(
        input="q", output="", ground_truth="Paris"
    )
    assert result.score == 0.0
    assert_judged(result, {"preprocess": 1, "analyze": 1})


async def test_json_values_are_compared_as_json_text(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {EXTRACT: UNITS, ANALYZE: comparison("exact")})
    await answer_similarity(judge=llm_judge, explain=False).run(
        input="q", output={"city": "Paris"}, ground_truth=["Paris", "France"]
    )
    assert '<reference>\n["Paris", "France"]\n</reference>' in user_prompts(llm_server)[0]
    assert '{"city": "Paris"}' in user_prompts(llm_server)[0]


async def test_a_missing_ground_truth_fails_before_any_call(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    cause = await refused(answer_similarity(judge=llm_judge), ground_truth=None)
    assert cause.field == "ground_truth"
    assert llm_server.stats.requests == 0


def test_weights_are_checked() -> None:
    with pytest.raises(ConfigError, match="'semantic_weight': must be between 0 and 1"):
        answer_similarity(semantic_weight=1.2)
