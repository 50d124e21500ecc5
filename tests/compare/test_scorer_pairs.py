"""read_paired_scores: both runs read through one connection, errors naming the store as given."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalkit import StoreError, create_scorer, run_evals_sync
from evalkit.compare import read_paired_scores, scorer_directions

ROWS = [{"id": f"r{i}", "input": f"q{i}", "output": "x"} for i in range(3)]


@pytest.mark.parametrize("kind", ["file", "lake"])
def test_an_unknown_run_is_named_with_the_store_as_given(tmp_path: Path, kind: str) -> None:
    store = str(tmp_path / "s.duckdb") if kind == "file" else f"ducklake:sqlite:{tmp_path}/c.sqlite"
    scorer = create_scorer("S", id="s").generate_score(lambda run: 0.5)
    run = run_evals_sync(ROWS, [scorer], experiment="e", store=store, progress=False)
    before, after = read_paired_scores(store, run.experiment_id, run.experiment_id)
    assert before.equals(after)
    assert before.num_rows == len(ROWS)
    with pytest.raises(StoreError, match=f"^{re.escape(store)}: no experiment with id 'nope'$"):
        read_paired_scores(store, run.experiment_id, "nope")


def test_scorer_directions_are_the_stored_runs_own(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    up = create_scorer("Up", id="up").generate_score(lambda run: 0.5)
    down = create_scorer("Down", id="down", higher_is_better=False).generate_score(lambda run: 0)
    run = run_evals_sync(ROWS, [up, down], experiment="e", store=store, progress=False)
    assert scorer_directions(store, run.experiment_id) == {"up": "higher", "down": "lower"}
    assert scorer_directions(store, "nope") == {}
