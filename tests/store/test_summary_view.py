"""The ``scorer_summary`` view's figures are the run's own (``evalkit/run/_summary.py``), for
everyday scores and for scores anywhere in the float range (issue 30, item 4): no overflow to
an infinite mean, no "STDDEV_SAMP is out of range"."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pytest

from evalkit import create_scorer, run_evals
from evalkit._tdist import t975

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
    # The interval as the reports compute it from the run's own figures (half-width first).
    half = own.stddev / math.sqrt(own.n) * t975(own.n - 1)
    assert (low, high) == (
        pytest.approx(own.mean - half, rel=1e-12, abs=half * 1e-12),
        pytest.approx(own.mean + half, rel=1e-12, abs=half * 1e-12),
    )
