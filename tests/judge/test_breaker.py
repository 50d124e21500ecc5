"""Circuit breakers: an authentication or quota error stops a judge's later calls at once."""

from __future__ import annotations

import itertools
import socket
from typing import Any

import aiohttp
import anyio
import httpx2
import openai
import pytest

from evalkit import Judge, JudgeError, PromptStep, ScorerRunError, create_scorer
from evalkit.judge import JudgeExecution
from evalkit.judge.transport._errors import failed_to_connect
from evalkit.testing import FakeOpenAIServer, Fault, Request, Response, Rule
from evalkit.testing._http import error_body
from tests.conftest import KEY_ENV

QUOTA = Fault.http(429, "You exceeded your current quota", code="insufficient_quota")


def scorer_for(judge: Judge, name: str = "graded") -> Any:
    return create_scorer(name, judge=judge).generate_score(
        PromptStep("score", lambda run: f"Rate {run.output}")
    )


async def run_many(scorer: Any, count: int) -> list[JudgeExecution]:
    """Run ``scorer`` on ``count`` items at once; every run must fail at generate_score."""
    executions: list[JudgeExecution | None] = [None] * count

    async def one(i: int) -> None:
        with pytest.raises(ScorerRunError) as info:
            await scorer.run(input=f"q{i}", output=f"a{i}")
        assert info.value.result is not None
        (executions[i],) = info.value.result.judge["generate_score"].executions

    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(one, i)
    return [e for e in executions if e is not None]


@pytest.mark.parametrize(
    ("fault", "first_code", "later_code", "words"),
    [
        (Fault.http(401, "Incorrect API key provided"), "401", "auth", "refused the API key"),
        (Fault.http(403, "Project lacks access"), "403", "auth", "refused the API key"),
        (QUOTA, "429", "quota", "reported the quota spent"),
    ],
)
async def test_the_first_auth_or_quota_error_stops_every_later_call(
    server: FakeOpenAIServer,
    judge: Judge,
    fault: Fault,
    first_code: str,
    later_code: str,
    words: str,
) -> None:
    server.add_rule(Rule(fault=fault))
    # One call at a time, so the first error arrives before any other call is sent.
    executions = await run_many(scorer_for(judge.replace(max_concurrency=1)), 20)

    assert server.stats.requests == 1
    assert len(executions) == 20
    assert all(e.status == "failed" and e.error is not None for e in executions)
    codes = sorted(e.error.code or "" for e in executions if e.error is not None)
    assert codes == sorted([first_code] + [later_code] * 19)
    stopped = [e for e in executions if e.error is not None and e.error.code == later_code]
    assert all(e.model_call_count == 0 and e.attempt_count == 1 for e in stopped)
    # Stopped before its request: an attempt that asked in no format.
    assert {a.format for e in stopped for a in e.attempts} == {None}
    (first,) = [e for e in executions if e not in stopped]
    assert [a.format for a in first.attempts] == ["json_schema"]
    message = stopped[0].error.message if stopped[0].error else ""
    assert words in message
    assert "stopped after the first such error" in message
    assert fault.message in message  # the first error is shown


async def test_a_stopped_call_is_a_scorer_run_error_naming_the_cause(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule(fault=Fault.http(401, "Incorrect API key provided")))
    scorer = scorer_for(judge)
    with pytest.raises(ScorerRunError):
        await scorer.run(input="q", output="a")
    with pytest.raises(ScorerRunError, match="not sent: the endpoint refused") as info:
        await scorer.run(input="q", output="a")
    assert isinstance(info.value.__cause__, JudgeError)
    assert info.value.__cause__.code == "auth"
    assert info.value.failed_step == "generate_score"
    assert server.stats.requests == 1


async def test_an_auth_error_stops_every_model_behind_the_key_but_not_other_keys(
    server: FakeOpenAIServer, judge: Judge, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.add_rule(Rule(fault=Fault.http(401, "Incorrect API key provided"), times=1))
    monkeypatch.setenv("EVALKIT_OTHER_KEY", "another-key")
    with pytest.raises(ScorerRunError):
        await scorer_for(judge).run(input="q", output="a")
    with pytest.raises(ScorerRunError, match="not sent"):
        await scorer_for(judge.replace(model="another-model")).run(input="q", output="a")
    assert server.stats.requests == 1
    other_key = judge.replace(api_key_env="EVALKIT_OTHER_KEY")
    result = await scorer_for(other_key).run(input="q", output="a")
    assert result.score is not None
    assert server.stats.requests == 2


async def test_a_spent_quota_stops_its_model_only(server: FakeOpenAIServer, judge: Judge) -> None:
    server.add_rule(Rule(fault=QUOTA, times=1))
    with pytest.raises(ScorerRunError):
        await scorer_for(judge).run(input="q", output="a")
    with pytest.raises(ScorerRunError, match="quota spent"):
        await scorer_for(judge.replace(temperature=0.5)).run(input="q", output="a")
    assert server.stats.requests == 1
    result = await scorer_for(judge.replace(model="another-model")).run(input="q", output="a")
    assert result.score is not None
    assert server.stats.requests == 2


@pytest.mark.parametrize(
    "fault",
    [Fault.http(500), Fault.http(400, "bad request"), Fault.rate_limit(0.01)],
)
async def test_other_errors_do_not_stop_later_calls(
    server: FakeOpenAIServer, judge: Judge, fault: Fault
) -> None:
    server.add_rule(Rule(fault=fault, times=1))
    strict = judge.replace(max_retries=0, rate_limit_retries=0)
    with pytest.raises(ScorerRunError):
        await scorer_for(strict).run(input="q", output="a")
    result = await scorer_for(strict).run(input="q", output="a")
    assert result.score is not None
    assert server.stats.requests == 2


async def test_a_call_waiting_to_retry_stops_when_another_trips_the_breaker(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    # Whichever call arrives first gets a 500 and waits 0.3 s to retry; the other gets the 401.
    server.add_rule(Rule(fault=Fault.http(500, retry_after=0.3), times=1))
    server.add_rule(Rule(fault=Fault.http(401, "Incorrect API key provided")))
    executions = await run_many(scorer_for(judge.replace(max_retries=3)), 2)
    codes = sorted(e.error.code or "" for e in executions if e.error is not None)
    assert codes == ["401", "auth"]
    assert server.stats.requests == 2


def test_breakers_belong_to_one_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new run (a new event loop) tries again: the key may have been fixed meanwhile."""
    monkeypatch.setenv(KEY_ENV, "test-key")

    async def main() -> list[int]:
        seen = []
        async with FakeOpenAIServer([Rule(fault=Fault.http(401), times=1)]) as server:
            judge = Judge("m", base_url=server.base_url, api_key_env=KEY_ENV)
            for _ in range(2):
                with pytest.raises(ScorerRunError):
                    await scorer_for(judge).run(input="q", output="a")
            seen.append(server.stats.requests)

            async def again() -> None:
                result = await scorer_for(judge).run(input="q", output="a")
                assert result.score is not None

            # The same server, reached from a fresh loop in a worker thread.
            await anyio.to_thread.run_sync(anyio.run, again)
            seen.append(server.stats.requests)
        return seen

    assert anyio.run(main) == [1, 2]


async def test_a_batch_mode_judge_stops_after_its_batch_upload_is_refused(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    uploads = []

    async def refuse(request: Request) -> Response:
        uploads.append(request.path)
        return Response.json(error_body("Incorrect API key provided", "invalid_request_error"), 401)

    server.add_route("POST", "/v1/files", refuse)
    batched = judge.replace(mode="batch", batch_flush_after=0.05, batch_poll_interval=0.01)
    with pytest.raises(ScorerRunError, match="401"):
        await scorer_for(batched).run(input="q", output="a")
    with pytest.raises(ScorerRunError, match="not sent") as info:
        await scorer_for(batched).run(input="q", output="a")
    assert uploads == ["/v1/files"]  # the second run sent nothing
    assert isinstance(info.value.__cause__, JudgeError)
    assert info.value.__cause__.code == "auth"


async def test_an_endpoint_whose_first_connections_all_fail_is_stopped(
    closed_url: str, judge_key: str
) -> None:
    """The endpoint is down: after its first 5 refused connections, no call waits any more."""
    judge = Judge("m", base_url=closed_url, api_key_env=judge_key, max_retries=0)
    # One call at a time, so exactly the first five reach the (closed) port.
    executions = await run_many(scorer_for(judge.replace(max_concurrency=1)), 30)

    codes = [e.error.code if e.error is not None else None for e in executions]
    assert sorted(codes, key=str) == ["connection"] * 5 + ["unreachable"] * 25
    stopped = [e for e in executions if e.error is not None and e.error.code == "unreachable"]
    assert all(e.model_call_count == 0 and e.attempt_count == 1 for e in stopped)
    assert {a.format for e in stopped for a in e.attempts} == {None}
    message = stopped[0].error.message if stopped[0].error else ""
    assert "not sent: circuit open: endpoint unreachable" in message
    assert "connection refused" in message.lower() or "connect call failed" in message.lower()


async def test_retries_of_a_call_stop_when_the_endpoint_is_found_unreachable(
    closed_url: str, judge_key: str
) -> None:
    judge = Judge("m", base_url=closed_url, api_key_env=judge_key, max_retries=10)
    with anyio.fail_after(30):  # 10 retries each would back off for about a minute
        executions = await run_many(scorer_for(judge), 3)
    assert [e.error.code if e.error else None for e in executions] == ["unreachable"] * 3


async def test_once_an_endpoint_answered_connection_failures_are_retried_as_usual(
    judge_key: str,
) -> None:
    async with FakeOpenAIServer() as server:
        judge = Judge("m", base_url=server.base_url, api_key_env=judge_key, max_retries=0)
        scorer = scorer_for(judge.replace(max_concurrency=1))
        assert (await scorer.run(input="q", output="a")).score is not None
    # The server is gone now: every later connection is refused (or finds its socket closed).
    executions = await run_many(scorer, 12)
    codes = {e.error.code if e.error else None for e in executions}
    assert codes == {"connection"}


def _chain(*errors: BaseException) -> BaseException:
    for outer, inner in itertools.pairwise(errors):
        outer.__cause__ = inner
    return errors[0]


def _api_error() -> openai.APIConnectionError:
    return openai.APIConnectionError(request=httpx2.Request("POST", "http://127.0.0.1:1/v1"))


@pytest.mark.parametrize(
    ("chain", "counts"),
    [
        # Refused or unknown: no server there; these open the breaker after 5.
        ((httpx2.ConnectTimeout("x"), ConnectionRefusedError(111, "refused")), True),
        ((socket.gaierror(-2, "Name or service not known"),), True),
        # A connect that was merely slow (a loaded machine opening 100 connections at once)
        # says nothing about the endpoint being down: retried as usual, never "unreachable".
        ((httpx2.ConnectTimeout("x"), aiohttp.ConnectionTimeoutError("slow connect")), False),
        ((httpx2.ConnectTimeout("x"),), False),
        ((aiohttp.ServerDisconnectedError(),), False),
    ],
)
def test_only_refused_or_unknown_endpoints_count_as_unreachable(
    chain: tuple[BaseException, ...], counts: bool
) -> None:
    assert failed_to_connect(_chain(_api_error(), *chain)) is counts
