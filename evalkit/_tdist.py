"""Student's t critical value for 95% two-sided intervals, shared by Python and SQL.

The store's ``scorer_summary`` view and the reports must give the same interval, so both use
this table: exact values for 1..30 degrees of freedom and, beyond, the Cornish-Fisher expansion
around z = 1.959964, within 0.001 of the exact quantile.
Written by hand rather than with a library: docs/pages/design/hand-written-pieces.md.
"""

from __future__ import annotations

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
