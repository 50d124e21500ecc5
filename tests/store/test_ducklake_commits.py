"""What a DuckLake writer's commits change, read from the lake's own snapshot list
(``ducklake_snapshots``): a flush of rows only appends, so concurrent writers' flushes never
conflict (an UPDATE of ``experiments`` in each flush made them conflict and be run again)."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest

from evalkit._extensions import ducklake_missing
from evalkit.run._rows import RowBuffer
from evalkit.store import connection
from evalkit.store._writer import LAKE_PROGRESS_S, ExperimentRecord, ScorerRecord, StoreWriter
from tests.benchmarks.bench_store import SCORERS, make_items

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

#: The keys of a snapshot's ``changes`` that only add rows.
APPENDS = {"tables_inserted_into", "inlined_insert"}
#: The keys that change a table's rows (an UPDATE is a delete and an insert).
ROW_CHANGES = APPENDS | {"tables_deleted_from", "inlined_delete"}


def write_batches(store: str, batches: int, items: int) -> StoreWriter:
    writer = StoreWriter(store)
    writer.begin(
        ExperimentRecord("x1", "appends", None, "d", {}, None, batches * items,
                         dt.datetime.now(dt.UTC), "test"),
        [ScorerRecord(s, s, "", i) for i, s in enumerate(SCORERS)],
    )  # fmt: skip
    for n in range(batches):
        buffer = RowBuffer("x1", {s: s for s in SCORERS})
        for item in make_items(n * items, items):
            buffer.add(item)
        writer.write(buffer)
    writer.finish(status="completed", completed_at=dt.datetime.now(dt.UTC),
                  dataset_fingerprint=None)  # fmt: skip
    return writer


@pytest.mark.parametrize("items", [2, 300], ids=["inlined", "parquet"])
def test_every_flush_of_a_lake_writer_is_a_commit_that_only_appends(
    tmp_path: Path, items: int
) -> None:
    # Small flushes are inlined into the catalog, larger ones written as Parquet files: both
    # must be pure appends.
    store = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    started = time.monotonic()
    writer = write_batches(store, 4, items)
    elapsed = time.monotonic() - started
    with connection(store, read_only=True) as con:
        ids = dict(
            con.execute("SELECT table_name, table_id::VARCHAR FROM ducklake_table_info(?)",
                        ["evalkit_lake"]).fetchall()
        )  # fmt: skip
        snapshots = con.execute(
            "SELECT snapshot_id, changes FROM ducklake_snapshots(?) ORDER BY snapshot_id",
            ["evalkit_lake"],
        ).fetchall()
        stored = con.execute(
            "SELECT status, succeeded_count, (SELECT count(*) FROM scores),"
            " (SELECT count(DISTINCT item_id) FROM experiment_items) FROM experiments"
        ).fetchall()
    assert stored == [("completed", 4 * items, 4 * items * len(SCORERS), 4 * items)]
    assert writer.succeeded == 4 * items
    flushes = [
        (snapshot, changes)
        for snapshot, changes in snapshots
        if any(ids["scores"] in changes.get(key, []) for key in APPENDS)
    ]
    assert len(flushes) == 4, snapshots  # one commit a flush
    for snapshot, changes in flushes:
        assert set(changes) <= APPENDS, (snapshot, changes)
        touched = {table for key in APPENDS for table in changes.get(key, [])}
        assert ids["experiments"] not in touched, (snapshot, changes)
        assert touched <= {ids["scores"], ids["experiment_items"], ids["scorer_errors"],
                           ids["judge_executions"]}, (snapshot, changes)  # fmt: skip
    # The experiment's row is written by begin and finish, and by a refresh of its counts at
    # most every LAKE_PROGRESS_S: never by each flush, even in a transaction of its own.
    rows_of_experiments = [
        snapshot
        for snapshot, changes in snapshots
        if any(ids["experiments"] in changes.get(key, []) for key in ROW_CHANGES)
    ]
    assert len(rows_of_experiments) <= 2 + int(elapsed // LAKE_PROGRESS_S), snapshots
