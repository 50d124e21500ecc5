"""`agreement_from_store`: a stored run's agreement with its labels, as the run held it."""

from __future__ import annotations

from pathlib import Path

from evalkit import create_scorer, run_evals_sync
from evalkit.agreement import agreement_from_store
from evalkit.store import read_experiment
from tests.report.test_agreement import labelled_parquet, labelled_run


def test_a_stored_labelled_run_reads_back_its_agreement_and_gates(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    done = labelled_run(tmp_path, columns=["rater_a", "rater_b"], store=store)
    run = read_experiment(store, done.experiment_id)
    measured, gates = agreement_from_store(store, run)
    assert list(measured) == ["polite"]
    assert measured == done.agreement
    assert [d.item_id for d in measured["polite"].disagreements] == ["q03", "q05", "q07"]
    assert gates == {"polite": {"kappa": 0.95}}
    # Only the scorer asked for: another id has no labels, the gates are the run's still.
    assert agreement_from_store(store, run, scorer="polite")[0] == done.agreement
    assert agreement_from_store(store, run, scorer="tone") == ({}, gates)


def test_a_stored_run_without_labels_has_no_agreement(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    scorer = create_scorer("exact").generate_score(lambda run: 1.0)
    done = run_evals_sync(str(labelled_parquet(tmp_path)), [scorer], store=store, progress=False)
    assert agreement_from_store(store, read_experiment(store, done.experiment_id)) == ({}, {})
