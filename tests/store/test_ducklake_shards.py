"""The ``--shard i/n`` jobs of a matrix write one DuckLake store: the last to finish writes
the merged run there, as ``evalkit merge`` would, once, with nothing to merge by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalkit._extensions import ducklake_missing
from evalkit.run import run_evals
from evalkit.store import connection
from evalkit.store._lake_merge import merge_finished_slices
from tests.store.test_merge import LABELS, ROWS, exact, figures
from tests.store.test_merge import data as data  # the fixture

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

ROOT = Path(__file__).resolve().parents[2]

SHARD = """
import sys
from evalkit import create_scorer, run_evals_sync
exact = create_scorer("Exact", id="exact").generate_score(
    lambda run: 1.0 if run.output == run.ground_truth else 0.0)
result = run_evals_sync(sys.argv[2], [exact], store=sys.argv[1], shard=sys.argv[3],
                        progress=False, lock_timeout=120)
print(result.experiment_id, result.status)
"""


def merged_runs(store: str) -> list[tuple[str, int, int, str]]:
    with connection(store, read_only=True) as con:
        return con.execute(
            "SELECT x.id, x.total_items, count(s.item_id), x.status FROM experiments x"
            " JOIN scores s ON s.experiment_id = x.id"
            " WHERE x.config->>'$.merged_from' IS NOT NULL GROUP BY ALL"
        ).fetchall()


async def test_the_last_slice_to_finish_merges_the_run_in_the_lake(
    data: Path, tmp_path: Path
) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    whole = await run_evals(data, [exact()], store=tmp_path / "full.duckdb", labels=LABELS,
                            progress=False)  # fmt: skip
    first = await run_evals(data, [exact()], store=lake, shard="0/2", labels=LABELS,
                            progress=False)  # fmt: skip
    assert merged_runs(lake) == []  # one slice of two: nothing to merge yet
    assert merge_finished_slices(lake, first.experiment_id) is None
    await run_evals(data, [exact()], store=lake, shard="1/2", labels=LABELS, progress=False)
    ((merged, total, scored, status),) = merged_runs(lake)
    assert (total, scored, status) == (ROWS, ROWS, "completed")
    # Measured over all its items, as one unsharded run was.
    expected = figures(tmp_path / "full.duckdb", whole.experiment_id)
    assert expected
    assert figures(lake, merged) == expected  # type: ignore[arg-type]
    # Asked again, nothing is merged twice.
    assert merge_finished_slices(lake, first.experiment_id) is None
    assert len(merged_runs(lake)) == 1


def test_shard_jobs_running_at_once_merge_their_run_exactly_once(
    data: Path, tmp_path: Path
) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    jobs = [
        subprocess.Popen(
            [sys.executable, "-c", SHARD, lake, str(data), f"{i}/3"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    outs = [job.communicate(timeout=300) for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0, 0], [err[-2000:] for _, err in outs]
    ((_, total, scored, status),) = merged_runs(lake)
    assert (total, scored, status) == (ROWS, ROWS, "completed")
    with connection(lake, read_only=True) as con:
        slices = con.execute(
            "SELECT count(*), count(DISTINCT config->>'$.merged_into') FROM experiments"
            " WHERE config->>'$.shard' IS NOT NULL AND json_type(config, '$.shard') = 'OBJECT'"
        ).fetchall()
    assert slices == [(3, 1)]
