"""Paired statistics over per-item score differences: a bootstrap CI and a sign-flip test.

Both work on ``d = candidate - baseline`` for the items scored successfully in both runs, and
both are vectorised with numpy. Two shortcuts keep them fast without changing what they
compute (see docs/pages/design/paired-statistics.md and grouped-draws.md):

- **Grouped draws.** Scores are usually discrete (0/1, a 1-5 scale), so ``d`` takes few distinct
  values. Resampling ``n`` items with replacement then means drawing how many copies of each
  distinct value were picked, a multinomial; flipping signs means drawing how many copies of each
  distinct magnitude kept their sign, a binomial per magnitude. Both give exactly the
  distribution of the item-wise procedure at a cost proportional to the number of distinct
  values instead of ``n``.
- **Chunks.** Otherwise the resamples are drawn as a ``(chunk, n)`` array, chunk rows at a time,
  so memory stays near ``_CHUNK_ELEMENTS`` elements whatever ``resamples * n`` is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from evalkit._ceilings import check_resamples_ceiling
from evalkit.errors import ConfigError

SeedLike: TypeAlias = int | Sequence[int] | np.random.SeedSequence
"""What seeds the random draws: an int, a sequence of ints, or a numpy ``SeedSequence``."""

FloatArray: TypeAlias = npt.NDArray[np.float64]

# Rows of a chunk hold about this many draws (1 MB of int32 indices, 2 MB of gathered values):
# small enough to stay in cache, large enough to amortise the per-call overhead; the fastest
# size measured on the 2-core reference machine.
_CHUNK_ELEMENTS = 1 << 18
# Grouped draws cost ~100 ns per distinct value and resample, item-wise ones ~2-4 ns per item
# and resample (measured), so grouping wins while n is at least 64 times the distinct values.
_GROUPING_RATIO = 64
# Up to 2**16 sign vectors, the sign-flip test enumerates them all and its p-value is exact.
_EXACT_MAX_ITEMS = 16


def _differences(differences: npt.ArrayLike) -> FloatArray:
    values = np.asarray(differences, dtype=np.float64)
    if values.ndim != 1:
        raise ConfigError(f"differences must be one-dimensional, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ConfigError("differences must be finite numbers (no NaN or infinity)")
    return values


def check_confidence(confidence: float) -> None:
    """Raise [`ConfigError`][evalkit.errors.ConfigError] unless ``0 < confidence < 1``."""
    if isinstance(confidence, bool) or not isinstance(confidence, float | int):
        raise ConfigError(f"confidence must be a number, got {confidence!r}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")


def check_resamples(resamples: int) -> None:
    """Raise [`ConfigError`][evalkit.errors.ConfigError] unless ``resamples`` is a positive
    integer."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ConfigError(f"resamples must be a positive integer, got {resamples!r}")
    check_resamples_ceiling("resamples", resamples)


def paired_bootstrap_ci(
    differences: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: SeedLike = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean of paired differences.

    Each resample draws ``n`` items with replacement from the ``n`` differences and takes their
    mean; the interval is the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of
    those means. Resampling whole pairs keeps the pairing, so the variation between items that
    both runs share does not widen the interval.

    Args:
        differences: Per-item ``candidate - baseline`` scores, at least one.
        confidence: The interval's coverage, between 0 and 1.
        resamples: How many bootstrap resamples to draw.
        seed: Seeds the draws; the same data and seed give the same interval.

    Returns:
        ``(low, high)``. When every difference is the same value ``c``, ``(c, c)`` exactly.

    Raises:
        ConfigError: No differences, a non-finite one, or an invalid option.
    """
    check_confidence(confidence)
    check_resamples(resamples)
    d = _differences(differences)
    n = d.size
    if n == 0:
        raise ConfigError("a bootstrap interval needs at least one difference")
    if n >= 2**31:
        raise ConfigError(f"too many differences for one bootstrap ({n:,}); the limit is 2**31")
    values, counts = np.unique(d, return_counts=True)
    if values.size == 1:
        return float(values[0]), float(values[0])
    rng = np.random.default_rng(seed)
    means: FloatArray
    if values.size * _GROUPING_RATIO <= n:
        picks = rng.multinomial(n, counts / n, size=resamples)
        means = (picks @ values) / n
    else:
        means = np.empty(resamples, dtype=np.float64)
        rows = max(1, _CHUNK_ELEMENTS // n)
        for start in range(0, resamples, rows):
            stop = min(start + rows, resamples)
            indices = rng.integers(0, n, size=(stop - start, n), dtype=np.int32)
            means[start:stop] = d[indices].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    # Interpolated quantiles of a mean can stray by an ulp outside the data's range.
    return float(max(low, d.min())), float(min(high, d.max()))


def sign_flip_test(
    differences: npt.ArrayLike,
    *,
    resamples: int = 10_000,
    seed: SeedLike = 0,
) -> float:
    """Two-sided paired sign-flip (randomisation) test of "the mean difference is zero".

    Under the null hypothesis the two runs are exchangeable within each item, so every
    difference is as likely to have the opposite sign. The p-value is the share of sign
    assignments whose absolute sum is at least the observed ``|sum(d)|``. Zero differences do
    not change any sum and are left out. Up to 16 non-zero differences every assignment is
    enumerated and the p-value is exact; beyond, ``resamples`` random assignments give
    ``(1 + hits) / (1 + resamples)``, which is never 0 (Phipson & Smyth, 2010).

    Args:
        differences: Per-item ``candidate - baseline`` scores.
        resamples: How many random sign assignments to draw when not enumerating.
        seed: Seeds the draws.

    Returns:
        The p-value in (0, 1]; 1.0 when there are no non-zero differences.

    Raises:
        ConfigError: A non-finite difference or an invalid option.
    """
    check_resamples(resamples)
    d = _differences(differences)
    magnitudes = np.abs(d[d != 0.0])
    m = magnitudes.size
    if m == 0:
        return 1.0
    observed = abs(float(d.sum()))
    # Sums computed in a different order differ by rounding; count ties as extreme.
    threshold = observed - 1e-9 * float(magnitudes.sum())
    total = float(magnitudes.sum())
    if m <= _EXACT_MAX_ITEMS:
        bits = (np.arange(1 << m)[:, None] >> np.arange(m)) & 1
        sums = 2.0 * (bits @ magnitudes) - total
        return float(np.count_nonzero(np.abs(sums) >= threshold)) / float(1 << m)
    rng = np.random.default_rng(seed)
    values, counts = np.unique(magnitudes, return_counts=True)
    if values.size * _GROUPING_RATIO <= m:
        kept = rng.binomial(counts, 0.5, size=(resamples, values.size))
        sums = 2.0 * (kept @ values) - total
        hits = int(np.count_nonzero(np.abs(sums) >= threshold))
    else:
        hits = 0
        rows = max(1, _CHUNK_ELEMENTS // m)
        packed = (m + 7) // 8
        for start in range(0, resamples, rows):
            size = min(rows, resamples - start)
            # One random bit per item: 8 items per random byte is the cheapest draw.
            random_bytes = rng.integers(0, 256, size=(size, packed), dtype=np.uint8)
            signs = np.unpackbits(random_bytes, axis=1, count=m)
            sums = 2.0 * (signs.astype(np.float64) @ magnitudes) - total
            hits += int(np.count_nonzero(np.abs(sums) >= threshold))
    return (1 + hits) / (1 + resamples)
