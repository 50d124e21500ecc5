"""How evalkit shows a number (a mean, a spread, a difference) in text and on a page.

The one formatter of the text report, the HTML report and the viewer: the same value reads
the same everywhere, a missing one (None, NaN) is a marker rather than ``nan``, and a huge one
is in exponent form. Only the markers differ by medium: a page uses a real minus sign
(U+2212), plain text the ASCII hyphen-minus that a terminal, a log grep or a CSV reader expects
(docs/pages/design/one-implementation-each.md).
"""

from __future__ import annotations

import math

#: From this magnitude up a value is shown in exponent form: a mean of 1e307 in fixed
#: decimals is 300 digits long (issue 30).
EXPONENT_FROM = 1e9

#: The minus sign of a page (U+2212): as wide as a plus, not a hyphen.
MINUS = "\u2212"


def decimal(value: float, digits: int = 3, *, signed: bool = False) -> str:
    """``0.750`` (``+0.750`` when ``signed``); ``6.667e+306`` from 1e9 up, ``nan``, ``inf``."""
    sign = "+" if signed else ""
    kind = "f" if abs(value) < EXPONENT_FROM else "e"
    return f"{value:{sign}.{digits}{kind}}"


def shown_number(
    value: float | None,
    digits: int = 3,
    *,
    signed: bool = False,
    missing: str = "-",
    minus: str = "-",
) -> str:
    """``value`` as `decimal` shows it, ``missing`` for None or NaN, each ``-`` as ``minus``.

    Args:
        value: The number, or None.
        digits: Decimals shown.
        signed: Show ``+`` before a positive value (a difference).
        missing: What None and NaN are shown as.
        minus: The minus sign: ``"-"`` for text, `MINUS` for a page.
    """
    if value is None or math.isnan(value):
        return missing
    text = decimal(value, digits, signed=signed)
    return text if minus == "-" else text.replace("-", minus)
