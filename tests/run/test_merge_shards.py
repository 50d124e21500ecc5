"""`merge_shard_stores`: the shard jobs' stores joined into one run, judged over all its items
as one unsharded run of the same data is."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit import StoreError
from evalkit.run import merge_shard_stores, run_evals
from evalkit.store import list_experiments
from tests.cli.test_merge_verdict import GATES, _gates
from tests.store.test_merge import data as data  # the fixture
from tests.store.test_merge import exact, figures, ids


async def test_the_merged_run_is_judged_as_one_whole_run(data: Path, tmp_path: Path) -> None:
    full = tmp_path / "full.duckdb"
    whole = await run_evals(data, [exact()], store=full, progress=False, **GATES)
    parts = [tmp_path / f"part{i}.duckdb" for i in range(2)]
    for i, part in enumerate(parts):
        await run_evals(data, [exact()], store=part, shard=f"{i}/2", progress=False, **GATES)
    merged = tmp_path / "merged.duckdb"
    assert merge_shard_stores([str(parts[0]), parts[1]], merged) == ids(merged)
    (row,) = list_experiments(merged).to_pylist()
    assert row["verdict"] == "failed"
    assert _gates(merged, row["id"]) == _gates(full, whole.experiment_id)
    # The agreement with the labels is measured again over every item of the merged run.
    assert [f[:4] for f in figures(merged, row["id"])] == [
        f[:4] for f in figures(full, whole.experiment_id)
    ]
    with pytest.raises(StoreError, match=r"none\.duckdb: no such store"):
        merge_shard_stores([tmp_path / "none.duckdb"], merged)
