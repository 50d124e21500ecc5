"""Paired statistics over per-item score differences: intervals and a sign-flip test.

All work on ``d = candidate - baseline`` for the items scored successfully in both runs, and
all are vectorised with numpy. [`paired_interval`][evalkit.compare.paired_interval] is the
interval comparisons show: Tango's score interval when every difference is -1, 0 or +1 (0/1
scores), otherwise the wider of the Student t and the studentized bootstrap intervals
(docs/pages/design/paired-intervals.md). The sign-flip test is the exact binomial (McNemar)
test whenever the non-zero differences share one magnitude, at any n
(docs/pages/design/exact-binary-test.md). Two shortcuts keep them fast without changing what they
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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from evalkit._ceilings import MAX_RESAMPLES, check_resamples_ceiling
from evalkit._tdist import t_critical, z_critical
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
# Item draws a sampled sign-flip p-value near the level may take when drawn again: 10**5
# resamples of 10,000 items took 1.2 s at a load average of 4.6.
_REDRAW_BUDGET = 2 * 10**9


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


@dataclass(frozen=True, slots=True)
class SignFlip:
    """A sign-flip test's p-value and how it was found.

    Attributes:
        p_value: The two-sided p-value in (0, 1] (exact tests can give a p-value that
            underflows to 0.0 for thousands of items all moving one way).
        error: The Monte Carlo standard error of ``p_value``, ``sqrt(p (1 - p) / resamples)``,
            when it was sampled; 0.0 when it is exact.
        resamples: The random sign assignments drawn; 0 when exact.
    """

    p_value: float
    error: float
    resamples: int

    @property
    def exact(self) -> bool:
        """True when the p-value was computed exactly (enumerated or binomial)."""
        return self.resamples == 0


def binomial_sign_p_value(down: int, up: int) -> float:
    """The exact two-sided sign test (McNemar's exact test): the probability, when each of
    the ``down + up`` changed pairs moves either way with probability 1/2, of a split at least
    as uneven as ``down`` against ``up``.

    Summed in floating point from the observed count outwards, each binomial term from the
    previous by the ratio ``k / (m - k + 1)``, so it stays exact to rounding at any ``m``
    (tested against ``scipy.stats.binomtest`` to 10,000 changed pairs); no scipy at run time.
    """
    m = down + up
    k = min(down, up)
    if m == 0 or 2 * k == m:
        return 1.0
    # log P(K = k) for K ~ Binomial(m, 1/2), then P(K = j - 1) = P(K = j) * j / (m - j + 1).
    log_top = math.lgamma(m + 1) - math.lgamma(k + 1) - math.lgamma(m - k + 1) - m * math.log(2)
    j = np.arange(k, 0, -1, dtype=np.float64)
    ratios = np.cumprod(j / (m - j + 1.0))
    tail = math.exp(log_top) * (1.0 + float(ratios.sum()))
    return min(1.0, 2.0 * tail)


def sign_flip(
    differences: npt.ArrayLike,
    *,
    resamples: int = 10_000,
    seed: SeedLike = 0,
    level: float | None = None,
) -> SignFlip:
    """The sign-flip test of ``sign_flip_test`` with the Monte
    Carlo error of its p-value.

    With ``level`` (the significance level the p-value is judged at), a sampled p-value within
    three standard errors of ``level`` is drawn again with ten times the resamples, up to
    1,000,000 resamples or 2e9 item draws, so that the verdict does not hang on the seed.
    """
    check_resamples(resamples)
    d = _differences(differences)
    magnitudes = np.abs(d[d != 0.0])
    m = magnitudes.size
    if m == 0:
        return SignFlip(1.0, 0.0, 0)
    if float(magnitudes.min()) == float(magnitudes.max()):
        # One magnitude (0/1 scores, or any two-level change): the sum's sign-flip distribution
        # is a binomial's, so the p-value is the exact sign test at any number of items.
        return SignFlip(
            binomial_sign_p_value(int(np.count_nonzero(d < 0)), m - int(np.count_nonzero(d < 0))),
            0.0,
            0,
        )
    observed = abs(float(d.sum()))
    # Sums computed in a different order differ by rounding; count ties as extreme.
    threshold = observed - 1e-9 * float(magnitudes.sum())
    total = float(magnitudes.sum())
    if m <= _EXACT_MAX_ITEMS:
        bits = (np.arange(1 << m)[:, None] >> np.arange(m)) & 1
        sums = 2.0 * (bits @ magnitudes) - total
        return SignFlip(float(np.count_nonzero(np.abs(sums) >= threshold)) / float(1 << m), 0.0, 0)
    rng = np.random.default_rng(seed)
    values, counts = np.unique(magnitudes, return_counts=True)
    # Drawing again stops at 1,000,000 resamples or 2e9 item draws (about 2.5 s on the 2-core
    # reference machine), whichever comes first, and never below what was asked.
    ceiling = max(resamples, min(MAX_RESAMPLES, _REDRAW_BUDGET // m))
    drawn = hits = 0
    target = resamples
    while True:
        hits += _sign_flip_hits(rng, magnitudes, values, counts, target - drawn, threshold, total)
        drawn = target
        p = (1 + hits) / (1 + drawn)
        error = math.sqrt(p * (1.0 - p) / drawn)
        if level is None or abs(p - level) >= 3.0 * error or drawn >= ceiling:
            return SignFlip(p, error, drawn)
        target = min(drawn * 10, ceiling)


def _sign_flip_hits(
    rng: np.random.Generator,
    magnitudes: FloatArray,
    values: FloatArray,
    counts: npt.NDArray[np.int64],
    resamples: int,
    threshold: float,
    total: float,
) -> int:
    m = magnitudes.size
    if values.size * _GROUPING_RATIO <= m:
        hits = 0
        rows = max(1, _CHUNK_ELEMENTS // values.size)
        for start in range(0, resamples, rows):
            size = min(rows, resamples - start)
            kept = rng.binomial(counts, 0.5, size=(size, values.size))
            sums = 2.0 * (kept @ values) - total
            hits += int(np.count_nonzero(np.abs(sums) >= threshold))
        return hits
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
    return hits


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
    not change any sum and are left out. When every non-zero difference has the same magnitude
    (0/1 scores) that share is a binomial tail, computed exactly at any n: the exact McNemar
    (sign) test. Otherwise, up to 16 non-zero differences every assignment is enumerated and
    the p-value is exact; beyond, ``resamples`` random assignments give
    ``(1 + hits) / (1 + resamples)``, which is never 0 (Phipson & Smyth, 2010).

    Args:
        differences: Per-item ``candidate - baseline`` scores.
        resamples: How many random sign assignments to draw when not exact.
        seed: Seeds the draws.

    Returns:
        The p-value in [0, 1]; 1.0 when there are no non-zero differences.

    Raises:
        ConfigError: A non-finite difference or an invalid option.
    """
    return sign_flip(differences, resamples=resamples, seed=seed).p_value


def tango_interval(down: int, up: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Tango's score interval for the mean of ``n`` paired differences that are each -1, 0 or
    +1: ``down`` of them -1 and ``up`` of them +1 (McNemar's table's discordant cells).

    The interval holds every ``delta`` that the score test of "the mean is ``delta``" does not
    reject at ``1 - confidence``, the nuisance share of -1 set to its maximum likelihood under
    ``delta`` (Tango, 1998, Statistics in Medicine 17:891-908). It stays within [-1, 1], has
    width even when no pair changed, and covered at least 0.93 in the coverage benchmark at
    every n from 10 (docs/pages/design/paired-intervals.md).
    """
    if n < 1 or down < 0 or up < 0 or down + up > n:
        raise ConfigError(f"a paired 0/1 table needs 0 <= down + up <= n, got {down}, {up}, {n}")
    z = z_critical(confidence)

    def statistic(delta: float) -> float:
        # Tango's score statistic at delta; decreasing in delta.
        b = -down - up + (2 * n - up + down) * delta
        c = -down * delta * (1.0 - delta)
        p_down = (math.sqrt(max(b * b - 8.0 * n * c, 0.0)) - b) / (4.0 * n)
        variance = n * (2.0 * p_down + delta * (1.0 - delta))
        if variance <= 0.0:
            return math.copysign(math.inf, up - down - n * delta)
        return (up - down - n * delta) / math.sqrt(variance)

    def root(target: float, low: float, high: float) -> float:
        # statistic(low) >= target >= statistic(high): bisection to the float resolution.
        for _ in range(200):
            middle = (low + high) / 2.0
            if middle in (low, high):
                break
            if statistic(middle) > target:
                low = middle
            else:
                high = middle
        return (low + high) / 2.0

    estimate = (up - down) / n
    lower = -1.0 if up - down == -n or statistic(-1.0) <= z else root(z, -1.0, estimate)
    upper = 1.0 if up - down == n or statistic(1.0) >= -z else root(-z, estimate, 1.0)
    return lower, upper


def paired_interval(
    differences: npt.ArrayLike,
    *,
    binary: bool = False,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: SeedLike = 0,
) -> tuple[float, float]:
    """The confidence interval of the mean of paired differences that comparisons show.

    - ``binary=True`` (both runs' scores are 0 or 1, so each difference is -1, 0 or +1):
      Tango's score interval. It needs no
      draws, stays within [-1, 1] and has width even when no pair changed.
    - Otherwise: the wider of the Student t interval and the studentized (bootstrap-t)
      interval, which resamples whole pairs like
      [`paired_bootstrap_ci`][evalkit.compare.paired_bootstrap_ci] and takes the quantiles of
      each resample's t statistic. The t interval alone under-covers skewed scores at small n,
      the bootstrap-t alone heavy-tailed ones; the wider of the two covered at least 0.93 in
      the coverage benchmark (docs/pages/design/paired-intervals.md). Differences that are all
      the same value ``c`` give ``(c, c)``: nothing measures their spread.

    Args:
        differences: Per-item ``candidate - baseline`` scores, at least one.
        binary: Whether the scores are 0/1 (every difference -1, 0 or +1).
        confidence: The interval's coverage, between 0 and 1.
        resamples: How many bootstrap resamples to draw (not binary).
        seed: Seeds the draws; the same data and seed give the same interval.

    Returns:
        ``(low, high)``.

    Raises:
        ConfigError: No differences, a non-finite one, a binary difference other than -1, 0 or
            +1, or an invalid option.
    """
    check_confidence(confidence)
    check_resamples(resamples)
    d = _differences(differences)
    n = d.size
    if n == 0:
        raise ConfigError("a paired interval needs at least one difference")
    if binary:
        if not np.all((d == 0.0) | (d == 1.0) | (d == -1.0)):
            raise ConfigError("differences of 0/1 scores must each be -1, 0 or +1")
        down, up = int(np.count_nonzero(d < 0)), int(np.count_nonzero(d > 0))
        return tango_interval(down, up, n, confidence=confidence)
    if n >= 2**31:
        raise ConfigError(f"too many differences for one bootstrap ({n:,}); the limit is 2**31")
    values, counts = np.unique(d, return_counts=True)
    if values.size == 1:
        return float(values[0]), float(values[0])
    mean = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(n)
    t = t_critical(confidence, n - 1)
    low, high = mean - t * se, mean + t * se
    statistics = _bootstrap_t(d, values, counts, mean, resamples, np.random.default_rng(seed))
    # Resamples of a single repeated value have no spread and no t; below half usable the
    # bootstrap says nothing the t interval does not.
    if statistics.size * 2 >= resamples:
        alpha = 1.0 - confidence
        q_low, q_high = np.quantile(statistics, [alpha / 2, 1 - alpha / 2])
        low, high = min(low, mean - float(q_high) * se), max(high, mean - float(q_low) * se)
    return low, high


def _bootstrap_t(
    d: FloatArray,
    values: FloatArray,
    counts: npt.NDArray[np.int64],
    mean: float,
    resamples: int,
    rng: np.random.Generator,
) -> FloatArray:
    """Each resample's ``(mean* - mean) / se*``, leaving out resamples with no spread."""
    n = d.size
    # Centred first, so the resamples' variances do not lose digits to a large common mean.
    centred_values = values - mean
    centred = d - mean
    means = np.empty(resamples, dtype=np.float64)
    squares = np.empty(resamples, dtype=np.float64)
    if values.size * _GROUPING_RATIO <= n:
        rows = max(1, _CHUNK_ELEMENTS // values.size)
        for start in range(0, resamples, rows):
            stop = min(start + rows, resamples)
            picks = rng.multinomial(n, counts / n, size=stop - start)
            means[start:stop] = (picks @ centred_values) / n
            squares[start:stop] = (picks @ (centred_values * centred_values)) / n
    else:
        rows = max(1, _CHUNK_ELEMENTS // n)
        for start in range(0, resamples, rows):
            stop = min(start + rows, resamples)
            drawn = centred[rng.integers(0, n, size=(stop - start, n), dtype=np.int32)]
            means[start:stop] = drawn.mean(axis=1)
            squares[start:stop] = (drawn * drawn).mean(axis=1)
    variances = (squares - means * means) * (n / (n - 1))
    usable = variances > 1e-12 * float(np.mean(centred * centred))
    return means[usable] / np.sqrt(variances[usable] / n)
