"""Sharded runs on Ray: same rows as a local run; a killed worker's shard is retried.

Skipped only when the ``ray`` extra is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit.run import run_evals
from evalkit.run._executors import start_local_ray

from .test_sharded import ROWS, data, errors_of, exiting_scorer, scorers, scores_of
from .test_sharded_retry import SEVENS, flaky_scorers

__all__ = ["data"]  # the fixture, imported for the tests below

ray = pytest.importorskip("ray", reason="the ray extra is not installed")


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    start_local_ray(2)  # what executor="ray" starts without an address
    yield
    ray.shutdown()


async def test_ray_executor_matches_the_local_run(
    data: Path, tmp_path: Path, ray_cluster: None
) -> None:
    single, sharded = tmp_path / "single.duckdb", tmp_path / "ray.duckdb"
    one = await run_evals(data, scorers(), store=single, progress=False)
    many = await run_evals(data, scorers(), store=sharded, executor="ray", workers=2,
                           progress=False)  # fmt: skip
    assert scores_of(sharded) == scores_of(single)
    assert errors_of(sharded) == errors_of(single)
    assert many.summary.failed == one.summary.failed == 24


async def test_a_killed_ray_worker_is_retried(
    data: Path, tmp_path: Path, ray_cluster: None
) -> None:
    full, store = tmp_path / "full.duckdb", tmp_path / "ray.duckdb"
    marker = tmp_path / "died"
    marker.write_text("not yet")  # the reference run in this process must not exit
    await run_evals(data, [exiting_scorer(marker)], store=full, progress=False)
    marker.unlink()
    result = await run_evals(
        data, [exiting_scorer(marker)], store=store, executor="ray", workers=2, progress=False
    )
    assert marker.read_text() == "died"
    assert scores_of(store) == scores_of(full)
    assert result.summary.processed == ROWS


async def test_retry_errors_reruns_the_failed_pairs_on_ray(
    data: Path, tmp_path: Path, ray_cluster: None
) -> None:
    flag, seen = tmp_path / "flag", tmp_path / "seen.txt"
    flag.touch()
    store = tmp_path / "ray.duckdb"
    first = await run_evals(data, flaky_scorers(flag, seen), store=store, executor="ray",
                            workers=2, progress=False)  # fmt: skip
    flag.unlink()
    seen.unlink()
    retried = await run_evals(
        data, flaky_scorers(flag, seen), store=store, resume=first.experiment_id,
        retry_errors=True, executor="ray", workers=2, progress=False,
    )  # fmt: skip
    assert sorted(seen.read_text().splitlines()) == SEVENS
    assert retried.status == "completed"
    assert retried.summary.scorers["flaky"].n == ROWS
