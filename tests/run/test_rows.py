from __future__ import annotations

from typing import Any, Literal

import pytest

from evalkit.dataset import Item
from evalkit.errors import StoreError
from evalkit.run import ItemResult, ScorerOutcome
from evalkit.run._rows import RowBuffer
from evalkit.scorer import ScorerRunResult
from evalkit.store._arrow import ARROW_SCHEMAS as SCHEMAS


def _result(n: int, scorers: dict[str, float | None]) -> ItemResult:
    item = Item(f"q{n}", {"question": n}, f"truth {n}", index=n, request_context={"user": n})
    outcomes = []
    for scorer, score in scorers.items():
        if score is None:
            outcomes.append(ScorerOutcome.failure(item.id, scorer, ValueError("no"), 1.0))
            continue
        run = ScorerRunResult(
            f"run-{n}", score, f"{scorer} on {n}", item.input, f"out {n}", item.ground_truth,
            item.request_context, preprocess_step_result={"step": n},
            generate_score_prompt=f"prompt {n}",
        )  # fmt: skip
        outcomes.append(ScorerOutcome.success(item.id, scorer, run, ("generate_score",), 2.0))
    status: Literal["success", "failed"] = "success" if None not in scorers.values() else "failed"
    return ItemResult(
        item, f"run-{n}", status, f"out {n}", "target", None, tuple(outcomes), 3.0, 4.0, 10 + n
    )


def _scores(buffer: RowBuffer) -> list[dict[str, Any]]:
    table = buffer.tables()["scores"]
    assert table.schema.equals(SCHEMAS["scores"])
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def test_each_score_row_carries_its_own_item_values() -> None:
    buffer = RowBuffer("exp", {"a": "Scorer A", "b": "Scorer B"})
    buffer.add(_result(0, {"a": 0.5, "b": None}))
    buffer.add(_result(1, {"a": None, "b": 1.0, "z": 0.25}))
    rows = _scores(buffer)
    picked = [
        (r["item_id"], r["run_id"], r["scorer_id"], r["scorer_name"], r["score"], r["input"],
         r["output"], r["ground_truth"], r["request_context"], r["source"], r["reason"])
        for r in rows
    ]  # fmt: skip
    assert picked == [
        ("q0", "run-0", "a", "Scorer A", 0.5, '{"question":0}', '"out 0"', '"truth 0"',
         '{"user":0}', "target", "a on 0"),
        ("q1", "run-1", "b", "Scorer B", 1.0, '{"question":1}', '"out 1"', '"truth 1"',
         '{"user":1}', "target", "b on 1"),
        ("q1", "run-1", "z", None, 0.25, '{"question":1}', '"out 1"', '"truth 1"',
         '{"user":1}', "target", "z on 1"),
    ]  # fmt: skip
    assert {r["experiment_id"] for r in rows} == {"exp"}
    assert [r["created_at"].microsecond for r in rows] == [10, 11, 11]
    assert [r["preprocess_step_result"] for r in rows] == ['{"step":0}', '{"step":1}', '{"step":1}']
    assert [r["generate_score_prompt"] for r in rows] == ["prompt 0", "prompt 1", "prompt 1"]
    assert [r["analyze_prompt"] for r in rows] == [None, None, None]
    assert [r["duration_ms"] for r in rows] == [2.0, 2.0, 2.0]


def test_a_buffer_without_scores_has_no_scores_table() -> None:
    buffer = RowBuffer("exp", {"a": "A"})
    buffer.add(_result(0, {"a": None}))
    tables = buffer.tables()
    assert sorted(tables) == ["experiment_items", "scorer_errors"]
    assert tables["scorer_errors"].column("scorer_name").to_pylist() == ["A"]
    assert RowBuffer("exp", {}).tables() == {}


def test_scorer_names_are_looked_up_with_no_scorers_named() -> None:
    buffer = RowBuffer("exp", {})
    buffer.add(_result(3, {"a": 1.0}))
    assert [(r["scorer_id"], r["scorer_name"]) for r in _scores(buffer)] == [("a", None)]


def test_a_value_no_column_can_hold_is_a_store_error_naming_it() -> None:
    # The backstop for a value no check covers (an item index past BIGINT cannot come from a
    # dataset): a StoreError naming the cause instead of a pyarrow traceback.
    buffer = RowBuffer("exp", {"a": "Scorer A"})
    item = Item("q", "x", None, index=2**70)
    buffer.add(ItemResult(item, "run-0", "success", "out", "target", None, (), 1.0, 1.0, 10))
    cause = r"a value no store column can hold \(OverflowError"
    with pytest.raises(StoreError, match=rf"1 finished items could not be .*: {cause}"):
        buffer.tables()
