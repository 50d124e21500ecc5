"""What a provider's response headers say about when to send the next request.

Two families: ``Retry-After`` (and ``retry-after-ms``), sent with 429 and 503 responses, and
OpenAI's ``x-ratelimit-*`` headers, sent with every response: ``remaining-requests`` /
``remaining-tokens`` say how much of the current budget is left and ``reset-requests`` /
``reset-tokens`` when it refills, as durations such as ``"1s"``, ``"6m0s"`` or ``"20ms"``.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from typing import Protocol

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


class Headers(Protocol):
    """Case-insensitive header lookup (``httpx`` headers, or a lower-case-keyed dict)."""

    def get(self, key: str, /) -> str | None: ...


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_duration(text: str | None) -> float | None:
    """Seconds in a reset header: ``"1s"``, ``"6m0s"``, ``"1m30.5s"``, ``"20ms"`` or ``"2.5"``.

    Returns None for anything else (including negative or empty values).
    """
    if text is None:
        return None
    text = text.strip()
    number = _number(text)
    if number is not None:
        return number if number >= 0 else None
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(value + unit for value, unit in parts) != text:
        return None
    return sum(float(value) * _UNIT_SECONDS[unit] for value, unit in parts)


def retry_after(headers: Headers | None) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, else ``retry-after`` (seconds or
    an HTTP date); None when absent, malformed or not positive."""
    if headers is None:
        return None
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None and millis > 0:
        return millis / 1000
    text = headers.get("retry-after")
    if text is None:
        return None
    seconds = _number(text)
    if seconds is None:
        parsed = email.utils.parsedate_tz(text)
        if parsed is None:
            return None
        seconds = email.utils.mktime_tz(parsed) - time.time()
    return seconds if seconds > 0 else None


def budget_pause(headers: Headers | None, tokens: int) -> float | None:
    """Seconds to hold back all requests because the ``x-ratelimit-*`` budget is spent.

    The request budget is spent when ``x-ratelimit-remaining-requests`` is 0; the token budget
    when ``x-ratelimit-remaining-tokens`` is below ``tokens`` (what a similar call needs).
    The pause lasts until the matching ``x-ratelimit-reset-*``. None when nothing is spent.
    """
    if headers is None:
        return None
    pause = None
    remaining = _number(headers.get("x-ratelimit-remaining-requests"))
    if remaining is not None and remaining < 1:
        pause = parse_duration(headers.get("x-ratelimit-reset-requests"))
    remaining = _number(headers.get("x-ratelimit-remaining-tokens"))
    if remaining is not None and remaining < max(tokens, 1):
        reset = parse_duration(headers.get("x-ratelimit-reset-tokens"))
        if reset is not None and (pause is None or reset > pause):
            pause = reset
    return pause if pause else None
