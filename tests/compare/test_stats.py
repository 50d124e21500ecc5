from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type stubs

from evalkit import ConfigError
from evalkit.compare import paired_bootstrap_ci, paired_interval, sign_flip_test
from evalkit.compare._stats import sign_flip


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
    # Two magnitudes, so the test samples (one magnitude is the exact binomial test).
    p = sign_flip_test(np.r_[np.full(100, -0.1), np.full(100, -0.2)], resamples=999)
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


@pytest.mark.parametrize(
    ("down", "up"),
    [(13, 4), (4, 13), (1, 0), (7, 7), (60, 40), (480, 520), (4_900, 5_100), (4_850, 5_150),
     (4_000, 6_000), (2, 9_998)],
)  # fmt: skip
def test_one_magnitude_p_value_is_the_exact_binomial_test_at_any_n(down: int, up: int) -> None:
    # 0/1 scores: each changed pair is -1 or +1, and the sign-flip test is McNemar's exact test,
    # computed exactly at any number of changed pairs (it sampled past 16 before).
    d = np.r_[np.full(down, -1.0), np.full(up, 1.0), np.zeros(300)]
    expected = stats.binomtest(up, down + up, 0.5).pvalue
    assert sign_flip_test(d, resamples=1_000, seed=1) == pytest.approx(
        expected, rel=1e-9, abs=1e-300
    )
    # The magnitude does not matter, only that there is one.
    assert sign_flip_test(0.25 * d, seed=2) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_borderline_drop_on_300_items_has_one_p_value_at_every_seed() -> None:
    # 13 down, 4 up of 300: exact p = 0.049. Sampled, 32% of seeds gave p >= 0.05.
    d = np.r_[np.full(13, -1.0), np.full(4, 1.0), np.zeros(283)]
    p_values = {sign_flip_test(d, seed=seed) for seed in range(40)}
    assert len(p_values) == 1
    assert p_values.pop() == pytest.approx(0.049041748046875, rel=1e-12)


def test_tango_interval_matches_the_published_examples() -> None:
    # Fagerland, Lydersen & Laake (2017), Statistical Analysis of Contingency Tables, ch. 8:
    # Bentur et al. (n12 = 1, n21 = 7 of 21) gives -0.5173 to -0.0260 by Tango's score interval.
    d = np.r_[np.full(7, -1.0), np.full(1, 1.0), np.zeros(13)]
    low, high = paired_interval(d, binary=True)
    assert (round(low, 4), round(high, 4)) == (-0.5172, -0.0260)


@pytest.mark.parametrize("n", [10, 30, 100])
@pytest.mark.parametrize(("p_down", "p_up"), [(0.1, 0.1), (0.15, 0.05), (0.02, 0.08)])
def test_binary_paired_interval_covers_at_least_93_percent_exactly(
    n: int, p_down: float, p_up: float
) -> None:
    # Coverage summed exactly over every (down, up) table's multinomial probability.
    truth = p_up - p_down
    coverage = 0.0
    log_n = math.lgamma(n + 1)
    for down in range(n + 1):
        for up in range(n + 1 - down):
            same = n - down - up
            log_p = (log_n - math.lgamma(down + 1) - math.lgamma(up + 1) - math.lgamma(same + 1)
                     + down * math.log(p_down) + up * math.log(p_up)
                     + same * math.log(1 - p_down - p_up))  # fmt: skip
            if log_p < -40:
                continue
            d = np.r_[np.full(down, -1.0), np.full(up, 1.0), np.zeros(same)]
            low, high = paired_interval(d, binary=True)
            if low <= truth <= high:
                coverage += math.exp(log_p)
    assert coverage >= 0.93


def test_no_change_on_25_binary_items_is_not_an_interval_of_certainty() -> None:
    low, high = paired_interval(np.zeros(25), binary=True)
    assert (round(low, 3), round(high, 3)) == (-0.133, 0.133)


def test_binary_interval_refuses_differences_other_than_minus_one_zero_one() -> None:
    with pytest.raises(ConfigError, match="-1, 0 or \\+1"):
        paired_interval([0.5, 0.0], binary=True)


@pytest.mark.parametrize("n", [10, 30])
def test_continuous_paired_interval_holds_the_student_t_interval(n: int) -> None:
    # Skewed differences at small n: the percentile bootstrap was narrower than the t interval
    # and covered 0.87 at n = 10; the interval is never narrower than the t interval.
    d = np.random.default_rng(n).beta(0.5, 3, size=n) - 0.1
    t_low, t_high = stats.t.interval(0.95, n - 1, loc=d.mean(), scale=stats.sem(d))
    low, high = paired_interval(d, seed=3)
    assert low <= t_low + 1e-12
    assert high >= t_high - 1e-12
    assert low < high


def test_a_sampled_p_value_near_the_level_is_drawn_again_until_the_verdict_is_clear() -> None:
    # Continuous differences whose t statistic is 1.97 (p about 0.05): 1,000 resamples leave
    # p within three Monte Carlo errors of 0.05, so more are drawn, up to the ceiling.
    d = np.random.default_rng(5).normal(0.0, 1.0, 200)
    d = d - d.mean() + 1.97 * d.std(ddof=1) / math.sqrt(200)
    once = sign_flip(d, resamples=1_000, seed=1)
    assert once.resamples == 1_000
    assert once.error == pytest.approx(math.sqrt(once.p_value * (1 - once.p_value) / 1_000))
    judged = sign_flip(d, resamples=1_000, seed=1, level=0.05)
    assert judged.resamples == 1_000_000
    assert judged.error < 0.0003
    assert not judged.exact


def test_binary_sign_flip_is_exact_and_draws_nothing() -> None:
    test = sign_flip(np.r_[np.full(13, -1.0), np.full(4, 1.0)], level=0.05)
    assert (test.exact, test.error, test.resamples) == (True, 0.0, 0)
