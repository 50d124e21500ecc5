from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from string import Template
from typing import Any

import pytest
from pydantic import BaseModel

from evalkit import ConfigError, Judge, JudgeError, ScorerRunError, create_scorer
from evalkit.scorer import Scorer, ScorerRun
from evalkit.scorers import (
    _context,
    _faithfulness,
    _recall,
    _relevancy,
    _safety,
    _tool_selection,
    answer_relevancy,
    bias,
    context_precision,
    context_recall,
    context_relevance,
    faithfulness,
    hallucination,
    tool_call_accuracy_llm,
)
from evalkit.scorers._judged import JudgeStep, OnePerItem, PerRun, share_of_yes
from evalkit.testing import FakeOpenAIServer, Rule
from tests.scorers.llm._helpers import opening, script, verdicts

CONTEXT = {"context": ["Piece one.", "Piece two.", "Piece three."]}
THREE_CALLS = {
    "role": "assistant",
    "tool_calls": [
        {"type": "function", "function": {"name": name, "arguments": "{}"}}
        for name in ("a", "b", "c")
    ],
}


def pieces(*values: str) -> dict[str, Any]:
    return {
        "verdicts": [
            {"context_index": i, "reason": "r", "verdict": value}
            for i, value in enumerate(values, 1)
        ]
    }


def rated(*levels: str) -> dict[str, Any]:
    return {
        "evaluations": [
            {"context_index": i, "reasoning": "r", "relevance_level": level, "was_used": True}
            for i, level in enumerate(levels, 1)
        ],
        "missing_context": [],
        "overall_assessment": "ok",
    }


def tools(*appropriate: bool) -> dict[str, Any]:
    return {
        "evaluations": [
            {"tool_called": "t", "reasoning": "r", "was_appropriate": ok} for ok in appropriate
        ],
        "missing_tools": [],
    }


@dataclass(frozen=True)
class Case:
    """A scorer whose analyze step answers three items sent, and how to script it."""

    factory: Callable[..., Scorer]
    row: dict[str, Any]
    extract: dict[Template | str, Any]
    analyze: Template
    reply: Callable[..., dict[str, Any]]
    # The score of three items answered (good, bad, bad), and of only the first one answered.
    score: float

    def __str__(self) -> str:
        return self.factory.__name__


THREE = ["one", "two", "three"]
CASES = [
    Case(
        answer_relevancy,
        {"input": "q", "output": "a"},
        {_relevancy.EXTRACT: {"statements": THREE}},
        _relevancy.ANALYZE,
        lambda *v: verdicts(*v, statement="s"),
        0.33,
    ),
    Case(
        faithfulness,
        {"input": "q", "output": "a", "request_context": CONTEXT},
        {_faithfulness.EXTRACT: {"claims": THREE}},
        _faithfulness.ANALYZE["faithfulness"],
        lambda *v: verdicts(*v, claim="c"),
        0.33,
    ),
    Case(
        hallucination,
        {"input": "q", "output": "a", "request_context": CONTEXT},
        {_faithfulness.EXTRACT: {"claims": THREE}},
        _faithfulness.ANALYZE["hallucination"],
        lambda *v: verdicts(*v, claim="c"),
        0.33,
    ),
    Case(
        context_recall,
        {"input": "q", "output": "a", "ground_truth": "gt", "request_context": CONTEXT},
        {_recall.EXTRACT: {"claims": THREE}},
        _recall.ANALYZE,
        lambda *v: verdicts(*v, claim="c"),
        0.33,
    ),
    Case(
        bias,
        {"input": "q", "output": "a"},
        {_safety.BIAS_EXTRACT: {"opinions": THREE}},
        _safety.BIAS_ANALYZE,
        lambda *v: verdicts(*v, opinion="o"),
        0.33,
    ),
    Case(
        context_precision,
        {"input": "q", "output": "a", "request_context": CONTEXT},
        {},
        _context.PRECISION_ANALYZE,
        pieces,
        1.0,  # the one useful piece is ranked first
    ),
    Case(
        context_relevance,
        {"input": "q", "output": "a", "request_context": CONTEXT},
        {},
        _context.RELEVANCE_ANALYZE,
        lambda *v: rated(*("high" if x == "yes" else "none" for x in v)),
        0.33,
    ),
    Case(
        tool_call_accuracy_llm,
        {"input": "q", "output": THREE_CALLS},
        {},
        _tool_selection.ANALYZE,
        lambda *v: tools(*(x == "yes" for x in v)),
        0.33,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_a_reply_short_of_the_items_sent_fails_after_the_fallback(
    llm_server: FakeOpenAIServer, llm_judge: Judge, case: Case
) -> None:
    # One answer for three items: counting the answers returned would score it 1 (or 0).
    script(llm_server, {**case.extract, case.analyze: case.reply("yes")})
    with pytest.raises(ScorerRunError) as caught:
        await case.factory(judge=llm_judge, explain=False).run(**case.row)
    error = caught.value
    assert error.failed_step == "analyze"
    cause = error.__cause__
    assert isinstance(cause, JudgeError)
    assert cause.code == "format"
    assert "1 " in str(cause)
    assert "for the 3 items sent; exactly one per item is required" in str(cause)
    assert error.result is not None
    (execution,) = error.result.judge["analyze"].executions
    assert (execution.status, execution.attempt_count, execution.model_call_count) == (
        "failed",
        2,
        2,
    )


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_a_miscount_is_asked_once_more_and_a_right_answer_then_scores(
    llm_server: FakeOpenAIServer, llm_judge: Judge, case: Case
) -> None:
    too_many = case.reply("yes", "no", "no", "yes")
    llm_server.add_rule(Rule(opening(case.analyze), reply=too_many, times=1))
    script(llm_server, {**case.extract, case.analyze: case.reply("yes", "no", "no")})
    result = await case.factory(judge=llm_judge, explain=False).run(**case.row)
    assert result.score == case.score
    (execution,) = result.judge["analyze"].executions
    assert (execution.status, execution.attempt_count) == ("success", 2)


@pytest.mark.parametrize(
    "indices",
    [(1, 1, 2), (1, 2, 4), (0, 1, 2)],
    ids=["duplicate", "out-of-range", "zero"],
)
async def test_context_pieces_must_each_be_answered_once_by_number(
    llm_server: FakeOpenAIServer, llm_judge: Judge, indices: tuple[int, ...]
) -> None:
    reply = {"verdicts": [{"context_index": i, "reason": "r", "verdict": "yes"} for i in indices]}
    script(llm_server, {_context.PRECISION_ANALYZE: reply})
    with pytest.raises(ScorerRunError) as caught:
        await context_precision(judge=llm_judge, explain=False).run(
            input="q", output="a", request_context=CONTEXT
        )
    message = str(caught.value.__cause__)
    assert "context_index must number the 3 items from 1 to 3, each once" in message
    assert f"got {sorted(indices)}" in message


class Numbers(OnePerItem):
    verdicts: list[int]


def test_one_per_item_checks_nothing_outside_a_judge_step() -> None:
    assert Numbers.model_validate({"verdicts": [1, 2]}).verdicts == [1, 2]


def test_the_check_adds_nothing_to_the_schema_sent() -> None:
    class Plain(BaseModel):
        verdicts: list[int]

    schema = Numbers.model_json_schema()
    assert schema == {**Plain.model_json_schema(), "title": "Numbers"}


def test_items_needs_a_one_per_item_schema() -> None:
    class Plain(BaseModel):
        verdicts: list[int]

    with pytest.raises(ConfigError, match="items needs a OnePerItem output_schema"):
        JudgeStep("x", lambda: "p", instructions="i", output_schema=Plain, items=lambda: 1)


async def _async_skip(run: ScorerRun) -> None:
    return None


class _AsyncCallable:
    async def __call__(self, run: ScorerRun) -> None:
        return None


@pytest.mark.parametrize("skip", [_async_skip, _AsyncCallable()], ids=["function", "object"])
def test_an_async_skip_is_refused_when_the_step_is_added(skip: Any) -> None:
    step = JudgeStep("x", lambda: "p", instructions="i", skip=skip)
    with pytest.raises(ConfigError, match=r"'s', generate_reason step, skip: must be a plain"):
        create_scorer("s").generate_reason(step)


@pytest.mark.parametrize(
    ("values", "unsure", "expected"),
    [
        (["yes", "no", "no"], 0.0, 0.33),
        (["yes", "unsure", "no"], 0.5, 0.5),
        (["unsure", "unsure"], 0.0, 0.0),
        ([], 0.3, 0.0),
    ],
)
def test_share_of_yes(values: list[str], unsure: float, expected: float) -> None:
    assert share_of_yes([{"verdict": v} for v in values], 1.0, unsure=unsure) == expected


def test_share_of_yes_rounds_after_the_scale() -> None:
    assert share_of_yes([{"verdict": "yes"}, {"verdict": "no"}, {"verdict": "no"}], 10) == 3.33


def test_per_run_computes_once_per_run_and_does_not_keep_the_run() -> None:
    calls: list[object] = []

    def text(run: ScorerRun) -> str:
        calls.append(run.output)
        return str(run.output)

    memo = PerRun(text)
    first, second = ScorerRun("q", "a"), ScorerRun("q", "b")
    assert [memo(first), memo(first), memo(second), memo(first)] == ["a", "a", "b", "a"]
    assert calls == ["a", "b", "a"]
    del first, second
    gc.collect()
    assert memo(ScorerRun("q", "c")) == "c"
    assert calls == ["a", "b", "a", "c"]
