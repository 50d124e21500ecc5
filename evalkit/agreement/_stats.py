"""How far a scorer (an LLM judge) agrees with human labels, and people with each other.

Cohen's kappa (weighted too), Pearson's r, Spearman's rho and Krippendorff's alpha, each with a
percentile bootstrap interval over pairs (over items for alpha), seeded and deterministic.
``_resample.py`` computes every statistic from the counts a resample drew; the point estimate
is the resample that drew each pair once, so there is one implementation, in numpy, of each
(scikit-learn, scipy and krippendorff are the tests' oracles, not dependencies; see
docs/pages/design/agreement-statistics.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from evalkit.agreement._arguments import (
    LabelKind,
    check_kind,
    check_options,
    label_indices,
    label_levels,
    no_levels,
    paired_arrays,
    snap,
)
from evalkit.agreement._resample import (
    FloatArray,
    IntArray,
    KappaWeights,
    PairDraws,
    accuracy_from_counts,
    alpha_from_coincidences,
    alpha_from_moments,
    chunks,
    coincidences,
    continuous_resamples,
    copies,
    interval_moments,
    kappa_from_counts,
    percentile_interval,
    value_counts,
    weighted_sums,
)
from evalkit.errors import ConfigError

Confusion: TypeAlias = tuple[tuple[int, ...], ...]

_METRICS: dict[LabelKind, tuple[str, ...]] = {
    "binary": ("accuracy", "kappa"),
    "categorical": ("accuracy", "kappa"),
    "ordinal": ("accuracy", "kappa", "weighted_kappa"),
    "continuous": ("pearson", "spearman", "mae"),
}


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic and its percentile bootstrap interval.

    Attributes:
        value: The statistic; NaN when undefined (kappa when both sides used one class, a
            correlation with a constant side, anything without pairs).
        low: The interval's lower end; NaN when undefined (no value, fewer than two pairs,
            or fewer than half of the resamples defined).
        high: Its upper end, NaN alike.
    """

    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float | None]:
        """JSON-ready: ``value``, ``low`` and ``high``, NaN as None."""
        return {"value": _json(self.value), "low": _json(self.low), "high": _json(self.high)}


@dataclass(frozen=True, slots=True)
class Agreement:
    """How far a scorer agrees with human labels over the pairs that have both.

    Attributes:
        kind: The kind of labels.
        n: Pairs with both a judge score and a human label.
        missing: Pairs left out because one of the two is NaN.
        metrics: By name, in order: ``accuracy`` and ``kappa`` (binary, categorical), then
            ``weighted_kappa`` (ordinal, quadratic weights); ``pearson``, ``spearman`` and
            ``mae`` (continuous, the mean of ``|judge - human|``).
        levels: The label levels on the scorer's scale, increasing; () for continuous labels.
        confusion: Pair counts, rows the human's level and columns the judge's (its score
            snapped to the nearest level); () for continuous labels.
    """

    kind: LabelKind
    n: int
    missing: int
    metrics: Mapping[str, Estimate]
    levels: tuple[float, ...]
    confusion: Confusion

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field, each metric as ``{value, low, high}`` with NaN as None."""
        return {
            "kind": self.kind,
            "n": self.n,
            "missing": self.missing,
            "metrics": {name: estimate.to_dict() for name, estimate in self.metrics.items()},
            "levels": list(self.levels),
            "confusion": [list(row) for row in self.confusion],
        }


def agreement(
    judge: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    kind: LabelKind,
    levels: Sequence[float] | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Agreement:
    """Agreement between a judge's scores and human labels of the same items.

    Args:
        judge: The judge's scores, one per item (NaN: not scored).
        human: The human labels on the scorer's scale, aligned with ``judge`` (NaN: none).
        kind: ``binary``, ``categorical``, ``ordinal`` or ``continuous``.
        levels: For the first three kinds, the label levels on the scorer's scale (e.g.
            ``(0.0, 0.5, 1.0)``), in any order; None for the distinct human labels. Judge
            scores are snapped to the nearest level (a tie to the lower); a human label must
            be a level. Not given for continuous labels.
        confidence: The intervals' coverage, between 0 and 1.
        resamples: Bootstrap resamples of the pairs.
        seed: Seeds the resamples; the same inputs and seed give the same intervals.

    Returns:
        The metrics of ``kind`` with their intervals, the counts and, for levels, the
        confusion matrix. Undefined metrics are NaN; nothing warns.

    Raises:
        ConfigError: Unequal lengths, an unknown kind, bad levels (fewer than two, or not two
            for binary labels), a human label off the levels, or a bad option.
    """
    check_kind(kind)
    check_options(confidence, resamples)
    j_all, h_all = paired_arrays(judge, human)
    present = ~np.isnan(j_all) & ~np.isnan(h_all)
    j, h = j_all[present], h_all[present]
    n, missing = int(j.size), int(j_all.size - j.size)
    if kind == "continuous":
        no_levels(levels)
        metrics = _continuous(j, h, confidence, resamples, seed)
        return Agreement(kind, n, missing, metrics, (), ())
    grid = label_levels(kind, levels, h_all[~np.isnan(h_all)], "human labels")
    human_index = label_indices(h, grid, "human label")
    judge_index = snap(j, grid)
    size = grid.size
    confusion = np.bincount(human_index * size + judge_index, minlength=size * size)
    confusion = confusion.reshape(size, size)
    metrics = _categorical(kind, human_index, judge_index, confusion, confidence, resamples, seed)
    return Agreement(
        kind,
        n,
        missing,
        metrics,
        tuple(float(v) for v in grid),
        tuple(tuple(int(c) for c in row) for row in confusion),
    )


def inter_rater_alpha(
    ratings: npt.ArrayLike,
    *,
    kind: LabelKind,
    levels: Sequence[float] | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Estimate:
    """Krippendorff's alpha of several raters' labels of the same items.

    Args:
        ratings: Raters x items (NaN: that rater did not label that item).
        kind: The labels' kind: its level of measurement is ``nominal`` (binary,
            categorical), ``ordinal`` or ``interval`` (continuous).
        levels: For the first three kinds, the label levels (every rating must be one); None
            for the distinct ratings. Levels nobody used still count. Not given for
            continuous labels.
        confidence: The interval's coverage, between 0 and 1.
        resamples: Bootstrap resamples of the items (whole columns, every rater's label).
        seed: Seeds the resamples.

    Returns:
        Alpha and its interval; NaN when undefined (no item rated twice, or every pairable
        rating the same value).

    Raises:
        ConfigError: ``ratings`` not two-dimensional, an unknown kind, bad levels, a rating off
            the levels, or a bad option.
    """
    check_kind(kind)
    check_options(confidence, resamples)
    r = np.asarray(ratings, dtype=np.float64)
    if r.ndim != 2:
        raise ConfigError(f"ratings must be two-dimensional (raters x items), got shape {r.shape}")
    if np.isinf(r).any():
        raise ConfigError("ratings must be finite numbers or NaN (missing), not infinity")
    items = r.shape[1]
    rng = np.random.default_rng(seed)
    boot: FloatArray = np.full(resamples, math.nan)
    if kind == "continuous":
        no_levels(levels)
        moments = interval_moments(r)
        value = float(alpha_from_moments(moments.sum(axis=0)[None, :])[0])
        if items >= 2 and not math.isnan(value):
            for start, stop in chunks(resamples, items):
                weights = copies(rng, stop - start, items).astype(np.float64)
                boot[start:stop] = alpha_from_moments(weighted_sums(weights, moments))
        return _estimate(value, boot, items, confidence)

    present = ~np.isnan(r)
    grid = label_levels(kind, levels, r[present], "ratings")
    indices: IntArray = np.full(r.shape, -1, dtype=np.int64)
    indices[present] = label_indices(r[present], grid, "rating")
    counts = value_counts(indices, grid.size)
    pairable = np.where((counts.sum(axis=1) >= 2)[:, None], counts, 0)
    metric: Literal["nominal", "ordinal"] = "ordinal" if kind == "ordinal" else "nominal"
    whole = coincidences(counts).sum(axis=0)[None, :]
    value = float(alpha_from_coincidences(whole, pairable.sum(axis=0)[None, :], metric)[0])
    if items >= 2 and not math.isnan(value):
        # Items only matter through their counts per level: resample the distinct patterns.
        patterns, seen = np.unique(counts, axis=0, return_counts=True)
        contributions = coincidences(patterns)
        pattern_pairable = np.where((patterns.sum(axis=1) >= 2)[:, None], patterns, 0)
        share = seen / items
        for start, stop in chunks(resamples, patterns.shape[0] + grid.size**2):
            drawn = rng.multinomial(items, share, size=stop - start)
            boot[start:stop] = alpha_from_coincidences(
                weighted_sums(drawn, contributions), drawn @ pattern_pairable, metric
            )
    return _estimate(value, boot, items, confidence)


def disagreements(
    judge: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    kind: LabelKind,
    levels: Sequence[float] | None = None,
    limit: int = 10,
) -> list[int]:
    """The pairs where the judge and the human differ most, for reading them.

    Args:
        judge: The judge's scores (NaN: not scored).
        human: The human labels, aligned (NaN: none).
        kind: The labels' kind; for all but ``continuous`` judge scores are snapped to the
            nearest level first, as in `agreement`.
        levels: As in `agreement`.
        limit: At most this many indices.

    Returns:
        Indices into ``judge`` of pairs with both values that differ, by absolute difference
        on the scale, largest first, ties by index.

    Raises:
        ConfigError: As `agreement`, or a negative ``limit``.
    """
    check_kind(kind)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ConfigError(f"limit must be a non-negative integer, got {limit!r}")
    j_all, h_all = paired_arrays(judge, human)
    where = np.flatnonzero(~np.isnan(j_all) & ~np.isnan(h_all))
    j, h = j_all[where], h_all[where]
    if kind == "continuous":
        no_levels(levels)
        gap = np.abs(j - h)
    else:
        grid = label_levels(kind, levels, h_all[~np.isnan(h_all)], "human labels")
        gap = np.abs(grid[snap(j, grid)] - grid[label_indices(h, grid, "human label")])
    differ = gap > 0
    where, gap = where[differ], gap[differ]
    order = np.lexsort((where, -gap))
    return [int(i) for i in where[order][:limit]]


# --- The kinds ---------------------------------------------------------------------------


def _categorical(
    kind: LabelKind,
    human: IntArray,
    judge: IntArray,
    confusion: IntArray,
    confidence: float,
    resamples: int,
    seed: int,
) -> dict[str, Estimate]:
    names = _METRICS[kind]
    n, size = int(confusion.sum()), confusion.shape[0]
    # The point estimates are the resample that drew every pair once: the confusion matrix.
    values = {"accuracy": float(accuracy_from_counts(confusion))}
    weights: dict[str, KappaWeights] = {"kappa": "unweighted", "weighted_kappa": "quadratic"}
    for name in names[1:]:
        values[name] = float(kappa_from_counts(confusion, weights[name]))
    boot = {name: np.full(resamples, math.nan) for name in names}
    if n >= 2:
        # A resample of pairs is a multinomial draw of the confusion matrix's cells.
        rng = np.random.default_rng(seed)
        share = confusion.ravel() / n
        for start, stop in chunks(resamples, size * size):
            counts = rng.multinomial(n, share, size=stop - start).reshape(-1, size, size)
            boot["accuracy"][start:stop] = accuracy_from_counts(counts)
            for name in names[1:]:
                boot[name][start:stop] = kappa_from_counts(counts, weights[name])
    return {name: _estimate(values[name], boot[name], n, confidence) for name in names}


def _continuous(
    judge: FloatArray, human: FloatArray, confidence: float, resamples: int, seed: int
) -> dict[str, Estimate]:
    n = judge.size
    pearson = spearman = mae = math.nan
    if n:
        # The resample that drew every pair once; the correlations are NaN where a side is
        # constant (one pair included).
        once = np.ones((1, n), dtype=np.int64)
        pearson, spearman, mae = (float(r[0]) for r in continuous_resamples(judge, human, once))
    boot = np.full((3, resamples), math.nan)
    if n >= 2:
        rng = np.random.default_rng(seed)
        pairs = PairDraws(judge, human)
        for start, stop in chunks(resamples, pairs.width):
            drawn = pairs.draw(rng, stop - start)
            boot[:, start:stop] = continuous_resamples(pairs.judge, pairs.human, drawn)
    values = (pearson, spearman, mae)
    return {
        name: _estimate(value, boot[k], n, confidence)
        for k, (name, value) in enumerate(zip(_METRICS["continuous"], values, strict=True))
    }


def _estimate(value: float, boot: FloatArray, n: int, confidence: float) -> Estimate:
    if math.isnan(value) or n < 2:
        return Estimate(value, math.nan, math.nan)
    low, high = percentile_interval(boot, confidence)
    return Estimate(value, low, high)


def _json(value: float) -> float | None:
    return None if math.isnan(value) else value
