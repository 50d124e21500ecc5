from __future__ import annotations

import pandas as pd
import pytest

from evalkit import create_scorer, run_evals
from tests.run.conftest import QA, exact_scorer, flaky_scorer


async def test_to_pandas_has_a_row_per_item_and_scorer() -> None:
    result = await run_evals(QA, [exact_scorer(), flaky_scorer()], store=None, progress=False)
    frame = result.to_pandas()
    assert len(frame) == 12
    assert list(frame["scorer_id"][:2]) == ["exact", "flaky"]
    assert list(frame["item_index"]) == [i // 2 for i in range(12)]
    means = frame[frame["status"] == "success"].groupby("scorer_id")["score"].mean().to_dict()
    assert means == pytest.approx(result.scores)
    failed = frame[frame["status"] == "failed"]
    assert list(failed["scorer_id"]) == ["flaky", "flaky"]
    assert list(failed["score"]) == [0.5, 0.5]
    assert list(failed["failed_step"]) == ["generate_reason", "generate_reason"]
    assert failed["error"].str.contains("reason exploded").all()
    assert set(frame["item_status"]) == {"success", "failed"}
    assert frame["score"].dtype == "float64"


async def test_to_pandas_keeps_items_whose_target_failed() -> None:
    def app(question: str) -> str:
        if "Hamlet" in question:
            raise ValueError("no idea")
        return "x"

    rows = [{"input": r["input"]} for r in QA]
    scorer = create_scorer("One").generate_score(lambda run: 1.0)
    result = await run_evals(rows, [scorer], target=app, store=None, progress=False)
    frame = result.to_pandas()
    assert len(frame) == 6
    row = frame[frame["item_status"] == "failed"].iloc[0]
    assert pd.isna(row["scorer_id"])
    assert row["target_error"] == "no idea"
    assert row["input"] == "Author of Hamlet?"


async def test_results_for_and_summary() -> None:
    result = await run_evals(QA, [exact_scorer(), flaky_scorer()], store=None, progress=False)
    outcomes = result.results_for("exact")
    assert [o.item_id for o in outcomes] == [r.item.id for r in result.items]
    assert [o.score for o in outcomes] == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    with pytest.raises(KeyError, match="no scorer 'nope'"):
        result.results_for("nope")
    summary = result.summary.scorers["exact"]
    assert (summary.n, summary.failed, summary.min, summary.max) == (6, 0, 0.0, 1.0)
    assert summary.mean == pytest.approx(4 / 6)
    assert summary.stddev == pytest.approx(0.5163977794943222)
    assert result.items[0].outcome("flaky") is result.items[0].outcomes[1]
    data = result.to_dict()
    assert data["summary"]["scorers"]["flaky"]["failed"] == 2
    assert data["scores"] == result.scores


async def test_to_arrow_has_the_columns_of_to_pandas_with_arrow_types() -> None:
    import json

    import pyarrow as pa

    result = await run_evals(QA, [exact_scorer(), flaky_scorer()], store=None, progress=False)
    table = result.to_arrow()
    frame = result.to_pandas()
    assert table.column_names == list(frame.columns)
    assert table.num_rows == len(frame) == 12
    types = {name: table.schema.field(name).type for name in table.column_names}
    assert types["score"] == pa.float64()
    assert types["item_index"] == pa.int64()
    assert types["duration_ms"] == pa.float64()
    assert types["completed_steps"] == pa.list_(pa.string())
    for name in ("item_id", "scorer_id", "status", "reason", "error", "input", "output"):
        assert types[name] == pa.string(), name  # text stays text
    assert table.column("score").to_pylist() == list(frame["score"])
    assert table.column("error").to_pylist()[7] == frame["error"][7]
    assert "reason exploded" in frame["error"][7]
    assert table.column("completed_steps").to_pylist()[7] == ["generate_score"]
    # Nested values are JSON text, typed as JSON: one Arrow type for a column of any shapes.
    rows = [{"input": {"q": "2+2", "n": [1, 2]}, "groundTruth": "4", "output": 4}, *QA[1:]]
    nested = (await run_evals(rows, [exact_scorer()], store=None, progress=False)).to_arrow()
    assert nested.schema.field("input").type == pa.json_()
    assert nested.schema.field("output").type == pa.json_()
    assert json.loads(nested.column("input")[0].as_py()) == {"q": "2+2", "n": [1, 2]}
    assert json.loads(nested.column("input")[1].as_py()) == "Capital of France?"
    assert nested.schema.field("ground_truth").type == pa.string()


async def test_to_arrow_keeps_items_whose_target_failed() -> None:
    def app(question: str) -> str:
        if "Hamlet" in question:
            raise ValueError("no idea")
        return "x"

    rows = [{"input": r["input"]} for r in QA]
    scorer = create_scorer("One").generate_score(lambda run: 1.0)
    table = (await run_evals(rows, [scorer], target=app, store=None, progress=False)).to_arrow()
    failed = [r for r in table.to_pylist() if r["item_status"] == "failed"]
    assert len(failed) == 1
    assert failed[0]["scorer_id"] is None
    assert failed[0]["target_error"] == "no idea"
    assert failed[0]["completed_steps"] is None
