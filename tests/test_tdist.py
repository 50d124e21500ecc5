from __future__ import annotations

import pytest
from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type stubs

from evalkit._tdist import t975


@pytest.mark.parametrize("df", [1, 2, 5, 10, 29, 30, 31, 50, 100, 1000, 100_000])
def test_t975_matches_the_exact_quantile(df: int) -> None:
    assert t975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=1e-3)


def test_t975_needs_a_degree_of_freedom() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        t975(0)
