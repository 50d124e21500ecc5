"""Telling a refused request field or a context overflow from other error replies, on the bodies
real servers send (transport/_refusals.py)."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest

from evalkit.judge.transport._errors import translate_error
from evalkit.judge.transport._refusals import context_overflow, refused_field

LLAMA_CPP_PYTHON_500 = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input "
    "should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' "
    "or 'json_object'\"}}]"
)


def status_error(status: int, body: Any) -> openai.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    response = httpx2.Response(status, json=body, request=request)
    client = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:1/v1")
    return client._make_status_error_from_response(response)


def openai_error(message: str, *, param: str | None = None, code: str | None = None) -> Any:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


@pytest.mark.parametrize(
    ("status", "body", "field"),
    [
        (500, openai_error(LLAMA_CPP_PYTHON_500), "response_format"),
        (
            422,
            {
                "detail": [
                    {"loc": ["body", "response_format", "type"], "msg": "Input should be 'text'"}
                ]
            },
            "response_format",
        ),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "response_format type must be one of 'text', "
                    "'json_object', but got: json_schema",
                    "type": "invalid_request_error",
                }
            },
            "response_format",
        ),
        (
            400,
            openai_error(
                "Invalid value: 'json_schema'. Supported values are: 'text' and 'json_object'.",
                param="response_format.type",
            ),
            "response_format",
        ),
        (
            400,
            openai_error(
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                "'max_completion_tokens' instead.",
                param="max_tokens",
                code="unsupported_parameter",
            ),
            "max_tokens",
        ),
        (
            400,
            {
                "detail": [
                    {
                        "loc": ["body", "max_completion_tokens"],
                        "msg": "Extra inputs are not permitted",
                    }
                ]
            },
            "max_completion_tokens",
        ),
        (500, openai_error("CUDA out of memory"), None),
        (503, openai_error("response_format json_schema is not supported while loading"), None),
        (401, {"detail": "Invalid API key"}, None),
        (
            400,
            openai_error(
                "This model's maximum context length is 2048 tokens. However, you requested "
                "2300 tokens (2200 in the messages, 100 in the completion).",
                code="context_length_exceeded",
            ),
            None,
        ),
        (400, openai_error("max_tokens must be at least 1, got 0"), None),
    ],
)
def test_the_refused_field_is_read_from_the_body(status: int, body: Any, field: str | None) -> None:
    assert refused_field(status_error(status, body)) == field


def test_a_llama_server_overflow_gets_its_token_counts_in_the_message() -> None:
    body = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 9412,
            "n_ctx": 8192,
        }
    }
    error = status_error(400, body)
    said = context_overflow(error)
    assert said == (
        "the request exceeds the available context size, try increasing it "
        "(prompt 9412 tokens, context 8192 tokens)"
    )
    translated = translate_error(error, "judge 'm'", 60.0, 0)
    assert str(translated).startswith("judge 'm': HTTP 400: the prompt does not fit")
    assert str(translated).endswith("(prompt 9412 tokens, context 8192 tokens)")


def test_a_fastapi_validation_list_reads_as_its_locations_and_messages() -> None:
    body = {"detail": [{"loc": ["body", "temperature"], "msg": "Input should be a valid number"}]}
    translated = translate_error(status_error(422, body), "judge 'm'", 60.0, 0)
    assert str(translated) == "judge 'm': HTTP 422 temperature: Input should be a valid number"
