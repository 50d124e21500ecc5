"""The drop a comparison can detect: the smallest true drop its test finds with 80% power,
from the run's own number of pairs and their spread, and the pairs a given drop needs.

0/1 differences use the normal approximation to McNemar's test (Connor, 1987) with the run's
share of changed pairs ``s``: a true change ``d`` is found with power
``Phi((d * sqrt(n) - z * sqrt(s')) / sqrt(s' - d**2))``, ``s' = max(s, d)`` (a change of ``d``
moves at least a share ``d`` of the pairs, so a run in which nothing changed is judged as if the
drop were all there is). Other differences use the paired t test's
``(t(confidence) + t(power)) * sd / sqrt(n)``. Design: docs/pages/design/detectable-drop.md;
benchmark ST1 checks the figure against the simulated power of the gate.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from evalkit._tdist import t_critical, z_critical

#: The power the detectable drop is stated at.
POWER = 0.8


def least_changed(confidence: float) -> int:
    """The fewest changed 0/1 pairs whose exact two-sided test can reach ``1 - confidence``
    (all moving one way: ``p = 2 / 2**k``): 6 at 95%."""
    # The gate needs p < 1 - confidence strictly: 2**k > 2 / (1 - confidence).
    return max(1, math.floor(math.log2(2.0 / (1.0 - confidence)) + 1e-12) + 1)


def _binary_power(delta: float, n: int, changed_share: float, confidence: float) -> float:
    """The chance that the exact two-sided test of ``n`` 0/1 pairs finds a true drop ``delta``
    when a share ``max(changed_share, delta)`` of the pairs change: over the number ``k`` of
    changed pairs (binomial), the normal approximation with continuity correction to the chance
    that ``down - up`` reaches the test's critical value ``z * sqrt(k) + 1``, nothing below the
    fewest changed pairs that can reach the level."""
    share = min(max(changed_share, delta), 1.0)
    if delta <= 0.0 or n < 1:
        return 0.0
    z = z_critical(confidence)
    least = least_changed(confidence)
    # The changed pairs' counts that carry any weight: the mean +- 9 standard deviations.
    mean, spread = n * share, math.sqrt(n * share * (1.0 - share))
    ks = np.arange(
        max(least, math.floor(mean - 9 * spread)), min(n, math.ceil(mean + 9 * spread)) + 1
    )
    if ks.size == 0:
        return 0.0
    if share >= 1.0:
        weights = (ks == n).astype(np.float64)
    else:
        log_w = (_lgamma(n + 1) - _lgamma(ks + 1) - _lgamma(n - ks + 1)
                 + ks * math.log(share) + (n - ks) * math.log1p(-share))  # fmt: skip
        weights = np.exp(log_w)
    down = (share + delta) / (2.0 * share)  # a changed pair's chance of being a drop
    if down >= 1.0:
        found = np.ones(ks.size)
    else:
        sd = 2.0 * np.sqrt(ks * down * (1.0 - down))
        found = _phi((ks * (2.0 * down - 1.0) - z * np.sqrt(ks) - 1.0) / sd)
    return float(np.sum(weights * found))


def _lgamma(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    return np.asarray(np.vectorize(math.lgamma, otypes=[np.float64])(x), dtype=np.float64)


def _phi(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return np.asarray(0.5 * (1.0 + erf(x / math.sqrt(2.0))), dtype=np.float64)


def detectable_drop(
    n: int,
    *,
    binary: bool,
    changed_share: float,
    sd: float,
    confidence: float,
    power: float = POWER,
) -> float | None:
    """The smallest true change of the mean the comparison's test finds with ``power``.

    Args:
        n: Paired items.
        binary: Whether the differences are -1, 0 or +1 (0/1 scores).
        changed_share: The share of pairs that changed (0/1 scores).
        sd: The standard deviation of the paired differences (other scores).
        confidence: The comparison's confidence; the test's level is ``1 - confidence``.
        power: The chance of finding the drop.

    Returns:
        The drop in score units; None when no drop can be found at this ``n`` (fewer than
        two pairs; 0/1 scores too few to reach the level even if every pair dropped; other
        scores of which no pair changed, whose spread says nothing).
    """
    if binary:
        # The exact test cannot reach the level below this many changed pairs (2 / 2**k).
        if (
            n < least_changed(confidence)
            or _binary_power(1.0, n, changed_share, confidence) < power
        ):
            return None
        low, high = 0.0, 1.0
        while high - low > 1e-7:
            middle = (low + high) / 2.0
            if _binary_power(middle, n, changed_share, confidence) >= power:
                high = middle
            else:
                low = middle
        return high
    if n < 2 or not sd > 0.0 or not math.isfinite(sd):
        return None
    multiplier = t_critical(confidence, n - 1) + t_critical(2.0 * power - 1.0, n - 1)
    return multiplier * sd / math.sqrt(n)


def pairs_needed(
    drop: float,
    *,
    binary: bool,
    changed_share: float,
    sd: float,
    confidence: float,
    power: float = POWER,
) -> int | None:
    """The paired items a comparison needs to find a true change of ``drop`` with ``power``,
    assuming pairs change as often (0/1 scores) or spread as much (other scores) as measured.

    Returns:
        A count of items; None when the measured spread says nothing (other scores of which no
        pair changed).
    """
    z_level, z_power = z_critical(confidence), NormalDist().inv_cdf(power)
    if binary:
        share = max(changed_share, drop)
        spread = max(share - drop * drop, 0.0)
        n = math.ceil(((z_level * math.sqrt(share) + z_power * math.sqrt(spread)) / drop) ** 2)
        # The normal approximation without continuity correction as a start, then the least n
        # whose power (as detectable_drop computes it) is reached, by doubling and bisection.
        low, high = least_changed(confidence) - 1, max(n, least_changed(confidence))
        while _binary_power(drop, high, changed_share, confidence) < power:
            low, high = high, high * 2
        while high - low > 1:
            middle = (low + high) // 2
            if _binary_power(drop, middle, changed_share, confidence) >= power:
                high = middle
            else:
                low = middle
        return high
    if not sd > 0.0 or not math.isfinite(sd):
        return None

    def reached(n: int) -> bool:
        found = detectable_drop(n, binary=False, changed_share=0.0, sd=sd,
                                confidence=confidence, power=power)  # fmt: skip
        return found is not None and found <= drop * (1.0 + 1e-12)

    # The normal figure as a start (Student's t at n - 1 degrees of freedom needs a few more
    # items), then the least n that reaches the power, by doubling and bisection: a first
    # version stepped up from the start and could overshoot by one.
    low, high = 1, max(2, math.ceil(((z_level + z_power) * sd / drop) ** 2))
    while not reached(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if reached(middle):
            high = middle
        else:
            low = middle
    return high
