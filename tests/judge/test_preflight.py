"""Preflight: every judge's key and endpoint checked once, before a run's first item."""

from __future__ import annotations

import pickle

import anyio
import pytest

from evalkit import Judge, PreflightError
from evalkit.judge import preflight
from evalkit.testing import FakeOpenAIServer, Request, Response
from evalkit.testing._http import error_body
from tests.conftest import KEY_ENV


async def test_a_reachable_endpoint_with_a_key_passes_with_one_models_request(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    # Three judges, one endpoint and key: one request.
    await preflight([judge, judge.replace(model="other"), judge.replace(temperature=0.5)])
    assert server.stats.models == 1
    assert server.stats.requests == 0  # no chat completion was spent on it


async def test_a_missing_key_fails_naming_the_variable_without_a_request(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALKIT_PREFLIGHT_ABSENT", raising=False)
    judge = Judge("gpt-4o-mini", base_url=server.base_url, api_key_env="EVALKIT_PREFLIGHT_ABSENT")
    with pytest.raises(PreflightError) as info:
        await preflight([judge])
    error = info.value
    assert str(error).startswith("judge 'gpt-4o-mini': EVALKIT_PREFLIGHT_ABSENT is not set")
    assert (error.kind, error.role, error.model) == ("missing_key", "judge", "gpt-4o-mini")
    assert error.api_key_env == "EVALKIT_PREFLIGHT_ABSENT"
    assert server.stats.models == 0


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_fails_and_the_key_is_never_shown(
    monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    key = "sk-preflight-canary-0123456789"
    monkeypatch.setenv(KEY_ENV, key)

    async def refuse(request: Request) -> Response:
        # Some providers echo the key they refused.
        return Response.json(error_body(f"Incorrect API key provided: {key}", "auth"), status)

    async with FakeOpenAIServer() as server:
        server.add_route("GET", "/v1/models", refuse)
        judge = Judge("gpt-4o-mini", base_url=server.base_url, api_key_env=KEY_ENV)
        with pytest.raises(PreflightError) as info:
            await preflight([judge])
    error = info.value
    assert error.kind == "refused"
    assert error.base_url == server.base_url
    message = str(error)
    assert message.startswith(f"judge 'gpt-4o-mini' at {server.base_url}: ")
    assert f"refused the API key in {KEY_ENV}" in message
    assert f"HTTP {status}" in message
    shown = [message, repr(error), repr(error.to_dict()), repr(pickle.loads(pickle.dumps(error)))]
    assert all(key not in text for text in shown)


async def test_the_shipped_server_refuses_a_wrong_key_on_the_models_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, "wrong-key")
    async with FakeOpenAIServer(api_key="right-key") as server:
        judge = Judge("m", base_url=server.base_url, api_key_env=KEY_ENV)
        with pytest.raises(PreflightError, match="HTTP 401") as info:
            await preflight([judge])
        assert info.value.kind == "refused"
        monkeypatch.setenv(KEY_ENV, "right-key")
        await preflight([judge])


@pytest.mark.parametrize(
    ("profile", "said"), [("llama-cpp-python", "Invalid API key"), ("vllm", "Unauthorized")]
)
async def test_a_servers_own_401_body_is_shown(
    monkeypatch: pytest.MonkeyPatch, profile: str, said: str
) -> None:
    monkeypatch.setenv(KEY_ENV, "wrong-key")
    async with FakeOpenAIServer(api_key="right-key", profile=profile) as server:
        judge = Judge("m", base_url=server.base_url, api_key_env=KEY_ENV)
        with pytest.raises(PreflightError) as info:
            await preflight([judge])
        assert f"(HTTP 401: {said})" in str(info.value)


async def test_a_closed_port_fails_with_cannot_connect(closed_url: str, judge_key: str) -> None:
    judge = Judge("gpt-4o-mini", base_url=closed_url, api_key_env=judge_key)
    with pytest.raises(PreflightError) as info:
        await preflight([judge])
    assert info.value.kind == "unreachable"
    assert str(info.value).startswith(
        f"judge 'gpt-4o-mini' at {closed_url}: cannot connect (connection refused); "
        "check the judge's base_url"
    )


async def test_an_endpoint_that_never_answers_fails_after_the_timeout(judge_key: str) -> None:
    async def hang(request: Request) -> Response:
        await anyio.sleep(30)
        return Response.json({})

    async with FakeOpenAIServer() as server:
        server.add_route("GET", "/v1/models", hang)
        judge = Judge("m", base_url=server.base_url, api_key_env=judge_key)
        with anyio.fail_after(10):
            with pytest.raises(PreflightError, match=r"no answer within 0\.2 s") as info:
                await preflight([judge], timeout=0.2)
    assert info.value.kind == "unreachable"


@pytest.mark.parametrize("status", [404, 405, 500, 429])
async def test_an_endpoint_that_answers_without_a_models_list_passes(
    judge_key: str, status: int
) -> None:
    """Many gateways lack ``/models``: any answer but 401/403 shows the endpoint is there."""
    asked = []

    async def answer(request: Request) -> Response:
        asked.append(request.path)
        return Response.json(error_body("nope", "invalid_request_error"), status)

    async with FakeOpenAIServer() as server:
        server.add_route("GET", "/v1/models", answer)
        await preflight([Judge("m", base_url=server.base_url, api_key_env=judge_key)])
    assert asked == ["/v1/models"]


async def test_every_failing_endpoint_is_reported_and_the_target_is_named(
    server: FakeOpenAIServer, judge: Judge, closed_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALKIT_PREFLIGHT_ABSENT", raising=False)
    down = judge.replace(base_url=closed_url, model="down-judge")
    keyless = Judge("app-model", base_url=server.base_url, api_key_env="EVALKIT_PREFLIGHT_ABSENT")
    with pytest.raises(PreflightError) as info:
        await preflight([judge, down], target=keyless)
    lines = str(info.value).splitlines()
    assert lines == [
        "target 'app-model': EVALKIT_PREFLIGHT_ABSENT is not set (export the API key in it, "
        "or set api_key_env to the variable that holds it)",
        f"judge 'down-judge' at {closed_url}: cannot connect (connection refused); "
        "check the judge's base_url and that its server is running",
    ]
    assert [issue.kind for issue in info.value.issues] == ["missing_key", "unreachable"]
    assert info.value.role == "target"  # the first issue's fields
    assert server.stats.models == 1  # the working judge was checked too


async def test_a_judge_without_a_model_is_not_checked(closed_url: str, judge_key: str) -> None:
    await preflight([Judge(base_url=closed_url, api_key_env=judge_key)])


async def test_a_prepared_client_is_checked_with_its_own_key(server: FakeOpenAIServer) -> None:
    from openai import AsyncOpenAI

    async with AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        await preflight([Judge("m", client=client, api_key_env="EVALKIT_PREFLIGHT_ABSENT")])
    assert server.stats.models == 1
