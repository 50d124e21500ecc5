"""How evalkit shows a statistic (a mean, a spread, a difference) in text."""

from __future__ import annotations

#: From this magnitude up a value is shown in exponent form: a mean of 1e307 in fixed
#: decimals is 300 digits long (issue 30).
EXPONENT_FROM = 1e9


def decimal(value: float, digits: int = 3, *, signed: bool = False) -> str:
    """``0.750`` (``+0.750`` when ``signed``); ``6.667e+306`` from 1e9 up, ``nan``, ``inf``."""
    sign = "+" if signed else ""
    kind = "f" if abs(value) < EXPONENT_FROM else "e"
    return f"{value:{sign}.{digits}{kind}}"
