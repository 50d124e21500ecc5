"""A labelled run read back from the store: its agreement rebuilt for a report (the same
report as from the run in memory), and ``evalkit diff`` listing where the candidate's judge and
the people disagree most."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from evalkit import create_scorer, run_evals_sync
from evalkit.agreement import agreement_from_store
from evalkit.report import build_report, html_report, markdown_summary
from evalkit.run import ExperimentResult
from evalkit.store import read_experiment
from tests.cli.conftest import run_cli
from tests.report.test_agreement import LONG_ON, N, _first, labelled_parquet, labelled_run


@dataclass(frozen=True)
class Runs:
    folder: Path
    store: Path
    baseline: ExperimentResult
    candidate: ExperimentResult


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """A baseline whose judge says what the first rater says on every item, then the candidate
    of tests/report/test_agreement.py (off on q03, q05, q07), both labelled, in one store."""
    folder = tmp_path_factory.mktemp("labelled")
    store = folder / "evalkit.duckdb"
    frame = pd.read_parquet(labelled_parquet(folder))
    frame["output"] = [str(_first(i)) for i in range(N)]
    frame.to_parquet(folder / "baseline.parquet")
    scorer = create_scorer("polite").generate_score(lambda run: int(run.output) / 2)
    baseline = run_evals_sync(
        str(folder / "baseline.parquet"), [scorer], store=store, progress=False,
        experiment="labelled", labels={"polite": {"columns": ["rater_a"], "levels": ["bad", "ok",
                                                                                    "good"]}},
    )  # fmt: skip
    candidate = labelled_run(folder, columns=["rater_a", "rater_b"], store=store)
    return Runs(folder, store, baseline, candidate)


def test_the_agreement_rebuilt_from_the_store_is_the_runs_own(runs: Runs) -> None:
    run = read_experiment(runs.store, runs.candidate.experiment_id)
    measured, gates = agreement_from_store(runs.store, run)
    assert measured == runs.candidate.agreement
    assert gates == {"polite": {"kappa": 0.95}}
    from_store = build_report(runs.candidate, agreement=measured)
    from_memory = build_report(runs.candidate)
    assert from_store.agreement == from_memory.agreement
    assert html_report(from_store) == html_report(from_memory)
    assert markdown_summary(from_store) == markdown_summary(from_memory)
    assert [d.item_id for d in from_store.agreement[0].disagreements] == ["q03", "q05", "q07"]


def test_the_figures_are_the_stores_record(runs: Runs, tmp_path: Path) -> None:
    store = tmp_path / "copy.duckdb"
    shutil.copy(runs.store, store)
    with duckdb.connect(str(store)) as con:
        con.execute(
            "UPDATE scorer_agreement SET value = 0.125, ci_low = NULL WHERE metric = 'kappa'"
            " AND compared_with = 'consensus' AND experiment_id = ?",
            [runs.candidate.experiment_id],
        )
    measured, _ = agreement_from_store(store, read_experiment(store, runs.candidate.experiment_id))
    kappa = measured["polite"].consensus.metrics["kappa"]
    assert kappa.value == 0.125
    assert math.isnan(kappa.low)  # NULL is NaN, as the statistics give an undefined end
    assert list(measured["polite"].consensus.metrics) == ["accuracy", "kappa", "weighted_kappa"]
    [view] = build_report(runs.candidate, agreement=measured).agreement
    assert view.metrics[1].text == "0.125"


def test_an_unlabelled_stored_run_has_no_agreement(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    scorer = create_scorer("exact").generate_score(lambda run: 1.0)
    done = run_evals_sync(str(labelled_parquet(tmp_path)), [scorer], store=store, progress=False)
    assert agreement_from_store(store, read_experiment(store, done.experiment_id)) == ({}, {})


def test_diff_lists_where_the_candidates_judge_and_the_people_disagree(runs: Runs) -> None:
    base, cand = runs.baseline.experiment_id, runs.candidate.experiment_id
    done = run_cli("diff", base, cand, "--json", cwd=runs.folder)
    assert done.code == 0, done.stderr
    found = json.loads(done.stdout)["disagreements"]
    assert [(d["scorer_id"], d["item_id"]) for d in found] == [
        ("polite", "q03"), ("polite", "q05"), ("polite", "q07")]  # fmt: skip
    q03 = found[0]
    # The people said bad (0.0), the baseline's judge too, the candidate's 1.0.
    assert (q03["label"], q03["label_text"], q03["baseline_score"], q03["score"]) == (
        0.0, "bad", 0.0, 1.0)  # fmt: skip
    assert q03["reason"] == "<script>alert('x')</script> said 2"
    long = next(d for d in found if d["item_id"] == f"q{LONG_ON:02d}")
    assert long["reason"].count("because") == 200  # JSON has the whole reason

    text = run_cli("diff", base, cand, "--limit", "0", cwd=runs.folder)
    assert text.code == 0, text.stderr
    lines = text.stdout.splitlines()
    start = lines.index("where the candidate's judge and the human labels disagree most:")
    header, _, *rows = lines[start + 1 :]
    assert header.split() == ["scorer", "item", "human", "label", "baseline", "candidate",
                              "judge's", "reason"]  # fmt: skip
    assert [row.split()[:5] for row in rows] == [
        ["polite", "q03", "bad", "0.000", "1.000"],
        ["polite", "q05", "good", "1.000", "0.000"],
        ["polite", "q07", "ok", "0.500", "0.000"],
    ]


@pytest.mark.parametrize(("args", "expected"), [((), 3), (("--scorer", "polite"), 3)])
def test_diff_disagreements_follow_the_scorer_filter(
    runs: Runs, args: tuple[str, ...], expected: int
) -> None:
    base, cand = runs.baseline.experiment_id, runs.candidate.experiment_id
    done = run_cli("diff", base, cand, "--json", *args, cwd=runs.folder)
    assert done.code == 0, done.stderr
    assert len(json.loads(done.stdout)["disagreements"]) == expected


def test_diff_of_a_scorer_neither_run_has_is_refused(runs: Runs) -> None:
    # It listed nothing and exited 0 before: a misspelt id looked like "no change".
    base, cand = runs.baseline.experiment_id, runs.candidate.experiment_id
    done = run_cli("diff", base, cand, "--scorer", "Polite", cwd=runs.folder)
    assert done.code == 2
    assert "--scorer: no scorer with id 'Polite' (did you mean 'polite'?" in done.stderr


def test_diff_of_a_candidate_agreeing_everywhere_lists_no_disagreement(runs: Runs) -> None:
    # The baseline as candidate: its single rater agrees with its judge on every item.
    base, cand = runs.candidate.experiment_id, runs.baseline.experiment_id
    done = run_cli("diff", base, cand, "--json", cwd=runs.folder)
    assert json.loads(done.stdout)["disagreements"] == []
    text = run_cli("diff", base, cand, cwd=runs.folder)
    assert text.code == 0, text.stderr
    assert "disagree most" not in text.stdout


def test_diff_of_an_unlabelled_candidate_lists_no_disagreement(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    data = str(labelled_parquet(tmp_path))
    ids = [
        run_evals_sync(data, [create_scorer("exact").generate_score(lambda run, v=v: v)],
                       store=store, progress=False).experiment_id
        for v in (1.0, 0.0)
    ]  # fmt: skip
    done = run_cli("diff", *ids, "--json", cwd=tmp_path)
    assert done.code == 0, done.stderr
    diff = json.loads(done.stdout)
    assert diff["dropped"] == N
    assert diff["disagreements"] == []
