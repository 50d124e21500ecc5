"""Circuit breakers: after an authentication or quota error, or at an endpoint that is down,
a judge stops calling at once.

Retrying cannot fix a wrong key (HTTP 401), a refused permission (403) or a spent quota (429
``insufficient_quota``), and every further call would fail the same way — a nightly run over
50,000 items would send 50,000 doomed requests, each recorded as its own failure after its own
round trip. So the first such error *trips* a breaker, and every later call it covers fails
immediately, without a request, as a recorded failed execution whose ``JudgeError`` has code
``"auth"`` or ``"quota"`` and says that calls were stopped after the first error.

Breakers live in the running event loop, next to the clients and rate limiters (a new run in
a new loop tries again: the key may have been fixed meanwhile). Keys follow the limiter's:

- ``auth`` (401, 403): the endpoint and the API key (``base_url`` and ``api_key_env``, or the
  prepared client) — a key refused for one model is refused for all of them;
- ``quota`` (429 ``insufficient_quota``): the endpoint and the model, like a rate limiter —
  some providers (Azure deployments) keep quotas per model; where the quota is the account's,
  each other model spends one call to find out;
- ``unreachable``: the endpoint (``base_url``, or the prepared client). When its first
  `UNREACHABLE_AFTER` connection attempts all fail to connect (connection refused,
  unknown host; a slow connect does not count) and none has ever reached it, the endpoint
  is down: the breaker opens, so 10,000 items do not each wait out their retries. Once any
  attempt has reached the endpoint (any HTTP answer), connection failures are retried as
  usual: a server that answered before is more likely restarting than misconfigured.

See docs/pages/design/circuit-breakers.md.
Written by hand rather than with a library: docs/pages/design/hand-written-pieces.md.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal

from evalkit.errors import JudgeError

StopKind = Literal["auth", "quota", "unreachable"]

#: Connection attempts that must all fail, with none ever reaching the endpoint, before the
#: endpoint's calls are stopped.
UNREACHABLE_AFTER = 5


@dataclass(frozen=True, slots=True)
class Trip:
    """Why a breaker opened: the kind and the first error's message."""

    kind: StopKind
    message: str


class Reach:
    """Whether an endpoint was ever reached in the running loop, and how many connection
    attempts failed before that (shared by every caller of the endpoint)."""

    __slots__ = ("failures", "first_error", "reached")

    def __init__(self) -> None:
        self.reached = False
        self.failures = 0
        self.first_error = ""


class CircuitBreaker:
    """One judge's view of the running loop's breakers (its auth, quota and endpoint keys).

    Build it with `shared_breaker` (``_registry.py``).
    """

    __slots__ = ("_auth_key", "_quota_key", "_reach", "_reach_key", "_trips")

    def __init__(
        self,
        trips: dict[Hashable, Trip],
        *,
        auth_key: Hashable,
        quota_key: Hashable,
        reach_key: Hashable = None,
        reach: Reach | None = None,
    ) -> None:
        self._trips = trips
        self._auth_key = auth_key
        self._quota_key = quota_key
        self._reach_key = reach_key
        self._reach = reach

    @property
    def trip(self) -> Trip | None:
        """Why calls are stopped, or None while they are allowed."""
        trips = self._trips
        if not trips:
            return None
        found = trips.get(self._auth_key) or trips.get(self._quota_key)
        if found is None and self._reach is not None:
            found = trips.get(self._reach_key)
        return found

    def reached(self) -> None:
        """An attempt got an HTTP answer: the endpoint is up, connection failures are
        transient from now on."""
        reach = self._reach
        if reach is not None and not reach.reached:
            reach.reached = True

    def connect_failed(self, message: str) -> None:
        """An attempt could not connect (``message`` says why); the
        `UNREACHABLE_AFTER`-th such failure with no attempt ever reaching the endpoint
        opens the breaker."""
        reach = self._reach
        if reach is None or reach.reached:
            return
        reach.failures += 1
        if reach.failures == 1:
            reach.first_error = message
        if reach.failures >= UNREACHABLE_AFTER:
            self._trips.setdefault(self._reach_key, Trip("unreachable", reach.first_error))

    def check(self, label: str) -> None:
        """Raise the stopped-call error when the breaker is open.

        Raises:
            JudgeError: Calls are stopped (code ``"auth"`` or ``"quota"``); no request is sent.
        """
        trip = self.trip
        if trip is not None:
            raise stopped_error(trip, label)

    def observe(self, error: BaseException) -> None:
        """Open the breaker when ``error`` (or what it was raised from) is an authentication
        or quota error; other errors leave it as it is."""
        kind = stop_kind(error)
        if kind is None:
            return
        key = self._auth_key if kind == "auth" else self._quota_key
        # The first error is the one to show: later ones are the same refusal again.
        self._trips.setdefault(key, Trip(kind, str(error)))


def stopped_error(trip: Trip, label: str) -> JudgeError:
    """The error of a call the breaker stopped."""
    if trip.kind == "unreachable":
        return JudgeError(
            f"{label}: not sent: circuit open: endpoint unreachable (its first "
            f"{UNREACHABLE_AFTER} connection attempts all failed; check base_url and that the "
            f"server is running). First error: {trip.message}",
            code="unreachable",
        )
    what = (
        "the endpoint refused the API key"
        if trip.kind == "auth"
        else "the endpoint reported the quota spent"
    )
    scope = "with this key" if trip.kind == "auth" else "to this model"
    return JudgeError(
        f"{label}: not sent: {what}, so calls {scope} were stopped after the first such "
        f"error (fix it and run again). First error: {trip.message}",
        code=trip.kind,
    )


def stop_kind(error: BaseException) -> StopKind | None:
    """``"auth"`` for an HTTP 401/403, ``"quota"`` for a 429 ``insufficient_quota``, found in
    ``error`` or its chain of causes; else None."""
    openai = sys.modules.get("openai")
    if openai is None:  # never imported (it loads with the first client): no openai error
        return None
    seen: BaseException | None = error
    depth = 0
    while seen is not None and depth < 8:
        if isinstance(seen, openai.APIStatusError):
            if seen.status_code in (401, 403):
                return "auth"
            if seen.status_code == 429 and getattr(seen, "code", None) == "insufficient_quota":
                return "quota"
            return None
        if isinstance(seen, JudgeError) and seen.code in ("auth", "quota", "unreachable"):
            return None  # a stopped call: the breaker is already open
        seen = seen.__cause__
        depth += 1
    return None
