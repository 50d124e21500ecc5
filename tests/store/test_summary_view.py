"""The ``scorer_summary`` view's figures are the run's own (``evalkit/run/_summary.py``), for
everyday scores and for scores anywhere in the float range (issue 30, item 4): no overflow to
an infinite mean, no "STDDEV_SAMP is out of range"."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pytest

from evalkit import create_scorer, run_evals
from evalkit._intervals import mean_interval95
from evalkit.store import read_scorer_summary

BIG = 1e308
SCORES = {
    "everyday": [0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 0.5],
    "one": [0.5],
    "plus-minus-1e308": [BIG, -BIG, BIG, -BIG, BIG],
    "all-1e308": [BIG, BIG, BIG],
    "mixed": [BIG, 1.0, -1e-300, -BIG / 3, 2.5],
    "1e307": [1e307, -1e307, 3e307, 5e-324],
    "tiny": [1e-300, -1e-300, 2e-300],
}


@pytest.mark.parametrize("name", SCORES)
async def test_the_views_figures_are_the_runs_own(tmp_path: Path, name: str) -> None:
    scores = SCORES[name]
    rows = [{"input": str(i), "output": "a"} for i in range(len(scores))]
    scorer = create_scorer("Given", id="given").generate_score(lambda run: scores[int(run.input)])
    store = tmp_path / "s.duckdb"
    result = await run_evals(rows, [scorer], store=store, progress=False)
    own = result.summary.scorers["given"]
    with duckdb.connect(str(store), read_only=True) as con:
        (row,) = con.execute(
            "SELECT n, mean, stddev, ci95_low, ci95_high, min, max FROM scorer_summary"
        ).fetchall()
    n, mean, stddev, low, high, least, most = row
    assert (n, least, most) == (own.n, own.min, own.max) == (len(scores), min(scores), max(scores))
    assert own.mean is not None
    assert math.isfinite(mean)
    assert mean == pytest.approx(own.mean, rel=1e-12, abs=max(map(abs, scores)) * 1e-15)
    if len(scores) == 1:
        assert (stddev, low, high) == (None, None, None)
        return
    assert own.stddev is not None
    assert math.isfinite(stddev)
    assert stddev == pytest.approx(own.stddev, rel=1e-12)
    # The interval as the reports compute it from the run's own figures.
    interval = mean_interval95(own.n, own.mean, own.stddev, own.min, own.max)
    assert interval is not None
    half = (interval[1] - interval[0]) / 2
    assert (low, high) == (
        pytest.approx(interval[0], rel=1e-12, abs=half * 1e-12),
        pytest.approx(interval[1], rel=1e-12, abs=half * 1e-12),
    )


async def test_read_scorer_summary_gives_the_views_rows_of_the_runs_asked(tmp_path: Path) -> None:
    rows = [{"input": str(i), "output": "a"} for i in range(4)]
    half = create_scorer("Half", id="half").generate_score(lambda run: 0.5)
    rank = create_scorer("Rank", id="rank").generate_score(lambda run: int(run.input) / 4)
    store = tmp_path / "s.duckdb"
    first = await run_evals(rows, [rank, half], store=store, progress=False, experiment="a")
    second = await run_evals(rows[:2], [half], store=store, progress=False, experiment="b")
    ids = sorted([first.experiment_id, second.experiment_id])
    found = read_scorer_summary(store, [second.experiment_id, first.experiment_id, "nope"])
    assert [(r["experiment_id"], r["scorer_id"]) for r in found] == [
        (i, s) for i in ids for s in (["half", "rank"] if i == first.experiment_id else ["half"])
    ]
    by_key = {(r["experiment_id"], r["scorer_id"]): r for r in found}
    assert by_key[first.experiment_id, "rank"]["mean"] == pytest.approx(0.375)
    assert by_key[second.experiment_id, "half"]["n"] == 2
    assert by_key[first.experiment_id, "half"]["experiment_name"] == "a"
    assert set(found[0]) >= {"ci95_low", "ci95_high", "pass_rate", "error_rate", "errors"}
    assert read_scorer_summary(store, []) == []
    assert read_scorer_summary(store, ["nope"]) == []


async def test_read_scorer_summary_gives_todays_interval_for_a_store_not_migrated_yet(
    tmp_path: Path,
) -> None:
    """Review of issue 34's intervals: a store of schema 9 read without being migrated (every
    read is read-only) showed its view's Student t interval in ``evalkit show`` (9 of 10:
    [0.674, 1.126]) while the reports and the viewer showed the interval of today."""
    rows = [{"input": str(i), "output": "a"} for i in range(10)]
    nine = create_scorer("Nine", id="nine").generate_score(lambda run: float(run.input != "0"))
    store = tmp_path / "s.duckdb"
    done = await run_evals(rows, [nine], store=store, progress=False)
    with duckdb.connect(str(store)) as con:  # the view as an older schema computed it
        (sql,) = con.execute(
            "SELECT sql FROM duckdb_views() WHERE view_name = 'scorer_summary'"
        ).fetchone() or ("",)
        con.execute(sql.replace("VIEW scorer_summary", "VIEW today_summary", 1))
        con.execute(
            "CREATE OR REPLACE VIEW scorer_summary AS SELECT * REPLACE"
            " (mean - stddev / sqrt(n) * 2.262 AS ci95_low, mean + stddev / sqrt(n) * 2.262"
            " AS ci95_high) FROM today_summary"
        )
    (row,) = read_scorer_summary(store, [done.experiment_id])
    expected = mean_interval95(10, 0.9, row["stddev"], 0.0, 1.0)
    assert expected is not None
    assert (row["ci95_low"], row["ci95_high"]) == pytest.approx(expected)
    assert row["ci95_high"] <= 1.0
