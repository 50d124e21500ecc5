"""What the servers people run do differently, against the test server's profiles of them
(issue 20, points 3 and 9): the length field they read, their 401s, their context overflows and
their ``usage``."""

from __future__ import annotations

import time
from typing import Any

import pytest

from evalkit import Judge
from evalkit.judge import OutputSpec, PreparedRequest, ask
from evalkit.testing import FakeOpenAIServer, Fault, Rule

UNSUPPORTED_MAX_TOKENS = (
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead."
)


def judge_for(server: FakeOpenAIServer, key_env: str, **options: Any) -> Judge:
    return Judge("fake-judge", base_url=server.base_url, api_key_env=key_env, **options)


async def ask_text(judge: Judge, prompt: str = "Say something.") -> Any:
    return await ask(PreparedRequest(judge), prompt, OutputSpec(), time.perf_counter())


@pytest.mark.parametrize("profile", ["llama-cpp-python", "ollama"])
async def test_max_tokens_is_honoured_by_servers_reading_only_max_tokens(
    judge_key: str, profile: str
) -> None:
    async with FakeOpenAIServer(profile=profile) as server:
        asked = await ask_text(judge_for(server, judge_key, max_tokens=64))
        assert asked.error is None
        # Without max_tokens these servers generate to the end of the context (2048, 4096).
        assert asked.execution.usage is not None
        assert 0 < asked.execution.usage.output_tokens <= 64
        (body,) = server.requests
        assert (body["max_tokens"], body["max_completion_tokens"]) == (64, 64)


async def test_a_refused_length_field_is_dropped_and_remembered(judge_key: str) -> None:
    refusal = Fault.http(400, UNSUPPORTED_MAX_TOKENS, code="unsupported_parameter")
    async with FakeOpenAIServer([Rule(fault=refusal, times=1)]) as server:
        judge = judge_for(server, judge_key, max_tokens=50, max_retries=3)
        asked = await ask_text(judge)
        assert asked.error is None
        assert asked.execution.attempt_count == 2
        first, second = server.requests
        assert first["max_tokens"] == 50
        assert "max_tokens" not in second
        assert second["max_completion_tokens"] == 50
        await ask_text(judge)
        assert "max_tokens" not in server.requests[-1]
        assert server.stats.requests == 3


async def test_a_401_with_a_detail_body_says_the_key_was_refused(judge_key: str) -> None:
    async with FakeOpenAIServer(profile="llama-cpp-python", api_key="the-right-key") as server:
        asked = await ask_text(judge_for(server, judge_key))
        assert asked.error is not None
        message = str(asked.error)
        assert message.endswith("HTTP 401 the endpoint refused the API key: Invalid API key")
        assert asked.error.code == "401"


@pytest.mark.parametrize(
    ("profile", "said"),
    [
        ("llama-server", "exceeds the available context size (4096 tokens)"),
        ("llama-cpp-python", "maximum context length is 2048 tokens"),
        ("vllm", "maximum context length is 8192 tokens"),
    ],
)
async def test_a_context_overflow_is_an_input_error_with_the_token_counts(
    judge_key: str, profile: str, said: str
) -> None:
    prompt = "word " * 8000  # 10,007 tokens by the test server's count
    async with FakeOpenAIServer(profile=profile) as server:
        asked = await ask_text(judge_for(server, judge_key, max_retries=3, max_tokens=100), prompt)
        assert asked.error is not None
        message = str(asked.error)
        assert "does not fit the model's context" in message
        assert said in message
        assert "10007" in message  # the prompt's tokens, as the server counted them
        assert asked.error.code == "400"
        assert server.stats.requests == 1  # neither retried nor sent again in another format


@pytest.mark.parametrize("profile", ["llama-server", "vllm", "ollama", "llama-cpp-python"])
async def test_usage_in_each_servers_shape_is_read(judge_key: str, profile: str) -> None:
    async with FakeOpenAIServer(profile=profile) as server:
        asked = await ask_text(judge_for(server, judge_key, max_tokens=200))
        usage = asked.execution.usage
        assert usage is not None
        assert usage.input_tokens > 0
        assert usage.output_tokens > 0
        assert usage.total_tokens == usage.input_tokens + usage.output_tokens
        assert usage.cached_input_tokens == 0
