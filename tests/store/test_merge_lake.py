"""``merge_stores`` with DuckLake stores: shard files merged into a lake, a lake's slices merged
into a file or into the lake itself, and slices a lake merged already pointed to ``store copy``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalkit import StoreError
from evalkit._extensions import ducklake_missing
from evalkit.run import run_evals
from evalkit.store import connection
from evalkit.store._merge import merge_stores
from tests.store.test_merge import ROWS, exact, slices
from tests.store.test_merge import data as data  # the fixture

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)


def lake(tmp_path: Path, name: str = "catalog") -> str:
    return f"ducklake:sqlite:{tmp_path / name}.sqlite"


def runs(store: str | Path) -> list[dict[str, Any]]:
    with connection(store, read_only=True) as con:
        rows = con.execute(
            "SELECT x.id, x.status, x.total_items, x.succeeded_count, x.config,"
            " (SELECT count(*) FROM scores s WHERE s.experiment_id = x.id),"
            " (SELECT count(DISTINCT s.run_id) FROM scores s WHERE s.experiment_id = x.id"
            "  AND starts_with(s.run_id, x.id))"
            " FROM experiments x ORDER BY x.started_at, x.id"
        ).fetchall()
    keys = ("id", "status", "total", "succeeded", "config", "scores", "own_run_ids")
    found = [dict(zip(keys, row, strict=True)) for row in rows]
    for run in found:
        run["config"] = json.loads(run["config"])
    return found


def merged(store: str | Path) -> list[dict[str, Any]]:
    return [run for run in runs(store) if run["config"].get("merged_from")]


async def test_shard_files_are_merged_into_a_lake(data: Path, tmp_path: Path) -> None:
    parts = await slices(data, tmp_path, 2)
    store = lake(tmp_path)
    (new_id,) = merge_stores(parts, store)
    (run,) = runs(store)  # the merged run only: the slices stay in their files
    assert (run["id"], run["status"], run["total"], run["succeeded"]) == (new_id, "completed",
                                                                          ROWS, ROWS)  # fmt: skip
    assert (run["scores"], run["own_run_ids"]) == (ROWS, ROWS)
    assert run["config"]["merged_from"] == [f"{p}:{runs(p)[0]['id']}" for p in parts]


async def test_slices_in_two_lakes_are_merged_into_a_file(data: Path, tmp_path: Path) -> None:
    lakes = [lake(tmp_path, f"job{i}") for i in range(2)]
    for i, store in enumerate(lakes):
        await run_evals(data, [exact()], store=store, shard=f"{i}/2", progress=False)
    assert [merged(store) for store in lakes] == [[], []]  # one slice each: nothing merged
    output = tmp_path / "merged.duckdb"
    (new_id,) = merge_stores(lakes, output)
    (run,) = merged(output)
    assert (run["id"], run["total"], run["scores"], run["own_run_ids"]) == (new_id, ROWS, ROWS,
                                                                            ROWS)  # fmt: skip
    assert [source.split(":")[:2] for source in run["config"]["merged_from"]] == [
        ["ducklake", "sqlite"]
    ] * 2


async def test_a_slice_in_the_lake_and_one_in_a_file_are_merged_in_the_lake(
    data: Path, tmp_path: Path
) -> None:
    store = lake(tmp_path)
    first = await run_evals(data, [exact()], store=store, shard="0/2", progress=False)
    file = tmp_path / "part1.duckdb"
    await run_evals(data, [exact()], store=file, shard="1/2", progress=False)
    (new_id,) = merge_stores([store, file], store)
    (run,) = merged(store)
    assert (run["id"], run["total"], run["scores"], run["own_run_ids"]) == (new_id, ROWS, ROWS,
                                                                            ROWS)  # fmt: skip
    # The lake's slice says where it went, so the lake's own merge never takes it again.
    (in_lake,) = [r for r in runs(store) if r["id"] == first.experiment_id]
    assert in_lake["config"]["merged_into"] == new_id
    with pytest.raises(StoreError, match=r"merged there already.* into " + new_id):
        merge_stores([store, file], store)


async def test_slices_a_lake_merged_already_are_pointed_to_store_copy(
    data: Path, tmp_path: Path
) -> None:
    store = lake(tmp_path)
    for i in range(2):
        await run_evals(data, [exact()], store=store, shard=f"{i}/2", progress=False)
    ((merged_id, *_),) = [(r["id"],) for r in merged(store)]
    output = tmp_path / "out.duckdb"
    with pytest.raises(StoreError) as caught:
        merge_stores([store], output)
    message = str(caught.value)
    assert f"merged there already (into {merged_id})" in message
    assert f"evalkit store copy {store} {output} --experiment {merged_id}" in message
    assert not output.exists()
