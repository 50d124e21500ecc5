"""``copy_experiments``: runs move between a DuckDB store file and a DuckLake store, both
ways, whole, and never twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalkit import StoreError, run_evals
from evalkit._extensions import ducklake_missing
from evalkit.store import connection, copy_experiments
from tests.store.lake_writer import rows, scorers

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

TABLES = ("experiments", "experiment_scorers", "experiment_items", "scores")


def contents(store: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the copied tables, ordered, without the store's own row ids."""
    with connection(store, read_only=True) as con:
        return {
            "experiments": con.execute(
                "SELECT id, name, status, total_items, succeeded_count, config, partial"
                " FROM experiments ORDER BY id"
            ).fetchall(),
            "experiment_scorers": con.execute(
                "SELECT * FROM experiment_scorers ORDER BY ALL"
            ).fetchall(),
            "experiment_items": con.execute(
                "SELECT * FROM experiment_items ORDER BY experiment_id, item_id"
            ).fetchall(),
            "scores": con.execute(
                "SELECT * EXCLUDE (id) FROM scores ORDER BY experiment_id, item_id, scorer_id"
            ).fetchall(),
            "summary": con.execute("SELECT * FROM scorer_summary ORDER BY ALL").fetchall(),
        }


async def two_runs(store: str) -> list[str]:
    ids = []
    for name in ("first", "second"):
        result = await run_evals(rows(25), scorers(0.0), store=store, experiment=name,
                                 progress=False)  # fmt: skip
        ids.append(result.experiment_id)
    return ids


@pytest.mark.parametrize("direction", ["file to lake", "lake to file"])
async def test_copy_moves_every_row_both_ways_and_never_twice(
    tmp_path: Path, direction: str
) -> None:
    file = str(tmp_path / "evalkit.duckdb")
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    source, destination = (file, lake) if direction == "file to lake" else (lake, file)
    ids = await two_runs(source)

    done = copy_experiments(source, destination)
    assert done.copied == tuple(ids)
    assert done.rows["scores"] == 100
    assert done.rows["experiment_items"] == 50
    assert done.already_there == ()
    assert contents(destination) == contents(source)

    again = copy_experiments(source, destination)
    assert again.copied == ()
    assert again.already_there == tuple(ids)
    assert contents(destination) == contents(source)


async def test_copy_takes_the_runs_named_by_id_or_prefix(tmp_path: Path) -> None:
    file = str(tmp_path / "evalkit.duckdb")
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    first, second = await two_runs(file)
    done = copy_experiments(file, lake, experiments=[second[:5]])
    assert done.copied == (second,)
    with connection(lake, read_only=True) as con:
        assert con.execute("SELECT id FROM experiments").fetchall() == [(second,)]
        assert con.execute("SELECT DISTINCT experiment_id FROM scores").fetchall() == [(second,)]
    with pytest.raises(StoreError, match="no experiment 'nosuch'"):
        copy_experiments(file, lake, experiments=["nosuch"])
    assert first != second


def test_copying_a_store_onto_itself_is_refused(tmp_path: Path) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    with pytest.raises(StoreError, match="the source and the destination are the same store"):
        copy_experiments(lake, f"ducklake:sqlite:{tmp_path}/./catalog.sqlite")
