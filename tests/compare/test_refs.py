"""Pinning a run from Python (``evalkit baseline pin`` calls `pin_run`): found by its name, a
failed run allowed, a partial one refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit import create_scorer, run_evals
from evalkit.compare import LATEST, baseline_candidates, find_experiment, pin_run
from evalkit.errors import BaselineError, StoreError
from evalkit.run import ExperimentResult
from evalkit.store import read_pin

ROWS = [{"id": f"r{i}", "input": f"q{i}", "output": "x", "groundTruth": "x"} for i in range(10)]


async def night(store: Path, *, limit: int | None = None) -> ExperimentResult:
    scorer = create_scorer("Const", id="const").generate_score(lambda run: 1.0)
    return await run_evals(ROWS, [scorer], store=store, experiment="n", progress=False, limit=limit)


async def test_pin_run_pins_the_run_a_name_designates(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    one = await night(store)
    two = await night(store)
    assert find_experiment(store, "n") == find_experiment(store, two.experiment_id)
    pin = pin_run(store, one.experiment_id[:6], by="alice", note="the new normal")
    assert (pin.experiment_name, pin.experiment_id) == ("n", one.experiment_id)
    stored = read_pin(store, "n")
    assert stored is not None
    assert stored.experiment_id == one.experiment_id
    options = baseline_candidates(store, LATEST, name="n")
    assert options[0].run is not None
    assert options[0].run["id"] == one.experiment_id


async def test_pin_run_refuses_a_partial_run_and_an_unknown_one(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    partial = await night(store, limit=3)
    with pytest.raises(BaselineError, match="part of its dataset"):
        pin_run(store, partial.experiment_id)
    with pytest.raises(StoreError, match="no-such-run"):
        pin_run(store, "no-such-run")
    assert read_pin(store, "n") is None
