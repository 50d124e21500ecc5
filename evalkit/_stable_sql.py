"""SQL aggregates of scores anywhere in the float range: mean and spread that neither overflow
(the sum of ±1e308 scores) nor fail (DuckDB's "STDDEV_SAMP is out of range").

A group whose largest magnitude reaches 2**400 is aggregated over its values scaled by
2**-600 and scaled back: a power of two scales exactly, and after it the values are below
2**424, so no sum over any count nor any square overflows. Other groups are aggregated as
they are, so everyday figures are unchanged. The store's ``scorer_summary`` view does the
same in its own frozen DDL (version 9 in evalkit/store/_schema.py); the run's summary in Python
(evalkit/run/_summary.py) gives the same figures.
"""

from __future__ import annotations

BIG = "2.0 ^ 400"
DOWN = "(2.0 ^ -600)"
UP = "(2.0 ^ 600)"
#: The exponent of the sum of squared deviations of a scaled group (2**-600 squared).
SQUARED_SHIFT = 1200


def is_big(x: str) -> str:
    """True for a group whose values ``x`` (an SQL expression) reach 2**400 in magnitude."""
    return f"max(abs({x})) >= {BIG}"


def mean(x: str, big: str = "", scaled: str = "") -> str:
    """The mean of ``x``. ``big``: the group's test, when other than `is_big` of ``x``;
    ``scaled``: ``x`` scaled by 2**-600, when ``x`` itself may overflow (a difference: scale
    each term)."""
    big = big or is_big(x)
    scaled = scaled or f"({x}) * {DOWN}"
    return f"CASE WHEN {big} THEN avg({scaled}) * {UP} ELSE avg({x}) END"


def stddev(x: str, big: str = "", scaled: str = "") -> str:
    """The sample standard deviation of ``x`` (NULL under two values); as `mean`."""
    big = big or is_big(x)
    scaled = scaled or f"({x}) * {DOWN}"
    plain = f"stddev_samp(CASE WHEN abs({x}) < {BIG} THEN {x} END)"
    return f"CASE WHEN {big} THEN stddev_samp({scaled}) * {UP} ELSE {plain} END"


def scaled_m2(x: str) -> tuple[str, str]:
    """``(m2s, k)``: the sum of squared deviations of ``x`` is ``m2s * 2**k``."""
    big = is_big(x)
    plain = f"var_samp(CASE WHEN abs({x}) < {BIG} THEN {x} END)"
    m2s = (
        f"coalesce(CASE WHEN {big} THEN var_samp(({x}) * {DOWN}) ELSE {plain} END, 0)"
        " * (count(*) - 1)"
    )
    return m2s, f"CASE WHEN {big} THEN {SQUARED_SHIFT} ELSE 0 END"
