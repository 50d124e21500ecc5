"""What a judge execution records of its attempts: finish reasons, truncation, each attempt's
cause, and the time spent in evalkit's own queue apart from the request (issue 20, 4-6)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest

from evalkit import (
    Judge,
    JudgeCache,
    JudgeError,
    PromptStep,
    Scorer,
    ScorerRunError,
    create_scorer,
    use_judge_cache,
)
from evalkit.testing import PROFILES, FakeOpenAIServer, Fault, Rule


class Claims(pydantic.BaseModel):
    claims: list[str]
    relevant: bool


def score_scorer(judge: Judge) -> Scorer:
    return create_scorer("Quality", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Rate the answer: {run.output}")
    )


def reason_scorer(judge: Judge) -> Scorer:
    return (
        create_scorer("Explained", judge=judge)
        .generate_score(lambda: 1.0)
        .generate_reason(PromptStep("why", lambda score: f"Explain {score}"))
    )


async def failing(scorer: Scorer) -> ScorerRunError:
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(input="q", output="a")
    return info.value


def completion_tokens(server: FakeOpenAIServer, body: dict[str, Any], content: str) -> int:
    tokens: int = server.usage.usage(body["messages"], content)["completion_tokens"]
    return tokens


async def test_a_success_records_its_finish_reason_and_its_attempt(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Rate", reply={"score": 0.75}))
    result = await score_scorer(judge).run(input="q", output="4")
    (execution,) = result.judge["generate_score"].executions
    assert (execution.status, execution.finish_reason, execution.truncated) == (
        "success",
        "stop",
        False,
    )
    assert execution.to_dict()["finish_reason"] == "stop"
    (attempt,) = execution.attempts
    assert (attempt.status, attempt.finish_reason) == ("success", "stop")
    assert attempt.raw_excerpt == '{"score": 0.75}'
    assert attempt.usage is not None
    assert attempt.usage == execution.usage
    assert attempt.error is None
    assert execution.to_dict()["attempts"] == [attempt.to_dict()]


@pytest.mark.parametrize(
    ("reply", "schema"),
    [('{"score": 0.', None), ('{"claims": ["Paris is in France"]}', Claims)],
)
async def test_a_truncated_structured_reply_fails_saying_it_was_truncated(
    server: FakeOpenAIServer, judge: Judge, reply: str, schema: type[pydantic.BaseModel] | None
) -> None:
    server.add_rule(Rule(reply=reply, finish_reason="length"))
    if schema is None:
        scorer = score_scorer(judge)
        step = "generate_score"
    else:
        step = "analyze"
        scorer = (
            create_scorer("Claims", judge=judge)
            .analyze(PromptStep("claims", lambda run: f"List {run.output}", output_schema=schema))
            .generate_score(lambda: 1.0)
        )
    error = await failing(scorer)
    assert error.result is not None
    (execution,) = error.result.judge[step].executions
    assert execution.status == "failed"
    assert execution.finish_reason == "length"
    tokens = completion_tokens(server, server.requests[-1], reply)
    assert execution.error is not None
    assert execution.error.code == "format"
    assert f"truncated at {tokens} tokens" in execution.error.message
    assert "Field required" not in execution.error.message
    assert "max_tokens" in execution.error.message
    first, second = execution.attempts
    for attempt in (first, second):
        assert (attempt.status, attempt.finish_reason) == ("format_failed", "length")
        assert attempt.error is not None
        assert "truncated at" in attempt.error.message
        assert attempt.raw_excerpt == reply


def test_truncation_without_usage_names_the_judges_max_tokens() -> None:
    from evalkit.judge._attempts import truncation
    from evalkit.judge._structured import FormatFailure
    from evalkit.judge.transport._reply import Reply

    cut = Reply(content='{"sc', refusal=None, finish_reason="length", usage=None, cost=None)
    failure = truncation(FormatFailure("the reply is not valid JSON"), cut, max_tokens=3)
    assert "truncated at 3 tokens" in str(failure)
    assert failure.code == "format"
    unknown = truncation(FormatFailure("x"), cut, max_tokens=None)
    assert "truncated at the token limit" in str(unknown)
    stopped = Reply(content="x", refusal=None, finish_reason="stop", usage=None, cost=None)
    kept = FormatFailure("the reply is not valid JSON")
    assert truncation(kept, stopped, max_tokens=3) is kept


async def test_a_truncated_reason_is_kept_and_flagged(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Explain", reply="The answer is right because", finish_reason="length"))
    result = await reason_scorer(judge).run(input="q", output="a")
    assert result.reason == "The answer is right because"
    (execution,) = result.judge["generate_reason"].executions
    assert (execution.status, execution.finish_reason, execution.truncated) == (
        "success",
        "length",
        True,
    )
    assert execution.to_dict()["truncated"] is True
    (attempt,) = execution.attempts
    assert attempt.status == "success"


async def test_an_empty_truncated_reason_fails_saying_it_was_truncated(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Explain", reply="", finish_reason="length"))
    error = await failing(reason_scorer(judge))
    assert error.result is not None
    (execution,) = error.result.judge["generate_reason"].executions
    assert execution.error is not None
    assert "truncated at 0 tokens" not in execution.error.message
    assert "truncated at" in execution.error.message


async def test_each_attempt_keeps_its_cause(server: FakeOpenAIServer, judge: Judge) -> None:
    server.add_rule(Rule("Rate", reply="Sure! I'd say 0.8", response_format="json_schema"))
    result = await score_scorer(judge).run(input="q", output="4")
    (execution,) = result.judge["generate_score"].executions
    first, second = execution.attempts
    assert (first.status, first.finish_reason) == ("format_failed", "stop")
    assert first.raw_excerpt == "Sure! I'd say 0.8"
    assert first.error is not None
    assert first.error.code == "format"
    assert "not valid JSON" in first.error.message
    assert first.usage is not None
    assert first.usage.output_tokens == completion_tokens(
        server, server.requests[0], "Sure! I'd say 0.8"
    )
    assert second.status == "success"
    assert second.raw_excerpt == '{"score": 0.5}'
    assert execution.usage == first.usage + second.usage  # type: ignore[operator]
    assert first.request_ms is not None
    assert second.request_ms is not None
    assert execution.request_ms == pytest.approx(first.request_ms + second.request_ms)


async def test_a_long_raw_reply_is_kept_as_a_bounded_excerpt(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    long = "x" * 5000
    server.add_rule(Rule(reply=long))
    error = await failing(score_scorer(judge))
    assert error.result is not None
    (execution,) = error.result.judge["generate_score"].executions
    assert execution.raw_output == long  # the last reply itself, as before
    for attempt in execution.attempts:
        assert attempt.raw_excerpt == "x" * 2000
        assert attempt.raw_chars == 5000


async def test_a_failed_call_is_an_attempt_with_its_error(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule(fault=Fault.http(500, "the judge fell over")))
    error = await failing(score_scorer(judge.replace(max_retries=0)))
    assert error.result is not None
    (execution,) = error.result.judge["generate_score"].executions
    (attempt,) = execution.attempts
    assert attempt.status == "failed"
    assert attempt.error is not None
    assert attempt.error.code == "500"
    assert (attempt.raw_excerpt, attempt.finish_reason, attempt.usage) == (None, None, None)
    assert attempt.request_ms is not None
    assert attempt.request_ms > 0


async def test_queue_wait_is_apart_from_the_request(judge_key: str) -> None:
    latency = 0.05
    async with FakeOpenAIServer(latency=latency) as server:
        judge = Judge(
            "m", "grade", base_url=server.base_url, api_key_env=judge_key, max_concurrency=1
        )
        scorer = score_scorer(judge)
        results = []

        async def one() -> None:
            results.append(await scorer.run(input="q", output="a"))

        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(one)
    executions = [r.judge["generate_score"].executions[0] for r in results]
    queued = sorted(e.queue_ms or 0.0 for e in executions)
    # One call at a time: the last one admitted waited for the five before it.
    assert queued[-1] >= 5 * latency * 1000 * 0.9
    for execution in executions:
        assert execution.request_ms is not None
        assert execution.queue_ms is not None
        # Not a fixed upper bound (a busy machine stretches a request): one request takes
        # far less than the wait of the last call, which spans the five requests before it.
        assert latency * 1000 <= execution.request_ms < queued[-1]
        assert execution.duration_ms >= execution.queue_ms + execution.request_ms


async def test_a_cached_execution_made_no_request(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    scorer = score_scorer(judge)
    async with use_judge_cache(JudgeCache(tmp_path / "cache.duckdb")):
        paid = await scorer.run(input="q", output="a")
        replayed = await scorer.run(input="q", output="a")
    (first,) = paid.judge["generate_score"].executions
    (cached,) = replayed.judge["generate_score"].executions
    assert (first.cached, cached.cached) == (False, True)
    assert first.request_ms is not None
    assert (cached.request_ms, cached.queue_ms, cached.attempts) == (None, None, ())
    assert (cached.finish_reason, cached.truncated) == (None, False)


async def test_a_truncated_reason_is_not_cached(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    server.add_rule(Rule("Explain", reply="Because", finish_reason="length"))
    scorer = reason_scorer(judge)
    async with use_judge_cache(JudgeCache(tmp_path / "cache.duckdb")):
        await scorer.run(input="q", output="a")
        again = await scorer.run(input="q", output="a")
    (execution,) = again.judge["generate_reason"].executions
    assert (execution.cached, execution.truncated) == (False, True)
    assert server.stats.requests == 2


async def test_a_missing_key_is_one_attempt_that_sent_nothing(server: FakeOpenAIServer) -> None:
    judge = Judge("m", "grade", base_url=server.base_url, api_key_env="EVALKIT_NO_SUCH_KEY_20")
    error = await failing(score_scorer(judge))
    assert error.result is not None
    (execution,) = error.result.judge["generate_score"].executions
    # SPEC: attempt_count >= 1; the call was attempted, and refused before any request.
    assert (execution.attempt_count, execution.model_call_count) == (1, 0)
    (attempt,) = execution.attempts
    assert attempt.status == "failed"
    assert attempt.error is not None
    assert (attempt.error.name, attempt.error.code) == ("ConfigError", "missing_key")
    assert (attempt.format, attempt.request_ms, attempt.queue_ms) == (None, None, None)
    assert (execution.request_ms, execution.queue_ms) == (None, None)
    assert server.stats.requests == 0
    assert not isinstance(error.__cause__, JudgeError)


async def test_a_batch_attempt_records_its_batch_time_as_the_request(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Rate", reply="not JSON", response_format="json_schema"))
    batched = judge.replace(mode="batch", batch_flush_after=0.05, batch_poll_interval=0.01)
    result = await score_scorer(batched).run(input="q", output="a")
    (execution,) = result.judge["generate_score"].executions
    assert (execution.status, execution.finish_reason) == ("success", "stop")
    first, second = execution.attempts
    assert (first.status, second.status) == ("format_failed", "success")
    assert first.raw_excerpt == "not JSON"
    for attempt in (first, second):
        assert attempt.queue_ms is None
        assert attempt.request_ms is not None
        assert attempt.request_ms >= 50  # it waited for its batch to be sent
    assert execution.queue_ms is None
    assert execution.request_ms == pytest.approx(first.request_ms + second.request_ms)  # type: ignore[operator]


async def test_the_back_off_before_a_retry_is_queue_time(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    # A back-off of 2 s, so the request time (an answer of a local server without latency)
    # stays far below it even on a loaded machine; counted as request time, it would not.
    server.add_rule(Rule(fault=Fault.rate_limit(retry_after=2.0), times=1))
    result = await score_scorer(judge).run(input="q", output="a")
    (execution,) = result.judge["generate_score"].executions
    limited, answered = execution.attempts  # each request is an attempt of its own
    assert (limited.status, answered.status) == ("failed", "success")
    assert limited.error is not None
    assert limited.error.code == "429"
    assert answered.queue_ms is not None
    assert answered.request_ms is not None
    assert answered.queue_ms >= 2000  # the server asked for two seconds before the retry
    assert answered.request_ms < 2000
    assert execution.attempt_count == 2 == server.stats.requests


async def test_every_request_is_an_attempt_with_its_own_outcome(
    server: FakeOpenAIServer, judge_key: str
) -> None:
    # Two requests hang past the timeout and are retried; the third is answered. Each one is
    # an attempt, ended by its own timeout (issue 29 item 8: one attempt used to span them).
    server.add_rule(Rule("Rate", fault=Fault.hang(), times=2))
    judge = Judge(
        "m", "grade", base_url=server.base_url, api_key_env=judge_key, timeout=1.0, max_retries=2
    )
    result = await score_scorer(judge).run(input="q", output="a")
    (execution,) = result.judge["generate_score"].executions
    assert execution.status == "success"
    assert execution.attempt_count == len(execution.attempts) == server.stats.requests == 3
    assert execution.model_call_count == 1
    *timed_out, answered = execution.attempts
    for attempt in timed_out:
        assert attempt.status == "failed"
        assert attempt.error is not None
        assert attempt.error.code == "timeout"
        assert "no reply within the 1 s timeout" in attempt.error.message
        assert attempt.request_ms is not None
        assert attempt.raw_excerpt is None
    assert answered.status == "success"
    assert answered.raw_excerpt == '{"score": 0.5}'
    assert [a.to_dict()["error"] is None for a in execution.attempts] == [False, False, True]
    assert execution.request_ms == pytest.approx(
        sum(a.request_ms for a in execution.attempts if a.request_ms is not None)
    )


async def test_a_call_failing_after_its_retries_records_each_request(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule(fault=Fault.http(503, "busy")))
    error = await failing(score_scorer(judge.replace(max_retries=2)))
    assert error.result is not None
    (execution,) = error.result.judge["generate_score"].executions
    assert execution.attempt_count == len(execution.attempts) == server.stats.requests == 3
    assert [a.status for a in execution.attempts] == ["failed"] * 3
    assert [a.error.code if a.error else None for a in execution.attempts] == ["503"] * 3
    assert execution.error is not None
    assert execution.error.code == "503"


@pytest.mark.parametrize(
    ("profile", "formats"),
    [
        ("openai", ["json_schema"]),
        ("llama-cpp-python", ["json_schema", "json_object+schema"]),
        ("refuses-all", ["json_schema", "json_object+schema", "prompt"]),
    ],
)
async def test_each_attempt_records_the_format_it_asked_in(
    judge_key: str, profile: str, formats: list[str]
) -> None:
    refuses_all = dataclasses.replace(PROFILES["llama-cpp-python"], formats=frozenset())
    async with FakeOpenAIServer(profile=refuses_all if profile == "refuses-all" else profile) as (
        server
    ):
        judge = Judge("m", "grade", base_url=server.base_url, api_key_env=judge_key)
        result = await reason_scorer(judge).run(input="q", output="a")
        scored = await score_scorer(judge).run(input="q", output="a")
    (score,) = scored.judge["generate_score"].executions
    assert [a.format for a in score.attempts] == formats
    assert [a.to_dict()["format"] for a in score.attempts] == formats
    (reason,) = result.judge["generate_reason"].executions
    assert [a.format for a in reason.attempts] == ["text"]


async def test_a_format_fallback_records_both_formats(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Rate", reply="not JSON", response_format="json_schema"))
    result = await score_scorer(judge).run(input="q", output="a")
    (execution,) = result.judge["generate_score"].executions
    assert [(a.status, a.format) for a in execution.attempts] == [
        ("format_failed", "json_schema"),
        ("success", "json_object+schema"),
    ]
