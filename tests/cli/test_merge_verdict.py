"""A run merged from several shard slices is judged on its own gates once merged, as one
unsharded run of the same data is (issue 29): each slice's verdict judged its slice only."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from evalkit._extensions import ducklake_missing
from evalkit.cli import main
from evalkit.run import run_evals
from evalkit.store import list_experiments, read_gates
from tests.store.test_merge import LABELS, exact, ids
from tests.store.test_merge import data as data  # the fixture

GATES: dict[str, Any] = {
    "thresholds": {"exact": 0.7},  # exact is right on two rows of three
    "labels": LABELS,
    "min_agreement": {"exact": {"accuracy": 0.99}},  # judged over all the items
}


def _gates(store: Path, experiment_id: str) -> list[tuple[Any, ...]]:
    return [(g["scorer_id"], g["passed"], round(cast(float, g["mean"]), 9), g["reasons"])
            for g in read_gates(store, experiment_id)]  # fmt: skip


async def test_the_merged_run_gets_the_verdict_of_one_whole_run(data: Path, tmp_path: Path) -> None:
    full = tmp_path / "full.duckdb"
    whole = await run_evals(data, [exact()], store=full, progress=False, **GATES)
    parts = [tmp_path / f"part{i}.duckdb" for i in range(2)]
    for i, part in enumerate(parts):
        await run_evals(data, [exact()], store=part, shard=f"{i}/2", progress=False, **GATES)
    merged = tmp_path / "merged.duckdb"
    assert main(["merge", *map(str, parts), "--store", str(merged)]) == 0
    (new_id,) = ids(merged)
    (row,) = list_experiments(merged).to_pylist()
    assert row["verdict"] == "failed"
    expected = _gates(full, whole.experiment_id)
    assert expected[0][1] is False
    reasons = expected[0][3]
    assert any("misses the threshold >= 0.7" in r for r in reasons)
    assert any("accuracy" in r for r in reasons), reasons
    assert _gates(merged, new_id) == expected


@pytest.mark.skipif(ducklake_missing() is not None, reason="DuckLake not installed")
async def test_the_merged_run_of_a_lake_matrix_gets_its_verdict(data: Path, tmp_path: Path) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    full = tmp_path / "full.duckdb"
    whole = await run_evals(data, [exact()], store=full, progress=False, **GATES)
    for i in range(2):  # the last slice to finish merges the run in the lake
        await run_evals(data, [exact()], store=lake, shard=f"{i}/2", progress=False, **GATES)
    merged = [r for r in list_experiments(lake).to_pylist() if not r["partial"]]
    assert [r["verdict"] for r in merged] == ["failed"]
    assert _gates(lake, merged[0]["id"]) == _gates(full, whole.experiment_id)  # type: ignore[arg-type]
