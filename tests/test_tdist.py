from __future__ import annotations

import pytest
from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type stubs

from evalkit._tdist import t975, t_critical


@pytest.mark.parametrize("df", [1, 2, 5, 10, 29, 30, 31, 50, 100, 1000, 100_000])
def test_t975_matches_the_exact_quantile(df: int) -> None:
    assert t975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=1e-3)


def test_t975_needs_a_degree_of_freedom() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        t975(0)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 9, 10, 29, 30, 100, 999, 1000, 1001, 50_000])
@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
def test_t_critical_at_any_level_matches_scipy(df: int, confidence: float) -> None:
    expected = stats.t.ppf((1 + confidence) / 2, df)
    assert t_critical(confidence, df) == pytest.approx(expected, rel=1e-9)
