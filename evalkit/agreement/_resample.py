"""Agreement statistics of many bootstrap resamples at once, vectorised with numpy.

The only implementation of evalkit's agreement statistics: ``_stats.py`` takes its point
estimates from here too, as the one resample that drew every pair (or item) once. A resample
of pairs only matters through how many copies of each pair it drew, so every statistic here is
computed from those counts: cells of the confusion matrix (kappa), copies of each item
(correlations, the error, alpha). The formulas are scikit-learn's, scipy's and
``krippendorff``'s, rewritten for a leading resample axis; those libraries are not installed
with evalkit, and ``tests/agreement/test_stats.py`` checks every formula against them. Why and
what it saves: docs/pages/design/agreement-statistics.md.

An undefined statistic (kappa when both sides used one class, a correlation with a constant
side, alpha without two distinct values) is NaN, never a warning.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]

KappaWeights = Literal["unweighted", "quadratic"]

# A chunk of resamples holds about this many counts: small enough to stay in cache, large
# enough to amortise numpy's per-call overhead (the size evalkit.compare settled on too).
_CHUNK_ELEMENTS = 1 << 18
# Grouped draws cost ~100 ns per distinct value and resample, item-wise ones a few ns per item
# and resample (evalkit.compare measured both), so grouping wins while n is at least 64 times
# the number of distinct values.
_GROUPING_RATIO = 64
# A pooled sum of squared deviations this small next to the pooled sum of squares is rounding,
# not spread: the resample drew one value only, and alpha is undefined (and so is a correlation
# of values drawn in a band this narrow far from the mean of all pairs).
_FLAT = 1e-12


def chunks(resamples: int, width: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` row ranges of about ``_CHUNK_ELEMENTS / width`` resamples each."""
    rows = max(1, _CHUNK_ELEMENTS // max(1, width))
    for start in range(0, resamples, rows):
        yield start, min(start + rows, resamples)


def percentile_interval(statistics: FloatArray, confidence: float) -> tuple[float, float]:
    """The percentile interval of the defined (non-NaN) statistics.

    NaN, NaN when fewer than half of the resamples gave a defined value: an interval of the
    few that did would describe a different population.
    """
    defined = statistics[~np.isnan(statistics)]
    if defined.size == 0 or 2 * defined.size < statistics.size:
        return math.nan, math.nan
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(defined, [tail, 1.0 - tail])
    return float(low), float(high)


def copies(rng: np.random.Generator, rows: int, n: int) -> IntArray:
    """``rows`` resamples of ``n`` items with replacement, as copies drawn of each item."""
    picks = rng.integers(0, n, size=(rows, n))
    picks += (np.arange(rows) * n)[:, None]
    return np.bincount(picks.ravel(), minlength=rows * n).reshape(rows, n)


class PairDraws:
    """Resamples of ``n`` pairs, as copies drawn of each pair or of each distinct pair.

    Scores are often discrete (a 1-10 scale), so the pairs take few distinct values. Drawing
    how many copies of each distinct pair a resample holds is then a multinomial, at a cost
    proportional to the distinct pairs instead of ``n`` (as evalkit.compare's grouped draws,
    docs/pages/design/grouped-draws.md). Otherwise items are drawn one by one and counted.
    """

    def __init__(self, judge: FloatArray, human: FloatArray) -> None:
        pairs, counts = np.unique(np.column_stack((judge, human)), axis=0, return_counts=True)
        self.n = judge.size
        self.grouped = pairs.shape[0] * _GROUPING_RATIO <= judge.size
        #: The pairs the draws count copies of: the distinct ones when grouped, else all.
        self.judge: FloatArray = pairs[:, 0] if self.grouped else judge
        self.human: FloatArray = pairs[:, 1] if self.grouped else human
        self._share: FloatArray = counts / judge.size

    @property
    def width(self) -> int:
        """Elements drawn per resample, for `chunks`."""
        return self.judge.size

    def draw(self, rng: np.random.Generator, rows: int) -> IntArray:
        """Copies of each of `judge`'s pairs in ``rows`` resamples."""
        if self.grouped:
            drawn: IntArray = rng.multinomial(self.n, self._share, size=rows)
            return drawn
        return copies(rng, rows, self.n)


def weighted_sums(weights: npt.NDArray[np.number], columns: FloatArray) -> FloatArray:
    """``weights @ columns`` as one matrix-vector product per column.

    A thin ``(rows, n) @ (n, k)`` product goes to a multi-threaded BLAS kernel, which ran ten
    times slower than single-threaded ones whenever the other core was busy (measured on the
    2-core reference machine); matrix-vector products do not suffer from it.
    """
    w = weights.astype(np.float64, copy=False)
    return np.column_stack([w @ np.ascontiguousarray(column) for column in columns.T])


# --- Cohen's kappa -------------------------------------------------------------------------


def kappa_weights(levels: int, weights: KappaWeights) -> FloatArray:
    """scikit-learn's disagreement weights: 1 off the diagonal, or ``(i - j) ** 2``."""
    index = np.arange(levels, dtype=np.float64)
    if weights == "quadratic":
        return (index[:, None] - index[None, :]) ** 2
    return 1.0 - np.eye(levels)


def kappa_from_counts(counts: npt.NDArray[np.integer], weights: KappaWeights) -> FloatArray:
    """Cohen's kappa of each ``(K, K)`` confusion matrix in ``counts`` (shape ``(..., K, K)``).

    ``sklearn.metrics.cohen_kappa_score``'s formula, ``1 - sum(w * C) / sum(w * E)`` with the
    expected matrix ``E = outer(rows, columns) / n``; NaN where ``sum(w * E)`` is 0 (both sides
    used the same single class, or no pairs), where scikit-learn warns.
    """
    levels = counts.shape[-1]
    w = kappa_weights(levels, weights)
    c = counts.astype(np.float64)
    flat = c.reshape(*c.shape[:-2], levels * levels)
    n = flat.sum(axis=-1)
    rows, columns = c.sum(axis=-1), c.sum(axis=-2)
    observed = flat @ w.ravel()
    # Sums of products of integer counts: exact in float64, so "== 0" is a safe test.
    expected = (np.einsum("...a,ab->...b", rows, w) * columns).sum(axis=-1)
    kappa = np.full(n.shape, math.nan)
    defined = expected > 0
    kappa[defined] = 1.0 - n[defined] * observed[defined] / expected[defined]
    return kappa


def accuracy_from_counts(counts: npt.NDArray[np.integer]) -> FloatArray:
    """The share of pairs on the diagonal of each confusion matrix (NaN with no pairs)."""
    n = counts.sum(axis=(-2, -1)).astype(np.float64)
    diagonal = np.trace(counts, axis1=-2, axis2=-1).astype(np.float64)
    accuracy = np.full(n.shape, math.nan)
    np.divide(diagonal, n, out=accuracy, where=n > 0)
    return accuracy


# --- Correlations and the mean absolute error ---------------------------------------------


class TieGroups:
    """One variable's items grouped by equal value, in increasing order (for average ranks)."""

    def __init__(self, values: FloatArray) -> None:
        self.order = np.argsort(values, kind="stable")
        ordered = values[self.order]
        first = np.r_[True, ordered[1:] != ordered[:-1]]
        self.starts = np.flatnonzero(first)
        self.group = np.empty(values.size, dtype=np.int64)
        self.group[self.order] = np.cumsum(first) - 1

    def weights(self, drawn: FloatArray) -> FloatArray:
        """Copies drawn of each group, per resample (shape ``(rows, groups)``)."""
        result: FloatArray = np.add.reduceat(
            np.take(drawn, self.order, axis=1), self.starts, axis=1
        )
        return result

    @staticmethod
    def centred_ranks(group_weights: FloatArray, n: FloatArray) -> FloatArray:
        """Each group's average rank in the resample (scipy's ``rankdata``), minus the mean
        rank ``(n + 1) / 2`` (``n`` per resample); groups not drawn get a rank that weighs
        nothing."""
        before = np.cumsum(group_weights, axis=1) - group_weights
        result: FloatArray = before + (group_weights + 1.0) / 2.0 - (n[:, None] + 1.0) / 2.0
        return result


def _correlation(
    cov: FloatArray, var_x: FloatArray, var_y: FloatArray, flat: npt.NDArray[np.bool_],
    n: FloatArray,
) -> FloatArray:  # fmt: skip
    r = np.full(cov.shape, math.nan)
    defined = ~flat
    r[defined] = cov[defined] / np.sqrt(var_x[defined] * var_y[defined])
    clipped: FloatArray = np.clip(r, -1.0, 1.0)
    # Two distinct pairs lie on a line: exactly 1 or -1, as scipy's pearsonr returns them.
    two = defined & (n == 2)
    clipped[two] = np.round(clipped[two])
    return clipped


def _centred(values: FloatArray) -> FloatArray:
    """``values`` minus their mean, over their largest deviation (1 when none).

    Scaled as ``scipy.stats.pearsonr`` scales them, so that squares of values past 1e154 do
    not overflow; a correlation does not change with the scale.
    """
    centred = values - values.mean()
    largest = float(np.abs(centred).max(initial=0.0))
    result: FloatArray = centred / largest if largest > 0 else centred
    return result


def continuous_resamples(
    judge: FloatArray, human: FloatArray, drawn: IntArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Pearson's r, Spearman's rho and the mean absolute error of each resample.

    ``drawn[r, i]`` is how many copies of pair ``i`` resample ``r`` holds (every row the same
    total; the pairs may be distinct ones standing for several items). Pearson is the
    weighted moment formula on values centred on their mean; Spearman is Pearson of the average
    ranks within the resample, ties sharing their mean rank as in ``scipy.stats.spearmanr``.
    A side that is constant within a resample (all its copies in one tie group, an exact test)
    makes both correlations NaN; Pearson's also when the side's spread is lost to rounding.
    """
    w = drawn.astype(np.float64)
    n = w.sum(axis=1)
    groups_x, groups_y = TieGroups(judge), TieGroups(human)
    gx, gy = groups_x.weights(w), groups_y.weights(w)
    flat = (gx.max(axis=1) == n) | (gy.max(axis=1) == n)

    x, y = _centred(judge), _centred(human)
    sums = weighted_sums(w, np.column_stack((x, y, x * x, y * y, x * y, np.abs(judge - human))))
    sx, sy, sxx, syy, sxy, sad = sums.T
    var_x, var_y = sxx - sx * sx / n, syy - sy * sy / n
    # The values are centred on the mean of all pairs: a resample that drew only values in a
    # narrow band far from it has a variance lost to rounding (even below 0). Undefined, as if
    # constant, rather than a number made of rounding errors. The point estimate (every pair
    # once) is centred on its own mean and never meets this.
    blurred = flat | (var_x <= _FLAT * sxx) | (var_y <= _FLAT * syy)
    pearson = _correlation(sxy - sx * sy / n, var_x, var_y, blurred, n)

    rx = TieGroups.centred_ranks(gx, n)
    ry = TieGroups.centred_ranks(gy, n)
    # Centred ranks sum to zero over the resample, so the moments need no mean correction.
    cross = np.einsum(
        "ij,ij,ij->i", w, np.take(rx, groups_x.group, axis=1), np.take(ry, groups_y.group, axis=1)
    )
    spearman = _correlation(cross, (gx * rx * rx).sum(axis=1), (gy * ry * ry).sum(axis=1), flat, n)
    return pearson, spearman, sad / n


# --- Krippendorff's alpha -----------------------------------------------------------------


def value_counts(indices: IntArray, levels: int) -> IntArray:
    """Per item, how many raters gave each level (``indices`` raters x items, -1 missing)."""
    items = indices.shape[1]
    present = indices >= 0
    flat = (np.arange(items)[None, :] * levels + indices)[present]
    return np.bincount(flat, minlength=items * levels).reshape(items, levels)


def coincidences(counts: IntArray) -> FloatArray:
    """Each item's contribution to the coincidence matrix, flattened (items x levels²).

    ``krippendorff``'s ``(c cᵀ - diag(c)) / (m - 1)`` for an item with counts ``c`` from ``m``
    raters; zero for an item fewer than two raters rated.
    """
    items, levels = counts.shape
    c = counts.astype(np.float64)
    pairs = c[:, :, None] * c[:, None, :] - c[:, :, None] * np.eye(levels)[None, :, :]
    m = counts.sum(axis=1)
    scale = np.divide(1.0, m - 1.0, out=np.zeros(items), where=m >= 2)
    result: FloatArray = (pairs * scale[:, None, None]).reshape(items, levels * levels)
    return result


def alpha_from_coincidences(
    o: FloatArray, n_v: npt.NDArray[np.integer], metric: Literal["nominal", "ordinal"]
) -> FloatArray:
    """Krippendorff's alpha of each resample's coincidence matrix.

    Args:
        o: Coincidence matrices, flattened (resamples x levels²).
        n_v: Pairable values of each level (resamples x levels), as integers: the test for
            "undefined" (one level only) must be exact.
        metric: The distance between levels: ``nominal`` (0 or 1) or ``ordinal``
            (``(sum of n_g from c to k - (n_c + n_k) / 2) ** 2``, as ``krippendorff`` has it).

    Returns:
        ``1 - (n - 1) * sum(o * d) / sum(n_c * n_k * d)``; NaN where the denominator is 0.
    """
    levels = n_v.shape[1]
    nv = n_v.astype(np.float64)
    n = nv.sum(axis=1)
    if metric == "nominal":
        d = kappa_weights(levels, "unweighted")[None, :, :]
    else:
        cumulative = np.cumsum(nv, axis=1)
        # For c <= k the sum from c to k is cum[k] - cum[c] + n_c; squared, it is symmetric.
        between = cumulative[:, None, :] - cumulative[:, :, None]
        d = (between + (nv[:, :, None] - nv[:, None, :]) / 2.0) ** 2
    observed = (o.reshape(-1, levels, levels) * d).sum(axis=(1, 2))
    expected = (nv[:, :, None] * nv[:, None, :] * d).sum(axis=(1, 2))
    alpha = np.full(n.shape, math.nan)
    defined = expected > 0
    alpha[defined] = 1.0 - (n[defined] - 1.0) * observed[defined] / expected[defined]
    return alpha


def interval_moments(ratings: FloatArray) -> FloatArray:
    """Per item, what interval alpha needs (items x 4): ``a``, ``m``, ``s1``, ``s2``.

    ``a = sum over ordered rater pairs of (x_i - x_j)² / (m - 1)`` is the item's share of
    ``sum(o * d)``; ``m``, ``s1`` and ``s2`` are its count, sum and sum of squares of values
    centred on the mean of all pairable values. Items fewer than two raters rated are zeros.
    """
    present = ~np.isnan(ratings)
    m = present.sum(axis=0)
    pairable = m >= 2
    keep = present & pairable[None, :]
    pooled = ratings[keep]
    centre = float(pooled.mean()) if pooled.size else 0.0
    xc = np.where(keep, ratings - centre, 0.0)
    mf = np.where(pairable, m, 0).astype(np.float64)
    s1 = xc.sum(axis=0)
    item_mean = np.divide(s1, mf, out=np.zeros(m.size), where=pairable)
    spread = np.where(keep, xc - item_mean[None, :], 0.0)
    # sum over i, j of (x_i - x_j)² is 2 m sum_i (x_i - mean)²; on identical values the mean
    # may round off them, so those items are set to exactly 0.
    a = np.divide(
        2.0 * mf * (spread**2).sum(axis=0), mf - 1.0, out=np.zeros(m.size), where=pairable
    )
    high = np.where(keep, ratings, -np.inf).max(axis=0, initial=-np.inf)
    low = np.where(keep, ratings, np.inf).min(axis=0, initial=np.inf)
    a[pairable & (high == low)] = 0.0
    return np.column_stack((a, mf, s1, (xc**2).sum(axis=0)))


def alpha_from_moments(sums: FloatArray) -> FloatArray:
    """Interval alpha from summed `interval_moments` (resamples x 4).

    ``sum(n_c * n_k * d)`` over all pairable values is ``2 (N * S2 - S1²)``, so alpha is
    ``1 - (N - 1) * A / (2 (N * S2 - S1²))``; NaN when the values do not spread.
    """
    a, m, s1, s2 = sums.T
    expected = 2.0 * (m * s2 - s1 * s1)
    alpha = np.full(m.shape, math.nan)
    defined = (m >= 2) & (expected > _FLAT * 2.0 * m * s2)
    alpha[defined] = 1.0 - (m[defined] - 1.0) * a[defined] / expected[defined]
    return alpha
