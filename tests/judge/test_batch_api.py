"""Writing a batch's input file and reading its output and error files."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalkit.errors import JudgeError
from evalkit.judge import _batch_api as api
from evalkit.judge.transport._reply import Reply


def record(custom_id: Any, *, response: Any = None, error: Any = None) -> bytes:
    return json.dumps(
        {"id": "x", "custom_id": custom_id, "response": response, "error": error}
    ).encode()


COMPLETION = {
    "choices": [{"message": {"content": "hello"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2},
}


def test_lines_are_read_by_custom_id_from_every_file() -> None:
    output = b"\n".join(
        [
            record("ok", response={"status_code": 200, "body": COMPLETION}),
            b"not json",
            record(7, response={"status_code": 200, "body": COMPLETION}),  # no usable id
            b"",
        ]
    )
    errors = b"\n".join(
        [
            record("http", response={"status_code": 429, "body": {"error": {"message": "slow"}}}),
            record("error", error={"code": "batch_expired", "message": "too late"}),
            record("neither"),
        ]
    )
    lines = api.read_lines(output, errors)
    assert set(lines) == {"ok", "http", "error", "neither"}
    reply = lines["ok"].outcome("judge 'm'", "batch_1")
    assert isinstance(reply, Reply)
    assert (reply.content, reply.finish_reason) == ("hello", "stop")
    assert reply.usage is not None
    assert reply.usage.total_tokens == 5


@pytest.mark.parametrize(
    ("line", "code", "words"),
    [
        (api.Line(429, {"error": {"message": "slow down"}}), "429", "HTTP 429 slow down"),
        (api.Line(500, "upstream failed"), "500", "HTTP 500 upstream failed"),
        (api.Line(None, None, "batch_expired", "too late"), "batch_expired", "too late"),
        (api.Line(None, None, None, None), "batch_request_failed", "did not answer"),
        (api.Line(200, {"choices": []}), "bad_response", "not a chat completion"),
        (api.Line(200, "truncated {"), "bad_response", "not a chat completion"),
    ],
)
def test_a_line_without_a_completion_is_a_judge_error(
    line: api.Line, code: str, words: str
) -> None:
    error = line.outcome("judge 'm'", "batch_1")
    assert isinstance(error, JudgeError)
    assert error.code == code
    assert words in str(error)
    assert str(error).startswith("judge 'm': ")


def test_the_input_file_is_one_request_per_line() -> None:
    data = api.jsonl_line("a", {"model": "m", "messages": []}) + api.jsonl_line("b", {"model": "é"})
    assert data.endswith(b"\n")
    first, second = (json.loads(line) for line in data.decode().splitlines())
    assert first == {
        "custom_id": "a",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": []},
    }
    assert second["body"] == {"model": "é"}
