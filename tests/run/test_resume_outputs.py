"""A resumed pair is scored on the output its item already has; a new output re-runs it all."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit import ItemResult, Scorer, create_scorer, run_evals
from evalkit.errors import ConfigError

ROWS = 10


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "qa.parquet"
    rows = [{"id": f"r{i}", "input": f"q{i}", "groundTruth": f"a{i}"} for i in range(ROWS)]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


class App:
    """A target whose answer changes with every call: a nested value holding the call count.

    Inputs in ``fail_first`` fail on their first call.
    """

    def __init__(self, fail_first: frozenset[str] = frozenset()) -> None:
        self.calls: Counter[str] = Counter()
        self.fail_first = fail_first

    async def __call__(self, question: str) -> Any:
        await anyio.sleep(0)  # a checkpoint, where a cancellation lands
        self.calls[question] += 1
        n = self.calls[question]
        if n == 1 and question in self.fail_first:
            raise ConnectionError(f"app down for {question}")
        return {
            "answer": f"{question} #{n}",
            "call": n,
            "parts": ["é✓", {"x": 1.5, "ok": True, "none": None, "big": 2**70}],
            "text": '{"json": "text stays text"}',
        }


class Seen:
    """Scorers that record each output they were given; ``fail_first`` fail their first run."""

    def __init__(self) -> None:
        self.outputs: dict[tuple[str, str], list[Any]] = {}

    def scorer(self, sid: str, *, fail_first: frozenset[str] = frozenset()) -> Scorer:
        def score(run: Any) -> float:
            seen = self.outputs.setdefault((sid, run.input), [])
            seen.append(run.output)
            if len(seen) == 1 and run.input in fail_first:
                raise RuntimeError(f"{sid} flaked on {run.input}")
            return 1.0

        return create_scorer(sid.title(), id=sid).generate_score(score)


FLAKY_ON = frozenset({"q1", "q4", "q7"})


def stored_outputs(store: Path, experiment_id: str) -> dict[str, Any]:
    """Per item id, its stored output; asserts every score row holds that same output."""
    with duckdb.connect(str(store), read_only=True) as con:
        items = dict(
            con.execute(
                "SELECT item_id, output FROM experiment_items WHERE experiment_id = ?",
                [experiment_id],
            ).fetchall()
        )
        scores = con.execute(
            "SELECT item_id, scorer_id, output FROM scores WHERE experiment_id = ?",
            [experiment_id],
        ).fetchall()
    mismatched = [(i, s, out, items.get(i)) for i, s, out in scores if out != items.get(i)]
    assert mismatched == []
    return {item: json.loads(text) if text is not None else None for item, text in items.items()}


def score_count(store: Path, experiment_id: str) -> int:
    with duckdb.connect(str(store), read_only=True) as con:
        row = con.execute(
            "SELECT count(*) FROM scores WHERE experiment_id = ?", [experiment_id]
        ).fetchone()
    assert row is not None
    return int(row[0])


async def test_retry_errors_scores_failed_pairs_on_the_stored_output(
    data: Path, store: Path
) -> None:
    app, seen = App(), Seen()
    scorers = [seen.scorer("steady"), seen.scorer("flaky", fail_first=FLAKY_ON)]
    first = await run_evals(data, scorers, target=app, store=store, progress=False)
    assert first.status == "completed_with_errors"
    assert sum(app.calls.values()) == ROWS

    again = await run_evals(
        data, scorers, target=app, store=store, progress=False, resume=first.experiment_id,
        retry_errors=True,
    )  # fmt: skip
    assert again.status == "completed"
    assert sum(app.calls.values()) == ROWS, "a retried pair called the target again"
    outputs = stored_outputs(store, first.experiment_id)
    assert score_count(store, first.experiment_id) == 2 * ROWS
    for q in sorted(FLAKY_ON):
        before, retried = seen.outputs[("flaky", q)]
        # The same Python value as the first time, nested parts and text included.
        assert retried == before == seen.outputs[("steady", q)][0]
        assert outputs[f"r{q[1:]}"] == before
        assert type(retried["text"]) is str
    assert all(out["call"] == 1 for out in outputs.values())


async def test_resuming_a_cancelled_run_scores_its_failed_pairs_on_the_stored_output(
    data: Path, store: Path
) -> None:
    app, seen = App(), Seen()
    scorers = [seen.scorer("steady"), seen.scorer("flaky", fail_first=FLAKY_ON)]
    finished: list[str] = []
    with anyio.CancelScope() as scope:

        def stop_after_six(result: ItemResult) -> None:
            finished.append(result.item.id)
            if len(finished) == 6:
                scope.cancel()

        await run_evals(
            data, scorers, target=app, store=store, progress=False, concurrency=1,
            on_item_complete=stop_after_six,
        )  # fmt: skip
    assert scope.cancelled_caught
    assert finished == [f"r{i}" for i in range(6)]
    with duckdb.connect(str(store), read_only=True) as con:
        (experiment_id,) = con.execute("SELECT id FROM experiments").fetchone() or ("?",)

    again = await run_evals(
        data, scorers, target=app, store=store, progress=False, resume=experiment_id
    )
    # q1 and q4 are retried on their stored outputs, q6..q9 are evaluated for the first time.
    assert app.calls == Counter({f"q{i}": 1 for i in range(ROWS)})
    assert again.status == "completed_with_errors"  # q7 flaked on its first (resumed) run
    outputs = stored_outputs(store, experiment_id)
    assert len(outputs) == ROWS
    for q in ("q1", "q4"):
        assert seen.outputs[("flaky", q)] == [outputs[f"r{q[1:]}"]] * 2


async def test_an_item_whose_target_failed_gets_a_new_output_and_every_scorer(
    data: Path, store: Path
) -> None:
    app, seen = App(fail_first=frozenset({"q2", "q5"})), Seen()
    scorers = [seen.scorer("steady"), seen.scorer("flaky", fail_first=frozenset({"q1"}))]
    first = await run_evals(data, scorers, target=app, store=store, progress=False)
    assert first.summary.target_failed == 2
    assert ("steady", "q2") not in seen.outputs

    again = await run_evals(
        data, scorers, target=app, store=store, progress=False, resume=first.experiment_id,
        retry_errors=True,
    )  # fmt: skip
    assert again.status == "completed"
    assert app.calls == Counter({f"q{i}": 2 if i in (2, 5) else 1 for i in range(ROWS)})
    outputs = stored_outputs(store, first.experiment_id)
    assert score_count(store, first.experiment_id) == 2 * ROWS
    for q in ("q2", "q5"):
        assert outputs[f"r{q[1:]}"]["call"] == 2
        assert seen.outputs[("steady", q)] == seen.outputs[("flaky", q)] == [outputs[f"r{q[1:]}"]]
    assert seen.outputs[("flaky", "q1")] == [outputs["r1"]] * 2


async def test_regenerate_gives_items_with_a_failed_pair_a_new_output_and_reruns_them(
    data: Path, store: Path
) -> None:
    app, seen = App(), Seen()
    scorers = [seen.scorer("steady"), seen.scorer("flaky", fail_first=FLAKY_ON)]
    first = await run_evals(data, scorers, target=app, store=store, progress=False)
    before = stored_outputs(store, first.experiment_id)

    again = await run_evals(
        data, scorers, target=app, store=store, progress=False, resume=first.experiment_id,
        retry_errors=True, regenerate=True,
    )  # fmt: skip
    assert again.status == "completed"
    assert app.calls == Counter({f"q{i}": 2 if f"q{i}" in FLAKY_ON else 1 for i in range(ROWS)})
    after = stored_outputs(store, first.experiment_id)
    assert score_count(store, first.experiment_id) == 2 * ROWS
    for i in range(ROWS):
        q, item = f"q{i}", f"r{i}"
        if q in FLAKY_ON:
            assert after[item]["call"] == 2
            # Every scorer of the item ran again, on the new output (steady's score replaced).
            assert seen.outputs[("steady", q)] == [before[item], after[item]]
            assert seen.outputs[("flaky", q)] == [before[item], after[item]]
        else:
            assert after[item] == before[item]
            assert len(seen.outputs[("steady", q)]) == 1


async def test_regenerate_needs_a_resume_and_a_target(data: Path, store: Path) -> None:
    seen = Seen()
    with pytest.raises(ConfigError, match="only apply with resume"):
        await run_evals(data, [seen.scorer("s")], target=App(), store=store, regenerate=True)
    with pytest.raises(ConfigError, match="regenerate"):
        await run_evals(
            data, [seen.scorer("s")], target=App(), store=store, resume="abc", regenerate=True,
            executor="process",
        )  # fmt: skip
    rows = [{"id": f"r{i}", "input": f"q{i}", "output": "x"} for i in range(3)]
    flaky = seen.scorer("flaky", fail_first=frozenset({"q1"}))
    first = await run_evals(rows, [flaky], store=store, progress=False)
    with pytest.raises(ConfigError, match="regenerate needs a target"):
        await run_evals(
            rows, [flaky], store=store, progress=False, resume=first.experiment_id,
            retry_errors=True, regenerate=True,
        )  # fmt: skip
