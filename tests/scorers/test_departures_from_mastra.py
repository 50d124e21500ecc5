"""The deliberate differences from Mastra's scorers that Mastra's own test cases would show,
each as docs/pages/design/departures-from-mastra.md states it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalkit import ConfigError, Judge, PromptStep, create_scorer, get_scorer
from evalkit.testing import FakeOpenAIServer, Rule
from tests.scorers._helpers import score

PAGE = Path(__file__).parents[2] / "docs" / "pages" / "design" / "departures-from-mastra.md"


def test_the_page_lists_each_difference_tested_here() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for phrase in (
        "hyphenated",
        "`confidence`",
        "`lengthDiff`",
        "VADER",
        "`expected_tool_order`",
        "no tool call",
        "`duration_ms`",
        "`scale`",
    ):
        assert phrase in text, phrase


async def test_keywords_split_hyphenated_words() -> None:
    coverage = get_scorer("keyword_coverage")
    result = await score(
        coverage, "The art of being well known.", "A state-of-the-art, well-known model"
    )
    assert result.preprocess_step_result["matched"] == ["art", "well", "known"]
    assert result.preprocess_step_result["missing"] == ["state", "model"]
    assert result.score == pytest.approx(3 / 5)


async def test_textual_difference_has_no_confidence_or_length_diff() -> None:
    result = await score(get_scorer("textual_difference"), "kitten", "sitting")
    assert set(result.preprocess_step_result) == {
        "similarity",
        "changes",
        "reference",
        "references",
    }
    assert result.score == pytest.approx(2 * 4 / 13)


async def test_tone_consistency_uses_vader() -> None:
    pytest.importorskip("vaderSentiment")
    result = await score(get_scorer("tone_consistency"), "I love it!", "I love it!")
    assert result.score == 1.0
    assert result.reason is not None
    assert "VADER" in result.reason


def test_expected_tool_with_expected_tool_order_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"expected_tool_order.*not both"):
        get_scorer("tool_call_accuracy", expected_tool="search", expected_tool_order=["search"])


@pytest.mark.parametrize("params", [{"expected_tool": "search"}, {}])
async def test_an_output_without_tool_calls_scores_0(params: dict[str, str]) -> None:
    scorer = get_scorer("tool_call_accuracy", **params)
    result = await score(scorer, "I did not call anything.", "search")
    assert result.score == 0.0


async def test_judge_durations_are_float_milliseconds(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Grade", reply={"score": 0.5}))
    scorer = create_scorer("graded", judge=judge).generate_score(
        PromptStep("grade", lambda run: f"Grade: {run.output}")
    )
    result = await scorer.run(input="q", output="a")
    duration = result.judge["generate_score"].executions[0].duration_ms
    assert type(duration) is float
    assert duration > 0


@pytest.mark.parametrize("scale", [0, -1.0, float("nan")])
def test_scale_must_be_positive(scale: float) -> None:
    with pytest.raises(ConfigError, match=re.escape("'scale'")):
        get_scorer("llm_rubric", rubric="polite", scale=scale)
