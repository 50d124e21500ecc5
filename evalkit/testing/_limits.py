"""The server side of a [`RateLimitPolicy`][evalkit.testing.RateLimitPolicy]: fixed-window
budgets."""

from __future__ import annotations

import math
import time

from evalkit.testing._chat import retry_after_headers
from evalkit.testing._http import Response, error_body
from evalkit.testing._rules import RateLimitPolicy


def format_reset(seconds: float) -> str:
    """A reset duration written like OpenAI's headers: ``"250ms"``, ``"1.5s"``, ``"2m0s"``."""
    if seconds < 1:
        return f"{math.ceil(seconds * 1000)}ms"
    if seconds < 60:
        return f"{round(seconds, 3):g}s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{round(rest, 3):g}s"


class WindowBudget:
    """Counts requests and tokens in the current window of a policy."""

    def __init__(self, policy: RateLimitPolicy) -> None:
        self.policy = policy
        self.start: float | None = None
        self.requests = 0
        self.tokens = 0

    def _roll(self, now: float) -> float:
        """The seconds left in the current window (starting a new one when it is over)."""
        if self.start is None or now >= self.start + self.policy.window:
            self.start = now
            self.requests = self.tokens = 0
        return self.start + self.policy.window - now

    def admit(self) -> Response | None:
        """Count a request; a 429 response when the budget is spent (the request not counted)."""
        left = self._roll(time.monotonic())
        policy = self.policy
        spent = (policy.requests is not None and self.requests >= policy.requests) or (
            policy.tokens is not None and self.tokens >= policy.tokens
        )
        if spent:
            body = error_body("Rate limit reached for requests", "requests", "rate_limit_exceeded")
            response = Response.json(body, 429)
            wait = policy.retry_after if policy.retry_after is not None else left
            response.headers.extend(retry_after_headers(math.ceil(wait * 1000) / 1000))
            self.annotate(response)
            return response
        self.requests += 1
        return None

    def charge(self, tokens: int) -> None:
        """Add a reply's tokens to the window's count."""
        self.tokens += tokens

    def annotate(self, response: Response) -> None:
        """Add the ``x-ratelimit-*`` headers describing the budget now."""
        left = self._roll(time.monotonic())
        policy = self.policy
        reset = format_reset(left)
        if policy.requests is not None:
            remaining = max(0, policy.requests - self.requests)
            response.headers += [
                ("x-ratelimit-limit-requests", str(policy.requests)),
                ("x-ratelimit-remaining-requests", str(remaining)),
                ("x-ratelimit-reset-requests", reset if remaining < policy.requests else "0s"),
            ]
        if policy.tokens is not None:
            remaining = max(0, policy.tokens - self.tokens)
            response.headers += [
                ("x-ratelimit-limit-tokens", str(policy.tokens)),
                ("x-ratelimit-remaining-tokens", str(remaining)),
                ("x-ratelimit-reset-tokens", reset if remaining < policy.tokens else "0s"),
            ]
