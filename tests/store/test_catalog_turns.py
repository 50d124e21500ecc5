"""Every writing use of a DuckLake store's SQLite catalog takes the writers' turn
(``<catalog>.commit-lock``): the recovery of spilled rows, the merge of finished slices and
``merge_stores`` wait while another process holds it, and go on once it is let go."""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evalkit import StoreError
from evalkit._extensions import ducklake_missing
from evalkit.run import run_evals
from evalkit.store import connection, copy_experiments, recover
from evalkit.store._lake import prepare_store
from evalkit.store._lake_merge import merge_finished_slices
from evalkit.store._merge import merge_stores
from evalkit.store._recovery import recovery_dir
from evalkit.store._writer import ExperimentRecord, ScorerRecord, StoreWriter
from tests.benchmarks.bench_ducklake import prebuilt_batches
from tests.benchmarks.bench_store import SCORERS
from tests.store.test_merge import LABELS, exact, slices
from tests.store.test_merge import data as data  # the fixture
from tests.store.test_merge_lake import merged

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

#: How long a test lets the operation run while the turn is held. On the old code the
#: operation ends well within it; with turns, it waits however long the turn is held.
HELD_S = 8.0


def lake(tmp_path: Path) -> str:
    return f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"


@contextmanager
def turn_held(tmp_path: Path) -> Iterator[None]:
    """The writers' turn, held as another process's writer would hold it."""
    fd = os.open(tmp_path / "catalog.sqlite.commit-lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def started(action: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """``action`` running in a thread of its own; its result (or error) lands in the list."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(action())
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def scores_of(store: str, experiment_id: str) -> int:
    with connection(store, read_only=True) as con:
        found = con.execute(
            "SELECT count(*) FROM scores WHERE experiment_id = ?", [experiment_id]
        ).fetchone()
    assert found is not None
    return int(found[0])


def test_recover_loads_spilled_rows_only_in_the_writers_turn(tmp_path: Path) -> None:
    store = prepare_store(lake(tmp_path), data_path=tmp_path / "data")
    writer = StoreWriter(store, lock_timeout=1.0)
    writer.begin(
        ExperimentRecord("e1", "e1", None, "synthetic", {}, None, 500,
                         dt.datetime.now(dt.UTC), "test"),
        [ScorerRecord(s, s, "", i) for i, s in enumerate(SCORERS)],
    )  # fmt: skip
    with turn_held(tmp_path):
        # The run's store stays busy past its lock_timeout: its rows are spilled.
        with pytest.warns(RuntimeWarning, match="retrying the write"):
            writer.write(prebuilt_batches("e1", 0, 500)[0])
        with pytest.raises(StoreError, match="kept in"):
            writer.finish(status="completed", completed_at=dt.datetime.now(dt.UTC),
                          dataset_fingerprint=None)  # fmt: skip
        assert any(recovery_dir(store).rglob("*.arrow"))
        # While another writer has the turn, recovery waits for it and gives up; nothing loaded.
        with pytest.raises(StoreError, match="commit lock"):
            recover(store, lock_timeout=1.0)
        assert scores_of(store, "e1") == 0
        assert any(recovery_dir(store).rglob("*.arrow"))
    assert recover(store, lock_timeout=1.0) == 1
    assert scores_of(store, "e1") == 500 * len(SCORERS)
    assert not recovery_dir(store).exists()


@pytest.mark.long(seconds=14)
async def test_the_merge_of_finished_slices_waits_for_the_writers_turn(
    data: Path, tmp_path: Path
) -> None:
    store = lake(tmp_path)
    await run_evals(data, [exact()], store=store, shard="0/2", labels=LABELS, progress=False)
    part = tmp_path / "part1.duckdb"
    last = await run_evals(data, [exact()], store=part, shard="1/2", labels=LABELS,
                           progress=False)  # fmt: skip
    copy_experiments(part, store)  # both slices finished in the lake, not merged yet
    assert merged(store) == []
    with turn_held(tmp_path):
        thread, outcome = started(lambda: merge_finished_slices(store, last.experiment_id))
        thread.join(HELD_S)
        assert thread.is_alive(), outcome  # waiting for the turn, not merging beside it
        assert merged(store) == []
    thread.join()
    (new_id,) = outcome
    assert [run["id"] for run in merged(store)] == [new_id]


async def test_merge_stores_into_a_lake_waits_for_the_writers_turn(
    data: Path, tmp_path: Path
) -> None:
    parts = await slices(data, tmp_path, 2)
    store = prepare_store(lake(tmp_path), data_path=tmp_path / "data")
    with turn_held(tmp_path):
        thread, outcome = started(lambda: merge_stores(parts, store))
        thread.join(HELD_S)
        assert thread.is_alive(), outcome
    thread.join()
    assert not isinstance(outcome[0], BaseException), outcome
    assert [run["id"] for run in merged(store)] == outcome[0]
