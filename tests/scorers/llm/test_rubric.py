from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit import ConfigError, Judge, ScorerRunError, run_evals
from evalkit.scorers import llm_rubric, rubric
from evalkit.scorers._rubric import (
    LLM_RUBRIC_ANALYZE,
    LLM_RUBRIC_INSTRUCTIONS,
    RUBRIC_ANALYZE,
    RUBRIC_INSTRUCTIONS,
    parse_criteria,
)
from evalkit.testing import FakeOpenAIServer
from tests.scorers.llm._helpers import assert_judged, refused, script, system_messages, user_prompts

CRITERIA = [
    "Has an analysis section",
    {"description": "Gives recommendations", "required": True},
    {"criterion": "Cites sources", "required": False},
]


def graded(*satisfied: bool, order: list[int] | None = None) -> dict[str, Any]:
    numbers = order or list(range(1, len(satisfied) + 1))
    return {
        "criteria": [
            {"number": number, "reasoning": f"why {number}", "satisfied": ok}
            for number, ok in zip(numbers, satisfied, strict=True)
        ],
        "overall_assessment": "Overall fine.",
    }


@pytest.mark.parametrize(
    ("verdicts", "score"),
    [
        (graded(True, True, True), 1.0),
        (graded(True, True, False), 1.0),  # an optional criterion does not gate
        (graded(True, False, True), 0.0),
        (graded(True), 0.0),  # a criterion the judge skipped is unmet
        (graded(True, True, False, order=[3, 2, 1]), 0.0),  # placed by number, not order
    ],
)
async def test_every_required_criterion_must_hold(
    llm_server: FakeOpenAIServer, llm_judge: Judge, verdicts: dict[str, Any], score: float
) -> None:
    script(llm_server, {RUBRIC_ANALYZE: verdicts})
    result = await rubric(judge=llm_judge, criteria=CRITERIA).run(input="Report", output="...")
    assert result.score == score
    assert_judged(result, {"analyze": 1})  # the reason is written in code


async def test_prompt_and_reason(llm_server: FakeOpenAIServer, llm_judge: Judge) -> None:
    script(llm_server, {RUBRIC_ANALYZE: graded(True, False, False)})
    scorer = rubric(judge=llm_judge, criteria=CRITERIA, scale=5)
    result = await scorer.run(input="Write a report on X.", output="Analysis: ...")
    assert result.score == 0.0
    assert result.reason == (
        "Rubric not satisfied: 1 of 2 required criteria unmet.\n"
        "1. [met] [required] Has an analysis section: why 1\n"
        "2. [unmet] [required] Gives recommendations: why 2\n"
        "3. [unmet] [optional] Cites sources: why 3\n"
        "Overall fine."
    )
    (prompt,) = user_prompts(llm_server)
    assert (
        "1. [required] Has an analysis section\n2. [required] Gives recommendations\n"
        "3. [optional] Cites sources"
    ) in prompt
    assert "<task>\nWrite a report on X.\n</task>" in prompt
    assert system_messages(llm_server) == {RUBRIC_INSTRUCTIONS}
    llm_server.reset()
    script(llm_server, {RUBRIC_ANALYZE: graded(True, True, False)})
    result = await scorer.run(input="Write a report on X.", output="Analysis: ...")
    assert result.score == 5.0
    assert result.reason is not None
    assert result.reason.startswith("Rubric satisfied: every required criterion is met.\n")


async def test_with_no_required_criterion_every_criterion_gates(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {RUBRIC_ANALYZE: graded(True, False)})
    scorer = rubric(judge=llm_judge, criteria="(optional) Short\n(Optional) Polite")
    result = await scorer.run(input="q", output="a")
    assert result.score == 0.0
    assert result.reason is not None
    assert result.reason.startswith("Rubric not satisfied: 1 of 2 required criteria unmet.")


async def test_criteria_from_the_row(llm_server: FakeOpenAIServer, llm_judge: Judge) -> None:
    script(llm_server, {RUBRIC_ANALYZE: graded(True, True)})
    scorer = rubric(judge=llm_judge)
    result = await scorer.run(
        input="q", output="", request_context={"rubric": "- Says hello\n2) Says goodbye\n\n"}
    )
    assert result.score == 1.0
    assert result.preprocess_step_result == {
        "criteria": [
            {"criterion": "Says hello", "required": True},
            {"criterion": "Says goodbye", "required": True},
        ]
    }
    assert "<output>\n(empty output)\n</output>" in user_prompts(llm_server)[0]


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({}, "no 'rubric' key in the request context or the input"),
        ({"request_context": {"rubric": "  \n- \n"}}, "'rubric' is empty"),
        ({"request_context": {"rubric": [{"required": True}]}}, "each criterion is a string"),
        ({"input": {"rubric": 3}}, "expected a string or a list of criteria"),
    ],
)
async def test_a_row_without_usable_criteria_fails_before_any_call(
    llm_server: FakeOpenAIServer, llm_judge: Judge, row: dict[str, Any], problem: str
) -> None:
    cause = await refused(rubric(judge=llm_judge), **row)
    assert cause.field == "request_context"
    assert problem in cause.problem
    assert llm_server.stats.requests == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1. One\n* Two\n• (optional) Three", [("One", True), ("Two", True), ("Three", False)]),
        (["A", " ", {"description": "B", "required": False}], [("A", True), ("B", False)]),
        ((), []),
    ],
)
def test_parse_criteria(value: Any, expected: list[tuple[str, bool]]) -> None:
    parsed = parse_criteria(value, where="criteria")
    assert [(c["criterion"], c["required"]) for c in parsed] == expected


@pytest.mark.parametrize(
    ("criteria", "message"),
    [
        ("", "parameter 'criteria': holds no criterion"),
        ([{"description": "x", "required": "yes"}], "each criterion is a string or a table"),
    ],
)
def test_bad_criteria_params_are_refused(criteria: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        rubric(criteria=criteria)


async def test_llm_rubric_is_one_call(llm_server: FakeOpenAIServer, llm_judge: Judge) -> None:
    script(llm_server, {LLM_RUBRIC_ANALYZE: {"reasoning": "Admits not knowing.", "score": 0.85}})
    scorer = llm_rubric(judge=llm_judge, rubric="Says so when it does not know.")
    result = await scorer.run(input="Who won in 2031?", output="I don't know yet.")
    assert (result.score, result.reason) == (0.85, "Admits not knowing.")
    assert_judged(result, {"analyze": 1})
    (prompt,) = user_prompts(llm_server)
    assert "<rubric>\nSays so when it does not know.\n</rubric>" in prompt
    assert "<output>\nI don't know yet.\n</output>" in prompt
    assert "reference_answer" not in prompt
    assert system_messages(llm_server) == {LLM_RUBRIC_INSTRUCTIONS}
    assert scorer.metadata["params"]["rubric"] == "Says so when it does not know."


async def test_llm_rubric_shows_the_ground_truth_and_reads_the_row(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {LLM_RUBRIC_ANALYZE: {"reasoning": "r", "score": 1}})
    result = await llm_rubric(judge=llm_judge, scale=10).run(
        input="2+2?", output="4", ground_truth="4", request_context={"rubric": ["Correct", "Terse"]}
    )
    assert result.score == 10.0
    (prompt,) = user_prompts(llm_server)
    assert "<rubric>\nCorrect\nTerse\n</rubric>" in prompt
    assert "<reference_answer>\n4\n</reference_answer>" in prompt


async def test_llm_rubric_score_outside_0_1_fails_after_the_fallback(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {LLM_RUBRIC_ANALYZE: {"reasoning": "r", "score": 8}})
    with pytest.raises(ScorerRunError) as caught:
        await llm_rubric(judge=llm_judge, rubric="Be right.").run(input="q", output="a")
    assert caught.value.failed_step == "analyze"
    assert caught.value.result is not None
    (failed,) = caught.value.result.judge["analyze"].executions
    assert failed.error is not None
    assert (failed.status, failed.attempt_count, failed.error.code) == ("failed", 2, "format")
    assert llm_server.stats.requests == 2


async def test_llm_rubric_without_a_rubric(llm_server: FakeOpenAIServer, llm_judge: Judge) -> None:
    cause = await refused(llm_rubric(judge=llm_judge), step="analyze")
    assert cause.field == "request_context"
    assert "no 'rubric'" in cause.problem
    assert llm_server.stats.requests == 0
    with pytest.raises(ConfigError, match="parameter 'rubric': is empty"):
        llm_rubric(rubric=" ")


@pytest.mark.parametrize("score", [True, False, "1", "1e0", "0.5"])
async def test_llm_rubric_score_of_the_wrong_json_type_fails_and_keeps_the_reply(
    llm_server: FakeOpenAIServer, llm_judge: Judge, score: Any
) -> None:
    # A boolean or a string is not a number: no coercion to 1.0/0.0 (issue 30, item 3).
    script(llm_server, {LLM_RUBRIC_ANALYZE: {"reasoning": "r", "score": score}})
    with pytest.raises(ScorerRunError) as caught:
        await llm_rubric(judge=llm_judge, rubric="Be right.").run(input="q", output="a")
    assert caught.value.failed_step == "analyze"
    assert caught.value.result is not None
    assert caught.value.result.score is None
    (failed,) = caught.value.result.judge["analyze"].executions
    assert failed.error is not None
    assert (failed.status, failed.attempt_count, failed.error.code) == ("failed", 2, "format")
    assert f"at score: Input should be a valid number (got {json.dumps(score)})" in (
        failed.error.message
    )
    assert failed.output is None
    assert failed.raw_output is not None
    assert json.loads(failed.raw_output) == {"reasoning": "r", "score": score}


async def test_a_boolean_score_is_stored_as_a_failure_with_the_reply(
    llm_server: FakeOpenAIServer, llm_judge: Judge, tmp_path: Path
) -> None:
    # Through a run into the store: no score row reading 1.0, the reply kept as evidence.
    script(llm_server, {LLM_RUBRIC_ANALYZE: {"reasoning": "r", "score": True}})
    store = tmp_path / "s.duckdb"
    scorer = llm_rubric(judge=llm_judge, rubric="Be right.")
    rows = [{"input": "q", "output": "a"}]
    result = await run_evals(rows, [scorer], store=store, progress=False)
    assert result.summary.scorers["llm_rubric"].failed == 1
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM scores").fetchall() == [(0,)]
        assert con.execute("SELECT failed_step FROM scorer_errors").fetchall() == [("analyze",)]
        (raw,) = con.execute(
            "SELECT raw_output FROM judge_executions WHERE status = 'failed'"
        ).fetchone() or (None,)
    assert raw is not None
    assert json.loads(raw) == {"reasoning": "r", "score": True}
