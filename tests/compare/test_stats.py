from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type stubs

from evalkit import ConfigError
from evalkit.compare import paired_bootstrap_ci, sign_flip_test


@pytest.mark.parametrize(("value", "n"), [(-0.25, 1), (0.1, 50), (0.3, 5_000)])
def test_constant_differences_give_a_degenerate_interval_at_the_difference(
    value: float, n: int
) -> None:
    # Correct as interval arithmetic, and the reason the verdict also needs the p-value: one
    # item (or items that all moved alike) gives a single point that excludes zero.
    assert paired_bootstrap_ci(np.full(n, value)) == (value, value)


def test_interval_matches_the_t_interval_for_normal_differences() -> None:
    rng = np.random.default_rng(11)
    d = rng.normal(-0.05, 0.2, size=400)
    t_low, t_high = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    low, high = paired_bootstrap_ci(d, confidence=0.95, resamples=10_000, seed=3)
    half_width = (t_high - t_low) / 2
    assert low == pytest.approx(t_low, abs=0.05 * half_width)
    assert high == pytest.approx(t_high, abs=0.05 * half_width)


def test_interval_for_a_three_percent_drop_on_binary_scores_is_the_textbook_one() -> None:
    # 60 of 2,000 items went from right to wrong: d = -1 on 3%, 0 elsewhere.
    # Normal approximation: -0.03 ± 1.96 * sqrt(0.03 * 0.97 / 2000) = (-0.0375, -0.0225).
    d = np.r_[np.full(60, -1.0), np.zeros(1_940)]
    low, high = paired_bootstrap_ci(d, seed=1)
    assert low == pytest.approx(-0.0375, abs=0.001)
    assert high == pytest.approx(-0.0225, abs=0.001)


@pytest.mark.parametrize("levels", [3, 9])
def test_grouped_resampling_agrees_with_scipy_item_wise_bootstrap(levels: int) -> None:
    # Few distinct values take the multinomial path; scipy resamples item by item.
    rng = np.random.default_rng(5)
    d = rng.integers(-(levels // 2), levels // 2 + 1, size=3_000) / levels + 0.02
    ours = paired_bootstrap_ci(d, confidence=0.9, seed=2)
    theirs = stats.bootstrap(
        (d,), np.mean, confidence_level=0.9, method="percentile", random_state=2
    ).confidence_interval
    half_width = (theirs.high - theirs.low) / 2
    assert ours[0] == pytest.approx(theirs.low, abs=0.05 * half_width)
    assert ours[1] == pytest.approx(theirs.high, abs=0.05 * half_width)


def test_interval_is_reproducible_with_a_seed_and_varies_without() -> None:
    d = np.random.default_rng(0).normal(size=300)
    assert paired_bootstrap_ci(d, seed=9) == paired_bootstrap_ci(d, seed=9)
    assert paired_bootstrap_ci(d, seed=9) != paired_bootstrap_ci(d, seed=10)


def test_higher_confidence_gives_a_wider_interval() -> None:
    d = np.random.default_rng(1).normal(size=500)
    low_90, high_90 = paired_bootstrap_ci(d, confidence=0.9)
    low_99, high_99 = paired_bootstrap_ci(d, confidence=0.99)
    assert low_99 < low_90 < high_90 < high_99


def test_interval_stays_within_the_data_and_around_the_mean_with_one_resample() -> None:
    d = np.array([-1.0, 0.0, 2.0])
    low, high = paired_bootstrap_ci(d, resamples=1)
    assert -1.0 <= low == high <= 2.0


def test_small_sample_p_value_is_exact_and_matches_scipy_permutation_test() -> None:
    rng = np.random.default_rng(7)
    baseline = rng.normal(0.6, 0.2, 12)
    candidate = baseline + rng.normal(-0.05, 0.1, 12)
    exact = stats.permutation_test(
        (candidate, baseline),
        lambda a, b, axis: np.mean(a - b, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
    )
    assert sign_flip_test(candidate - baseline) == pytest.approx(exact.pvalue, rel=1e-12)


@pytest.mark.parametrize(("n", "expected"), [(1, 1.0), (5, 2 / 32), (10, 2 / 1024)])
def test_p_value_of_constant_differences_is_two_over_two_to_the_n(n: int, expected: float) -> None:
    assert sign_flip_test(np.full(n, 0.4)) == pytest.approx(expected)


def test_monte_carlo_p_value_never_reaches_zero() -> None:
    p = sign_flip_test(np.full(200, -0.1), resamples=999)
    assert p == pytest.approx(1 / 1_000)


def test_zero_differences_are_left_out_of_the_sign_flips() -> None:
    # Only the five non-zero differences count: the exact p stays 2 / 2**5.
    d = np.r_[np.full(5, 1.0), np.zeros(995)]
    assert sign_flip_test(d) == pytest.approx(2 / 32)


@pytest.mark.parametrize("d", [np.zeros(100), np.tile([1.0, -1.0], 50)])
def test_no_effect_is_not_significant(d: np.ndarray) -> None:
    assert sign_flip_test(d) == 1.0
    low, high = paired_bootstrap_ci(d)
    assert low <= 0.0 <= high


@pytest.mark.parametrize("n", [60, 400])
def test_large_sample_p_value_agrees_with_the_paired_t_test(n: int) -> None:
    rng = np.random.default_rng(3)
    d = rng.normal(0.2, 1.0, n)
    t_p = stats.ttest_1samp(d, 0.0).pvalue
    p = sign_flip_test(d, resamples=20_000, seed=4)
    assert p == pytest.approx(t_p, rel=0.25, abs=0.002)


def test_grouped_sign_flips_agree_with_the_binomial_distribution() -> None:
    # 110 items at +1 and 90 at -1 (and zeros): under the null each sign is a fair coin, so the
    # sum is 2 * Binomial(200, 1/2) - 200 and P(|sum| >= 20) is a binomial tail.
    d = np.r_[np.full(110, 1.0), np.full(90, -1.0), np.zeros(4_000)]
    expected = 2 * stats.binom.sf(109, 200, 0.5)
    assert sign_flip_test(d, resamples=50_000, seed=8) == pytest.approx(expected, rel=0.05)


@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.1, True])
def test_invalid_confidence_is_a_config_error(confidence: float) -> None:
    with pytest.raises(ConfigError, match="confidence"):
        paired_bootstrap_ci([0.1, 0.2], confidence=confidence)


@pytest.mark.parametrize("resamples", [0, -5, 2.5, True])
def test_invalid_resamples_is_a_config_error(resamples: int) -> None:
    with pytest.raises(ConfigError, match="resamples"):
        sign_flip_test([0.1, 0.2], resamples=resamples)


@pytest.mark.parametrize(
    ("d", "match"),
    [([], "at least one"), ([0.1, math.nan], "finite"), ([[0.1, 0.2]], "one-dimensional")],
)
def test_invalid_differences_are_a_config_error(d: list[float], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        paired_bootstrap_ci(d)
