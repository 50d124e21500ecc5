"""The running event loop's limiters and circuit breakers: one per key, whoever asks.

Like the shared clients (``transport/_clients.py``), everything here is scoped to the running
event loop (a `PerLoop` value, ``judge/_per_loop.py``): an ``anyio.CapacityLimiter`` belongs
to the loop it was created in. Within a loop there is one limiter (and one `RateLimiter`) per
key — judges and the OpenAI target alike, so a model's budget is shared by everything
calling it — and one breaker state per auth, quota and endpoint key (see
docs/pages/design/per-event-loop-clients.md).

A sharded run's workers each build their own limiters; the share of the budget a worker gets
is handed in by the caller (`use_rate_share`, a context variable scoped to the block),
not held in a process-wide global (docs/pages/design/judge-asks-only.md).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import anyio

from evalkit.errors import ConfigError
from evalkit.judge._per_loop import PerLoop
from evalkit.judge.policy._breaker import CircuitBreaker, Reach, Trip
from evalkit.judge.policy._ratelimit import RateLimiter, RateLimiterStats


class _LoopState:
    __slots__ = ("limiters", "rate_limiters", "reach", "trips")

    def __init__(self) -> None:
        self.trips: dict[Hashable, Trip] = {}
        self.reach: dict[Hashable, Reach] = {}
        self.limiters: dict[Hashable, anyio.CapacityLimiter] = {}
        self.rate_limiters: dict[tuple[Hashable, int], RateLimiter] = {}


_STATE = PerLoop("evalkit_limiter_state", _LoopState)
#: Processes sharing every judge's budget (see :func:`use_rate_share`).
_SHARE: ContextVar[int] = ContextVar("evalkit_rate_share", default=1)


@contextmanager
def use_rate_share(workers: int) -> Iterator[None]:
    """Give the rate limiters created inside the block ``1/workers`` of every limit.

    A sharded run's workers each build their own limiters; dividing ``rpm``, ``tpm`` and
    ``max_concurrency`` (rounded up) by the number of workers keeps their sum within the
    configured budget instead of multiplying it. The share is a context variable: it applies
    to the event loop run inside the block (``anyio.run`` copies the context) and ends with it.

    Args:
        workers: Processes sharing each budget (1: the whole budget).

    Raises:
        ConfigError: ``workers`` is less than 1.
    """
    if workers < 1:
        raise ConfigError(f"workers must be at least 1, got {workers}")
    token = _SHARE.set(workers)
    try:
        yield
    finally:
        _SHARE.reset(token)


def shared_limiter(key: Hashable, capacity: int) -> anyio.CapacityLimiter:
    """The running event loop's ``CapacityLimiter`` for ``key``, created with ``capacity``.

    Every caller passing an equal ``key`` gets the same limiter; include the capacity in the
    key when callers may ask for different ones (as ``Judge.limiter_key`` does).
    """
    limiters = _STATE.get().limiters
    limiter = limiters.get(key)
    if limiter is None:
        limiter = limiters[key] = anyio.CapacityLimiter(capacity)
    return limiter


def shared_rate_limiter(
    key: Hashable,
    *,
    max_concurrency: int | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
    name: str = "",
) -> RateLimiter:
    """The running event loop's `RateLimiter` for ``key``.

    Created at the first call with the given limits; every caller passing an equal ``key``
    gets the same one, so include the limits in the key (as ``Judge.limiter_key`` does). An
    OpenAI target calling the same model as a judge shares its budget by using the judge's
    key: ``("chat", (base_url, api_key_env), model, max_concurrency, rpm, tpm)``.

    Args:
        key: What the callers sharing the limiter have in common.
        max_concurrency: Most requests in flight (None: none, except AIMD during 429 storms).
        rpm: Requests per minute (None: no limit).
        tpm: Tokens per minute (None: no limit).
        name: How [`rate_limiter_stats`][evalkit.judge.rate_limiter_stats] names it, e.g.
            ``"gpt-4o-mini at api.openai.com"``.

    In a worker of a sharded run of ``N`` workers, the limiter gets ``1/N`` of each limit.
    """
    share = _SHARE.get()
    limiters = _STATE.get().rate_limiters
    # Keyed by the share too: a limiter made for a smaller share is a different budget.
    limiter = limiters.get((key, share))
    if limiter is None:
        limiter = limiters[key, share] = RateLimiter(
            max_concurrency=-(-max_concurrency // share) if max_concurrency else max_concurrency,
            rpm=rpm / share if rpm else rpm,
            tpm=tpm / share if tpm else tpm,
            name=name,
        )
    return limiter


def shared_breaker(
    *, auth_key: Hashable, quota_key: Hashable, reach_key: Hashable = None
) -> CircuitBreaker:
    """The running event loop's circuit breaker for a caller's endpoint key and model key.

    Args:
        auth_key: What shares an API key at an endpoint (a 401/403 stops all of it).
        quota_key: What shares a quota (a 429 ``insufficient_quota`` stops all of it).
        reach_key: What shares an endpoint (its first connections all failing stop all of
            it); None for no such breaker.
    """
    state = _STATE.get()
    reach = None
    if reach_key is not None:
        reach = state.reach.get(reach_key)
        if reach is None:
            reach = state.reach[reach_key] = Reach()
    return CircuitBreaker(
        state.trips, auth_key=auth_key, quota_key=quota_key, reach_key=reach_key, reach=reach
    )


def rate_limiter_stats() -> tuple[RateLimiterStats, ...]:
    """A snapshot of every rate limiter of the running event loop (for a progress bar):
    current concurrency, in flight, waits, 429s and retries per model.

    Outside an event loop (a sharded run's driver thread, whose judges run in the workers)
    there is none: the snapshot is empty.
    """
    state = _STATE.existing()
    if state is None:
        return ()
    return tuple(limiter.stats for limiter in state.rate_limiters.values())
