"""Asking a judge for one prompt step's output: the cache, the call, the fallback, the record.

`ask` returns a [`JudgeExecution`][evalkit.JudgeExecution] whatever happens once a call has
been attempted, so the step can record it before raising. Transport failures end the step
at once (`chat_completion` already retried 429/5xx/timeouts);
an authentication or quota error also stops the judge's later calls (``policy/_breaker.py``);
format failures get one fallback attempt (SPEC §1 "Structured output and its fallback"), and a
server refusing the response format (or a length field) is asked again without it, as
``_formats.py`` plans.
With a judge cache active and a cacheable judge, a cached success is replayed instead (a
reply cut at the token limit is never cached). Each attempt leaves its own record
(``_attempts.py``), with its time in evalkit's queue apart from its request's and the format
it asked in: every HTTP request is one attempt, a retry of a timeout or a 5xx included
(``chat_completion`` reports each retried request).
A judge in batch mode sends each attempt through its batch collector (``_batch.py``) instead
of an online call; everything else — validation, fallback, cache, records — is the same.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from evalkit._masking import mask_secrets
from evalkit.errors import ConfigError, JudgeError
from evalkit.judge._attempts import (
    batch_timing,
    call_failed,
    error_info,
    is_truncated,
    over_size,
    replied,
    total_ms,
    truncation,
)
from evalkit.judge._batch import batch_collector
from evalkit.judge._cache import JudgeCache, active_judge_cache
from evalkit.judge._formats import AttemptPlan
from evalkit.judge._records import (
    JudgeAttempt,
    JudgeCost,
    JudgeErrorInfo,
    JudgeExecution,
    JudgeUsage,
)
from evalkit.judge._request import PreparedRequest, prompt_key, request_hash
from evalkit.judge._structured import FormatFailure, OutputSpec
from evalkit.judge.policy._call import CallTiming, chat_completion
from evalkit.judge.transport._clients import openai_client_for
from evalkit.judge.transport._reply import Reply

_NO_USAGE = JudgeUsage()


@dataclass(frozen=True, slots=True)
class Asked:
    """The outcome of `ask`: the record, and the value or the error to raise (a
    [`JudgeError`][evalkit.errors.JudgeError], or the ConfigError of a missing API key)."""

    execution: JudgeExecution
    value: Any = None
    error: JudgeError | ConfigError | None = None


async def ask(request: PreparedRequest, prompt: str, spec: OutputSpec, started: float) -> Asked:
    """Ask ``request.judge`` for ``spec``'s output to ``prompt``; never raises a JudgeError.

    A missing API key (the variable ``api_key_env`` names is not set) is no exception either:
    it gives a failed execution of one attempt that sent nothing (``attempt_count`` 1,
    ``model_call_count`` 0, no request time), error ``ConfigError`` and code ``missing_key``,
    and the ConfigError as the error to raise, so the store's ``judge_executions`` shows
    which judge could not be asked and why.

    Args:
        request: The judge's prepared request.
        prompt: The step's prompt (the user message).
        spec: What to ask for and how to check it.
        started: ``time.perf_counter()`` when the step started (for ``duration_ms``).

    Raises:
        StoreError: The active judge cache cannot be read.
    """
    cache = active_judge_cache() if request.caches else None
    if cache is None:
        return await _ask(request, prompt, spec, started, None, b"")
    step_key = request.step_key(spec)
    key = prompt_key(step_key, prompt)
    cached = await cache.get(step_key, key)
    if cached is not None:
        try:
            output, value = spec.parse(cached.content)
        except FormatFailure:
            pass  # a reply the current validation rejects (e.g. a changed model class)
        else:
            judge = request.judge
            execution = JudgeExecution(
                status="success",
                prompt=prompt,
                judge_model_id=judge.model or "",
                judge_provider=judge.provider,
                attempt_count=cached.attempt_count,
                model_call_count=0,
                duration_ms=(time.perf_counter() - started) * 1000,
                output=output,
                usage=_NO_USAGE,
                cached=True,
            )
            return Asked(execution, value=value)
    return await _ask(request, prompt, spec, started, cache, key)


async def _ask(
    request: PreparedRequest,
    prompt: str,
    spec: OutputSpec,
    started: float,
    cache: JudgeCache | None,
    key: bytes,
) -> Asked:
    judge = request.judge
    try:
        client = await openai_client_for(
            client=judge.client,
            base_url=judge.base_url,
            api_key_env=judge.api_key_env,
            user=request.label,
        )
    except ConfigError as exc:  # the API key is missing: no call was attempted
        return Asked(_not_asked(request, prompt, started, exc), error=exc)
    breaker = request.breaker()
    policy = request.policy
    collector = None
    if judge.mode == "batch":
        # Batch requests skip the online limiter: batches have their own pool and limits.
        collector = batch_collector(
            judge,
            client=client,
            endpoint=request.endpoint,
            host=request.host,
            cache=active_judge_cache(),
        )
        step_key = request.step_key(spec)
    else:
        limiter = request.limiter()
    planned = calls = 0
    usage: JudgeUsage | None = None
    cost: float | None = 0.0
    last: Reply | None = None
    failure: FormatFailure | None = None
    records: list[JudgeAttempt] = []
    plan = AttemptPlan(
        spec,
        key=request.memory_key,
        official=request.official,
        mode=request.judge.structured_output,
    )
    body: dict[str, Any] = {}
    built = False  # whether the attempt's request was built (so sent): else it has no format

    def build() -> dict[str, Any]:
        # Called as each request is sent: it goes in the format known to work by then.
        nonlocal body, built
        body, built = request.body(*plan.request(prompt, spec)), True
        return body

    def retried(error: JudgeError, timing: CallTiming) -> None:
        nonlocal built
        records.append(call_failed(error, timing, format=plan.format))
        built = False  # the next request is built again, when it is sent

    while plan.next():
        planned += 1
        body, built = {}, False
        timing = CallTiming()
        try:
            if collector is not None:
                breaker.check(request.label)
                hashed = request_hash(step_key, prompt, planned)
                sent = time.perf_counter()
                try:
                    reply = await collector.complete(build(), hashed, request.label)
                finally:
                    timing = batch_timing(time.perf_counter() - sent)
            else:
                tokens = 0
                if limiter.limits_tokens:
                    tokens = request.estimate_tokens(*plan.request(prompt, spec), limiter)
                reply = await chat_completion(
                    client,
                    build,
                    timeout=policy.timeout,
                    max_retries=policy.max_retries,
                    label=request.label,
                    limiter=limiter,
                    tokens=tokens,
                    rate_limit_retries=policy.rate_limit_retries,
                    breaker=breaker,
                    timing=timing,
                    on_retry=retried,
                    max_reply_bytes=policy.max_reply_bytes,
                )
        except Exception as exc:
            error = exc if isinstance(exc, JudgeError) else _unexpected(exc, request.label)
            # A refused attempt is kept too; one stopped before its request (an open
            # breaker) asked in no format.
            records.append(call_failed(error, timing, format=plan.format if built else None))
            if plan.refused(exc, body):  # a format or field the server does not take
                continue
            breaker.observe(exc)
            execution = _failed(request, prompt, started, calls, usage, last, error, records)
            return Asked(execution, error=error)
        calls += 1
        last = reply
        if reply.usage is not None:
            usage = reply.usage if usage is None else usage + reply.usage
        cost = cost + reply.cost if cost is not None and reply.cost is not None else None
        try:
            if reply.refusal is not None:
                raise FormatFailure(f"the judge refused: {reply.refusal}", code="refusal")
            output, value = plan.parse(spec, reply.content or "")
        except FormatFailure as exc:
            failure = truncation(exc, reply, judge.max_tokens)
            records.append(replied(reply, "format_failed", timing, failure, format=plan.format))
            plan.failed_format()
            continue
        records.append(replied(reply, "success", timing, None, format=plan.format))
        truncated = is_truncated(reply)
        if cache is not None and plan.parsed is not None and not truncated:
            cache.put(
                request.step_key(spec),
                key,
                plan.parsed,
                attempt_count=len(records),
                model=judge.model or "",
                host=request.host,
                step=spec.kind,
            )
        execution = JudgeExecution(
            status="success",
            prompt=prompt,
            judge_model_id=judge.model or "",
            judge_provider=judge.provider,
            attempt_count=len(records),
            model_call_count=calls,
            duration_ms=(time.perf_counter() - started) * 1000,
            output=output,
            usage=usage or _NO_USAGE,
            finish_reason=reply.finish_reason,
            cost=JudgeCost(cost, "USD", judge.provider) if cost is not None else None,
            truncated=truncated,
            queue_ms=total_ms(records, queue=True),
            request_ms=total_ms(records, queue=False),
            attempts=tuple(records),
        )
        return Asked(execution, value=value)
    assert failure is not None
    attempts = len(records)
    how = "" if attempts == 1 else f" after {attempts} attempts ({plan.describe()})"
    error = JudgeError(
        f"{request.label} did not answer {spec.describe}{how}: {failure}", code=failure.code
    )
    error.__cause__ = failure
    return Asked(_failed(request, prompt, started, calls, usage, last, error, records), error=error)


def _unexpected(exc: Exception, label: str) -> JudgeError:
    error = JudgeError(mask_secrets(f"{label}: {type(exc).__name__}: {exc}"))
    error.__cause__ = exc
    return error


def _not_asked(
    request: PreparedRequest, prompt: str, started: float, error: ConfigError
) -> JudgeExecution:
    # An attempt (SPEC: attempt_count >= 1) that ended before its request: nothing was sent,
    # so it has no format, no request time and no reply.
    info = JudgeErrorInfo(type(error).__name__, str(error), "missing_key")
    attempt = JudgeAttempt(status="failed", error=info)
    return JudgeExecution(
        status="failed",
        prompt=prompt,
        judge_model_id=request.judge.model or "",
        judge_provider=request.judge.provider,
        attempt_count=1,
        model_call_count=0,
        duration_ms=(time.perf_counter() - started) * 1000,
        error=info,
        attempts=(attempt,),
    )


def _failed(
    request: PreparedRequest,
    prompt: str,
    started: float,
    calls: int,
    usage: JudgeUsage | None,
    last: Reply | None,
    error: JudgeError,
    attempts: list[JudgeAttempt],
) -> JudgeExecution:
    # A reply too large to read ended the call: its first bytes are the evidence, whatever
    # an earlier attempt answered.
    raw = over_size(error)
    if raw is None and last is not None:
        raw = last.content if last.content is not None else last.refusal
    return JudgeExecution(
        status="failed",
        prompt=prompt,
        judge_model_id=request.judge.model or "",
        judge_provider=request.judge.provider,
        attempt_count=len(attempts),
        model_call_count=calls,
        duration_ms=(time.perf_counter() - started) * 1000,
        usage=usage,
        raw_output=raw,
        finish_reason=None if last is None else last.finish_reason,
        error=error_info(error),
        queue_ms=total_ms(attempts, queue=True),
        request_ms=total_ms(attempts, queue=False),
        attempts=tuple(attempts),
    )
