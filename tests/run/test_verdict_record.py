"""A stored run keeps its verdict (issue 29, item 1): ``run_evals`` records its own gates in
``experiments.verdict`` and ``scorer_gates``; a cancelled run has none; a resumed run that
completes is judged again, its earlier verdict and gate rows replaced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest

from evalkit import ItemResult, Scorer, create_scorer, run_evals
from evalkit.run import VerdictNotKeptWarning
from evalkit.store import list_experiments, read_gates
from tests.store.conftest import hold_gate_rows

ROWS = [{"id": f"r{i}", "input": f"q{i}", "output": "x", "groundTruth": "x"} for i in range(20)]


def _scorer(sid: str, failing: set[str]) -> Scorer:
    def score(run: Any) -> float:
        if run.input in failing:
            raise RuntimeError(f"{sid} failed on {run.input}")
        return 1.0

    return create_scorer(sid.title(), id=sid).generate_score(score)


def _stored(store: Path, experiment_id: str) -> tuple[Any, ...]:
    with duckdb.connect(str(store), read_only=True) as con:
        row = con.execute(
            "SELECT verdict, baseline_id, (SELECT count(*) FROM scorer_gates"
            " WHERE experiment_id = ?) FROM experiments WHERE id = ?",
            [experiment_id, experiment_id],
        ).fetchone()
    assert row is not None
    return tuple(row)


async def test_a_run_keeps_the_verdict_of_its_gates(store: Path) -> None:
    passing = await run_evals(ROWS, [_scorer("a", set())], store=store, thresholds={"a": 0.5})
    failing = await run_evals(ROWS, [_scorer("a", set())], store=store, thresholds={"a": 1.5})
    assert _stored(store, passing.experiment_id) == ("passed", None, 1)
    assert _stored(store, failing.experiment_id) == ("failed", None, 1)
    (gate,) = read_gates(store, failing.experiment_id)
    assert gate["passed"] is False
    assert gate["reasons"] == ["mean 1.000 misses the threshold >= 1.5"]
    assert (gate["mean"], gate["threshold_min"], gate["threshold_max"]) == (1.0, 1.5, None)
    assert (gate["error_rate"], gate["max_error_rate"]) == (0.0, 0.05)
    listed = list_experiments(store).to_pylist()
    assert [r["verdict"] for r in listed] == ["failed", "passed"]


async def test_a_cancelled_run_has_no_verdict(store: Path) -> None:
    finished: list[str] = []
    with anyio.CancelScope() as scope:

        def stop_after_five(result: ItemResult) -> None:
            finished.append(result.item.id)
            if len(finished) == 5:
                scope.cancel()

        await run_evals(ROWS, [_scorer("a", set())], store=store, concurrency=1,
                        on_item_complete=stop_after_five)  # fmt: skip
    assert scope.cancelled_caught
    (run,) = list_experiments(store).to_pylist()
    assert run["status"] == "cancelled"
    assert _stored(store, run["id"]) == (None, None, 0)


async def test_a_resumed_run_is_judged_again_when_it_completes(store: Path) -> None:
    failing = {f"q{i}" for i in range(5)}  # 25% of the pairs: above the 5% error rate
    scorers = [_scorer("a", failing), _scorer("b", set())]
    first = await run_evals(ROWS, scorers, store=store)
    assert _stored(store, first.experiment_id) == ("failed", None, 2)
    gates = {g["scorer_id"]: g for g in read_gates(store, first.experiment_id)}
    assert gates["a"]["reasons"][0].startswith("error rate 25% above max_error_rate 5%")
    assert gates["b"]["passed"] is True

    failing.clear()
    again = await run_evals(ROWS, scorers, store=store, resume=first.experiment_id,
                            retry_errors=True)  # fmt: skip
    assert again.status == "completed"
    # Replaced, not added to: still one gate row per scorer.
    assert _stored(store, first.experiment_id) == ("passed", None, 2)
    assert all(g["passed"] and g["reasons"] == [] for g in read_gates(store, first.experiment_id))


async def test_a_verdict_the_store_cannot_take_is_warned_and_the_run_returned(store: Path) -> None:
    # From the last item on, every verdict write conflicts (hold_gate_rows); the run's don't.
    held: list[duckdb.DuckDBPyConnection] = []

    def hold_the_gate_rows(result: ItemResult) -> None:
        if result.item.id == ROWS[-1]["id"]:
            held.append(hold_gate_rows(store, "a"))

    try:
        with pytest.warns(VerdictNotKeptWarning) as warned:
            result = await run_evals(
                ROWS, [_scorer("a", set())], store=store, experiment="held", concurrency=1,
                flush_interval=3600, lock_timeout=0.2, on_item_complete=hold_the_gate_rows,
            )  # fmt: skip
    finally:
        for con in held:
            con.rollback()
            con.close()
    assert held, "the last item's callback never ran"
    # The run is returned whole, judged on its own gates.
    assert result.status == "completed"
    assert [r.item.id for r in result.items] == [row["id"] for row in ROWS]
    assert result.verdict.passed
    # One warning, naming the store and the run, saying its verdict was not kept.
    (message,) = [str(w.message) for w in warned]
    assert message.startswith("evalkit: ")
    assert f"the verdict of 'held' ({result.experiment_id})" in message
    assert f"was not kept in the store {store}" in message
    # Nothing scored is lost: every item and score is stored; only the verdict is missing.
    with duckdb.connect(str(store), read_only=True) as con:
        stored = con.execute(
            "SELECT status, succeeded_count, verdict, (SELECT count(*) FROM scores"
            " WHERE experiment_id = e.id) FROM experiments e WHERE id = ?",
            [result.experiment_id],
        ).fetchone()
    assert stored == ("completed", len(ROWS), None, len(ROWS))
