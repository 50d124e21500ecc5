from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from evalkit import (
    ConfigError,
    Scorer,
    StoreError,
    create_scorer,
    list_experiments,
    read_experiment,
    read_item_scores,
    run_evals,
)

ROWS = [{"input": f"q{i}", "groundTruth": f"q{i}"} for i in range(4)]


def app(question: str) -> str:
    if question == "q3":
        raise RuntimeError("app down")
    return question if question != "q1" else "wrong"


def scorers() -> list[Scorer]:
    exact = create_scorer("Exact").generate_score(lambda run: float(run.output == run.ground_truth))

    def picky(run: object) -> float:
        if getattr(run, "input") == "q2":  # noqa: B009 - run is typed loosely here
            raise ValueError("picky about q2")
        return 1.0

    return [exact, create_scorer("Picky").generate_score(picky)]


async def test_list_and_read_experiments(store: Path) -> None:
    first = await run_evals(
        ROWS, scorers(), target=app, store=store, experiment="nightly", progress=False
    )
    other = await run_evals(
        ROWS, scorers(), target=app, store=store, experiment="other", progress=False
    )
    second = await run_evals(
        ROWS, scorers(), target=app, store=store, experiment="nightly", progress=False
    )

    listed = list_experiments(store)
    assert listed.column("id").to_pylist() == [
        second.experiment_id,
        other.experiment_id,
        first.experiment_id,
    ]
    nightly = list_experiments(store, name="nightly", limit=1)
    assert nightly.column("id").to_pylist() == [second.experiment_id]
    assert nightly.column("status").to_pylist() == ["completed_with_errors"]
    assert list_experiments(store, status=["completed"]).num_rows == 0
    assert list_experiments(store, status="completed_with_errors").num_rows == 3

    found = read_experiment(store, first.experiment_id[:8])
    assert found["id"] == first.experiment_id
    assert (found["total_items"], found["succeeded_count"], found["failed_count"]) == (4, 2, 2)
    with pytest.raises(StoreError, match="no experiment with id 'zzz'"):
        read_experiment(store, "zzz")
    with pytest.raises(StoreError, match="matches several"):
        read_experiment(store, "")


async def test_read_item_scores_pairs_every_item_and_scorer(store: Path) -> None:
    result = await run_evals(ROWS, scorers(), target=app, store=store, progress=False)
    table = read_item_scores(store, result.experiment_id)
    assert table.column_names == ["item_id", "item_index", "scorer_id", "score", "status", "error"]
    rows = [
        (r["item_index"], r["scorer_id"], r["score"], r["status"], r["error"])
        for r in table.to_pylist()
    ]
    assert rows == [
        (0, "exact", 1.0, "success", None),
        (0, "picky", 1.0, "success", None),
        (1, "exact", 0.0, "success", None),
        (1, "picky", 1.0, "success", None),
        (2, "exact", 1.0, "success", None),
        (2, "picky", None, "failed", "Scorer 'Picky' failed at generate_score: picky about q2"),
        (3, "exact", None, "failed", "app down"),
        (3, "picky", None, "failed", "app down"),
    ]
    frame = table.to_pandas()
    assert list(frame["item_id"].unique()) == [r.item.id for r in result.items]
    with pytest.raises(StoreError, match="no experiment"):
        read_item_scores(store, "nope")


@pytest.mark.parametrize("limit", [-1, 1.5, True])
async def test_a_limit_that_is_not_a_count_is_refused(store: Path, limit: object) -> None:
    await run_evals(ROWS, scorers(), target=app, store=store, progress=False)
    with pytest.raises(ConfigError, match=f"limit must be a whole number >= 0, got {limit!r}"):
        list_experiments(store, limit=limit)  # type: ignore[arg-type]
    assert list_experiments(store, limit=0).num_rows == 0


def test_reading_a_missing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such score store"):
        list_experiments(tmp_path / "missing.duckdb")
    assert not (tmp_path / "missing.duckdb").exists()


def test_a_store_cut_short_before_its_schema_lists_nothing(tmp_path: Path) -> None:
    # A run killed while creating the store leaves a DuckDB file without tables.
    blank = tmp_path / "blank.duckdb"
    duckdb.connect(str(blank)).close()
    listed = list_experiments(blank)
    assert listed.num_rows == 0
    assert "status" in listed.column_names
    with pytest.raises(StoreError, match="the store is empty"):
        read_experiment(blank, "abc")
