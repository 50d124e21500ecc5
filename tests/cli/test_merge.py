"""``evalkit merge``: the merged experiment's ``scorer_agreement`` rows measure all its items
against their labels, as one unsharded run would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit import Judge, PromptStep, create_scorer
from evalkit._extensions import ducklake_missing
from evalkit.cli import main
from evalkit.run import run_evals
from evalkit.store import list_experiments
from evalkit.testing import FakeOpenAIServer
from tests.store.test_merge import LABELS, ROWS, exact, figures, ids, slices
from tests.store.test_merge import data as data  # the fixture


async def test_the_merge_command_measures_the_merged_experiment_against_its_labels(
    data: Path, tmp_path: Path, capsys: Any
) -> None:
    full = tmp_path / "full.duckdb"
    whole = await run_evals(data, [exact()], store=full, labels=LABELS, progress=False)
    parts = await slices(data, tmp_path, 2)
    per_slice = [figures(part, *ids(part)) for part in parts]
    assert per_slice[0] != per_slice[1]  # each slice measured its own items
    merged = tmp_path / "merged.duckdb"
    assert main(["merge", *map(str, parts), "--store", str(merged)]) == 0
    (new_id,) = ids(merged)
    assert f"merged into {merged}: {new_id}" in capsys.readouterr().out
    expected = figures(full, whole.experiment_id)
    assert [row[:4] for row in expected] == [
        ("exact", "consensus", "binary", "accuracy"),
        ("exact", "consensus", "binary", "kappa"),
    ]
    assert figures(merged, new_id) == expected
    with duckdb.connect(str(merged), read_only=True) as con:
        summary = con.execute("SELECT n, accuracy, kappa FROM agreement_summary").fetchall()
    assert summary == [(ROWS, expected[0][4], expected[1][4])]


async def test_merging_repeated_slices_keeps_every_execution_and_measures_the_stability(
    data: Path, tmp_path: Path, judge: Judge, server: FakeOpenAIServer
) -> None:
    graded = create_scorer("graded", judge=judge).generate_score(
        PromptStep("grade", lambda run: f"Grade {run.output!r} for {run.input!r}.")
    )
    parts = [tmp_path / f"part{i}.duckdb" for i in range(2)]
    for i, part in enumerate(parts):
        await run_evals(data, [graded], store=part, shard=f"{i}/2", repeats=3, progress=False)
    merged = tmp_path / "merged.duckdb"
    assert main(["merge", *map(str, parts), "--store", str(merged)]) == 0
    (new_id,) = ids(merged)
    with duckdb.connect(str(merged), read_only=True) as con:
        executions = con.execute(
            "SELECT count(*), count(DISTINCT item_id), count(DISTINCT run_id) FROM score_repeats"
            " WHERE experiment_id = ?",
            [new_id],
        ).fetchone()
        stability = con.execute(
            "SELECT experiment_id, repeats, pairs FROM judge_stability"
        ).fetchall()
    assert executions == (3 * ROWS, ROWS, ROWS)
    assert stability == [(new_id, 3.0, ROWS)]  # measured over both slices' pairs


needs_ducklake = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)


@needs_ducklake
async def test_the_merge_command_takes_shard_files_into_a_lake_and_measures_it_there(
    data: Path, tmp_path: Path, capsys: Any
) -> None:
    full = tmp_path / "full.duckdb"
    whole = await run_evals(data, [exact()], store=full, labels=LABELS, progress=False)
    parts = await slices(data, tmp_path, 2)
    lake = f"ducklake:sqlite:{tmp_path / 'team' / 'catalog.sqlite'}"
    assert main(["merge", *map(str, parts), "--store", lake]) == 0
    (new_id,) = [run["id"] for run in list_experiments(lake).to_pylist()]
    assert f"merged into {lake}: {new_id}" in capsys.readouterr().out
    assert figures(lake, new_id) == figures(full, whole.experiment_id)  # type: ignore[arg-type]


@needs_ducklake
async def test_the_merge_command_sends_a_run_a_lake_merged_to_store_copy(
    data: Path, tmp_path: Path, capsys: Any
) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    for i in range(2):
        await run_evals(data, [exact()], store=lake, shard=f"{i}/2", progress=False)
    capsys.readouterr()
    out = tmp_path / "out.duckdb"
    assert main(["merge", lake, "--store", str(out)]) != 0
    error = capsys.readouterr().err
    assert "merged there already" in error
    assert f"evalkit store copy {lake} {out} --experiment" in error
    assert "Traceback" not in error
