"""Records of judge calls: what one prompt step asked, got and spent (SPEC §1 table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from evalkit._json import to_jsonable

ExecutionStatus = Literal["success", "failed"]
#: An attempt's outcome: a valid reply, a reply not in the asked format (cut off, not JSON,
#: failing the schema, refused), or a call that got no reply (HTTP error, timeout, ...).
AttemptStatus = Literal["success", "format_failed", "failed"]


#: The largest count a store column (BIGINT) holds.
MAX_COUNT = 2**63 - 1


def add_counts(a: int | None, b: int | None) -> int | None:
    """``a + b``; None (absent) when either is, or when the sum passes int64."""
    if a is None or b is None:
        return None
    total = a + b
    return total if total <= MAX_COUNT else None


@dataclass(frozen=True, slots=True)
class JudgeUsage:
    """Token usage of a judge execution, normalised across providers and summed over attempts.

    A count is None (NULL in the store) when the provider sent one that is not a
    non-negative integer within int64 (see `normalize_usage`); ``notes``
    then say which value was dropped. A sum with an absent count is absent.
    """

    input_tokens: int | None = 0
    output_tokens: int | None = 0
    total_tokens: int | None = 0
    reasoning_tokens: int | None = 0
    cached_input_tokens: int | None = 0
    cache_creation_input_tokens: int | None = 0
    notes: tuple[str, ...] = ()

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(
            input_tokens=add_counts(self.input_tokens, other.input_tokens),
            output_tokens=add_counts(self.output_tokens, other.output_tokens),
            total_tokens=add_counts(self.total_tokens, other.total_tokens),
            reasoning_tokens=add_counts(self.reasoning_tokens, other.reasoning_tokens),
            cached_input_tokens=add_counts(self.cached_input_tokens, other.cached_input_tokens),
            cache_creation_input_tokens=add_counts(
                self.cache_creation_input_tokens, other.cache_creation_input_tokens
            ),
            notes=self.notes + other.notes,
        )

    def to_dict(self) -> dict[str, Any]:
        """The usage as a plain dict (``notes`` only when there are some)."""
        out: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True, slots=True)
class JudgeCost:
    """A cost the provider reported itself (never an estimate)."""

    amount: float
    unit: str
    source: str


@dataclass(frozen=True, slots=True)
class JudgeErrorInfo:
    """Why a judge execution failed: ``{name, message, code}``."""

    name: str
    message: str
    code: str | None = None


@dataclass(frozen=True, slots=True)
class JudgeAttempt:
    """One attempt of a judge execution: one HTTP request (a retry is an attempt of its own).

    ``status`` is ``"success"`` (the reply was accepted), ``"format_failed"`` (a reply not in
    the asked format: cut off, not JSON, failing the schema, refused; ``error`` says which)
    or ``"failed"`` (no reply: an HTTP error, a timeout, a dropped connection, or no request
    at all for a missing API key).
    ``raw_excerpt`` is the reply's first 2,000 characters (``raw_chars`` its full length);
    ``queue_ms`` is the time the attempt waited for evalkit's own limiter and back-off,
    ``request_ms`` the time of its HTTP request. A batch-mode attempt has no ``queue_ms``: its
    ``request_ms`` is the time until its batch answered. ``format`` is how the request asked
    for its output: ``"json_schema"`` (native structured output), ``"json_object+schema"``
    (JSON mode carrying the schema), ``"json_object"`` (bare JSON mode), ``"prompt"`` (the
    schema in the prompt alone) or ``"text"`` (a plain-text step); None in records written
    before it was kept.
    """

    status: AttemptStatus
    finish_reason: str | None = None
    usage: JudgeUsage | None = None
    raw_excerpt: str | None = None
    raw_chars: int | None = None
    error: JudgeErrorInfo | None = None
    queue_ms: float | None = None
    request_ms: float | None = None
    format: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the attempt."""
        error = self.error
        return {
            "status": self.status,
            "format": self.format,
            "finish_reason": self.finish_reason,
            "usage": None if self.usage is None else self.usage.to_dict(),
            "raw_excerpt": self.raw_excerpt,
            "raw_chars": self.raw_chars,
            "error": None
            if error is None
            else {"name": error.name, "message": error.message, "code": error.code},
            "queue_ms": self.queue_ms,
            "request_ms": self.request_ms,
        }


@dataclass(frozen=True, slots=True)
class JudgeExecution:
    """One execution of a prompt step against a judge model.

    ``status`` says whether the step's logic ran to the end, not whether the answer was good.
    A success always has ``output`` and ``usage``. A failure has ``error`` and only what was
    received: ``output`` only if it was validated before a later failure, and ``raw_output``
    is never parsed into ``output``.

    ``finish_reason`` is the last reply's, on success too; ``truncated`` says a success was
    cut at the token limit (a plain-text reply kept as it is). ``attempts`` holds each
    attempt's own record. ``queue_ms`` (waiting for evalkit's limiter and back-off) and
    ``request_ms`` (the HTTP calls) are summed over the attempts; both are None when nothing
    was sent (a cached execution, a missing API key).
    """

    status: ExecutionStatus
    prompt: str
    judge_model_id: str
    judge_provider: str | None
    attempt_count: int
    model_call_count: int
    duration_ms: float
    output: Any = None
    usage: JudgeUsage | None = None
    raw_output: str | None = None
    finish_reason: str | None = None
    error: JudgeErrorInfo | None = None
    cost: JudgeCost | None = None
    cached: bool = False
    truncated: bool = False
    queue_ms: float | None = None
    request_ms: float | None = None
    attempts: tuple[JudgeAttempt, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict holding only the fields this execution has."""
        out: dict[str, Any] = {
            "status": self.status,
            "prompt": self.prompt,
            "judge_model_id": self.judge_model_id,
            "judge_provider": self.judge_provider,
            "attempt_count": self.attempt_count,
            "model_call_count": self.model_call_count,
            "duration_ms": self.duration_ms,
        }
        if self.status == "success" or self.output is not None:
            out["output"] = to_jsonable(self.output)
        if self.usage is not None:
            out["usage"] = self.usage.to_dict()
        if self.status == "failed":
            out["raw_output"] = self.raw_output
        if self.status == "failed" or self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason
        if self.truncated:
            out["truncated"] = True
        if self.queue_ms is not None:
            out["queue_ms"] = self.queue_ms
        if self.request_ms is not None:
            out["request_ms"] = self.request_ms
        if self.attempts:
            out["attempts"] = [a.to_dict() for a in self.attempts]
        if self.error is not None:
            out["error"] = {
                "name": self.error.name,
                "message": self.error.message,
                "code": self.error.code,
            }
        if self.cost is not None:
            out["cost"] = {
                "amount": self.cost.amount,
                "unit": self.cost.unit,
                "source": self.cost.source,
            }
        if self.cached:
            out["cached"] = True
        return out


@dataclass(frozen=True, slots=True)
class StepJudgeRecord:
    """The judge executions of one prompt step, in order (``result.judge[step].executions``)."""

    executions: tuple[JudgeExecution, ...]

    def to_dict(self) -> dict[str, Any]:
        """``{"executions": [...]}``."""
        return {"executions": [e.to_dict() for e in self.executions]}
