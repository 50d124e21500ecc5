"""One chat completion under the caller's call policy: retries, rate limiter, breaker.

A shared client (one evalkit built from a base URL and a key) sends through the direct
``aiohttp`` path of ``transport/_http.py``: the same URL, headers and body, with the URL and headers
computed once instead of per call. Any other client sends through its documented low-level
``client.post("/chat/completions", cast_to=httpx2.Response, ...)``, which keeps its auth,
timeouts and error classes but skips building a pydantic ``ChatCompletion``. Both paths raise
the ``openai`` package's exceptions and return the raw reply: a judge reads four fields, and
the headers carry ``x-ratelimit-*``. Errors are translated once, by ``transport/_errors.py``.
Why two paths: docs/pages/design/direct-aiohttp-path.md.

Retries are made here, not by the client (``max_retries=0`` per request), so that every attempt
goes through the model's `RateLimiter` and every 429 reaches it: the
client's own retries would resend outside the rpm/tpm budget and hide the storm from AIMD.
The back-off is the client's: ``Retry-After`` when the server sends one (up to 2 minutes),
else 0.5 s doubling up to 8 s with 25% jitter; 429s wait 1 s doubling up to 60 s instead.
A ``Retry-After`` wait gets up to 10% added (never less than asked), so the calls one storm
refused do not all come back in the same millisecond. See
docs/pages/design/evalkit-retries.md.

Each attempt is bounded as a whole by ``timeout`` (``anyio.move_on_after``), not only by the
transport's per-read timeout: a server that trickles a byte now and then, or a connection pool
that never frees a slot, still ends the attempt on time. A call therefore lasts at most
``(max_retries + 1) * timeout`` plus the back-off between attempts (and the 429 waits).
A `CallTiming` passed in adds up where the time went: waiting for the limiter and the
back-off (``queue_s``, evalkit's own queue), and the HTTP attempts (``request_s``); see
docs/pages/design/judge-time-apart-from-the-queue.md.

Every HTTP request is one attempt a caller can record: ``on_retry`` hears of each request that
failed and was retried (its error, as the call would have raised it, and its own time), so a
judge stores one attempt per request with its own outcome, never one attempt spanning several
requests (and their timeouts). ``body`` may be a function, called each time a request is about
to be sent (after the limiter admitted it): a call that queued while another learned what the
endpoint takes sends what works (docs/pages/design/format-refusals.md).

An authentication or quota error trips the judge's circuit breaker (``policy/_breaker.py``): calls
waiting in the limiter or between retries then stop without sending anything. So do the first
few attempts at an endpoint all failing to connect: each attempt tells the breaker whether it
reached the endpoint (any HTTP answer) or could not connect at all.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import openai
from openai import AsyncOpenAI

from evalkit._masking import mask_secrets
from evalkit.errors import JudgeError
from evalkit.judge.policy._breaker import CircuitBreaker
from evalkit.judge.policy._hints import budget_pause, retry_after
from evalkit.judge.policy._ratelimit import Permit, RateLimiter
from evalkit.judge.transport._body import DEFAULT_MAX_REPLY_BYTES, ReplyTooLarge, read_capped
from evalkit.judge.transport._clients import chat_transport
from evalkit.judge.transport._errors import failed_to_connect, request_of, translate_error
from evalkit.judge.transport._http import RawReply
from evalkit.judge.transport._refusals import context_overflow, refused_field
from evalkit.judge.transport._reply import Reply, read_reply

# Asks the ``openai`` client to return the response with its body unread (what its
# ``with_streaming_response`` wrappers send); a reply's body is then read up to the cap.
_RAW_RESPONSE = "X-Stainless-Raw-Response"
_MAX_RETRY_AFTER = 120.0
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_RETRY_AFTER_JITTER = 0.1


@dataclass(slots=True)
class CallTiming:
    """Seconds one call spent in evalkit's own queue (the limiter's admission and the back-off
    between retries: ``queue_s``) and in HTTP requests (``request_s``), added up by
    `chat_completion`."""

    queue_s: float = 0.0
    request_s: float = 0.0


#: A request that failed and is retried: its error and its own time (see :func:`chat_completion`).
RetryHook = Callable[[JudgeError, CallTiming], None]
#: What to send: a body, or a function giving the body when a request is about to be sent.
Body = dict[str, Any] | Callable[[], dict[str, Any]]


async def chat_completion(
    client: AsyncOpenAI,
    body: Body,
    *,
    timeout: float,
    max_retries: int,
    label: str,
    limiter: RateLimiter | None = None,
    tokens: int = 0,
    rate_limit_retries: int = 0,
    breaker: CircuitBreaker | None = None,
    timing: CallTiming | None = None,
    on_retry: RetryHook | None = None,
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
) -> Reply:
    """POST ``body`` to ``/chat/completions`` and read the reply, retrying what is transient.

    Args:
        client: The client to send with.
        body: The request body, or a function returning it, called once per request after
            the limiter admitted it (so a request reflects what was learned while it queued).
        timeout: Seconds allowed to each HTTP attempt.
        max_retries: Retries after a 5xx, 408, 409, timeout or dropped connection.
        label: Names the caller in error messages (e.g. ``"judge 'gpt-4o' at ..."``).
        limiter: The model's limiter; every attempt is admitted by it and reports to it.
        tokens: The attempt's estimated tokens, charged to the limiter's ``tpm``.
        rate_limit_retries: Retries after an HTTP 429 (counted apart from ``max_retries``);
            a 429 saying the quota is exhausted (``insufficient_quota``) is never retried.
        breaker: The caller's circuit breaker: checked before each attempt is sent, and
            opened by an authentication or quota error.
        timing: Where the time spent waiting and sending is added up, when given. With
            ``on_retry``, it holds the last request's time only (each retried request's time
            went to ``on_retry``).
        on_retry: Called for each request that failed and is retried, with its error (as
            the call would raise it, were it not retried) and its own time (the wait for the
            limiter before it, and its HTTP request; the back-off after it counts toward the
            next request's wait). Every HTTP request is then one recorded attempt.
        max_reply_bytes: The most bytes of a reply's body read (as it arrives); a larger
            2xx reply fails at once, not retried (``"reply_too_large"``).

    Raises:
        JudgeError: The call failed (``code`` is the HTTP status, ``"timeout"``,
            ``"connection"``, ``"bad_response"`` or ``"reply_too_large"``), chained from the
            ``openai`` error (or `ReplyTooLarge`); or the
            breaker is open (``"auth"``, ``"quota"``) and nothing was sent.
    """
    options: Any = {"timeout": timeout, "max_retries": 0}
    if timing is None:
        timing = CallTiming()
    transport = chat_transport(client)
    failures = limited = 0
    error: openai.OpenAIError
    hint: float | None
    while True:
        if breaker is not None:
            breaker.check(label)
        queued = time.perf_counter()
        permit = None if limiter is None else await limiter.acquire(tokens)
        sent = time.perf_counter()
        timing.queue_s += sent - queued
        try:
            if breaker is not None:
                breaker.check(label)  # it may have opened while this call queued
            payload = body() if callable(body) else body
            with anyio.move_on_after(timeout) as deadline:
                if transport is not None:
                    response = await transport.post(
                        payload, timeout=timeout, max_bytes=max_reply_bytes
                    )
                else:
                    response = await _official_post(client, payload, options, max_reply_bytes)
            if deadline.cancelled_caught:
                raise openai.APITimeoutError(request=request_of(client))
        except openai.APIStatusError as exc:
            if breaker is not None:
                breaker.reached()
            error = exc
            hint = retry_after(exc.response.headers)
            if exc.status_code == 429:
                # Without Retry-After, a spent x-ratelimit budget still says when to come back.
                hint = hint if hint is not None else budget_pause(exc.response.headers, tokens)
                if limiter is not None and permit is not None:
                    limiter.rate_limited(permit, pause=hint)
        except openai.APIConnectionError as exc:  # timeouts included
            error, hint = exc, None
            if breaker is not None and failed_to_connect(exc):
                breaker.connect_failed(mask_secrets(str(exc.__cause__ or exc), [client.api_key]))
        except ReplyTooLarge as exc:
            # Not retried: the same request gets the same runaway reply (or the same proxy
            # page) again, each costing up to the cap to read and its tokens to pay for.
            if breaker is not None:
                breaker.reached()
            message = mask_secrets(f"{label}: {exc}", [client.api_key])
            raise JudgeError(message, code="reply_too_large") from exc
        except JudgeError:  # the breaker opened while this call queued
            raise
        except Exception as exc:  # other openai errors, or the transport's own (a bad URL)
            message = mask_secrets(f"{label}: {type(exc).__name__}: {exc}", [client.api_key])
            raise JudgeError(message) from exc
        else:
            if breaker is not None:
                breaker.reached()
            reply = read_reply(response, label)
            if limiter is not None and permit is not None:
                _report(limiter, permit, response, reply)
            return reply
        finally:
            timing.request_s += time.perf_counter() - sent
            if limiter is not None and permit is not None:
                limiter.release(permit)
        if _is_rate_limit(error):
            if limited >= rate_limit_retries or _quota_exhausted(error):
                raise _give_up(error, label, timeout, failures, breaker, client.api_key)
            limited += 1
            wait = _backoff(limited, hint, first=1.0, cap=60.0)
        else:
            if failures >= max_retries or not _retryable(error):
                raise _give_up(error, label, timeout, failures, breaker, client.api_key)
            failures += 1
            wait = _backoff(failures, hint, first=0.5, cap=8.0)
        if wait is None:
            raise _give_up(error, label, timeout, failures, breaker, client.api_key)
        if on_retry is not None:
            retries = failures - 1 if not _is_rate_limit(error) else failures
            failed = translate_error(error, label, timeout, retries, known=[client.api_key])
            on_retry(failed, CallTiming(timing.queue_s, timing.request_s))
            timing.queue_s = timing.request_s = 0.0
        if limiter is not None:
            limiter.retried()
        slept = time.perf_counter()
        await anyio.sleep(wait)
        timing.queue_s += time.perf_counter() - slept


async def _official_post(
    client: AsyncOpenAI, payload: dict[str, Any], options: Any, max_bytes: int
) -> RawReply:
    """``client.post`` with the body left unread (the header the client's own
    ``with_streaming_response`` sets), then read up to ``max_bytes`` as it arrives.

    Raises:
        ReplyTooLarge: A 2xx reply's body is larger than ``max_bytes``.
        openai.APITimeoutError: The body stopped arriving for ``timeout``.
        openai.APIConnectionError: The connection was lost while the body arrived.
    """
    streamed: Any = {**options, "headers": {_RAW_RESPONSE: "stream"}}
    response = await client.post(
        "/chat/completions", cast_to=httpx2.Response, body=payload, options=streamed
    )
    try:
        content, whole = await read_capped(
            response.aiter_bytes(), max_bytes, _length(response.headers)
        )
    # Read apart from client.post, which would have named these as its own: a timeout or a
    # lost connection while the body arrives is retried as one.
    except httpx2.TimeoutException as exc:
        raise openai.APITimeoutError(request=response.request) from exc
    except httpx2.TransportError as exc:
        raise openai.APIConnectionError(request=response.request) from exc
    finally:
        await response.aclose()
    if not whole:
        raise ReplyTooLarge(max_bytes, _length(response.headers), content)
    return RawReply(response.headers, content)


def _length(headers: Any) -> int | None:
    """A reply's ``Content-Length``, or None."""
    try:
        return int(headers.get("content-length"))
    except (TypeError, ValueError):
        return None


def _give_up(
    error: openai.OpenAIError,
    label: str,
    timeout: float,
    retries: int,
    breaker: CircuitBreaker | None,
    api_key: str | None,
) -> JudgeError:
    translated = translate_error(error, label, timeout, retries, known=[api_key])
    if breaker is not None:
        breaker.observe(translated)  # before raising: calls queued behind this one stop
    return translated


def _report(
    limiter: RateLimiter, permit: Permit, response: RawReply | httpx2.Response, reply: Reply
) -> None:
    usage = reply.usage
    limiter.succeeded(
        permit,
        headers=response.headers,
        total_tokens=None if usage is None else usage.total_tokens,
        output_tokens=None if usage is None else usage.output_tokens,
    )


def _is_rate_limit(error: openai.OpenAIError) -> bool:
    return isinstance(error, openai.APIStatusError) and error.status_code == 429


def _quota_exhausted(error: openai.OpenAIError) -> bool:
    return getattr(error, "code", None) == "insufficient_quota"


def _retryable(error: openai.OpenAIError) -> bool:
    if not isinstance(error, openai.APIStatusError):
        return True  # timeouts and connection errors
    if refused_field(error) is not None or context_overflow(error) is not None:
        # The same request gets the same answer: the judge changes the request instead
        # (docs/pages/design/format-refusals.md).
        return False
    should = error.response.headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    return error.status_code in _RETRYABLE_STATUS or error.status_code >= 500


def _backoff(attempt: int, hint: float | None, *, first: float, cap: float) -> float | None:
    """Seconds before retry number ``attempt``; None when the server asks for too long."""
    if hint is not None:
        if hint > _MAX_RETRY_AFTER:
            return None
        return hint * (1 + _RETRY_AFTER_JITTER * random.random())
    delay: float = min(first * 2.0 ** (attempt - 1), cap)
    return delay * (1 - 0.25 * random.random())
