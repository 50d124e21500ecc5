"""The rows the store's readers hand to other packages have exactly the keys their types
declare (``ListedExperiment``, ``ExperimentRow``, ``RunCounts``, ``GateRow``,
``StoredAgreement``): the readers build them from SQL, so a column added or renamed must show
up in the type, and the reverse."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from evalkit import create_scorer, run_evals
from evalkit.agreement import StoredAgreement, read_agreement
from evalkit.store import (
    ExperimentRow,
    GateRow,
    ListedExperiment,
    list_experiments,
    read_experiment,
    read_gates,
)
from evalkit.store._read import RunCounts, ScorerCounts, read_run_counts

ROWS = [
    {"input": f"q{i}", "groundTruth": "a", "output": "a" if i % 3 else "b",
     "human": "good" if i % 3 or i < 2 else "bad"}
    for i in range(12)
]  # fmt: skip


async def test_stored_rows_have_the_keys_their_types_declare(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    exact = create_scorer("Exact", id="exact").generate_score(
        lambda run: 1.0 if run.output == run.ground_truth else 0.0
    )
    result = await run_evals(
        ROWS,
        [exact],
        store=store,
        thresholds={"exact": 0.5},
        labels={"exact": {"columns": "human", "levels": ["bad", "good"]}},
        progress=False,
    )
    (listed,) = list_experiments(store).to_pylist()
    assert set(listed) == ListedExperiment.__required_keys__
    run = read_experiment(store, result.experiment_id)
    assert set(run) == ExperimentRow.__required_keys__
    assert isinstance(run["started_at"], dt.datetime)
    assert isinstance(run["config"], str)  # JSON text, decoded by whoever reads it

    counts = read_run_counts(store, result.experiment_id)
    assert set(counts) == RunCounts.__required_keys__
    assert set(counts["scorers"]["exact"]) == ScorerCounts.__required_keys__

    (gate,) = read_gates(store, result.experiment_id)
    assert set(gate) == GateRow.__required_keys__
    assert gate["reasons"] == []

    agreement = read_agreement(store, result.experiment_id)
    assert agreement
    assert all(set(row) == StoredAgreement.__required_keys__ for row in agreement)
    assert any(row["confusion"] is not None for row in agreement)
