"""The per-scorer 95% interval (evalkit/_intervals.py): inside the scale, covering, and the
same in Python and in the store's SQL."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type stubs

from evalkit._intervals import mean_interval95
from evalkit._tdist import t975
from evalkit.store import migrate


def _interval(scores: np.ndarray) -> tuple[float, float] | None:
    return mean_interval95(
        scores.size,
        float(scores.mean()),
        float(scores.std(ddof=1)) if scores.size > 1 else None,
        float(scores.min()),
        float(scores.max()),
    )


@pytest.mark.parametrize("n", [10, 30, 100, 300])
@pytest.mark.parametrize("p", [0.5, 0.7, 0.8, 0.9, 0.95, 0.98])
def test_interval_of_0_1_scores_covers_at_least_93_percent_exactly(n: int, p: float) -> None:
    # Coverage summed over every count's binomial probability: no simulation error.
    coverage = 0.0
    for k in range(n + 1):
        interval = _interval(np.r_[np.ones(k), np.zeros(n - k)])
        assert interval is not None
        if interval[0] <= p <= interval[1]:
            coverage += float(stats.binom.pmf(k, n, p))
    assert coverage >= 0.93


@pytest.mark.parametrize("n", [2, 3, 10, 40])
def test_interval_of_0_1_scores_never_leaves_the_unit_scale(n: int) -> None:
    for k in range(n + 1):
        interval = _interval(np.r_[np.ones(k), np.zeros(n - k)])
        assert interval is not None
        low, high = interval
        assert 0.0 <= low < high <= 1.0
        assert low <= k / n <= high


def test_scores_outside_0_1_keep_the_student_t_interval() -> None:
    scores = np.array([1.0, 2.0, 3.0, 5.0])
    interval = _interval(scores)
    assert interval is not None
    half = t975(3) * scores.std(ddof=1) / 2
    assert interval == pytest.approx((scores.mean() - half, scores.mean() + half))


def test_one_score_has_no_interval() -> None:
    assert mean_interval95(1, 0.5, None, 0.5, 0.5) is None


def test_sql_macros_give_the_python_interval() -> None:
    rng = np.random.default_rng(3)
    samples = [
        rng.integers(0, 2, size=n).astype(float) for n in (2, 5, 10, 41, 300)
    ] + [rng.beta(0.5, 3, size=n) for n in (2, 10, 300)] + [
        np.full(5, 1.0), np.full(5, 0.0), np.full(4, 0.7), rng.normal(3, 2, size=12),
    ]  # fmt: skip
    with duckdb.connect() as con:
        migrate(con, where="memory")  # the store's own macros
        for scores in samples:
            figures = [scores.size] + [
                float(f) for f in (scores.mean(), scores.std(ddof=1), scores.min(), scores.max())
            ]
            sql = con.execute(
                "SELECT evalkit_ci95_low(?, ?, ?, ?, ?), evalkit_ci95_high(?, ?, ?, ?, ?)",
                figures * 2,
            ).fetchone()
            assert sql is not None
            expected = _interval(scores)
            assert expected is not None
            assert sql == pytest.approx(expected, rel=1e-12, abs=1e-15)
            assert math.isfinite(sql[0])
