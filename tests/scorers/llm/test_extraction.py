"""An empty extraction of a non-empty text is asked once more, then fails (or is scored)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

import duckdb
import pytest

from evalkit import ConfigError, Judge, JudgeError, ScorerRunError, get_scorer, run_evals
from evalkit.judge import JudgeCache, use_judge_cache
from evalkit.scorer import Scorer, ScorerRun
from evalkit.scorers import (
    _answer_similarity,
    _faithfulness,
    _recall,
    _relevancy,
    _safety,
    _summarization,
    answer_relevancy,
    answer_similarity,
    context_recall,
    faithfulness,
    hallucination,
    summarization,
    toxicity,
)
from evalkit.scorers._extraction import Extraction, Listed
from evalkit.scorers._judged import JudgeStep, Statements
from evalkit.testing import FakeOpenAIServer, Fault, Rule
from tests.scorers.llm._helpers import opening, script, user_prompts, verdicts

CONTEXT = {"context": ["Paris is the capital of France."]}


@dataclass(frozen=True)
class Case:
    """A scorer with an extraction step, a row to run, and the step's empty reply."""

    factory: Callable[..., Scorer]
    row: dict[str, Any]
    template: Template
    empty: dict[str, Any]
    step: str
    text: str
    #: What the scorer gives the twice-empty extraction with empty_extraction="score".
    scored: float = 0.0


CASES = {
    "answer_relevancy": Case(
        answer_relevancy,
        {"input": "q", "output": "Paris. It is big."},
        _relevancy.EXTRACT,
        {"statements": []},
        "preprocess",
        'output: its "statements" list',
    ),
    "faithfulness": Case(
        faithfulness,
        {"input": "q", "output": "Paris.", "request_context": CONTEXT},
        _faithfulness.EXTRACT,
        {"claims": []},
        "preprocess",
        'output: its "claims" list',
    ),
    "hallucination": Case(
        hallucination,
        {"input": "q", "output": "Paris.", "request_context": CONTEXT},
        _faithfulness.EXTRACT,
        {"claims": []},
        "preprocess",
        'output: its "claims" list',
    ),
    "context_recall": Case(
        context_recall,
        {"input": "q", "output": "x", "ground_truth": "Paris.", "request_context": CONTEXT},
        _recall.EXTRACT,
        {"claims": []},
        "preprocess",
        'ground truth: its "claims" list',
    ),
    "toxicity": Case(
        toxicity,
        {"input": "q", "output": "You fool."},
        _safety.TOXICITY_ANALYZE,
        {"verdicts": []},
        "analyze",
        'output: its "verdicts" list',
    ),
    "summarization": Case(
        summarization,
        {"input": "A long article about the metro.", "output": "Metro."},
        _summarization.JUDGE_SOURCE,
        {"alignment": [], "questions": []},
        "preprocess",
        'summary and source: its "alignment" and "questions" lists were',
    ),
    "answer_similarity": Case(
        answer_similarity,
        {"input": "q", "output": "Paris.", "ground_truth": "Paris."},
        _answer_similarity.EXTRACT,
        {"output_units": [], "ground_truth_units": []},
        "preprocess",
        'output and ground truth: its "output_units" and "ground_truth_units" lists were',
        # Both lists empty reads as "both texts are empty": the full score.
        scored=1.0,
    ),
}
NOTE = "Note: an earlier answer to this request gave an empty"


def note_of(case: Case) -> str:
    fields = [field for field in case.empty if field != "verdicts"] or ["verdicts"]
    listed = tuple(Listed(field, lambda run: "x") for field in fields)
    return Extraction(listed).note


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_an_empty_extraction_is_asked_once_more_then_fails(
    llm_server: FakeOpenAIServer, llm_judge: Judge, case: Case
) -> None:
    script(llm_server, {case.template: case.empty})
    with pytest.raises(ScorerRunError) as caught:
        await case.factory(judge=llm_judge, explain=False).run(**case.row)

    error = caught.value
    assert error.failed_step == case.step
    cause = error.__cause__
    assert isinstance(cause, JudgeError)
    assert cause.code == "empty_extraction"
    assert str(cause).startswith(f"the judge found nothing to judge in a non-empty {case.text}")
    assert error.result is not None
    executions = error.result.judge[case.step].executions
    assert [execution.status for execution in executions] == ["success", "success"]
    first, again = user_prompts(llm_server)
    assert again == first + note_of(case)
    assert [execution.prompt for execution in executions] == [first, again]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_empty_extraction_score_scores_the_second_empty_answer(
    llm_server: FakeOpenAIServer, llm_judge: Judge, case: Case
) -> None:
    script(llm_server, {case.template: case.empty})
    scorer = case.factory(judge=llm_judge, explain=False, empty_extraction="score")
    result = await scorer.run(**case.row)
    assert result.score == case.scored
    assert len(result.judge[case.step].executions) == 2
    assert scorer.metadata["params"]["empty_extraction"] == "score"


async def test_a_second_answer_that_finds_statements_is_judged(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    found = {"statements": ["Paris.", "It is big."]}
    llm_server.add_rule(Rule(opening(_relevancy.EXTRACT), reply={"statements": []}, times=1))
    script(
        llm_server,
        {_relevancy.EXTRACT: found, _relevancy.ANALYZE: verdicts("yes", "no", statement="s")},
    )
    result = await answer_relevancy(judge=llm_judge, explain=False).run(
        input="q", output="Paris. It is big."
    )
    assert result.score == 0.5
    assert result.preprocess_step_result == found
    assert {step: len(record.executions) for step, record in result.judge.items()} == {
        "preprocess": 2,
        "analyze": 1,
    }
    # The step's prompt is the one whose answer it kept.
    assert result.preprocess_prompt is not None
    assert result.preprocess_prompt.endswith(note_of(CASES["answer_relevancy"]))


async def test_an_empty_output_still_costs_no_call(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    result = await answer_relevancy(judge=llm_judge).run(input="q", output=" ")
    assert result.score == 0.0
    assert llm_server.stats.requests == 0


async def test_the_retry_is_not_answered_by_the_cached_empty_reply(
    llm_server: FakeOpenAIServer, llm_judge: Judge, tmp_path: Path
) -> None:
    """A cache holding the empty first reply (as an older run left it) still sends the retry;
    then a repeated run replays both answers without a request."""
    cache_path = tmp_path / "evalkit-cache.duckdb"
    row = {"input": "q", "output": "Paris. It is big."}
    scorer = answer_relevancy(judge=llm_judge, explain=False)
    found = {"statements": ["Paris.", "It is big."]}

    # Run 1 caches the empty first reply; its retry fails, and failures are not cached.
    llm_server.add_rule(Rule(NOTE, fault=Fault.http(400, "no")))
    script(llm_server, {_relevancy.EXTRACT: {"statements": []}})
    async with use_judge_cache(JudgeCache(cache_path)):
        with pytest.raises(ScorerRunError):
            await scorer.run(**row)
    assert llm_server.stats.requests == 2

    llm_server.reset()
    script(
        llm_server,
        {_relevancy.EXTRACT: found, _relevancy.ANALYZE: verdicts("yes", "yes", statement="s")},
    )
    async with use_judge_cache(JudgeCache(cache_path)):
        second = await scorer.run(**row)
    assert second.score == 1.0
    first, again = second.judge["preprocess"].executions
    assert (first.cached, again.cached) == (True, False)
    assert [NOTE in prompt for prompt in user_prompts(llm_server)] == [True, False]

    llm_server.reset()
    async with use_judge_cache(JudgeCache(cache_path)):
        third = await scorer.run(**row)
    assert llm_server.stats.requests == 0
    assert third.score == 1.0
    assert all(execution.cached for execution in third.judge["preprocess"].executions)


def test_a_bad_empty_extraction_is_refused() -> None:
    with pytest.raises(ConfigError, match="empty_extraction"):
        get_scorer("faithfulness", empty_extraction="never")
    with pytest.raises(ConfigError, match="must be 'fail' or 'score', got 'never'"):
        Extraction((Listed("claims", lambda run: "x"),), "never")  # type: ignore[arg-type]


def test_an_extraction_needs_a_sync_prompt() -> None:
    async def prompt() -> str:
        return "x"

    with pytest.raises(ConfigError, match="extraction needs a sync create_prompt"):
        JudgeStep(
            "Extract",
            prompt,  # type: ignore[arg-type]  # async on purpose: the check at run time is under test
            instructions="i",
            output_schema=Statements,
            extraction=Extraction((Listed("statements", lambda run: "x"),)),
        )


def test_a_list_drawn_from_an_empty_text_is_not_an_empty_extraction() -> None:
    extraction = Extraction(
        (
            Listed("output_units", lambda run: str(run.output)),
            Listed("ground_truth_units", lambda run: str(run.ground_truth), "ground truth"),
        )
    )
    run = ScorerRun(input="q", output=" ", ground_truth="Paris.")
    assert extraction.found_nothing(run, {"output_units": [], "ground_truth_units": ["P"]}) == ()
    (missing,) = extraction.found_nothing(run, {"output_units": [], "ground_truth_units": []})
    assert missing.field == "ground_truth_units"
    assert extraction.found_nothing(run, "not a mapping") == ()


async def test_a_run_stores_the_failure_and_both_calls(
    llm_server: FakeOpenAIServer, llm_judge: Judge, tmp_path: Path
) -> None:
    script(llm_server, {_relevancy.EXTRACT: {"statements": []}})
    store = tmp_path / "evalkit.duckdb"
    rows = [{"input": "q", "output": "Paris. It is big."}, {"input": "q", "output": ""}]
    scorer = answer_relevancy(judge=llm_judge, explain=False)
    await run_evals(rows, [scorer], store=store, progress=False)

    with duckdb.connect(str(store), read_only=True) as db:
        errors = db.execute(
            "SELECT failed_step, error_name, error_message, error->>'cause', error_code"
            " FROM scorer_errors"
        ).fetchall()
        calls = db.execute(
            "SELECT step, execution_index, status FROM judge_executions ORDER BY execution_index"
        ).fetchall()
        scores = db.execute("SELECT score FROM scores").fetchall()
    ((step, name, message, cause, code),) = errors
    assert (step, name, cause) == ("preprocess", "ScorerRunError", "JudgeError")
    assert code == "empty_extraction"  # the JudgeError's code, kept (issue 29 item 7)
    assert "found nothing to judge in a non-empty output" in message
    assert [tuple(call) for call in calls] == [
        ("preprocess", 0, "success"),
        ("preprocess", 1, "success"),
    ]
    assert scores == [(0.0,)]  # the empty output: nothing to judge, no call
