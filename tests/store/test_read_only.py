"""``read_only_connection`` on a DuckLake store reads the lake's files as of the snapshot it
opened: a run another writer commits afterwards brings files it was never allowed to read."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit import run_evals_sync
from evalkit._extensions import ducklake_missing
from evalkit.store import read_only_connection
from evalkit.store._lake import prepare_store
from tests.store.lake_writer import rows, scorers

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)


def test_a_read_only_connection_reads_the_snapshot_it_opened(tmp_path: Path) -> None:
    store = prepare_store(
        f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}", data_path=tmp_path / "data"
    )
    first = run_evals_sync(rows(100), scorers(0.0), store=store, progress=False)
    query = "SELECT experiment_id, count(*), avg(score) FROM scores GROUP BY 1"
    with read_only_connection(store) as con:
        before = con.execute(query).fetchall()
        files = set((tmp_path / "data").rglob("*.parquet"))
        second = run_evals_sync(rows(300), scorers(0.0), store=store, progress=False)
        assert set((tmp_path / "data").rglob("*.parquet")) > files  # the new run's files
        assert con.execute(query).fetchall() == before
    assert [(r[0], r[1]) for r in before] == [(first.experiment_id, 200)]
    with read_only_connection(store) as con:
        after = dict(
            con.execute("SELECT experiment_id, count(*) FROM scores GROUP BY 1").fetchall()
        )
    assert after == {first.experiment_id: 200, second.experiment_id: 600}
