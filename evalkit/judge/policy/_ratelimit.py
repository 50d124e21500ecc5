"""``RateLimiter``: the request budget of one model at one endpoint.

Three controls, each optional, checked in this order before every HTTP attempt:

1. **Concurrency** — a ``CapacityLimiter`` holding ``max_concurrency`` slots. Its size follows
   AIMD (additive increase, multiplicative decrease, as TCP does): the first 429 among the
   requests sent since the last decrease halves the limit (of the slots actually in use); each
   run of ``limit`` successes adds one slot back, up to ``max_concurrency`` (or, when there is
   none, up to the number in flight when the storm began, and then no limit again).
2. **A server-requested pause** — ``Retry-After`` on a 429, or an ``x-ratelimit-*`` budget
   reported as spent: every request of the model waits until it ends.
3. **rpm / tpm buckets** — token buckets in their GCRA form ("virtual scheduling"): a request
   may start once the bucket's earliest start for it has come, and is charged at the moment it
   actually starts, so in any window of ``w`` seconds at most ``burst + rate * w`` requests
   start — even when the event loop stalls. The burst is a twentieth of a second's worth,
   rounded up (at least one request), so the observed rate stays close to the limit even over
   short windows. The token bucket is charged an estimate before the call and corrected with
   the reported usage after it.

Requests that cannot start at once queue in arrival order. Only the head of the queue sleeps,
once, until the earliest start the buckets give it; on waking it checks the buckets again with
the real time, starts (charging them then), and wakes the next. A slot is thus granted when it
is taken, never reserved ahead: after a stall of the event loop, the requests that fell due
during it start paced, not together. The price is that a late wake-up (asyncio's timer
rounds up to the millisecond, a loaded machine adds more) is lost from the rate when the
bucket has no burst to absorb it; rounding the burst up keeps that to rates of at most 20
requests a second, where it costs about 1-3%. The fast path (a free slot, no pause, budget
available, nobody queued) takes no lock and never yields to the event loop; see
docs/pages/design/gcra-at-the-real-start.md and aimd-on-429.md.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass

import anyio
from anyio import WouldBlock

from evalkit.judge.policy._gcra import Bucket
from evalkit.judge.policy._hints import Headers, budget_pause

_BURST_SECONDS = 0.05
# Output tokens assumed for a call without max_tokens until replies show the real average.
_FIRST_OUTPUT_GUESS = 256


@dataclass(frozen=True, slots=True)
class RateLimiterStats:
    """A snapshot of a `RateLimiter`, cheap enough for a progress bar to poll.

    Attributes:
        name: What the limiter protects, e.g. ``"gpt-4o-mini at api.openai.com"``.
        max_concurrency: The configured concurrency ceiling (None: none).
        concurrency: The current concurrency limit after AIMD back-off (None: no limit).
        in_flight: Requests holding a slot (being sent, or waiting for their budget).
        waiting: Requests waiting right now for a slot, the budget or a pause.
        waits: Requests that had to wait, since the limiter was created.
        wait_seconds: Total time requests spent waiting.
        rate_limited: HTTP 429 responses received.
        retries: Attempts retried (after a 429, a 5xx, a timeout or a dropped connection).
        decreases: Times the concurrency limit was halved.
        paused_for: Seconds left of a server-requested pause (0 when none).
        rpm: Requests per minute allowed (None: no limit).
        tpm: Tokens per minute allowed (None: no limit).
        burst: Requests that may start at once under ``rpm`` (None without ``rpm``).
    """

    name: str
    max_concurrency: int | None
    concurrency: int | None
    in_flight: int
    waiting: int
    waits: int
    wait_seconds: float
    rate_limited: int
    retries: int
    decreases: int
    paused_for: float
    rpm: float | None
    tpm: float | None
    burst: int | None


class _Waiter:
    """A request queued for the rpm/tpm budget or the end of a pause."""

    __slots__ = ("scope", "woken")

    def __init__(self) -> None:
        self.scope: anyio.CancelScope | None = None
        self.woken = False

    def wake(self) -> None:
        """End the waiter's sleep now (or spare it the next one, if it is not asleep)."""
        self.woken = True
        if self.scope is not None:
            self.scope.cancel()


class Permit:
    """One admitted attempt: hand it back to `RateLimiter.release`."""

    __slots__ = ("epoch", "slots", "tokens", "waiting_since")

    def __init__(self, epoch: int, tokens: int) -> None:
        self.epoch = epoch
        self.tokens = tokens
        self.slots: anyio.CapacityLimiter | None = None
        self.waiting_since = 0.0


class RateLimiter:
    """Concurrency (with AIMD back-off), rpm and tpm budgets and server pauses of one model.

    Judges get theirs from [`evalkit.judge.shared_rate_limiter`][evalkit.judge.shared_rate_limiter],
    shared by every judge (and OpenAI target) calling the same model at the same endpoint with the
    same limits. The protocol per HTTP attempt::

        permit = await limiter.acquire(tokens=estimate)
        try:
            response = ...
            limiter.succeeded(permit, headers=response.headers, total_tokens=used)
            # or, on HTTP 429: limiter.rate_limited(permit, headers=error.response.headers)
        finally:
            limiter.release(permit)

    Args:
        max_concurrency: Most requests in flight at once; None for no limit of its own (AIMD
            still imposes one during a 429 storm).
        rpm: Requests per minute; None for no limit.
        tpm: Tokens (input + output) per minute; None for no limit.
        name: Shown in `stats`.
    """

    def __init__(
        self,
        *,
        max_concurrency: int | None = None,
        rpm: float | None = None,
        tpm: float | None = None,
        name: str = "",
    ) -> None:
        self.name = name
        self.max_concurrency = max_concurrency
        self.rpm = rpm
        self.tpm = tpm
        self._limit = max_concurrency
        self._slots = anyio.CapacityLimiter(max_concurrency) if max_concurrency else None
        self._restore: int | None = None
        self._epoch = 0
        self._successes = 0
        self._paused_until = 0.0
        self._queue: deque[_Waiter] = deque()
        self._requests: Bucket | None = None
        self.burst: int | None = None
        if rpm is not None:
            per_second = rpm / 60
            # Rounded up: with a burst of one, each late wake-up of the event loop's timer
            # would be lost from the rate (see the module docstring).
            self.burst = max(1, math.ceil(per_second * _BURST_SECONDS - 1e-9))
            self._requests = Bucket(per_second, (self.burst - 1) / per_second)
        self._tokens = Bucket(tpm / 60, _BURST_SECONDS) if tpm is not None else None
        self._in_flight = self._waiting = self._waits = 0
        self._wait_seconds = 0.0
        self._rate_limited = self._retries = self._decreases = 0
        self._output_tokens = 0
        self._replies = 0

    @property
    def stats(self) -> RateLimiterStats:
        """The current state and counters."""
        return RateLimiterStats(
            name=self.name,
            max_concurrency=self.max_concurrency,
            concurrency=self._limit,
            in_flight=self._in_flight,
            waiting=self._waiting,
            waits=self._waits,
            wait_seconds=self._wait_seconds,
            rate_limited=self._rate_limited,
            retries=self._retries,
            decreases=self._decreases,
            paused_for=max(0.0, self._paused_until - time.monotonic()),
            rpm=self.rpm,
            tpm=self.tpm,
            burst=self.burst,
        )

    @property
    def limits_tokens(self) -> bool:
        """Whether a token estimate matters (``tpm`` is set)."""
        return self._tokens is not None

    @property
    def expected_output_tokens(self) -> int:
        """The mean output tokens of the replies seen so far (a guess before the first)."""
        if not self._replies:
            return _FIRST_OUTPUT_GUESS
        return round(self._output_tokens / self._replies)

    async def acquire(self, tokens: int = 0) -> Permit:
        """Wait for a slot, the end of any pause and the rpm/tpm budget; return the permit.

        Args:
            tokens: The estimated tokens of the request (prompt and output), charged to
                ``tpm`` now and corrected by `succeeded`.
        """
        permit = Permit(self._epoch, tokens)
        slots = self._slots
        if slots is not None:
            try:
                slots.acquire_on_behalf_of_nowait(permit)
            except WouldBlock:
                self._begin_wait(permit)
                try:
                    await slots.acquire_on_behalf_of(permit)
                except BaseException:
                    self._end_wait(permit)
                    raise
            permit.slots = slots
        self._in_flight += 1
        if (self._requests is not None or self._tokens is not None or self._paused_until) and (
            self._queue or not self._start(permit, time.monotonic())
        ):
            try:
                await self._wait_for_budget(permit)
            except BaseException:
                self.release(permit)
                self._end_wait(permit)
                raise
        self._end_wait(permit)
        permit.epoch = self._epoch
        return permit

    def release(self, permit: Permit) -> None:
        """Give the permit's slot back (once, whatever happened to the request)."""
        self._in_flight -= 1
        if permit.slots is not None:
            permit.slots.release_on_behalf_of(permit)
            permit.slots = None

    def succeeded(
        self,
        permit: Permit,
        *,
        headers: Headers | None = None,
        total_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> None:
        """Record a successful response.

        Corrects the token charge with the reported ``total_tokens``, grows the concurrency
        limit (AIMD) and honours ``x-ratelimit-*`` headers (``headers`` as ``httpx`` gives them).
        """
        if self._tokens is not None and total_tokens is not None:
            self._tokens.adjust(total_tokens - permit.tokens)
            if total_tokens < permit.tokens and self._queue:
                self._queue[0].wake()  # the refund may let it start sooner than it planned
            if output_tokens is not None:
                self._output_tokens += output_tokens
                self._replies += 1
        if self._limit is not None and self._slots is not None:
            self._grow()
        if headers is not None:
            pause = budget_pause(headers, permit.tokens)
            if pause:
                self.pause(pause)

    def rate_limited(self, permit: Permit, *, pause: float | None) -> None:
        """Record an HTTP 429: halve the limit once per storm and pause for ``pause`` s."""
        self._rate_limited += 1
        if pause:
            self.pause(pause)
        if permit.epoch != self._epoch:
            return  # sent before the last decrease: part of the storm already answered
        self._epoch += 1
        self._decreases += 1
        in_use = max(1, self._in_flight)
        current = in_use if self._limit is None else min(self._limit, in_use)
        if self.max_concurrency is None and self._restore is None:
            self._restore = max(2, in_use)
        self._set_limit(max(1, current // 2))

    def retried(self) -> None:
        """Count a retried attempt (for `stats`)."""
        self._retries += 1

    def pause(self, seconds: float) -> None:
        """Hold back every request of this limiter for ``seconds`` from now."""
        until = time.monotonic() + seconds
        if until <= self._paused_until:
            return
        self._paused_until = until
        for bucket in (self._requests, self._tokens):
            if bucket is not None:
                bucket.defer(until)

    # -- internals ----------------------------------------------------------------------------

    def _begin_wait(self, permit: Permit) -> None:
        if not permit.waiting_since:
            permit.waiting_since = time.monotonic()
            self._waiting += 1
            self._waits += 1

    def _end_wait(self, permit: Permit) -> None:
        if permit.waiting_since:
            self._waiting -= 1
            self._wait_seconds += time.monotonic() - permit.waiting_since
            permit.waiting_since = 0.0

    def _start(self, permit: Permit, now: float) -> bool:
        """Charge the buckets and return True if ``permit`` may start at ``now``."""
        if now < self._paused_until:
            return False
        requests, tokens = self._requests, self._tokens
        if requests is not None and requests.earliest(now) > now:
            return False
        if tokens is not None and tokens.earliest(now) > now:
            return False
        if requests is not None:
            requests.commit(now, 1)
        if tokens is not None:
            tokens.commit(now, permit.tokens)
        return True

    def _earliest(self, now: float) -> float:
        """When the head of the queue may start, as the buckets and any pause stand now."""
        start = max(now, self._paused_until)
        if self._requests is not None:
            start = max(start, self._requests.earliest(now))
        if self._tokens is not None:
            start = max(start, self._tokens.earliest(now))
        return start

    async def _wait_for_budget(self, permit: Permit) -> None:
        # Queue in arrival order; only the head sleeps, until its computed start, and charges
        # the buckets with the time it really starts (see the module docstring).
        waiter = _Waiter()
        queue = self._queue
        queue.append(waiter)
        self._begin_wait(permit)
        try:
            while True:
                if queue[0] is waiter:
                    now = time.monotonic()
                    if self._start(permit, now):
                        return
                    deadline = anyio.current_time() + (self._earliest(now) - now)
                else:
                    deadline = math.inf  # until the request ahead starts or leaves
                if not waiter.woken:
                    with anyio.CancelScope(deadline=deadline) as waiter.scope:
                        await anyio.sleep_forever()
                    waiter.scope = None
                waiter.woken = False
        finally:
            waiter.scope = None
            if queue[0] is waiter:
                queue.popleft()
                if queue:
                    queue[0].wake()
            else:
                queue.remove(waiter)

    def _set_limit(self, limit: int | None) -> None:
        self._limit = limit
        self._successes = 0
        total: float = limit if limit is not None else math.inf
        if self._slots is None:
            self._slots = anyio.CapacityLimiter(total)
        else:
            self._slots.total_tokens = total

    def _grow(self) -> None:
        ceiling = self.max_concurrency if self.max_concurrency is not None else self._restore
        limit = self._limit
        if limit is None or ceiling is None or limit >= ceiling:
            return
        self._successes += 1
        if self._successes < limit:
            return
        limit += 1
        if limit >= ceiling and self.max_concurrency is None:
            self._restore = None
            self._set_limit(None)
        else:
            self._set_limit(limit)
