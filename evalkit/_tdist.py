"""Student's t critical value for 95% two-sided intervals, shared by Python and SQL.

The store's ``scorer_summary`` view and the reports must give the same interval, so both use
this table: exact values for 1..30 degrees of freedom and, beyond, the Cornish-Fisher expansion
around z = 1.959964, within 0.001 of the exact quantile.
Written by hand rather than with a library: docs/pages/design/hand-written-pieces.md.
"""

from __future__ import annotations

import math
from statistics import NormalDist

Z975 = 1.959964

#: t(0.975, df) for df = 1..30.
T975_TABLE = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (``df >= 1``)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if df <= len(T975_TABLE):
        return T975_TABLE[df - 1]
    z = Z975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def _t_coverage(c: float, df: int) -> float:
    """P(|T| <= c) for Student's t with an integer ``df``: the closed form of Abramowitz and
    Stegun 26.7.3-4 (a finite series in cos(theta), theta = atan(c / sqrt(df)))."""
    theta = math.atan(c / math.sqrt(df))
    cos2, term, total = math.cos(theta) ** 2, 1.0, 1.0
    if df % 2 == 1:
        # 1 + (2/3) cos^2 + (2*4)/(3*5) cos^4 + ... up to cos^(df-3), times sin cos.
        for k in range(1, (df - 1) // 2):
            term *= cos2 * (2 * k) / (2 * k + 1)
            total += term
        series = math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0
        return 2.0 / math.pi * (theta + series)
    # 1 + (1/2) cos^2 + (1*3)/(2*4) cos^4 + ... up to cos^(df-2), times sin.
    for k in range(1, df // 2):
        term *= cos2 * (2 * k - 1) / (2 * k)
        total += term
    return math.sin(theta) * total


def t_critical(confidence: float, df: int) -> float:
    """The ``c`` with P(|T| <= c) = ``confidence`` for Student's t with ``df >= 1`` degrees of
    freedom: the two-sided interval's multiplier at any level, without scipy.

    Up to 1,000 degrees of freedom the closed-form distribution function is inverted by
    bisection (to 1e-12); beyond, the Cornish-Fisher expansion around the normal quantile is
    within 1e-9 of it.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    if df > 1000:
        return (
            z
            + (z**3 + z) / (4 * df)
            + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
        )
    low, high = z, max(2.0 * z, 1.0)
    while _t_coverage(high, df) < confidence:
        high *= 2.0
    while high - low > 1e-12 * high:
        middle = (low + high) / 2.0
        if _t_coverage(middle, df) < confidence:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def z_critical(confidence: float) -> float:
    """The ``z`` with P(|Z| <= z) = ``confidence`` for the standard normal."""
    return NormalDist().inv_cdf((1.0 + confidence) / 2.0)
