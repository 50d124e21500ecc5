"""`agreement_from_store`: a stored run's agreement with its labels, as the run held it."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit import ConfigError, create_scorer, run_evals_sync
from evalkit.agreement import agreement_from_store, measure_stored, read_agreement
from evalkit.store import read_experiment
from tests.report.test_agreement import LEVELS, labelled_parquet, labelled_run


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


def test_a_stored_run_is_measured_again_with_its_own_labels_or_labels_given_as_run_evals_takes_them(
    tmp_path: Path,
) -> None:
    store = tmp_path / "evalkit.duckdb"
    done = labelled_run(tmp_path, columns=["rater_a", "rater_b"], store=store)
    kept = read_agreement(store, done.experiment_id)
    # None: the labels the run was given, read from its stored config.
    assert measure_stored(store, done.experiment_id) == done.agreement
    assert read_agreement(store, done.experiment_id) == kept
    # Labels as run_evals(labels=) takes them: one column, measured and kept alone.
    one = measure_stored(
        store, done.experiment_id, {"polite": {"columns": "rater_a", "levels": LEVELS}}
    )
    assert list(one) == ["polite"]
    assert list(one["polite"].columns) == []
    assert {r["compared_with"] for r in read_agreement(store, done.experiment_id)} == {"consensus"}
    with pytest.raises(ConfigError, match=r"labels\['polite'\]: unknown key 'colums'"):
        measure_stored(store, done.experiment_id, {"polite": {"colums": "rater_a"}})
