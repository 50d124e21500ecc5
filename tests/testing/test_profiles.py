"""The test server's profiles answer as the servers they imitate do (formats, length field,
401s, overflows, usage), in-process and from the command line."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from evalkit.testing import PROFILES, FakeOpenAIServer, server_process

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}},
    "required": ["score"],
    "additionalProperties": False,
}


async def chat(base_url: str, **fields: Any) -> httpx2.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": "Grade this."}], **fields}
    async with httpx2.AsyncClient(timeout=10) as client:
        return await client.post(f"{base_url}/chat/completions", json=body)


def json_schema() -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "score", "schema": SCHEMA}}


async def test_llama_cpp_python_refuses_json_schema_with_its_500() -> None:
    async with FakeOpenAIServer(profile="llama-cpp-python") as server:
        answer = await chat(server.base_url, response_format=json_schema())
        assert answer.status_code == 500
        error = answer.json()["error"]
        assert error["type"] == "internal_server_error"
        assert "'loc': ('body', 'response_format', 'type')" in error["message"]
        assert "Input should be 'text' or 'json_object'" in error["message"]
        schema_mode = {"type": "json_object", "schema": SCHEMA}
        answer = await chat(server.base_url, response_format=schema_mode, max_tokens=50)
        assert answer.status_code == 200
        assert answer.json()["choices"][0]["message"]["content"] == '{"score": 0.5}'


@pytest.mark.parametrize(
    ("profile", "capped"),
    [
        ("llama-cpp-python", False),
        ("ollama", False),
        ("llama-server", True),
        ("vllm", True),
        ("openai", True),
    ],
)
async def test_which_length_field_each_profile_reads(profile: str, capped: bool) -> None:
    async with FakeOpenAIServer(profile=profile) as server:
        answer = (await chat(server.base_url, max_completion_tokens=500)).json()
        runaway = answer["choices"][0]["finish_reason"] == "length"
        if profile != "openai":  # the default server never runs away
            assert runaway is not capped
        usage = answer["usage"]
        if not capped:
            assert usage["completion_tokens"] > 1000  # to the end of the context
        assert ("timings" in answer) is (profile == "llama-server")
        assert ("completion_tokens_details" in usage) is (profile == "openai")


@pytest.mark.parametrize(
    ("profile", "body"),
    [
        ("llama-cpp-python", {"detail": "Invalid API key"}),
        ("vllm", {"error": "Unauthorized"}),
        (
            "llama-server",
            {"error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}},
        ),
    ],
)
async def test_each_profile_answers_a_wrong_key_in_its_shape(
    profile: str, body: dict[str, Any]
) -> None:
    async with FakeOpenAIServer(profile=profile, api_key="k") as server:
        answer = await chat(server.base_url)
        assert (answer.status_code, answer.json()) == (401, body)


async def test_ollama_checks_no_key_and_truncates_a_long_prompt() -> None:
    async with FakeOpenAIServer(profile="ollama", api_key="k") as server:
        answer = await chat(server.base_url, messages=[{"role": "user", "content": "w " * 20_000}])
        assert answer.status_code == 200
        assert answer.json()["usage"]["prompt_tokens"] == 4096


def test_an_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="no server profile 'tgi'; the profiles are llama-cpp"):
        FakeOpenAIServer(profile="tgi")
    server = FakeOpenAIServer()
    server.profile = "vllm"  # a name is taken too
    assert server.profile is PROFILES["vllm"]
    assert sorted(PROFILES) == ["llama-cpp-python", "llama-server", "ollama", "openai", "vllm"]


async def test_the_command_line_takes_a_profile() -> None:
    with server_process("--profile", "llama-cpp-python") as url:
        answer = await chat(url, response_format=json_schema())
        assert answer.status_code == 500
        sent = httpx2.get(url.removesuffix("/v1") + "/_evalkit/requests", timeout=10).json()
        assert sent[0]["response_format"]["type"] == "json_schema"
