"""The judge's HTTP call over real sockets: replies read, errors translated once."""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
import pytest

from evalkit import JudgeError
from evalkit.judge import shared_openai_client
from evalkit.judge._call import Reply, chat_completion
from evalkit.testing import FakeOpenAIServer, Fault, Rule
from evalkit.testing._http import Request, Response

BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
async def client(server: FakeOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    return await shared_openai_client(base_url=server.base_url, api_key="k")


async def call(client: openai.AsyncOpenAI, *, timeout: float = 5.0, retries: int = 0) -> Reply:
    return await chat_completion(client, BODY, timeout=timeout, max_retries=retries, label="J")


async def test_reads_content_usage_and_finish_reason(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.add_rule(Rule(reply="hi there", finish_reason="length"))
    reply = await call(client)
    assert reply.content == "hi there"
    assert reply.finish_reason == "length"
    assert reply.refusal is None
    assert reply.cost is None
    assert reply.usage is not None
    assert reply.usage.output_tokens == 2


async def test_reads_a_refusal(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.add_rule(Rule(refusal="No."))
    reply = await call(client)
    assert (reply.content, reply.refusal) == (None, "No.")


@pytest.mark.parametrize(
    ("fault", "code", "cause", "message"),
    [
        (Fault.http(500, "boom"), "500", openai.InternalServerError, "J: HTTP 500 boom"),
        (Fault.http(503), "503", openai.InternalServerError, "injected an HTTP 503"),
        (Fault.rate_limit(0), "429", openai.RateLimitError, "J: HTTP 429 Rate limit reached"),
        (Fault.http(400, "bad"), "400", openai.BadRequestError, "J: HTTP 400 bad"),
        (Fault.disconnect(), "connection", openai.APIConnectionError, "closed the connection"),
        (Fault.malformed_body(), "bad_response", ValueError, "not valid JSON"),
    ],
)
async def test_failures_become_judge_errors_with_a_code(
    server: FakeOpenAIServer,
    client: openai.AsyncOpenAI,
    fault: Fault,
    code: str,
    cause: type[Exception],
    message: str,
) -> None:
    server.add_rule(Rule(fault=fault))
    with pytest.raises(JudgeError, match=message) as info:
        await call(client)
    assert info.value.code == code
    assert isinstance(info.value.__cause__, cause)


async def test_a_hang_past_the_timeout_is_a_timeout(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.add_rule(Rule(fault=Fault.hang()))
    with pytest.raises(JudgeError, match=r"no reply within the 0\.2 s timeout") as info:
        await call(client, timeout=0.2)
    assert info.value.code == "timeout"
    assert isinstance(info.value.__cause__, openai.APITimeoutError)


async def test_server_errors_are_retried_up_to_max_retries(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.add_rule(Rule(fault=Fault.http(500, retry_after=0.01)))
    with pytest.raises(JudgeError):
        await call(client, retries=2)
    assert server.stats.requests == 3
    assert server.stats.faults == 3


async def test_wrong_api_key_is_a_401(judge_key: str) -> None:
    async with FakeOpenAIServer(api_key="right") as server:
        client = await shared_openai_client(base_url=server.base_url, api_key="wrong")
        with pytest.raises(JudgeError, match="Incorrect API key") as info:
            await call(client)
        good = await shared_openai_client(base_url=server.base_url, api_key="right")
        assert (await call(good)).content
    assert info.value.code == "401"


async def test_a_reply_that_is_not_a_completion_is_a_bad_response(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    async def not_a_completion(request: Request) -> Response:
        return Response.json({"ok": True})

    server.add_route("POST", "/v1/chat/completions", not_a_completion)
    with pytest.raises(JudgeError, match=r"not a chat completion: \{'ok': True\}") as info:
        await call(client)
    assert info.value.code == "bad_response"
