"""How judges call a model: retries, rate limits and circuit breakers (the call policy).

- ``_policy.py``: a judge's call policy as a value (`CallPolicy`, ``Judge.policy``);
- ``_call.py``: one chat completion under a policy (`chat_completion`): every attempt
  admitted by the model's rate limiter, transient failures retried, the breaker consulted,
  the time spent queued and sending added up (`CallTiming`);
- ``_ratelimit.py`` (with ``_gcra.py``): a model's budget (`RateLimiter`): concurrency
  with AIMD back-off, rpm/tpm buckets and server pauses;
- ``_hints.py``: what response headers say about when to send the next request;
- ``_breaker.py``: stopping calls after an auth or quota error or at an unreachable endpoint;
- ``_registry.py``: the running loop's limiters and breakers, one per key, and the share of
  each budget a sharded run's worker gets (`use_rate_share`).

Sending is the transport's (``evalkit.judge.transport``); this package decides when to send.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.judge.policy._policy import CallPolicy as CallPolicy
    from evalkit.judge.policy._ratelimit import RateLimiter as RateLimiter
    from evalkit.judge.policy._ratelimit import RateLimiterStats as RateLimiterStats
    from evalkit.judge.policy._registry import rate_limiter_stats as rate_limiter_stats
    from evalkit.judge.policy._registry import shared_rate_limiter as shared_rate_limiter

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())
