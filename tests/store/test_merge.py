"""``merge_stores`` and the agreement of scorers with human labels: a slice's
``scorer_agreement`` rows are the merged experiment's only when the slice is all of it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit import Scorer, create_scorer
from evalkit.agreement import read_agreement
from evalkit.run import run_evals
from evalkit.store import read_gates
from evalkit.store._merge import merge_stores

ROWS = 120


@pytest.fixture
def data(tmp_path: Path) -> Path:
    # exact_match is wrong on every third row; the person also marks q000..q005 right, so the
    # two slices (row groups 0, 2, 4 and 1, 3, 5) agree differently with the labels.
    rows = [
        {
            "id": f"q{i:03d}",
            "input": f"question {i}",
            "groundTruth": "answer" if i % 3 else "other",
            "output": "answer",
            "human": "good" if (i % 3 or i < 6) else "bad",
        }
        for i in range(ROWS)
    ]
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), folder / "a.parquet", row_group_size=20)
    return folder


def exact() -> Scorer:
    return create_scorer("Exact", id="exact").generate_score(
        lambda run: 1.0 if run.output == run.ground_truth else 0.0
    )


LABELS = {"exact": {"columns": "human", "levels": ["bad", "good"]}}


def figures(store: Path, experiment_id: str) -> list[tuple[Any, ...]]:
    keys = ("scorer_id", "compared_with", "kind", "metric", "value", "ci_low", "ci_high", "n",
            "missing", "levels", "confusion")  # fmt: skip
    rows: list[Mapping[str, Any]] = list(read_agreement(store, experiment_id))
    return [tuple(row[k] for k in keys) for row in rows]


async def slices(data: Path, tmp_path: Path, count: int) -> list[Path]:
    parts = [tmp_path / f"part{i}.duckdb" for i in range(count)]
    for i, part in enumerate(parts):
        await run_evals(data, [exact()], store=part, shard=f"{i}/{count}", labels=LABELS,
                        progress=False)  # fmt: skip
    return parts


async def test_merging_one_slice_copies_its_agreement_rows(data: Path, tmp_path: Path) -> None:
    (part,) = await slices(data, tmp_path, 1)
    merged = tmp_path / "merged.duckdb"
    (new_id,) = merge_stores([part], merged)
    assert figures(merged, new_id) == figures(part, *ids(part))
    assert len(figures(merged, new_id)) == 2
    # Its verdict too (issue 29): a slice that is the whole run was judged as the run.
    assert verdicts(merged, new_id) == verdicts(part, *ids(part))
    assert verdicts(merged, new_id)[0] == "passed"
    assert [g["scorer_id"] for g in read_gates(merged, new_id)] == ["exact"]


async def test_merging_several_slices_keeps_no_figure_of_a_single_slice(
    data: Path, tmp_path: Path
) -> None:
    # merge_stores alone cannot measure (that is evalkit.agreement's); a slice's figures
    # describe a third of the items and must not pass for the merged experiment's.
    parts = await slices(data, tmp_path, 3)
    merged = tmp_path / "merged.duckdb"
    (new_id,) = merge_stores(parts, merged)
    assert figures(merged, new_id) == []
    assert verdicts(merged, new_id) == (None, None, None)
    assert read_gates(merged, new_id) == []


def verdicts(store: Path, experiment_id: str) -> tuple[Any, ...]:
    with duckdb.connect(str(store), read_only=True) as con:
        found = con.execute(
            "SELECT verdict, baseline_id, baseline_reason FROM experiments WHERE id = ?",
            [experiment_id],
        ).fetchall()
    return tuple(found[0])


def ids(store: Path) -> list[str]:
    with duckdb.connect(str(store), read_only=True) as con:
        return [row[0] for row in con.execute("SELECT id FROM experiments").fetchall()]
