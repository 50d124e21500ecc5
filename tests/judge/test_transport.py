"""The shared clients' direct chat path sends what the official client sends."""

from __future__ import annotations

import anyio
import openai
import pytest
from openai import DefaultAioHttpClient

from evalkit.judge import shared_openai_client
from evalkit.judge.policy._call import chat_completion
from evalkit.judge.transport._clients import aclose_shared_clients, chat_transport
from evalkit.judge.transport._http import _env_proxy
from evalkit.testing import FakeOpenAIServer
from evalkit.testing._http import Request, Response

BODY = {"model": "m", "messages": [{"role": "user", "content": "héllo"}], "temperature": 0}
COMPLETION = {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}
# Set per request by one side only: transport framing, the official client's retry
# bookkeeping (evalkit retries itself, so these carry no information), and the header asking
# that client to leave the body unread (so evalkit reads it up to the reply cap).
PER_REQUEST = {
    "x-stainless-raw-response",
    "host",
    "content-length",
    "accept-encoding",
    "connection",
    "x-stainless-retry-count",
    "x-stainless-read-timeout",
    "x-stainless-timeout",
}


async def test_direct_path_sends_the_official_clients_request(server: FakeOpenAIServer) -> None:
    seen: list[tuple[str, dict[str, str], object]] = []

    async def record(request: Request) -> Response:
        seen.append((request.path, dict(request.headers), request.json()))
        return Response.json(COMPLETION)

    server.add_route("POST", "/v1/chat/completions", record)
    shared = await shared_openai_client(base_url=server.base_url, api_key="k1")
    own = openai.AsyncOpenAI(
        base_url=server.base_url, api_key="k1", max_retries=0, http_client=DefaultAioHttpClient()
    )
    try:
        assert chat_transport(shared) is not None
        assert chat_transport(own) is None
        for client in (shared, own):
            reply = await chat_completion(client, BODY, timeout=5, max_retries=0, label="J")
            assert reply.content == "ok"
    finally:
        await own.close()
    (direct_path, direct, direct_body), (official_path, official, official_body) = seen
    assert direct_path == official_path == "/v1/chat/completions"
    assert direct_body == official_body == BODY
    kept = {name: value for name, value in official.items() if name not in PER_REQUEST}
    assert {name: value for name, value in direct.items() if name not in PER_REQUEST} == kept
    assert kept["authorization"] == "Bearer k1"
    assert kept["user-agent"].startswith("AsyncOpenAI/Python")


async def test_closing_the_shared_clients_drops_their_direct_paths(
    server: FakeOpenAIServer,
) -> None:
    shared = await shared_openai_client(base_url=server.base_url, api_key="k2")
    transport = chat_transport(shared)
    assert transport is not None
    await chat_completion(shared, BODY, timeout=5, max_retries=0, label="J")
    await aclose_shared_clients()
    assert chat_transport(shared) is None
    again = await shared_openai_client(base_url=server.base_url, api_key="k2")
    assert again is not shared
    assert (await chat_completion(again, BODY, timeout=5, max_retries=0, label="J")).content


@pytest.mark.parametrize(
    ("env", "url", "expected"),
    [
        ({}, "https://api.openai.com/v1/chat/completions", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://api.x.com/v1", "http://proxy:3128"),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "http://api.x.com/v1", None),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "api.x.com"}, "http://api.x.com/v1", None),
        (
            {"HTTP_PROXY": "http://p:1", "NO_PROXY": "other.com"},
            "http://api.x.com/v1",
            "http://p:1",
        ),
    ],
)
def test_the_environments_proxy_applies_as_it_does_to_the_official_client(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], url: str, expected: str | None
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _env_proxy(url) == expected


async def test_the_direct_path_has_no_connection_cap_of_its_own(server: FakeOpenAIServer) -> None:
    """150 calls at once reach the server at once (the official transport's pool stops at 100):
    the judge's max_concurrency and the run's concurrency are what bound a run."""
    server.latency = 2.0  # long enough for 150 connections to open on a loaded machine
    shared = await shared_openai_client(base_url=server.base_url, api_key="k3")

    async def one() -> None:
        await chat_completion(shared, BODY, timeout=10, max_retries=0, label="J")

    async with anyio.create_task_group() as group:
        for _ in range(150):
            group.start_soon(one)
    assert server.stats.max_in_flight == 150
