"""Asking a judge for one prompt step's output: the call, the one fallback, the record.

:func:`ask` returns a :class:`~evalkit.judge.JudgeExecution` whatever happens once a call has
been attempted, so the step can record it before raising. Transport failures end the step
at once (the ``openai`` client already retried 429/5xx/timeouts within ``max_retries``);
format failures get one fallback attempt (SPEC §1 "Structured output and its fallback").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import anyio
import openai
from openai import AsyncOpenAI

from evalkit.errors import JudgeError
from evalkit.judge._call import Reply, chat_completion
from evalkit.judge._clients import openai_client_for, shared_limiter
from evalkit.judge._judge import Judge
from evalkit.judge._records import JudgeCost, JudgeErrorInfo, JudgeExecution, JudgeUsage
from evalkit.judge._structured import FormatFailure, OutputSpec

_NO_USAGE = JudgeUsage()


@dataclass(frozen=True, slots=True)
class Asked:
    """The outcome of :func:`ask`: the record, and the value or the error to raise."""

    execution: JudgeExecution
    value: Any = None
    error: JudgeError | None = None


class PreparedRequest:
    """The parts of a judge's request body that do not depend on the prompt (built once)."""

    __slots__ = ("base", "judge", "label", "system")

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.label = judge.label
        self.system = (
            {"role": "system", "content": judge.instructions} if judge.instructions else None
        )
        base: dict[str, Any] = {"model": judge.model}
        if judge.temperature is not None:
            base["temperature"] = judge.temperature
        if judge.max_tokens is not None:
            base["max_completion_tokens"] = judge.max_tokens
        if judge.extra_body:
            base.update(judge.extra_body)
        self.base = base

    def body(self, prompt: str, extra: dict[str, Any]) -> dict[str, Any]:
        user = {"role": "user", "content": prompt}
        messages = [self.system, user] if self.system is not None else [user]
        return {**self.base, "messages": messages, **extra}


async def ask(request: PreparedRequest, prompt: str, spec: OutputSpec, started: float) -> Asked:
    """Ask ``request.judge`` for ``spec``'s output to ``prompt``; never raises a JudgeError.

    Args:
        request: The judge's prepared request.
        prompt: The step's prompt (the user message).
        spec: What to ask for and how to check it.
        started: ``time.perf_counter()`` when the step started (for ``duration_ms``).

    Raises:
        ConfigError: The judge's API key is missing (before any call is attempted).
    """
    judge = request.judge
    client = await openai_client_for(
        client=judge.client,
        base_url=judge.base_url,
        api_key_env=judge.api_key_env,
        user=request.label,
    )
    limiter = (
        shared_limiter(judge.limiter_key, judge.max_concurrency)
        if judge.max_concurrency is not None
        else None
    )
    attempts = calls = 0
    usage: JudgeUsage | None = None
    cost: float | None = 0.0
    last: Reply | None = None
    failure: FormatFailure | None = None
    plan = [(prompt, spec.first)]
    if spec.fallback is not None:
        plan.append((prompt + spec.fallback_suffix, spec.fallback))
    for text, extra in plan:
        attempts += 1
        body = request.body(text, extra)
        try:
            reply = await _call(client, body, request, limiter)
        except Exception as exc:
            error = exc if isinstance(exc, JudgeError) else _unexpected(exc, request.label)
            execution = _failed(request, prompt, started, attempts, calls, usage, last, error)
            return Asked(execution, error=error)
        calls += 1
        last = reply
        if reply.usage is not None:
            usage = reply.usage if usage is None else usage + reply.usage
        cost = cost + reply.cost if cost is not None and reply.cost is not None else None
        try:
            if reply.refusal is not None:
                raise FormatFailure(f"the judge refused: {reply.refusal}", code="refusal")
            output, value = spec.parse(reply.content or "")
        except FormatFailure as exc:
            failure = exc
            continue
        execution = JudgeExecution(
            status="success",
            prompt=prompt,
            judge_model_id=judge.model or "",
            judge_provider=judge.provider,
            attempt_count=attempts,
            model_call_count=calls,
            duration_ms=(time.perf_counter() - started) * 1000,
            output=output,
            usage=usage or _NO_USAGE,
            cost=JudgeCost(cost, "USD", judge.provider) if cost is not None else None,
        )
        return Asked(execution, value=value)
    assert failure is not None
    how = "" if attempts == 1 else f" after {attempts} attempts (structured output, then JSON mode)"
    error = JudgeError(
        f"{request.label} did not answer {spec.describe}{how}: {failure}", code=failure.code
    )
    error.__cause__ = failure
    return Asked(
        _failed(request, prompt, started, attempts, calls, usage, last, error), error=error
    )


async def _call(
    client: AsyncOpenAI,
    body: dict[str, Any],
    request: PreparedRequest,
    limiter: anyio.CapacityLimiter | None,
) -> Reply:
    judge = request.judge
    if limiter is None:
        return await chat_completion(
            client, body, timeout=judge.timeout, max_retries=judge.max_retries, label=request.label
        )
    async with limiter:
        return await chat_completion(
            client, body, timeout=judge.timeout, max_retries=judge.max_retries, label=request.label
        )


def _unexpected(exc: Exception, label: str) -> JudgeError:
    error = JudgeError(f"{label}: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


def _failed(
    request: PreparedRequest,
    prompt: str,
    started: float,
    attempts: int,
    calls: int,
    usage: JudgeUsage | None,
    last: Reply | None,
    error: JudgeError,
) -> JudgeExecution:
    cause = error.__cause__
    name = type(cause).__name__ if isinstance(cause, openai.OpenAIError) else type(error).__name__
    raw = None if last is None else (last.content if last.content is not None else last.refusal)
    return JudgeExecution(
        status="failed",
        prompt=prompt,
        judge_model_id=request.judge.model or "",
        judge_provider=request.judge.provider,
        attempt_count=attempts,
        model_call_count=calls,
        duration_ms=(time.perf_counter() - started) * 1000,
        usage=usage,
        raw_output=raw,
        finish_reason=None if last is None else last.finish_reason,
        error=JudgeErrorInfo(name, str(error), error.code),
    )
