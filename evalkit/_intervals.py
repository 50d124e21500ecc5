"""The 95% interval of one scorer's mean score, shared by Python and SQL.

The run's report and the store's ``scorer_summary`` view (and the viewer's run page) show the
same interval, so both compute it from the same four figures (n, mean, sample standard
deviation, min and max) with the same formula; ``SQL_MACROS`` is that formula for DuckDB.

- Scores all between 0 and 1 (0/1 scorers, and every prebuilt scorer's scale): Wilson's score
  interval for the proportion ``p = mean`` with Student's t(n - 1) in place of z and the
  effective number of items ``n_eff = max(n, n p (1 - p) / s^2)`` (n for 0/1 scores, where
  ``s^2`` is about ``p (1 - p)``; more for continuous scores, whose spread is smaller). It never
  leaves [0, 1], has width at 5 of 5, and covers at least 0.93 at n = 10 to 300 for 0/1 and
  bounded scores, 0.927 for skewed scores at n = 10 (docs/pages/design/score-intervals.md).
- Other scores: Student's t interval. Scorers declare no range, so there is no scale to keep
  it inside.

Fewer than two scores give no interval.
"""

from __future__ import annotations

import math

from evalkit._tdist import t975


def mean_interval95(
    n: int, mean: float | None, stddev: float | None, low: float | None, high: float | None
) -> tuple[float, float] | None:
    """The 95% interval of a mean of ``n`` scores with sample standard deviation ``stddev``,
    lowest score ``low`` and highest ``high``; None with fewer than two scores."""
    if n < 2 or mean is None or stddev is None or low is None or high is None:
        return None
    t = t975(n - 1)
    if not (low >= 0.0 and high <= 1.0):
        # Divided first, as the store's view does: a spread near the float limit keeps a
        # finite interval where its product with t would overflow.
        half = stddev / math.sqrt(n) * t
        return mean - half, mean + half
    p = min(max(mean, 0.0), 1.0)
    spread = p * (1.0 - p)
    if spread > 0.0 and stddev == 0.0:
        return mean, mean  # every score the same value inside (0, 1): nothing measures spread
    n_eff = float(n) if spread == 0.0 else max(float(n), n * spread / (stddev * stddev))
    a = t * t / n_eff
    centre = (p + a / 2.0) / (1.0 + a)
    half = t / (1.0 + a) * math.sqrt(spread / n_eff + t * t / (4.0 * n_eff * n_eff))
    # At p = 0 (or 1) the end is 0 (or 1) exactly; the formula leaves a rounding crumb.
    low = 0.0 if p == 0.0 else max(centre - half, 0.0)
    high = 1.0 if p == 1.0 else min(centre + half, 1.0)
    return low, high


#: DuckDB macros of the same formula: ``evalkit_ci95_low(n, mean, stddev, min, max)`` and
#: ``evalkit_ci95_high(...)`` (they use the ``evalkit_t975`` macro of the store's views).
SQL_MACROS = """
CREATE OR REPLACE MACRO evalkit_unit_neff(n, p, sd) AS
    CASE WHEN p * (1 - p) <= 0 THEN CAST(n AS DOUBLE)
         WHEN sd = 0 THEN NULL
         ELSE greatest(CAST(n AS DOUBLE), n * p * (1 - p) / (sd * sd)) END;
CREATE OR REPLACE MACRO evalkit_wilson95(n, p, sd, side) AS
    CASE WHEN evalkit_unit_neff(n, p, sd) IS NULL THEN p
         WHEN side < 0 AND p <= 0 THEN 0.0
         WHEN side > 0 AND p >= 1 THEN 1.0
         ELSE least(greatest(
             (p + evalkit_t975(n - 1) ^ 2 / evalkit_unit_neff(n, p, sd) / 2
              + side * evalkit_t975(n - 1) * sqrt(p * (1 - p) / evalkit_unit_neff(n, p, sd)
                  + evalkit_t975(n - 1) ^ 2 / (4 * evalkit_unit_neff(n, p, sd) ^ 2)))
             / (1 + evalkit_t975(n - 1) ^ 2 / evalkit_unit_neff(n, p, sd)),
             0.0), 1.0) END;
CREATE OR REPLACE MACRO evalkit_ci95_low(n, mean, sd, lo, hi) AS
    CASE WHEN n IS NULL OR n < 2 THEN NULL
         WHEN lo >= 0 AND hi <= 1 THEN evalkit_wilson95(n, least(greatest(mean, 0.0), 1.0), sd, -1)
         ELSE mean - sd / sqrt(n) * evalkit_t975(n - 1) END;
CREATE OR REPLACE MACRO evalkit_ci95_high(n, mean, sd, lo, hi) AS
    CASE WHEN n IS NULL OR n < 2 THEN NULL
         WHEN lo >= 0 AND hi <= 1 THEN evalkit_wilson95(n, least(greatest(mean, 0.0), 1.0), sd, 1)
         ELSE mean + sd / sqrt(n) * evalkit_t975(n - 1) END;
"""
