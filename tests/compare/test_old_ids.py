"""Stores written before the scorer id rule keep their ids, and a comparison across the change
still pairs them: a prebuilt scorer stored as ``token-f1`` (its name with dashes, what evalkit
recorded without an ``id`` until issue 31) pairs with ``token_f1`` (issue 31, item 8).

The old runs are written through the public API with ``id="token-f1"``: the same rows the old
default wrote (the id, and ``{"prebuilt": "token_f1", ...}`` in the scorer's metadata).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest

from evalkit import get_scorer, run_evals, run_evals_sync
from evalkit.compare import (
    changes_by_slice,
    compare_experiments,
    diff_items,
    read_paired_scores,
    scorer_directions,
)
from evalkit.store import read_item_scores
from tests.cli.conftest import run_cli, write_dataset, write_experiment


def _rows(version: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(40):
        right = version == 1 or i % 4 != 0  # a quarter of the items drop in version 2
        out = f"answer {i}" if right else "no idea"
        meta = {"category": "even" if i % 2 == 0 else "odd"}
        rows.append({"id": f"q{i:02d}", "input": f"question {i}", "groundTruth": f"answer {i}",
                     "output": out, "metadata": meta})  # fmt: skip
    return rows


def _old_and_new(store: Path, *, old_first: bool = True) -> tuple[str, str]:
    """A run with the old default ids and one with the new, in that order (or the reverse)."""

    async def both() -> tuple[str, str]:
        old = [get_scorer("token_f1", id="token-f1"), get_scorer("exact_match", id="exact-match")]
        new = [get_scorer("token_f1"), get_scorer("exact_match")]
        ids = []
        for version, scorers in ((1, old), (2, new)) if old_first else ((1, new), (2, old)):
            result = await run_evals(_rows(version), scorers, store=store, experiment="qa",
                                     progress=False, slices=["category"])  # fmt: skip
            ids.append(result.experiment_id)
        return ids[0], ids[1]

    return anyio.run(both)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    path = tmp_path_factory.mktemp("old-ids") / "evalkit.duckdb"
    return (path, *_old_and_new(path))


def test_the_old_run_keeps_its_ids(store: tuple[Path, str, str]) -> None:
    path, old, new = store
    assert set(read_item_scores(path, old).column("scorer_id").to_pylist()) == {
        "token-f1", "exact-match"}  # fmt: skip
    assert set(read_item_scores(path, new).column("scorer_id").to_pylist()) == {
        "token_f1", "exact_match"}  # fmt: skip


def test_compare_pairs_an_old_id_with_its_new_spelling(store: tuple[Path, str, str]) -> None:
    path, old, new = store
    comparison = compare_experiments(*read_paired_scores(path, old, new), resamples=500)
    assert [c.scorer_id for c in comparison] == ["exact_match", "token_f1"]
    assert all(c.n_paired == 40 for c in comparison)
    assert comparison["exact_match"].difference == pytest.approx(-0.25)
    assert comparison["token_f1"].verdict == "regressed"


def test_a_newer_baseline_pairs_with_an_older_candidate(tmp_path: Path) -> None:
    path = tmp_path / "evalkit.duckdb"
    new, old = _old_and_new(path, old_first=False)
    comparison = compare_experiments(*read_paired_scores(path, new, old), resamples=500)
    assert [(c.scorer_id, c.n_paired) for c in comparison] == [
        ("exact_match", 40), ("token_f1", 40)]  # fmt: skip


def test_diff_and_slices_pair_them_too(store: tuple[Path, str, str]) -> None:
    path, old, new = store
    diff = diff_items(path, old, new, limit=None, order="item")
    assert diff.total == 20  # 10 items dropped, by two scorers
    assert set(diff.pairs["scorer_id"]) == {"exact_match", "token_f1"}
    only = diff_items(path, old, new, scorer="token_f1", limit=3)
    assert only.total == 10
    assert set(only.pairs["scorer_id"]) == {"token_f1"}
    by_slice = changes_by_slice(path, old, new, "category", scorer="exact_match")
    assert by_slice.set_index("value")["dropped"].to_dict() == {"even": 10, "odd": 0}


def test_runs_of_one_era_pair_as_they_always_did(tmp_path: Path) -> None:
    # Two runs with the old ids: nothing renamed, the ids reported as stored.
    path = tmp_path / "evalkit.duckdb"

    async def twice() -> list[str]:
        ids = []
        for version in (1, 2):
            scorers = [get_scorer("token_f1", id="token-f1")]
            result = await run_evals(_rows(version), scorers, store=path, progress=False)
            ids.append(result.experiment_id)
        return ids

    a, b = anyio.run(twice)
    assert [c.scorer_id for c in compare_experiments(*read_paired_scores(path, a, b))] == [
        "token-f1"]  # fmt: skip
    assert set(diff_items(path, a, b).pairs["scorer_id"]) == {"token-f1"}


def test_the_nightly_gate_and_compare_pair_across_the_change(tmp_path: Path) -> None:
    # Last night's run recorded token_f1 as token-f1 (the old default); tonight's file is the
    # same file, and token_f1 regressed: the gate must see it, not "not comparable".
    write_dataset(tmp_path / "data.parquet", rows=60)
    path = write_experiment(tmp_path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('use = "token_f1"', 'use = "token_f1"\nid = "token-f1"'))
    assert run_cli("run", "nightly.toml", "--no-progress", cwd=tmp_path).code == 0
    path.write_text(text, encoding="utf-8")
    write_dataset(tmp_path / "data.parquet", rows=60, wrong=20)
    tonight = run_cli("run", "nightly.toml", "--no-progress", "--json", cwd=tmp_path)
    assert tonight.code == 1, tonight.stderr
    shown = json.loads(tonight.stdout)
    gates = {s["scorer_id"]: s for s in shown["scorers"]}
    assert sorted(gates) == ["exact", "token_f1"]
    assert gates["token_f1"]["comparison"]["n_paired"] == 60
    assert gates["token_f1"]["verdict"] == "regressed"
    compared = run_cli("compare", "latest", "nightly", "--json", cwd=tmp_path)
    scorers = {s["scorer_id"]: s for s in json.loads(compared.stdout)["scorers"]}
    assert sorted(scorers) == ["exact", "token_f1"]
    assert scorers["token_f1"]["n_paired"] == 60
    for spelling in ("token_f1", "token-f1"):  # the new id, or the old run's own
        listed = run_cli("diff", "latest", "nightly", "--scorer", spelling, "--json", cwd=tmp_path)
        assert json.loads(listed.stdout)["changed"] == 20, listed.stderr
    wrong = run_cli("diff", "latest", "nightly", "--scorer", "TOKEN_F1", cwd=tmp_path)
    assert wrong.code == 2
    assert "--scorer: no scorer with id 'TOKEN_F1' (did you mean 'token_f1'?" in wrong.stderr
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        stored = con.execute("SELECT DISTINCT scorer_id FROM scores ORDER BY scorer_id").fetchall()
    assert stored == [("exact",), ("token-f1",), ("token_f1",)]  # the old rows keep their id


def test_the_viewer_compare_page_pairs_them(store: tuple[Path, str, str]) -> None:
    import urllib.request

    from tests.view.conftest import start_viewer, stop

    path, old, new = store
    proc, url = start_viewer(path)
    try:
        with urllib.request.urlopen(f"{url}api/compare?baseline={old}&candidate={new}") as got:
            shown = json.loads(got.read())
    finally:
        stop(proc)
    summary = {row["scorer_id"]: row for row in shown["summary"]}
    assert sorted(summary) == ["exact_match", "token_f1"]
    assert summary["exact_match"]["n"] == 40
    assert summary["exact_match"]["down"] == 10
    assert shown["total"] == 20


def test_compare_keeps_a_lower_is_better_direction_whichever_run_is_old(tmp_path: Path) -> None:
    # A lower-is-better prebuilt scorer as the old code stored it (toxicity is one; built here
    # with create_scorer and the registry's metadata so no judge is needed).
    from evalkit import create_scorer

    def flaws(id: str, score: float) -> Any:
        made = create_scorer(
            "Flaws",
            id=id,
            higher_is_better=False,
            metadata={"prebuilt": "flaw_rate", "version": 1, "params": {}},
        )
        return made.generate_score(lambda run: score)

    path = tmp_path / "evalkit.duckdb"
    rows = [{"id": f"q{i:02d}", "input": f"question {i}", "output": "x"} for i in range(30)]
    run_evals_sync(rows, [flaws("flaw_rate", 0.0)], store=path, experiment="qa", progress=False)
    run_evals_sync(rows, [flaws("flaw-rate", 1.0)], store=path, experiment="qa", progress=False)
    compared = run_cli("compare", "latest", "qa", "--store", str(path), "--json", cwd=tmp_path)
    scorers = json.loads(compared.stdout)["scorers"]
    assert [(s["scorer_id"], s["direction"], s["verdict"]) for s in scorers] == [
        ("flaw_rate", "lower", "regressed")]  # fmt: skip
    assert compared.code == 1


def test_scorer_directions_key_an_old_run_by_the_ids_it_is_compared_under(
    store: tuple[Path, str, str],
) -> None:
    path, old, new = store
    assert scorer_directions(path, old) == {"token-f1": "higher", "exact-match": "higher"}
    assert scorer_directions(path, new) == {"token_f1": "higher", "exact_match": "higher"}
    paired = scorer_directions(path, old, paired_with=new)
    assert paired == {"token_f1": "higher", "exact_match": "higher"}
    assert set(paired) == set(read_paired_scores(path, new, old)[1].column("scorer_id").to_pylist())
