from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from evalkit import ItemResult, create_scorer, run_evals
from tests.cli.conftest import Cli, write_dataset


async def cancelled_run(folder: Path, *, stop_after: int) -> None:
    """A run of 200 items cancelled after ``stop_after``; every tenth item's scorer fails."""

    async def app(question: str) -> str:
        await anyio.sleep(0)  # a checkpoint, where the cancellation lands
        return question

    def score(run: Any) -> float:
        if int(run.input.split()[2]) % 10 == 0:
            raise RuntimeError("scorer failed")
        return 1.0

    finished: list[str] = []
    with anyio.CancelScope() as scope:

        def stop(result: ItemResult) -> None:
            finished.append(result.item.id)
            if len(finished) == stop_after:
                scope.cancel()

        await run_evals(
            write_dataset(folder / "data.parquet", rows=200),
            [create_scorer("Half", id="half").generate_score(score)],
            target=app, store=folder / "evalkit.duckdb", experiment="nightly", concurrency=1,
            progress=False, on_item_complete=stop,
        )  # fmt: skip
    assert len(finished) == stop_after


async def test_a_cancelled_run_lists_and_shows_the_items_done(cli: Cli, tmp_path: Path) -> None:
    await cancelled_run(tmp_path, stop_after=43)
    listed = cli("experiments")
    assert listed.code == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith("nightly")]
    assert " cancelled " in row
    assert " 43 of 200 " in row
    (stored,) = json.loads(cli("experiments", "--json").stdout)
    assert (stored["total_items"], stored["succeeded_count"], stored["failed_count"]) == (
        200,
        38,
        5,
    )

    shown = cli("show", stored["id"])
    assert shown.code == 0, shown.stderr
    assert "items: 43 of 200 (5 failed)" in shown.stdout
