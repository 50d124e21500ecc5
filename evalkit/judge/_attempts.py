"""The record of each attempt of a judge execution, and what a reply cut short means.

A reply whose ``finish_reason`` says it hit the token limit (``"length"``, or ``"max_tokens"``
as some gateways pass it on) is *truncated*. A structured reply that then fails to parse fails
as a format failure saying so, with the token count (not the parser's complaint about the
missing rest); a plain-text reply is kept and the execution flagged ``truncated``.
Why queue and request times are kept apart: docs/pages/design/judge-time-apart-from-the-queue.md.
"""

from __future__ import annotations

import openai

from evalkit.errors import JudgeError
from evalkit.judge._records import AttemptStatus, JudgeAttempt, JudgeErrorInfo
from evalkit.judge._structured import FormatFailure
from evalkit.judge.policy._call import CallTiming
from evalkit.judge.transport._body import ReplyTooLarge
from evalkit.judge.transport._reply import Reply

#: How much of each attempt's raw reply its record keeps.
RAW_EXCERPT_CHARS = 2000
_CUT = frozenset({"length", "max_tokens"})


def is_truncated(reply: Reply) -> bool:
    """Whether ``reply`` stopped at the token limit."""
    return reply.finish_reason in _CUT


def truncation(failure: FormatFailure, reply: Reply, max_tokens: int | None) -> FormatFailure:
    """``failure`` told as a truncation when ``reply`` was cut at the token limit.

    The count is the reply's output tokens when the server reported them, else the judge's
    ``max_tokens``. A refusal, or a reply that was not cut, keeps its own failure.
    """
    if not is_truncated(reply) or failure.code != "format":
        return failure
    usage = reply.usage
    tokens = usage.output_tokens if usage is not None and usage.output_tokens else max_tokens
    at = f"at {tokens} token{'' if tokens == 1 else 's'}" if tokens else "at the token limit"
    told = FormatFailure(
        f"the reply was truncated {at} (finish_reason {reply.finish_reason!r}) before it was "
        "complete; raise the judge's max_tokens",
        code=failure.code,
    )
    told.__cause__ = failure
    return told


def replied(
    reply: Reply,
    status: AttemptStatus,
    timing: CallTiming | None,
    failure: Exception | None,
    *,
    format: str | None,
) -> JudgeAttempt:
    """The record of an attempt that got ``reply`` (``failure``: why it was not accepted),
    sent in ``format`` (see `JudgeAttempt.format`)."""
    raw = reply.content if reply.content is not None else reply.refusal
    error = None
    if failure is not None:
        error = JudgeErrorInfo(type(failure).__name__, str(failure), getattr(failure, "code", None))
    return JudgeAttempt(
        status=status,
        finish_reason=reply.finish_reason,
        usage=reply.usage,
        raw_excerpt=None if raw is None else raw[:RAW_EXCERPT_CHARS],
        raw_chars=None if raw is None else len(raw),
        error=error,
        queue_ms=_ms(timing, queue=True),
        request_ms=_ms(timing, queue=False),
        format=format,
    )


def call_failed(
    error: JudgeError, timing: CallTiming | None, *, format: str | None
) -> JudgeAttempt:
    """The record of an attempt whose request, sent in ``format``, failed with ``error`` (no
    reply; for a reply too large to read, its first bytes as the raw excerpt)."""
    first = over_size(error)
    return JudgeAttempt(
        status="failed",
        raw_excerpt=first,
        error=error_info(error),
        queue_ms=_ms(timing, queue=True),
        request_ms=_ms(timing, queue=False),
        format=format,
    )


def batch_timing(seconds: float) -> CallTiming:
    """The timing of a batch-mode attempt: ``seconds`` until its batch answered, as its
    request time; evalkit's queue is not told apart there (its ``queue_ms`` is None)."""
    return CallTiming(queue_s=-1.0, request_s=seconds)


def error_info(error: JudgeError) -> JudgeErrorInfo:
    """``{name, message, code}`` of ``error``, named after the ``openai`` error it wraps (or
    ``ReplyTooLarge``)."""
    cause = error.__cause__
    wraps = isinstance(cause, openai.OpenAIError | ReplyTooLarge)
    name = type(cause).__name__ if wraps else type(error).__name__
    return JudgeErrorInfo(name, str(error), error.code)


def over_size(error: Exception) -> str | None:
    """The first bytes of the reply ``error`` refused as too large (as text), or None."""
    cause = error.__cause__
    return cause.excerpt if isinstance(cause, ReplyTooLarge) else None


def total_ms(attempts: list[JudgeAttempt], *, queue: bool) -> float | None:
    """The attempts' queue (or request) time added up; None when none has one."""
    times = [a.queue_ms if queue else a.request_ms for a in attempts]
    known = [t for t in times if t is not None]
    return sum(known) if known else None


def _ms(timing: CallTiming | None, *, queue: bool) -> float | None:
    """Milliseconds of ``timing``; a batch attempt (``queue_s`` negative) has no queue time."""
    if timing is None:
        return None
    seconds = timing.queue_s if queue else timing.request_s
    return None if seconds < 0 else seconds * 1000
