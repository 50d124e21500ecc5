"""Values Arrow cannot take never lose their batch (issue 30, item 1): a lone surrogate in an
output, an input, a reason, metadata or a judge's reply is stored as U+FFFD with every other
row of the batch; metadata Python can hold but JSON cannot (ints past int64, NaN keys, sets,
objects) is stored as its JSON form. Real runs into a real DuckDB file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit import Judge, JudgeCost, JudgeUsage, PromptStep, create_scorer, run_evals
from evalkit.testing import FakeOpenAIServer, Rule
from tests.doubles import ScriptedJudgeStep

ROWS = 50  # one flush: a failing value used to lose all of them


def table(store: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.mark.parametrize(
    ("odd", "column", "stored"),
    [
        ({"output": "4\ud8002"}, "output", '"4\ufffd2"'),
        ({"input": "What is\udfff?"}, "input", '"What is\ufffd?"'),
        ({"metadata": {"k\ud800": "v\udc00x"}}, "metadata", '{"k\ufffd":"v\ufffdx"}'),
        # A surrogate pair given as two code units is the character it spells.
        ({"output": "\ud83d\ude00"}, "output", '"\U0001f600"'),
    ],
)
async def test_a_lone_surrogate_in_a_row_is_stored_as_the_replacement_character(
    tmp_path: Path, odd: dict[str, Any], column: str, stored: str
) -> None:
    rows: list[dict[str, Any]] = [{"input": f"q{i}", "output": f"a{i}"} for i in range(ROWS)]
    rows[7] = {**rows[7], **odd}
    scorer = create_scorer("Len", id="len").generate_score(lambda run: 1.0)
    store = tmp_path / "s.duckdb"
    result = await run_evals(rows, [scorer], store=store, progress=False)
    assert result.status == "completed"
    assert table(store, "SELECT count(*) FROM experiment_items") == [(ROWS,)]
    assert table(store, "SELECT count(*) FROM scores") == [(ROWS,)]
    assert table(store, "SELECT status FROM experiments") == [("completed",)]
    (found,) = table(store, f"SELECT {column} FROM experiment_items WHERE item_index = 7")
    assert found == (stored,)
    if column != "metadata":  # the score row's copy of the item's value
        (score,) = table(
            store,
            f"SELECT s.{column} FROM scores s JOIN experiment_items i"
            " USING (experiment_id, item_id) WHERE i.item_index = 7",
        )
        assert score == (stored,)


async def test_a_lone_surrogate_in_a_reason_keeps_the_batch(tmp_path: Path) -> None:
    rows = [{"input": f"q{i}", "output": f"a{i}"} for i in range(ROWS)]
    scorer = (
        create_scorer("Why", id="why")
        .generate_score(lambda run: 0.5)
        .generate_reason(lambda run: "cut \ud800" if run.input == "q7" else "fine")
    )
    store = tmp_path / "s.duckdb"
    result = await run_evals(rows, [scorer], store=store, progress=False)
    assert result.status == "completed"
    assert table(store, "SELECT count(*), count(*) FILTER (reason = 'fine') FROM scores") == [
        (ROWS, ROWS - 1)
    ]
    assert table(store, "SELECT reason FROM scores WHERE reason <> 'fine'") == [("cut \ufffd",)]


async def test_a_judge_reply_with_a_lone_surrogate_keeps_the_batch(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    # The reply's JSON escapes the surrogate ("\ud800"): decoded, it is a lone surrogate in
    # the reason and the execution's output. The judge cache (next to the store) keeps it
    # too: it used to warn that it could not write the run's 100 entries (an error here).
    server.add_rule(Rule("Explain q7", reply="because \ud800"))
    server.add_rule(Rule("Explain", reply="because"))
    server.add_rule(Rule("Rate", reply={"score": 1}))
    scorer = (
        create_scorer("Judged", id="judged", judge=judge)
        .generate_score(PromptStep("rate", lambda run: f"Rate {run.output}"))
        .generate_reason(PromptStep("explain", lambda run: f"Explain {run.input} ."))
    )
    rows = [{"input": f"q{i}", "output": f"a{i}"} for i in range(ROWS)]
    store = tmp_path / "s.duckdb"
    result = await run_evals(rows, [scorer], store=store, progress=False)
    assert result.status == "completed"
    assert table(store, "SELECT count(*) FROM scores") == [(ROWS,)]
    assert table(store, "SELECT count(*) FROM judge_executions") == [(2 * ROWS,)]
    assert table(store, "SELECT reason FROM scores WHERE reason <> 'because'") == [
        ("because \ufffd",)
    ]
    # The execution's output (JSON text) too.
    assert table(
        store,
        "SELECT output FROM judge_executions WHERE step = 'generate_reason'"
        " AND output <> '\"because\"'",
    ) == [('"because \ufffd"',)]


async def test_metadata_json_cannot_hold_is_stored_as_its_json_form(tmp_path: Path) -> None:
    metadata: dict[Any, Any] = {
        "big": 10**30,
        "negative": -(2**70),
        float("nan"): "nan key",
        None: "none key",
        "inf": float("inf"),
        "set": {3, 1, 2},
        "bytes": b"\xff",
    }
    rows: list[dict[str, Any]] = [{"input": f"q{i}", "output": "a"} for i in range(ROWS)]
    rows[7] = {**rows[7], "metadata": metadata}
    scorer = create_scorer("One", id="one").generate_score(lambda run: 1.0)
    store = tmp_path / "s.duckdb"
    result = await run_evals(rows, [scorer], store=store, progress=False)
    assert result.status == "completed"
    assert table(store, "SELECT count(*) FROM scores") == [(ROWS,)]
    ((text,),) = table(store, "SELECT metadata FROM experiment_items WHERE item_index = 7")
    assert json.loads(text) == {
        "big": 10**30,  # exact: JSON numbers have no size limit
        "negative": -(2**70),
        "nan": "nan key",
        "None": "none key",
        "inf": None,  # JSON has no infinity
        "set": [1, 2, 3],
        "bytes": "\ufffd",
    }


class NoText:
    """An object whose ``str()`` raises: JSON's last resort for it fails."""

    def __str__(self) -> str:
        raise RuntimeError("no text for you")

    __repr__ = __str__


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


UNSTORABLE = {
    "no-text": (NoText(), "RuntimeError: no text for you"),
    "nested": (nested(100_000), "RecursionError: maximum recursion depth exceeded"),
}


@pytest.mark.parametrize("kind", UNSTORABLE)
async def test_an_output_the_store_cannot_hold_fails_its_item_only(
    tmp_path: Path, kind: str
) -> None:
    # It used to crash the run (a traceback) after its batch was lost.
    value, why = UNSTORABLE[kind]
    rows = [{"input": f"q{i}"} for i in range(ROWS)]
    scorer = create_scorer("One", id="one").generate_score(lambda run: 1.0)
    store = tmp_path / "s.duckdb"

    def target(question: str) -> Any:
        return value if question == "q7" else f"answer to {question}"

    result = await run_evals(rows, [scorer], target=target, store=store, progress=False)
    assert result.status == "completed_with_errors"
    assert result.summary.target_failed == 1
    assert table(store, "SELECT count(*) FROM scores") == [(ROWS - 1,)]
    ((status, output, name, message),) = table(
        store,
        "SELECT status, output, error->>'name', error->>'message' FROM experiment_items"
        " WHERE item_index = 7",
    )
    assert (status, output, name) == ("failed", None, "TargetError")
    assert "the target's output for item" in message
    assert f"cannot be stored as JSON ({why}" in message


@pytest.mark.parametrize("kind", UNSTORABLE)
async def test_a_step_result_the_store_cannot_hold_fails_its_pair_only(
    tmp_path: Path, kind: str
) -> None:
    value, why = UNSTORABLE[kind]
    rows = [{"input": f"q{i}", "output": "a"} for i in range(ROWS)]
    scorer = (
        create_scorer("Steps", id="steps")
        .preprocess(lambda run: value if run.input == "q7" else {"fine": True})
        .generate_score(lambda run: 1.0)
    )
    store = tmp_path / "s.duckdb"
    result = await run_evals(rows, [scorer], store=store, progress=False)
    assert result.status == "completed_with_errors"
    assert result.summary.scorers["steps"].failed == 1
    assert table(store, "SELECT count(*) FROM scores") == [(ROWS - 1,)]
    ((step, completed, message),) = table(
        store, "SELECT failed_step, completed_steps, error_message FROM scorer_errors"
    )
    assert (step, completed) == ("preprocess", "[]")
    assert f"the preprocess step's result cannot be stored as JSON ({why}" in message


async def test_a_steps_own_judge_record_with_absurd_numbers_keeps_the_batch(
    tmp_path: Path,
) -> None:
    # A step of the user's own (the public Step protocol) may record any JudgeUsage and
    # JudgeCost: counts past BIGINT and a cost past the float range are stored NULL.
    step = ScriptedJudgeStep(
        0.5,
        usage=JudgeUsage(input_tokens=2**70, output_tokens=-3, total_tokens=12),
        cost=JudgeCost(10**400, "USD", "custom"),
    )
    scorer = create_scorer("Custom", id="custom").generate_score(step)
    rows = [{"input": f"q{i}", "output": "a"} for i in range(ROWS)]
    store = tmp_path / "s.duckdb"
    result = await run_evals(rows, [scorer], store=store, progress=False)
    assert result.status == "completed"
    assert table(store, "SELECT count(*) FROM scores") == [(ROWS,)]
    assert table(
        store,
        "SELECT DISTINCT input_tokens, output_tokens, total_tokens, cost_amount"
        " FROM judge_executions",
    ) == [(None, None, 12, None)]
