"""A judge's agreement with itself across repeats, and the share of a regression interval its
noise explains, checked against krippendorff and against the formula's parts."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from evalkit.agreement import noise_share
from evalkit.agreement._labels import parse_labels
from evalkit.agreement._stability import STABLE_ALPHA, stability


def test_perfect_self_agreement_is_alpha_one_and_not_flagged() -> None:
    r = np.array([[0.0, 0.5, 1.0, 0.5]] * 3)
    found = stability("s", r)
    assert found.kind == "ordinal"
    assert found.alpha.value == pytest.approx(1.0)
    assert (found.unstable_share, found.mean_spread, found.noise_variance) == (0, 0, 0)
    assert not found.flagged
    assert found.note() is None


def test_one_value_everywhere_is_undefined_and_not_flagged() -> None:
    found = stability("s", np.full((3, 5), 0.5))
    assert math.isnan(found.alpha.value)
    assert found.kind == "continuous"
    assert not found.flagged


@pytest.mark.parametrize("seed", range(5))
def test_random_repeats_match_krippendorff(seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 5, size=80)
    noise = rng.integers(-1, 2, size=(3, 80)) * (rng.random((3, 80)) < 0.3)
    r = np.clip(truth + noise, 0, 4).astype(float) / 4
    r[1, :5] = np.nan  # failed executions
    found = stability("s", r)
    expected = krippendorff.alpha(r, level_of_measurement="ordinal",
                                  value_domain=sorted(set(r[~np.isnan(r)])))  # fmt: skip
    assert found.kind == "ordinal"
    assert found.alpha.value == pytest.approx(expected)
    assert found.pairs == 80
    changed = np.nanmax(r, axis=0) != np.nanmin(r, axis=0)
    assert found.unstable_share == pytest.approx(changed.mean())
    assert found.noise_variance == pytest.approx(np.nanvar(r, axis=0, ddof=1).mean())


def test_continuous_scores_use_interval_alpha() -> None:
    rng = np.random.default_rng(1)
    base = rng.random(60)
    r = np.vstack([base + rng.normal(0, 0.05, 60) for _ in range(4)])
    found = stability("s", r)
    assert found.kind == "continuous"
    expected = krippendorff.alpha(r, level_of_measurement="interval")
    assert found.alpha.value == pytest.approx(expected)


def test_labels_give_the_kind_and_levels() -> None:
    spec = parse_labels({"s": {"columns": "h", "levels": ["bad", "ok", "good"]}}, None)["s"]
    r = np.array([[0.0, 0.5, 1.0, 1.0], [0.0, 0.5, 1.0, 0.5]])
    found = stability("s", r, labels=spec)
    assert found.kind == "ordinal"
    assert found.alpha.value == pytest.approx(
        krippendorff.alpha(r, level_of_measurement="ordinal", value_domain=[0.0, 0.5, 1.0])
    )


def test_a_judge_that_flips_is_flagged() -> None:
    r = np.array([[0.0, 1.0] * 20, [1.0, 0.0] * 20])
    found = stability("s", r)
    assert found.alpha.value < STABLE_ALPHA
    assert found.flagged
    assert "judge unstable" in (found.note() or "")


def test_pairs_scored_once_are_left_out() -> None:
    r = np.array([[0.0, 1.0, 0.0], [0.0, math.nan, 0.0]])
    assert stability("s", r).pairs == 2
    assert stability("s", np.full((3, 4), math.nan)).pairs == 0


def test_noise_share_is_the_noise_variance_over_the_intervals() -> None:
    # se = (0.1 - -0.1) / (2 * 1.959964) = 0.05102; variance of the mean 0.0026031.
    share = noise_share(0.01, None, n_paired=100, ci_low=-0.1, ci_high=0.1, confidence=0.95)
    assert share == pytest.approx(0.02 / 100 / (0.2 / (2 * 1.959964)) ** 2, rel=1e-5)
    assert share is not None
    own = noise_share(0.01, 0.03, n_paired=100, ci_low=-0.1, ci_high=0.1, confidence=0.95)
    assert own == pytest.approx(share * 2)
    assert noise_share(10.0, None, n_paired=100, ci_low=-0.1, ci_high=0.1, confidence=0.95) == 1
    assert noise_share(0.01, None, n_paired=1, ci_low=-0.1, ci_high=0.1, confidence=0.95) is None
    assert noise_share(0.01, None, n_paired=9, ci_low=0.0, ci_high=0.0, confidence=0.95) is None
    assert noise_share(math.nan, None, n_paired=9, ci_low=0, ci_high=1, confidence=0.95) is None


def test_scores_off_the_labels_levels_are_snapped_as_agreement_snaps_them() -> None:
    spec = parse_labels({"s": {"columns": "h", "levels": ["a", "b", "c", "d"]}}, None)["s"]
    third = 1 - 2 / 3  # 0.33333333333333337, not exactly the level 1/3
    r = np.array([[0.0, third, 1.0, 1.0], [0.0, 1 / 3, 1.0, 2 / 3]])
    found = stability("s", r, labels=spec)
    assert found.kind == "ordinal"
    levels = [0.0, 1 / 3, 2 / 3, 1.0]
    snapped = np.array([[0.0, 1 / 3, 1.0, 1.0], [0.0, 1 / 3, 1.0, 2 / 3]])
    expected = krippendorff.alpha(snapped, level_of_measurement="ordinal", value_domain=levels)
    assert found.alpha.value == pytest.approx(expected)


def test_failed_executions_are_counted_and_said() -> None:
    r = np.array([[0.0, 1.0, 0.5], [math.nan, math.nan, math.nan]])
    found = stability("s", r)
    assert (found.pairs, found.failed) == (0, 3)
    assert found.note() == "not measured: no pair has two scored executions; 3 executions failed"
    some = stability("s", np.array([[0.0, 1.0, 0.5], [0.0, math.nan, 0.5]]))
    assert some.failed == 1
    assert some.note() == "1 executions failed (left out)"
    assert not some.flagged


@pytest.mark.parametrize(("change", "expected"), [(0.0, 1.0), (0.2, 2 / 3), (0.4, 1 / 3)])
def test_noise_share_recovers_the_simulated_share_of_judge_noise(
    change: float, expected: float
) -> None:
    # Items with their own true score; each run asks a judge with noise sd 0.2 (variance 0.04,
    # executions measured by 3 repeats); the candidate also changes each item by noise of sd
    # `change`. The paired difference's variance is 2 * 0.04 + change**2, judge noise 0.08 of it.
    from evalkit.compare import paired_bootstrap_ci

    rng = np.random.default_rng(7)
    n = 4000
    truth = rng.random(n)
    moved = truth + rng.normal(0, change, n) if change else truth
    repeats = np.vstack([moved + rng.normal(0, 0.2, n) for _ in range(3)])
    found = stability("s", repeats)
    baseline = truth + rng.normal(0, 0.2, n)
    low, high = paired_bootstrap_ci(repeats[0] - baseline, confidence=0.95, seed=1)
    share = noise_share(found.noise_variance, None, n_paired=n, ci_low=low, ci_high=high,
                        confidence=0.95)  # fmt: skip
    assert found.noise_variance == pytest.approx(0.04, rel=0.05)
    assert share == pytest.approx(expected, abs=0.08)
    cached = noise_share(found.noise_variance, None, fresh_share=0.0, n_paired=n, ci_low=low,
                         ci_high=high, confidence=0.95)  # fmt: skip
    assert cached == 0.0
