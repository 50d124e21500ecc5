from __future__ import annotations

import importlib.metadata
import json
import math
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Literal

import krippendorff
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type stubs
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix

from evalkit.agreement import Agreement, Estimate, LabelKind, agreement, noise_share
from evalkit.agreement._resample import (
    PairDraws,
    alpha_from_coincidences,
    alpha_from_moments,
    coincidences,
    continuous_resamples,
    copies,
    interval_moments,
    kappa_from_counts,
    percentile_interval,
    value_counts,
)
from evalkit.agreement._stats import disagreements, inter_rater_alpha
from evalkit.errors import ConfigError
from tests.doubles import STATISTICS_LIBRARIES, without_modules

FloatArray = npt.NDArray[np.float64]
# The levels of measurement these tests compare with the krippendorff package.
Metric = Literal["nominal", "ordinal"]
NAN = math.nan
# Five levels on a 0-1 scale; the generated labels never use 0.75, which must still count.
LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
USED = np.array([0.0, 0.25, 0.5, 1.0])
CATEGORICAL: tuple[LabelKind, ...] = ("binary", "categorical", "ordinal")


def _snap(values: FloatArray, levels: FloatArray) -> FloatArray:
    # argmin takes the first of equal distances: the lower level, as the module must.
    snapped: FloatArray = levels[np.argmin(np.abs(values[:, None] - levels[None, :]), axis=1)]
    return snapped


def _labelled(
    seed: int, n: int, levels: FloatArray, used: FloatArray, with_nan: bool
) -> tuple[FloatArray, FloatArray]:
    rng = np.random.default_rng(seed)
    human = rng.choice(used, size=n)
    judge = np.clip(human + rng.normal(0.0, 0.2, size=n), levels[0] - 0.1, levels[-1] + 0.1)
    if with_nan:
        judge[rng.random(n) < 0.1] = NAN
        human[rng.random(n) < 0.1] = NAN
    return judge, human


def _sklearn_kappa(y1: npt.ArrayLike, y2: npt.ArrayLike, labels: npt.ArrayLike, **kw: str) -> float:
    return float(cohen_kappa_score(y1, y2, labels=labels, **kw))


# --- Point estimates against the libraries ------------------------------------------------


@pytest.mark.parametrize("kind", CATEGORICAL)
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [7, 80, 900])
@pytest.mark.parametrize("with_nan", [False, True])
def test_categorical_metrics_are_sklearns(
    kind: LabelKind, seed: int, n: int, with_nan: bool
) -> None:
    levels = np.array((0.0, 1.0) if kind == "binary" else LEVELS)
    used = levels if kind == "binary" else USED
    judge, human = _labelled(seed, n, levels, used, with_nan)
    found = agreement(judge, human, kind=kind, levels=tuple(levels), resamples=50, seed=seed)

    both = ~np.isnan(judge) & ~np.isnan(human)
    # scikit-learn takes 0.25 for a continuous target: give it the levels' positions.
    h = np.searchsorted(levels, human[both])
    j = np.searchsorted(levels, _snap(judge[both], levels))
    positions = np.arange(levels.size)
    assert (found.n, found.missing) == (int(both.sum()), int((~both).sum()))
    assert found.levels == tuple(levels)
    assert found.confusion == tuple(map(tuple, confusion_matrix(h, j, labels=positions)))
    expected = {
        "accuracy": accuracy_score(h, j),
        "kappa": _sklearn_kappa(h, j, positions),
        "weighted_kappa": _sklearn_kappa(h, j, positions, weights="quadratic"),
    }
    names = ("accuracy", "kappa", "weighted_kappa") if kind == "ordinal" else ("accuracy", "kappa")
    assert tuple(found.metrics) == names
    for name in names:
        assert found.metrics[name].value == pytest.approx(expected[name], abs=1e-12), name


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [3, 60, 2_000])
@pytest.mark.parametrize("with_nan", [False, True])
def test_continuous_metrics_are_scipys(seed: int, n: int, with_nan: bool) -> None:
    rng = np.random.default_rng(seed)
    human = rng.normal(size=n)
    # Rounded to one decimal, so both sides have ties for Spearman's average ranks.
    judge = np.round(0.6 * human + rng.normal(0.0, 0.8, size=n), 1)
    human = np.round(human, 1)
    if with_nan:
        judge[rng.random(n) < 0.1] = NAN
        human[rng.random(n) < 0.1] = NAN
    found = agreement(judge, human, kind="continuous", resamples=50)

    both = ~np.isnan(judge) & ~np.isnan(human)
    j, h = judge[both], human[both]
    assert tuple(found.metrics) == ("pearson", "spearman", "mae")
    assert (found.n, found.missing, found.levels, found.confusion) == (j.size, n - j.size, (), ())
    assert found.metrics["pearson"].value == pytest.approx(stats.pearsonr(j, h).statistic)
    assert found.metrics["spearman"].value == pytest.approx(stats.spearmanr(j, h).statistic)
    assert found.metrics["mae"].value == pytest.approx(np.mean(np.abs(j - h)))


def _reliability(seed: int, raters: int, items: int, levels: FloatArray, used: FloatArray,
                 missing: float) -> FloatArray:  # fmt: skip
    rng = np.random.default_rng(seed)
    truth = rng.choice(used, size=items)
    noisy = truth[None, :] + rng.normal(0.0, 0.25, size=(raters, items))
    ratings = _snap(noisy.ravel(), used).reshape(raters, items)
    ratings[rng.random(ratings.shape) < missing] = NAN
    return ratings


@pytest.mark.parametrize(("kind", "metric"), [("binary", "nominal"), ("categorical", "nominal"),
                                              ("ordinal", "ordinal")])  # fmt: skip
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("raters", "items"), [(2, 10), (3, 200), (5, 1_500)])
@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_alpha_is_krippendorffs_with_every_level_in_the_domain(
    kind: LabelKind, metric: Metric, seed: int, raters: int, items: int, missing: float
) -> None:
    levels = np.array((0.0, 1.0) if kind == "binary" else LEVELS)
    used = levels if kind == "binary" else USED
    ratings = _reliability(seed, raters, items, levels, used, missing)
    found = inter_rater_alpha(ratings, kind=kind, levels=tuple(levels), resamples=50)
    expected = krippendorff.alpha(ratings, value_domain=levels, level_of_measurement=metric)
    assert found.value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("raters", "items"), [(2, 10), (3, 200), (4, 300)])
@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_interval_alpha_is_krippendorffs(
    seed: int, raters: int, items: int, missing: float
) -> None:
    rng = np.random.default_rng(seed)
    ratings = rng.normal(size=items)[None, :] + rng.normal(0.0, 0.7, size=(raters, items))
    ratings = np.round(ratings, 1)
    ratings[rng.random(ratings.shape) < missing] = NAN
    found = inter_rater_alpha(ratings, kind="continuous", resamples=50)
    expected = krippendorff.alpha(ratings, level_of_measurement="interval")
    assert found.value == pytest.approx(expected, abs=1e-12)
    ours = alpha_from_moments(interval_moments(ratings).sum(axis=0)[None, :])[0]
    assert ours == pytest.approx(expected, abs=1e-12)


def _pairwise_interval_alpha(ratings: FloatArray) -> float:
    # The textbook definition, pair by pair: observed over expected squared differences.
    keep = ratings[:, (~np.isnan(ratings)).sum(axis=0) >= 2]
    observed, pairs = 0.0, 0.0
    for column in keep.T:
        x = column[~np.isnan(column)]
        observed += ((x[:, None] - x[None, :]) ** 2).sum() / (x.size - 1)
        pairs += x.size
    pooled = keep[~np.isnan(keep)]
    expected = ((pooled[:, None] - pooled[None, :]) ** 2).sum() / (pairs - 1)
    return float(1.0 - observed / expected)


def test_interval_alpha_past_the_librarys_memory_bound_is_the_textbook_value() -> None:
    # 3 x 1,200 distinct values: krippendorff would build a 1,200 x 3,600² array (124 GB).
    rng = np.random.default_rng(4)
    ratings = rng.normal(size=1_200)[None, :] + rng.normal(0.0, 0.5, size=(3, 1_200))
    ratings[rng.random(ratings.shape) < 0.1] = NAN
    found = inter_rater_alpha(ratings, kind="continuous", resamples=50)
    assert found.value == pytest.approx(_pairwise_interval_alpha(ratings), abs=1e-10)
    assert found.low < found.value < found.high


# --- The vectorised resample statistics against the libraries -----------------------------


def test_kappa_from_counts_is_sklearns_on_random_confusion_matrices() -> None:
    rng = np.random.default_rng(0)
    checked = undefined = 0
    for _ in range(300):
        size = int(rng.integers(2, 7))
        # Sparse counts: whole rows and columns (levels nobody used) are often zero.
        counts = rng.integers(0, 6, size=(size, size)) * (rng.random((size, size)) < 0.5)
        if rng.random() < 0.1:
            counts = np.zeros((size, size), dtype=np.int64)
            counts[1, 1] = int(rng.integers(1, 9))
        flat = np.repeat(np.arange(size * size), counts.ravel())
        human, judge = flat // size, flat % size
        for weights in ("unweighted", "quadratic"):
            ours = kappa_from_counts(counts, weights)
            if flat.size == 0:
                assert math.isnan(ours)
                continue
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                options = {} if weights == "unweighted" else {"weights": weights}
                theirs = _sklearn_kappa(human, judge, np.arange(size), **options)
            if any(issubclass(w.category, UndefinedMetricWarning) for w in caught):
                assert math.isnan(ours)
                undefined += 1
            else:
                assert ours == pytest.approx(theirs, abs=1e-12)
                checked += 1
    assert checked >= 400
    assert undefined >= 10


def test_kappa_from_counts_works_on_a_stack_of_matrices() -> None:
    rng = np.random.default_rng(1)
    stack = rng.integers(0, 9, size=(40, 3, 3))
    one_by_one = [kappa_from_counts(m, "quadratic") for m in stack]
    np.testing.assert_allclose(kappa_from_counts(stack, "quadratic"), one_by_one, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_continuous_resamples_are_scipys_on_the_resampled_pairs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 40
    human = rng.integers(0, 5, size=n).astype(np.float64)  # heavy ties
    judge = np.round(human + rng.normal(0.0, 1.0, size=n), 0)
    judge[:3] = 9.0
    drawn = copies(rng, 30, n)
    assert (drawn.sum(axis=1) == n).all()
    pearson, spearman, mae = continuous_resamples(judge, human, drawn)
    for r in range(drawn.shape[0]):
        picked = np.repeat(np.arange(n), drawn[r])
        j, h = judge[picked], human[picked]
        assert pearson[r] == pytest.approx(stats.pearsonr(j, h).statistic, abs=1e-12)
        assert spearman[r] == pytest.approx(stats.spearmanr(j, h).statistic, abs=1e-12)
        assert mae[r] == pytest.approx(np.mean(np.abs(j - h)), abs=1e-12)


def test_continuous_resamples_of_distinct_pairs_equal_those_of_the_items() -> None:
    # A 1-10 judge against 1-5 labels: 2,000 items but at most 50 distinct pairs.
    rng = np.random.default_rng(3)
    human = rng.integers(1, 6, size=2_000).astype(np.float64)
    judge = np.clip(2 * human + rng.integers(-2, 3, size=2_000), 1, 10)
    pairs = PairDraws(judge, human)
    assert pairs.grouped
    assert pairs.judge.size <= 50
    drawn = copies(rng, 20, 2_000)
    distinct, inverse = np.unique(np.column_stack((judge, human)), axis=0, return_inverse=True)
    np.testing.assert_array_equal(distinct, np.column_stack((pairs.judge, pairs.human)))
    per_pair = np.stack(
        [np.bincount(inverse.ravel(), weights=row, minlength=len(distinct)) for row in drawn]
    ).astype(np.int64)
    item_wise = continuous_resamples(judge, human, drawn)
    grouped = continuous_resamples(pairs.judge, pairs.human, per_pair)
    np.testing.assert_allclose(grouped, item_wise, rtol=1e-10)


def test_grouped_pair_draws_give_the_item_wise_interval() -> None:
    rng = np.random.default_rng(4)
    human = rng.integers(1, 6, size=1_000).astype(np.float64)
    judge = np.clip(human + rng.integers(-1, 2, size=1_000), 1, 5)
    found = agreement(judge, human, kind="continuous", resamples=4_000, seed=5)
    item_wise = continuous_resamples(judge, human, copies(np.random.default_rng(6), 4_000, 1_000))
    for name, statistics in zip(("pearson", "spearman", "mae"), item_wise, strict=True):
        low, high = np.quantile(statistics, [0.025, 0.975])
        e = found.metrics[name]
        assert e.low == pytest.approx(low, abs=0.1 * (high - low)), name
        assert e.high == pytest.approx(high, abs=0.1 * (high - low)), name


def test_continuous_resamples_of_a_constant_side_are_undefined() -> None:
    judge = np.array([1.0, 1.0, 2.0])
    human = np.array([0.1, 0.2, 0.3])
    # Pair 0 alone; pairs 0 and 1, whose judge scores are equal; then two mixed resamples.
    drawn = np.array([[3, 0, 0], [2, 1, 0], [1, 0, 2], [0, 1, 2]])
    pearson, spearman, _ = continuous_resamples(judge, human, drawn)
    assert np.isnan([pearson[:2], spearman[:2]]).all()
    assert not np.isnan([pearson[2:], spearman[2:]]).any()


def test_a_resample_whose_spread_is_lost_to_rounding_has_no_pearson() -> None:
    # One human label 1e9 far above the others, which differ by 1e-3: a resample without it
    # spreads 1e-12 of its distance from the mean of all pairs, lost to rounding in the
    # moment formula (it took the square root of a negative variance, or gave any number).
    judge = np.arange(30.0)
    human = np.r_[np.zeros(29), 1e9]
    human[:10] += 1e-3
    checked = 0
    for seed in range(40):
        drawn = copies(np.random.default_rng(seed), 1, 30)
        pearson = continuous_resamples(judge, human, drawn)[0][0]
        picked = np.repeat(np.arange(30), drawn[0])
        if 29 in picked:  # the far label drawn: an ordinary spread
            theirs = stats.pearsonr(judge[picked], human[picked]).statistic
            assert pearson == pytest.approx(theirs, abs=CLOSE)
            checked += 1
        else:
            assert math.isnan(pearson)
    assert 0 < checked < 40


@pytest.mark.parametrize("metric", ["nominal", "ordinal"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_alpha_from_coincidences_is_krippendorffs_on_resampled_items(
    metric: Metric, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    levels = np.array(LEVELS)
    ratings = _reliability(seed, 3, 60, levels, USED, 0.3)
    indices = np.where(np.isnan(ratings), -1, np.searchsorted(levels, ratings)).astype(np.int64)
    counts = value_counts(indices, levels.size)
    pairable = np.where((counts.sum(axis=1) >= 2)[:, None], counts, 0)
    contributions = coincidences(counts)
    for _ in range(10):
        picked = rng.integers(0, ratings.shape[1], size=ratings.shape[1])
        w = np.bincount(picked, minlength=ratings.shape[1])
        o, n_v = (w @ contributions)[None, :], (w @ pairable)[None, :]
        ours = alpha_from_coincidences(o, n_v, metric)[0]
        theirs = krippendorff.alpha(ratings[:, picked], value_domain=levels,
                                    level_of_measurement=metric)  # fmt: skip
        assert ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_alpha_from_moments_is_krippendorffs_on_resampled_items(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ratings = np.round(rng.normal(size=(4, 50)), 1)
    ratings[rng.random(ratings.shape) < 0.3] = NAN
    moments = interval_moments(ratings)
    for _ in range(10):
        picked = rng.integers(0, 50, size=50)
        w = np.bincount(picked, minlength=50).astype(np.float64)
        ours = alpha_from_moments((w @ moments)[None, :])[0]
        theirs = krippendorff.alpha(ratings[:, picked], level_of_measurement="interval")
        assert ours == pytest.approx(theirs, abs=1e-12)


# --- The libraries as oracles, on random and degenerate inputs ---------------------------
# evalkit computes every statistic itself (numpy); scikit-learn, scipy and krippendorff, in the
# test extra only, are the oracles. Where the library warns that its value is undefined (or
# refuses the input as having nothing to measure), evalkit's is NaN.

ORACLE = settings(max_examples=100, deadline=None)  # no deadline: the machine may be loaded
CLOSE = 1e-9
# Missing values are drawn one time in five.
_MISSING = st.sampled_from((False, False, False, False, True))


@st.composite
def _level_indices(draw: st.DrawFn, size: int, n: int) -> FloatArray:
    """``n`` level indices out of ``size``, from a drawn subset of the levels (often a single
    one), NaN where missing."""
    used = draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=size, unique=True))
    values = draw(st.lists(st.sampled_from(used), min_size=n, max_size=n))
    missing = draw(st.lists(_MISSING, min_size=n, max_size=n))
    return np.where(missing, NAN, np.array(values, dtype=np.float64))


@st.composite
def _labelled_pairs(draw: st.DrawFn) -> tuple[LabelKind, int, FloatArray, FloatArray]:
    size = draw(st.integers(2, 6))
    kind: LabelKind = draw(st.sampled_from(CATEGORICAL if size == 2 else CATEGORICAL[1:]))
    n = draw(st.integers(0, 40))
    return kind, size, draw(_level_indices(size, n)), draw(_level_indices(size, n))


def _library(call: object) -> float:
    """The library's value; NaN where it warns that the value is undefined or finds nothing
    to measure."""
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        try:
            return float(call())  # type: ignore[operator]
        except ValueError as exc:  # krippendorff: no item rated twice, one value only
            if "at least two coders" not in str(exc) and "more than one value" not in str(exc):
                raise
            return NAN


@ORACLE
@given(_labelled_pairs())
def test_categorical_metrics_are_sklearns_on_any_labels(
    case: tuple[LabelKind, int, FloatArray, FloatArray],
) -> None:
    kind, size, human, judge = case
    # Levels on a 0-1 scale, the judge's scores exactly on them.
    levels = np.linspace(0.0, 1.0, size)
    found = agreement(np.where(np.isnan(judge), NAN, levels[np.nan_to_num(judge).astype(int)]),
                      np.where(np.isnan(human), NAN, levels[np.nan_to_num(human).astype(int)]),
                      kind=kind, levels=tuple(levels), resamples=1)  # fmt: skip
    both = ~np.isnan(judge) & ~np.isnan(human)
    h, j = human[both].astype(int), judge[both].astype(int)
    positions = np.arange(size)
    if not both.any():
        assert all(math.isnan(e.value) for e in found.metrics.values())
        return
    assert found.confusion == tuple(map(tuple, confusion_matrix(h, j, labels=positions)))
    expected = {
        "accuracy": accuracy_score(h, j),
        "kappa": _library(lambda: cohen_kappa_score(h, j, labels=positions)),
        "weighted_kappa": _library(
            lambda: cohen_kappa_score(h, j, labels=positions, weights="quadratic")
        ),
    }
    for name, estimate in found.metrics.items():
        assert estimate.value == pytest.approx(expected[name], abs=CLOSE, nan_ok=True), name


# Scores with ties (small integers), ordinary values, and any float short of overflowing a sum.
_SCORES = st.one_of(
    st.integers(-3, 3).map(float),
    st.floats(-1e6, 1e6),
    st.floats(-1e300, 1e300),
)


@st.composite
def _scored_pairs(draw: st.DrawFn) -> tuple[FloatArray, FloatArray]:
    n = draw(st.integers(0, 40))
    sides = []
    for _ in range(2):
        if draw(st.booleans()):  # one side constant now and then
            values = [draw(_SCORES)] * n
        else:
            values = draw(st.lists(_SCORES, min_size=n, max_size=n))
        missing = draw(st.lists(_MISSING, min_size=n, max_size=n))
        sides.append(np.where(missing, NAN, np.array(values, dtype=np.float64)))
    return sides[0], sides[1]


@ORACLE
@given(_scored_pairs())
def test_correlations_are_scipys_on_any_scores(pairs: tuple[FloatArray, FloatArray]) -> None:
    judge, human = pairs
    found = agreement(judge, human, kind="continuous", resamples=1)
    both = ~np.isnan(judge) & ~np.isnan(human)
    j, h = judge[both], human[both]
    assert found.metrics["mae"].value == pytest.approx(
        np.mean(np.abs(j - h)) if j.size else NAN, nan_ok=True
    )
    if j.size < 2:
        assert math.isnan(found.metrics["pearson"].value)
        assert math.isnan(found.metrics["spearman"].value)
        return
    try:
        with warnings.catch_warnings():
            # A nearly constant side: scipy says its own value may be inaccurate, no oracle.
            warnings.simplefilter("error", stats.NearConstantInputWarning)
            pearson = _library(lambda: stats.pearsonr(j, h).statistic)
    except stats.NearConstantInputWarning:
        reject()
    spearman = _library(lambda: stats.spearmanr(j, h).statistic)
    assert found.metrics["pearson"].value == pytest.approx(pearson, abs=CLOSE, nan_ok=True)
    assert found.metrics["spearman"].value == pytest.approx(spearman, abs=CLOSE, nan_ok=True)


@st.composite
def _level_ratings(draw: st.DrawFn) -> tuple[LabelKind, int, FloatArray]:
    size = draw(st.integers(2, 5))
    kind: LabelKind = draw(st.sampled_from(CATEGORICAL if size == 2 else CATEGORICAL[1:]))
    raters, items = draw(st.integers(1, 5)), draw(st.integers(0, 20))
    rows = [draw(_level_indices(size, items)) for _ in range(raters)]
    return kind, size, np.array(rows).reshape(raters, items)


@ORACLE
@given(_level_ratings())
def test_alpha_is_krippendorffs_on_any_level_ratings(
    case: tuple[LabelKind, int, FloatArray],
) -> None:
    kind, size, indices = case
    levels = np.linspace(0.0, 1.0, size)
    ratings = np.where(np.isnan(indices), NAN, levels[np.nan_to_num(indices).astype(int)])
    found = inter_rater_alpha(ratings, kind=kind, levels=tuple(levels), resamples=1)
    metric: Metric = "ordinal" if kind == "ordinal" else "nominal"
    expected = _library(
        lambda: krippendorff.alpha(ratings, value_domain=levels, level_of_measurement=metric)
    )
    assert found.value == pytest.approx(expected, abs=CLOSE, nan_ok=True)


@st.composite
def _interval_ratings(draw: st.DrawFn) -> FloatArray:
    raters, items = draw(st.integers(1, 4)), draw(st.integers(0, 15))
    values = st.one_of(st.integers(-3, 3).map(float), st.floats(-1e3, 1e3))
    rows = [draw(st.lists(values, min_size=items, max_size=items)) for _ in range(raters)]
    missing = draw(st.lists(_MISSING, min_size=raters * items, max_size=raters * items))
    ratings = np.array(rows, dtype=np.float64).reshape(raters, items)
    return np.where(np.reshape(missing, ratings.shape), NAN, ratings)


@ORACLE
@given(_interval_ratings())
def test_interval_alpha_is_krippendorffs_on_any_ratings(ratings: FloatArray) -> None:
    found = inter_rater_alpha(ratings, kind="continuous", resamples=1)
    expected = _library(lambda: krippendorff.alpha(ratings, level_of_measurement="interval"))
    assert found.value == pytest.approx(expected, abs=CLOSE, nan_ok=True)


@ORACLE
@given(st.floats(1e-9, 1.0 - 1e-12, exclude_max=True))
def test_noise_share_takes_scipys_normal_quantile(confidence: float) -> None:
    z = stats.norm.ppf(0.5 + confidence / 2)
    share = noise_share(1e-4, None, n_paired=100, ci_low=-0.5, ci_high=0.5, confidence=confidence)
    # The noise of both runs (2e-4) over n, over the interval's squared standard error.
    assert share == pytest.approx(min(1.0, 2e-6 / (1.0 / (2 * z)) ** 2), rel=CLOSE)


@pytest.mark.parametrize("confidence", [0.0, 1.0, 95.0, -0.5])
def test_noise_share_refuses_a_confidence_off_zero_to_one(confidence: float) -> None:
    with pytest.raises(ConfigError, match=f"confidence must be between 0 and 1.*{confidence}"):
        noise_share(1e-4, None, n_paired=100, ci_low=-0.5, ci_high=0.5, confidence=confidence)


# --- Edge cases ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CATEGORICAL)
def test_all_pairs_in_one_class_leave_kappa_undefined_and_accuracy_one(kind: LabelKind) -> None:
    found = agreement([1.0] * 20, [1.0] * 20, kind=kind, levels=(0.0, 1.0))
    assert found.metrics["accuracy"] == Estimate(1.0, 1.0, 1.0)
    kappas = [e for name, e in found.metrics.items() if name != "accuracy"]
    assert len(kappas) == (2 if kind == "ordinal" else 1)
    assert np.isnan([(e.value, e.low, e.high) for e in kappas]).all()
    assert found.confusion == ((0, 0), (0, 20))


@pytest.mark.parametrize("kind", CATEGORICAL)
def test_perfect_agreement_is_one_with_a_one_point_interval(kind: LabelKind) -> None:
    human = np.tile([0.0, 1.0], 30)
    found = agreement(human + 0.1, human, kind=kind, levels=(0.0, 1.0))
    assert all(e == Estimate(1.0, 1.0, 1.0) for e in found.metrics.values())


def test_perfect_disagreement_gives_negative_kappa() -> None:
    human = np.tile([0.0, 0.5, 1.0], 20)
    found = agreement(1.0 - human, human, kind="ordinal", levels=(0.0, 0.5, 1.0))
    assert found.metrics["accuracy"].value == pytest.approx(1 / 3)  # the middle level agrees
    assert found.metrics["kappa"].value == pytest.approx(0.0)
    assert found.metrics["weighted_kappa"].value == pytest.approx(-1.0)
    binary = agreement(1.0 - human[human != 0.5], human[human != 0.5], kind="binary")
    assert binary.metrics["kappa"].value == pytest.approx(-1.0)
    assert binary.metrics["kappa"].high < 0


def test_a_level_never_used_still_counts() -> None:
    # Nobody used 0.25, yet it puts 0 two steps from 0.5 and three from 1 for the weights.
    levels = (0.0, 0.25, 0.5, 1.0)
    human = np.array([0.0, 0.0, 0.5, 1.0, 1.0, 0.5, 0.0, 1.0, 0.5, 0.0])
    judge = np.array([0.0, 0.5, 0.5, 1.0, 0.5, 1.0, 0.0, 0.0, 0.5, 0.0])
    found = agreement(judge, human, kind="ordinal", levels=levels)
    assert found.confusion == ((3, 0, 1, 0), (0, 0, 0, 0), (0, 0, 2, 1), (1, 0, 1, 1))
    h, j = np.searchsorted(levels, human), np.searchsorted(levels, judge)
    full = _sklearn_kappa(h, j, np.arange(4), weights="quadratic")
    used_only = float(cohen_kappa_score(h, j, weights="quadratic"))
    assert found.metrics["weighted_kappa"].value == pytest.approx(full)
    assert abs(full - used_only) > 0.01


def test_missing_pairs_are_dropped_and_counted() -> None:
    judge = [1.0, NAN, 0.0, 1.0, NAN]
    human = [1.0, 0.0, NAN, 0.0, NAN]
    found = agreement(judge, human, kind="binary")
    assert (found.n, found.missing) == (2, 3)
    assert found.confusion == ((0, 1), (0, 1))


@pytest.mark.parametrize("kind", ["binary", "categorical", "ordinal", "continuous"])
def test_no_pairs_make_every_metric_undefined(kind: LabelKind) -> None:
    levels = None if kind == "continuous" else (0.0, 1.0)
    found = agreement([NAN, 1.0], [0.0, NAN], kind=kind, levels=levels)
    assert (found.n, found.missing) == (0, 2)
    assert all(math.isnan(v) for e in found.metrics.values() for v in (e.value, e.low, e.high))
    assert found.confusion == (() if kind == "continuous" else ((0, 0), (0, 0)))


@pytest.mark.parametrize(("kind", "expected"), [
    ("binary", {"accuracy": 0.0, "kappa": 0.0}),
    ("ordinal", {"accuracy": 0.0, "kappa": 0.0, "weighted_kappa": 0.0}),
    ("continuous", {"pearson": NAN, "spearman": NAN, "mae": 1.0}),
])  # fmt: skip
def test_one_pair_has_values_where_defined_and_no_interval(
    kind: LabelKind, expected: dict[str, float]
) -> None:
    levels = None if kind == "continuous" else (0.0, 1.0)
    found = agreement([1.0], [0.0], kind=kind, levels=levels)
    values = {name: e.value for name, e in found.metrics.items()}
    assert values == pytest.approx(expected, nan_ok=True)
    assert all(math.isnan(e.low) and math.isnan(e.high) for e in found.metrics.values())


def test_a_constant_judge_has_no_correlation_but_an_error() -> None:
    human = np.linspace(0.0, 1.0, 50)
    found = agreement(np.full(50, 0.3), human, kind="continuous")
    for name in ("pearson", "spearman"):
        e = found.metrics[name]
        assert np.isnan([e.value, e.low, e.high]).all()
    assert found.metrics["mae"].value == pytest.approx(np.mean(np.abs(0.3 - human)))
    assert found.metrics["mae"].low < found.metrics["mae"].value < found.metrics["mae"].high


def test_a_judge_score_halfway_between_levels_snaps_to_the_lower() -> None:
    found = agreement([0.25, 0.75, 0.2501, -3.0, 7.0], [0.0, 0.5, 0.5, 0.0, 1.0],
                      kind="ordinal", levels=(1.0, 0.5, 0.0))  # fmt: skip
    assert found.levels == (0.0, 0.5, 1.0)
    assert found.confusion == ((2, 0, 0), (0, 2, 0), (0, 0, 1))


def test_alpha_of_identical_or_unpaired_ratings_is_undefined() -> None:
    same = inter_rater_alpha([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], kind="binary", levels=(0, 1))
    unpaired = inter_rater_alpha([[1.0, NAN], [NAN, 0.0]], kind="categorical", levels=(0, 1))
    flat = inter_rater_alpha([[0.3, 0.3], [0.3, 0.3]], kind="continuous")
    none = inter_rater_alpha(np.empty((3, 0)), kind="ordinal", levels=(0, 1, 2))
    for e in (same, unpaired, flat, none):
        assert np.isnan([e.value, e.low, e.high]).all()


def test_perfect_rater_agreement_is_alpha_one() -> None:
    ratings = np.tile([0.0, 0.5, 1.0, 0.5], (3, 10))
    for kind in ("categorical", "ordinal", "continuous"):
        assert inter_rater_alpha(ratings, kind=kind) == Estimate(1.0, 1.0, 1.0)


# --- Intervals ----------------------------------------------------------------------------


def _ordinary(n: int, seed: int) -> tuple[FloatArray, FloatArray]:
    return _labelled(seed, n, np.array(LEVELS), np.array(LEVELS), with_nan=False)


@pytest.mark.parametrize("kind", ["binary", "ordinal", "continuous"])
def test_an_interval_holds_its_value_narrows_with_n_and_repeats_with_its_seed(
    kind: LabelKind,
) -> None:
    widths = []
    for n in (100, 2_000):
        judge, human = _ordinary(n, seed=n)
        if kind == "binary":
            judge, human = (judge > 0.5).astype(float), (human > 0.5).astype(float)
        found = agreement(judge, human, kind=kind, seed=3)
        assert found == agreement(judge, human, kind=kind, seed=3)
        assert found != agreement(judge, human, kind=kind, seed=4)
        for e in found.metrics.values():
            assert e.low <= e.value <= e.high
            assert e.low < e.high
        widths.append([e.high - e.low for e in found.metrics.values()])
    assert all(wide > 2 * narrow for wide, narrow in zip(*widths, strict=True))


def test_the_alpha_interval_holds_its_value_narrows_and_repeats() -> None:
    widths = []
    for items in (80, 2_000):
        ratings = _reliability(items, 3, items, np.array(LEVELS), USED, 0.1)
        found = inter_rater_alpha(ratings, kind="ordinal", levels=LEVELS, seed=2)
        assert found == inter_rater_alpha(ratings, kind="ordinal", levels=LEVELS, seed=2)
        assert found.low < found.value < found.high
        widths.append(found.high - found.low)
    assert widths[0] > 2 * widths[1]


def test_grouped_kappa_resamples_agree_with_resampling_the_pairs() -> None:
    # The multinomial over cells is the pair-wise bootstrap: compare with index draws.
    judge, human = _ordinary(400, seed=8)
    found = agreement(judge, human, kind="ordinal", levels=LEVELS, resamples=4_000, seed=1)
    levels = np.array(LEVELS)
    h = np.searchsorted(levels, human)
    j = np.searchsorted(levels, _snap(judge, levels))
    picks = np.random.default_rng(2).integers(0, 400, size=(4_000, 400))
    cells = h[picks] * 5 + j[picks]
    counts = np.stack([np.bincount(row, minlength=25) for row in cells]).reshape(-1, 5, 5)
    for name, weights in (("kappa", "unweighted"), ("weighted_kappa", "quadratic")):
        low, high = np.quantile(kappa_from_counts(counts, weights), [0.025, 0.975])  # type: ignore[arg-type]
        e = found.metrics[name]
        assert e.low == pytest.approx(low, abs=0.1 * (high - low))
        assert e.high == pytest.approx(high, abs=0.1 * (high - low))


def test_kappa_intervals_cover_the_true_kappa_at_their_level() -> None:
    # The judge copies the human label with probability 0.6, else draws from the same
    # marginals independently: its true kappa is 0.6.
    rng = np.random.default_rng(12)
    marginals = np.array([0.5, 0.3, 0.2])
    covered = {0.95: 0, 0.5: 0}
    for _ in range(100):
        human = rng.choice(3, size=200, p=marginals).astype(np.float64)
        judge = np.where(rng.random(200) < 0.6, human, rng.choice(3, size=200, p=marginals))
        for level in covered:
            seed = int(rng.integers(1 << 30))
            found = agreement(judge, human, kind="categorical", levels=(0, 1, 2),
                              confidence=level, resamples=500, seed=seed)  # fmt: skip
            e = found.metrics["kappa"]
            covered[level] += e.low <= 0.6 <= e.high
    assert covered[0.95] >= 88
    assert 35 <= covered[0.5] <= 65


@pytest.mark.parametrize(("defined", "expected"), [(49, False), (50, True), (100, True)])
def test_an_interval_needs_half_of_its_resamples_defined(defined: int, expected: bool) -> None:
    statistics = np.full(100, NAN)
    statistics[:defined] = np.linspace(0.0, 1.0, defined)
    low, high = percentile_interval(statistics, 0.9)
    assert (not math.isnan(low) and not math.isnan(high)) is expected
    if expected:
        assert (low, high) == pytest.approx(tuple(np.quantile(statistics[:defined], [0.05, 0.95])))


# --- Disagreements ------------------------------------------------------------------------


def test_disagreements_are_largest_first_then_by_index_and_limited() -> None:
    judge = [0.0, 1.0, 0.5, NAN, 0.2, 0.9, 0.5, 0.4]
    human = [0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.5, NAN]
    # Gaps 1.0, 0.9, 0.8 and 0.5; pairs 0 and 6 agree, 3 and 7 miss a value.
    assert disagreements(judge, human, kind="continuous") == [1, 5, 4, 2]
    assert disagreements(judge, human, kind="continuous", limit=2) == [1, 5]
    assert disagreements(judge, human, kind="continuous", limit=0) == []
    # Snapped to the levels 0.2 -> 0 and 0.9 -> 1: pairs 1, 4 and 5 tie at 1.0, by index.
    ordinal = disagreements(judge, human, kind="ordinal", levels=(0.0, 0.5, 1.0))
    assert ordinal == [1, 4, 5, 2]


def test_pairs_that_agree_after_snapping_are_no_disagreement() -> None:
    assert disagreements([0.2, 0.8, 0.4], [0.0, 1.0, 1.0], kind="binary") == [2]
    assert disagreements([0.2, 0.8], [0.2, 0.8], kind="continuous") == []


# --- Results and arguments ----------------------------------------------------------------


def test_to_dict_is_json_with_undefined_values_as_null() -> None:
    found = agreement([1.0, 1.0, 1.0], [1.0, 1.0, NAN], kind="binary", levels=(0.0, 1.0))
    data = json.loads(json.dumps(found.to_dict(), allow_nan=False))
    assert data == {
        "kind": "binary",
        "n": 2,
        "missing": 1,
        "metrics": {
            "accuracy": {"value": 1.0, "low": 1.0, "high": 1.0},
            "kappa": {"value": None, "low": None, "high": None},
        },
        "levels": [0.0, 1.0],
        "confusion": [[0, 0], [0, 2]],
    }
    assert isinstance(found, Agreement)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: agreement([1.0], [1.0, 0.0], kind="binary"), "equal lengths.*1 judge.*2 human"),
    # Wrong on purpose (hence the type: ignore): the check at run time is under test.
    (lambda: agreement([1.0], [1.0], kind="nominal"), "kind must be one of.*'nominal'"),  # type: ignore[arg-type]
    (lambda: agreement([1.0], [1.0], kind="ordinal", levels=(1.0,)), r"at least two.*\(1.0,\)"),
    (lambda: agreement([1.0, 0.0], [1.0, 1.0], kind="categorical"), "levels=None.*1 distinct"),
    (lambda: agreement([1.0], [1.0], kind="binary", levels=(0, 1, 2)), "exactly two levels, got 3"),
    (lambda: agreement([1.0], [1.0], kind="ordinal", levels=(0, 1, 1)), "distinct.*1.0, 1.0"),
    (lambda: agreement([1.0], [1.0], kind="ordinal", levels=(0, NAN)), "finite"),
    (lambda: agreement([1.0], [0.3], kind="ordinal", levels=(0, 1)), "human label 0.3 is not"),
    (lambda: agreement([1.0], [1.0], kind="continuous", levels=(0, 1)), "not continuous"),
    (lambda: agreement([math.inf], [1.0], kind="continuous"), "judge must hold finite"),
    (lambda: agreement([1.0], [-math.inf], kind="continuous"), "human must hold finite"),
    (lambda: agreement([[1.0]], [1.0], kind="continuous"), "judge must be one-dimensional"),
    (lambda: agreement([1.0], [1.0], kind="continuous", confidence=1.0), "confidence.*1.0"),
    (lambda: agreement([1.0], [1.0], kind="continuous", confidence=0), "confidence.*0"),
    (lambda: agreement([1.0], [1.0], kind="continuous", resamples=0), "resamples.*0"),
    (lambda: agreement([1.0], [1.0], kind="continuous", resamples=2.5), "resamples.*2.5"),  # type: ignore[arg-type]
    (lambda: inter_rater_alpha([1.0, 0.0], kind="binary"), "two-dimensional.*raters x items"),
    (lambda: inter_rater_alpha([[2.0, 0.0]], kind="binary", levels=(0, 1)), "rating 2.0 is not"),
    (lambda: inter_rater_alpha([[1.0]], kind="continuous", resamples=-1), "resamples.*-1"),
    (lambda: disagreements([1.0], [1.0], kind="binary", levels=(0, 1), limit=-1), "limit.*-1"),
])  # fmt: skip
def test_bad_arguments_are_config_errors_naming_the_value(call: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        call()  # type: ignore[operator]


# Every statistic evalkit.agreement computes, on labels with ties, missing values and a level
# nobody used; run as ``python -c`` it prints them.
_EVERY_STATISTIC = """
import json
import numpy as np
from evalkit.agreement import agreement
from evalkit.agreement import noise_share
from evalkit.agreement._stats import inter_rater_alpha

rng = np.random.default_rng(0)
human = rng.choice([0.0, 0.5, 1.0], size=300)
judge = np.clip(human + rng.normal(0.0, 0.3, size=300), 0.0, 1.0)
judge[:9] = np.nan
other = np.where(rng.random(300) < 0.2, 1.0 - human, human)
other[-7:] = np.nan
levels = (0.0, 0.25, 0.5, 1.0)
found = {
    "binary": agreement(judge > 0.5, human > 0.5, kind="binary", resamples=300).to_dict(),
    "categorical": agreement(judge, human, kind="categorical", levels=levels,
                             resamples=300).to_dict(),
    "ordinal": agreement(judge, human, kind="ordinal", levels=levels, resamples=300).to_dict(),
    "continuous": agreement(judge, human, kind="continuous", resamples=300).to_dict(),
    "alpha": {kind: inter_rater_alpha(np.vstack([human, other]), kind=kind,
                                      levels=None if kind == "continuous" else levels,
                                      resamples=300).to_dict()
              for kind in ("categorical", "ordinal", "continuous")},
    "noise_share": noise_share(0.002, None, n_paired=300, ci_low=-0.05, ci_high=0.02,
                               confidence=0.9),
}
if __name__ == "__main__":
    print(json.dumps(found))
"""


def test_every_statistic_is_computed_without_scikit_learn_scipy_or_krippendorff(
    tmp_path: Path,
) -> None:
    # The base install has none of them: a process that cannot import them gives the same
    # figures as this one, which can.
    env = without_modules(tmp_path / "absent", *STATISTICS_LIBRARIES)
    done = subprocess.run([sys.executable, "-c", _EVERY_STATISTIC], capture_output=True,
                          text=True, env=env, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    here: dict[str, Any] = {}
    exec(_EVERY_STATISTIC, here)
    assert json.loads(done.stdout) == json.loads(json.dumps(here["found"]))
    ordinal = here["found"]["ordinal"]["metrics"]
    assert 0.3 < ordinal["weighted_kappa"]["value"] < 0.95
    assert 0.0 < here["found"]["noise_share"] < 1.0


def test_the_statistics_libraries_are_absent_where_the_test_runs_without_them(
    tmp_path: Path,
) -> None:
    # The test above is only a test if its process really cannot import them.
    env = without_modules(tmp_path / "absent", *STATISTICS_LIBRARIES)
    for name in STATISTICS_LIBRARIES:
        done = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                              text=True, env=env, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 1
        assert f"ModuleNotFoundError: No module named '{name}'" in done.stderr


def test_the_base_install_requires_none_of_the_statistics_libraries() -> None:
    # The installed metadata (stale after a change of pyproject.toml until the next
    # `pip install -e '.[test]'`): the three are the test extra's, for the tests above.
    required = importlib.metadata.requires("evalkit-runner") or []
    names: dict[str, set[str]] = {"": set(), "test": set()}
    for requirement in required:
        name = requirement.split(";")[0].split("[")[0].split(">")[0].split("=")[0].strip()
        extra = re.search(r'extra == "([^"]+)"', requirement)
        names.setdefault(extra[1] if extra else "", set()).add(name.lower())
    assert names[""], required
    distributions = {"scikit-learn", "scipy", "krippendorff"}
    assert names[""].isdisjoint(distributions), sorted(names[""])
    assert distributions <= names["test"], sorted(names["test"])


def test_importing_the_package_loads_none_of_the_statistics_libraries() -> None:
    code = (
        "import sys, evalkit.agreement as a; a.Agreement; a.agreement;"
        "print(sorted(m for m in ('sklearn', 'scipy', 'krippendorff') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
