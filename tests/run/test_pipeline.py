"""One run pipeline: both drivers get the same option checks before anything is stored, and
record an interruption the same way."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit import create_scorer
from evalkit.errors import ConfigError
from evalkit.run import run_evals

from .conftest import QA, exact_scorer


@pytest.fixture
def grouped(tmp_path: Path) -> Path:
    path = tmp_path / "grouped.parquet"
    rows = [{"input": f"q{i}", "groundTruth": "a", "output": "a"} for i in range(24)]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=6)
    return path


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"concurrency": 0}, "concurrency must be a positive integer"),
        ({"concurrency": 10_001}, "concurrency = 10001 is above the ceiling of 10000"),
        ({"concurrency": 99999999999999999999}, "concurrency = 99999999999999999999 is above"),
        ({"limit": -1}, "limit must be an integer from 0 to"),
        ({"flush_interval": 0}, "flush_interval must be a number of seconds above 0"),
    ],
)
@pytest.mark.parametrize("sharding", [{}, {"shard": "0/1"}, {"executor": "process"}])
async def test_both_drivers_refuse_the_same_bad_options_before_storing(
    qa_path: Path,
    store: Path,
    option: dict[str, Any],
    message: str,
    sharding: dict[str, Any],
) -> None:
    with pytest.raises(ConfigError, match=message):
        await run_evals(qa_path, [exact_scorer()], store=store, progress=False,
                        **option, **sharding)  # fmt: skip
    assert not store.exists()


async def test_an_unshippable_scorer_is_refused_before_the_experiment_is_stored(
    qa_path: Path, store: Path
) -> None:
    lock = threading.Lock()
    bad = create_scorer("Locked", id="locked").generate_score(
        lambda run: 1.0 if lock.acquire(blocking=False) else 0.0
    )
    with pytest.raises(ConfigError, match="scorer 'locked' cannot be shipped"):
        await run_evals(qa_path, [bad], executor="process", store=store, progress=False)
    assert not store.exists()


async def test_a_cancelled_sharded_run_is_recorded_cancelled(grouped: Path, store: Path) -> None:
    started = threading.Event()

    def slow(run: Any) -> float:
        started.set()
        time.sleep(0.02)
        return 1.0

    scorer = create_scorer("Slow", id="slow").generate_score(slow)
    async with anyio.create_task_group() as group:

        async def run() -> None:
            await run_evals(grouped, [scorer], shard="0/1", store=store, progress=False)

        group.start_soon(run)
        # Cancelled while its shards run (not while the run is being prepared).
        await anyio.to_thread.run_sync(started.wait, 30)
        group.cancel_scope.cancel()
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT status FROM experiments").fetchall() == [("cancelled",)]


async def test_both_drivers_make_ids_alike(qa_path: Path, store: Path) -> None:
    local = await run_evals(qa_path, [exact_scorer()], store=store, progress=False)
    sharded = await run_evals(qa_path, [exact_scorer()], store=store, shard="0/1", progress=False)
    for result in (local, sharded):
        assert len(result.experiment_id) == 12
        int(result.experiment_id, 16)
    assert local.experiment_id != sharded.experiment_id
    assert local.summary.processed == sharded.summary.processed == len(QA)
