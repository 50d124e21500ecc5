"""Which run ``baseline = "latest"`` takes (issue 29, item 2): the newest passing run, never a
failed night; a pinned run until a run started after the pin passes; ``"latest-complete"``
for the old meaning; a run from before verdicts were stored counts as passing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from evalkit import create_scorer, run_evals
from evalkit.compare import LATEST, LATEST_COMPLETE, baseline_candidates, choose_baseline
from evalkit.experiment_file import judge_run
from evalkit.run import ExperimentResult
from evalkit.store import read_gates, read_pin
from evalkit.store._pins import pin_baseline
from evalkit.store._verdicts import record_verdict

ROWS = [{"id": f"r{i}", "input": f"q{i}", "output": "x", "groundTruth": "x"} for i in range(30)]


async def night(store: Path, score: float = 1.0) -> ExperimentResult:
    scorer = create_scorer("Const", id="const").generate_score(lambda run: score)
    return await run_evals(ROWS, [scorer], store=store, experiment="n", progress=False)


def chosen(store: Path, ref: str, exclude: str | None = None) -> list[tuple[str, str | None]]:
    options = baseline_candidates(store, ref, name="n", exclude=exclude)
    return [(b.run["id"], b.reason) for b in options if b.run is not None]


def set_verdict(store: Path, experiment_id: str, verdict: str | None) -> None:
    with duckdb.connect(str(store)) as con:
        con.execute("UPDATE experiments SET verdict = ? WHERE id = ?", [verdict, experiment_id])


async def test_latest_skips_failed_nights_and_latest_complete_does_not(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    one, two = await night(store), await night(store)
    record_verdict(store, two.experiment_id, "failed")
    assert chosen(store, LATEST) == [(one.experiment_id, "newest passing run")]
    assert chosen(store, LATEST_COMPLETE) == [
        (two.experiment_id, "newest complete run (latest-complete)"),
        (one.experiment_id, "newest complete run (latest-complete)"),
    ]
    # A run stored before verdicts were kept (NULL) was the bar then: it still may be.
    set_verdict(store, one.experiment_id, None)
    assert chosen(store, LATEST) == [
        (one.experiment_id, "newest run stored before verdicts were kept")
    ]
    set_verdict(store, one.experiment_id, "failed")
    assert chosen(store, LATEST) == []
    candidate = {"id": "c", "name": "n", "dataset_fingerprint": None}
    none = choose_baseline(store, [], ref=LATEST, candidate=candidate, min_paired=0.9)
    assert none.run is None
    assert none.note == (
        "no baseline: no earlier complete, full run of 'n' that passed;"
        " judged on its own gates only"
    )


async def test_a_pin_is_the_bar_until_a_newer_run_passes(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    one, two = await night(store), await night(store)
    record_verdict(store, two.experiment_id, "failed")
    pin_baseline(store, two.experiment_id, by="alice", note="v2 is the new normal")
    pinned = (two.experiment_id, "pinned by alice: v2 is the new normal")
    assert chosen(store, LATEST) == [pinned]  # not night 1, though it passed
    three = await night(store)
    record_verdict(store, three.experiment_id, "failed")
    assert chosen(store, LATEST) == [pinned]
    record_verdict(store, three.experiment_id, "passed")
    assert chosen(store, LATEST) == [
        (three.experiment_id, f"newest passing run since {two.experiment_id} was pinned"),
        pinned,
    ]  # fmt: skip
    # The run being judged is never its own baseline.
    assert chosen(store, LATEST, exclude=three.experiment_id) == [pinned]
    assert one.experiment_id not in {run for run, _ in chosen(store, LATEST)}


async def test_judge_run_records_the_whole_verdict_and_its_baseline(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    good = await night(store, 1.0)
    bad = await night(store, 0.0)
    judged = judge_run(bad, baseline="latest")
    assert not judged.passed
    assert judged.baseline is not None
    assert judged.baseline["id"] == good.experiment_id
    assert judged.baseline_reason == "newest passing run"
    assert judged.report.baseline_reason == "newest passing run"
    row = stored(store, bad.experiment_id)
    assert row == ("failed", good.experiment_id, "newest passing run")
    (gate,) = read_gates(store, bad.experiment_id)
    assert (gate["passed"], gate["regression"], gate["delta"]) == (False, "regressed", -1.0)
    # Its own gates passed: only the regression gate failed it, and the store says so.
    assert gate["reasons"][0].startswith("Δ -1.000")
    # The next night is judged against the good night again, not the failed one.
    again = judge_run(await night(store, 0.0), baseline="latest")
    assert again.baseline is not None
    assert again.baseline["id"] == good.experiment_id
    assert read_pin(store, "n") is None


def stored(store: Path, experiment_id: str) -> tuple[Any, ...]:
    with duckdb.connect(str(store), read_only=True) as con:
        found = con.execute(
            "SELECT verdict, baseline_id, baseline_reason FROM experiments WHERE id = ?",
            [experiment_id],
        ).fetchall()
    return tuple(found[0])


async def test_the_regressed_items_of_a_lower_is_better_scorer_are_listed(tmp_path: Path) -> None:
    """The report skips the search for a scorer none of whose pairs changed; the direction the
    search uses (the stored scorer's) may differ from the comparison's (judge_run's default
    treats every scorer as higher-is-better), so a change either way is searched."""
    store = tmp_path / "s.duckdb"

    def toxicity(value: float) -> Any:
        scorer = create_scorer("Tox", id="tox", higher_is_better=False)
        return scorer.generate_score(lambda run: value)

    await run_evals(ROWS, [toxicity(0.1)], store=store, experiment="n", progress=False)
    rose = await run_evals(ROWS, [toxicity(0.9)], store=store, experiment="n", progress=False)
    report = judge_run(rose, baseline="latest-complete").report
    assert report.regressed_totals == {"tox": len(ROWS)}
    assert len(report.regressed_items["tox"]) == 20  # the first REGRESSED_SHOWN
