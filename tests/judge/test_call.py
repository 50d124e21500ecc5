"""The judge's HTTP call over real sockets: replies read, errors translated once."""

from __future__ import annotations

import contextlib

import anyio
import anyio.abc
import openai
import pytest

from evalkit import JudgeError
from evalkit.judge import shared_openai_client
from evalkit.judge.policy._call import _backoff, chat_completion
from evalkit.judge.transport._reply import Reply
from evalkit.testing import FakeOpenAIServer, Fault, Rule
from evalkit.testing._http import Request, Response

BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


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


async def test_a_hang_is_retried_and_ends_as_a_timeout_after_max_retries(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.add_rule(Rule(fault=Fault.hang(5.0)))
    with anyio.fail_after(30):  # a guard: the call must end, however slowly
        with pytest.raises(JudgeError, match=r"0\.2 s timeout \(2 retries made\)") as info:
            await call(client, timeout=0.2, retries=2)
    assert info.value.code == "timeout"
    assert server.stats.requests == 3


async def test_a_server_trickling_its_body_is_cut_off_at_the_timeout() -> None:
    """The transport's timeout is per read; the attempt's deadline covers the whole reply."""

    async def trickle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await stream.receive()
            await stream.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
            await stream.send(b"Content-Length: 100000\r\n\r\n{")
            with contextlib.suppress(anyio.BrokenResourceError, OSError):
                while True:  # a byte every 50 ms: no read ever waits 0.3 s
                    await anyio.sleep(0.05)
                    await stream.send(b" ")

    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, trickle)
            client = await shared_openai_client(base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
            with anyio.fail_after(30):
                with pytest.raises(JudgeError, match=r"0\.3 s timeout") as info:
                    await call(client, timeout=0.3)
            tg.cancel_scope.cancel()
    assert info.value.code == "timeout"


def test_retry_after_is_honoured_with_up_to_ten_percent_added() -> None:
    waits = [_backoff(1, 2.0, first=0.5, cap=8.0) for _ in range(200)]
    assert all(w is not None and 2.0 <= w < 2.2 for w in waits)
    assert len(set(waits)) > 100  # jittered, not one instant for every refused call
    assert _backoff(1, 121.0, first=0.5, cap=8.0) is None  # too long: give up
    plain = [_backoff(3, None, first=0.5, cap=8.0) for _ in range(200)]
    assert all(w is not None and 1.5 <= w <= 2.0 for w in plain)
    assert len(set(plain)) > 100


@pytest.mark.parametrize(
    ("message", "secret"),
    [
        ("Incorrect API key provided: canary-4f1d9a7e-key.", "canary-4f1d9a7e-key"),
        ("Bad key sk-proj-abcdefghijklmnop1234 given", "sk-proj-abcdefghijklmnop1234"),
        ("Authorization: Bearer abcdefghijklmnop1234 refused", "abcdefghijklmnop1234"),
    ],
)
async def test_provider_error_messages_are_masked(
    server: FakeOpenAIServer, message: str, secret: str
) -> None:
    server.add_rule(Rule(fault=Fault.http(401, message)))
    client = await shared_openai_client(base_url=server.base_url, api_key="canary-4f1d9a7e-key")
    with pytest.raises(JudgeError) as info:
        await call(client)
    assert secret not in str(info.value)
    assert secret not in str(info.value.to_dict())
    assert "[REDACTED]" in str(info.value)
    assert info.value.code == "401"


async def test_credentials_in_the_label_are_masked_in_errors(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.add_rule(Rule(fault=Fault.http(500)))
    label = "target 'm' at http://user:hunter2-secret@host/v1?api-key=querysecret123"
    with pytest.raises(JudgeError) as info:
        await chat_completion(client, BODY, timeout=2, max_retries=0, label=label)
    assert "hunter2-secret" not in str(info.value)
    assert "querysecret123" not in str(info.value)
    assert "target 'm' at http://user:[REDACTED]@host" in str(info.value)


async def test_a_url_the_transport_rejects_is_a_judge_error_without_its_password() -> None:
    url = "http://user:hunter2-secret@127.0.0.1:9/v1"
    client = await shared_openai_client(base_url=url, api_key="k")
    with pytest.raises(JudgeError) as info:
        await chat_completion(client, BODY, timeout=2, max_retries=0, label=f"J at {url}")
    assert "hunter2-secret" not in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
