"""The local server's Batch API (``/v1/files``, ``/v1/batches``) through the official client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import openai
import pytest
from openai import AsyncOpenAI
from openai.types import Batch

from evalkit.testing import FakeOpenAIServer, Fault, Request, Response, Rule

TERMINAL = ("completed", "failed", "expired", "cancelled")


def line(custom_id: str, prompt: str) -> dict[str, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def jsonl(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(item).encode() + b"\n" for item in lines)


@pytest.fixture
async def client(server: FakeOpenAIServer) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as opened:
        yield opened


async def submit(client: AsyncOpenAI, data: bytes) -> Batch:
    uploaded = await client.files.create(file=("in.jsonl", data), purpose="batch")
    return await client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
    )


async def finished(client: AsyncOpenAI, batch: Batch) -> tuple[Batch, list[str]]:
    """Poll until the batch ends; return it and the statuses seen on the way."""
    seen: list[str] = [batch.status]
    with anyio.fail_after(60):
        while batch.status not in TERMINAL:
            await anyio.sleep(0.01)
            batch = await client.batches.retrieve(batch.id)
            if batch.status != seen[-1]:
                seen.append(batch.status)
    return batch, seen


async def lines_of(client: AsyncOpenAI, file_id: str | None) -> dict[str, dict[str, Any]]:
    if file_id is None:
        return {}
    content = await client.files.content(file_id)
    return {item["custom_id"]: item for item in map(json.loads, content.text.splitlines())}


async def test_a_batch_is_answered_by_the_chat_handler(
    server: FakeOpenAIServer, client: AsyncOpenAI
) -> None:
    server.add_rule(Rule("capital", reply={"answer": "Paris"}))
    server.batch_delay = 0.05
    batch = await submit(client, jsonl(line("a", "capital of France?"), line("b", "hello")))
    assert batch.status == "validating"
    assert batch.request_counts is not None
    batch, seen = await finished(client, batch)
    # A slow poll may miss in_progress; the timestamps say it happened, in order.
    assert seen in (["validating", "in_progress", "completed"], ["validating", "completed"])
    assert batch.in_progress_at is not None
    assert batch.finalizing_at is not None
    assert batch.completed_at is not None
    assert batch.created_at <= batch.in_progress_at <= batch.completed_at
    assert batch.request_counts is not None
    assert batch.request_counts == batch.request_counts.__class__(completed=2, failed=0, total=2)
    assert batch.error_file_id is None
    output = await lines_of(client, batch.output_file_id)
    assert set(output) == {"a", "b"}
    answer = output["a"]["response"]
    assert answer["status_code"] == 200
    assert answer["body"]["choices"][0]["message"]["content"] == '{"answer": "Paris"}'
    assert answer["body"]["usage"]["total_tokens"] > 0
    assert output["b"]["error"] is None
    stats = server.stats
    assert (stats.files, stats.batches, stats.batch_requests) == (1, 1, 2)
    assert stats.requests == 0  # batch lines are not online requests
    assert [body["messages"][0]["content"] for body in server.requests] == [
        "capital of France?",
        "hello",
    ]
    assert server.batches[0]["id"] == batch.id
    assert server.batches[0]["status"] == "completed"


async def test_files_can_be_read_back(client: AsyncOpenAI) -> None:
    data = jsonl(line("a", "x"))
    uploaded = await client.files.create(file=("in.jsonl", data), purpose="batch")
    assert (uploaded.bytes, uploaded.filename, uploaded.purpose) == (len(data), "in.jsonl", "batch")
    assert (await client.files.retrieve(uploaded.id)).id == uploaded.id
    assert (await client.files.content(uploaded.id)).content == data


@pytest.mark.parametrize(
    ("errors_in", "error_file", "output_file"),
    [
        ("error_file", {"bad", "hang", "gone"}, {"ok"}),
        ("output_file", {"hang", "gone"}, {"ok", "bad"}),
    ],
)
async def test_faults_become_error_lines(
    errors_in: Any, error_file: set[str], output_file: set[str]
) -> None:
    rules = [
        Rule("bad", fault=Fault.http(500)),
        Rule("hang", fault=Fault.hang()),
        Rule("gone", fault=Fault.disconnect()),
    ]
    async with (
        FakeOpenAIServer(rules, batch_errors_in=errors_in) as server,
        AsyncOpenAI(base_url=server.base_url, api_key="k") as client,
    ):
        data = jsonl(
            line("ok", "fine"), line("bad", "bad"), line("hang", "hang"), line("gone", "gone")
        )
        batch, _ = await finished(client, await submit(client, data))
        output = await lines_of(client, batch.output_file_id)
        errors = await lines_of(client, batch.error_file_id)
        assert server.stats.faults == 3
    assert batch.status == "completed"
    assert batch.request_counts is not None
    assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 3)
    assert set(output) == output_file
    assert set(errors) == error_file
    failed = {**output, **errors}["bad"]
    assert failed["response"]["status_code"] == 500
    assert failed["response"]["body"]["error"]["type"] == "server_error"
    assert errors["hang"]["response"] is None
    assert errors["hang"]["error"]["code"] == "request_timeout"
    assert errors["gone"]["error"]["code"] == "server_error"


async def test_a_malformed_body_fault_is_an_output_line_that_is_not_a_completion(
    server: FakeOpenAIServer, client: AsyncOpenAI
) -> None:
    server.add_rule(Rule(fault=Fault.malformed_body()))
    batch, _ = await finished(client, await submit(client, jsonl(line("a", "x"))))
    (only,) = (await lines_of(client, batch.output_file_id)).values()
    assert only["response"]["status_code"] == 200
    assert isinstance(only["response"]["body"], str)


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"not json\n", "invalid_json_line"),
        (jsonl(line("a", "x"), line("a", "y")), "duplicate_custom_id"),
        (jsonl({**line("a", "x"), "url": "/v1/embeddings"}), "invalid_url"),
        (jsonl({**line("a", "x"), "method": "GET"}), "invalid_method"),
        (b"\n", "empty_file"),
    ],
)
async def test_an_invalid_input_file_fails_the_batch(
    client: AsyncOpenAI, data: bytes, code: str
) -> None:
    batch, seen = await finished(client, await submit(client, data))
    assert seen == ["validating", "failed"]
    assert batch.errors is not None
    assert batch.errors.data is not None
    assert batch.errors.data[0].code == code
    assert batch.output_file_id is None


async def test_batches_can_be_told_to_fail_or_expire(
    server: FakeOpenAIServer, client: AsyncOpenAI
) -> None:
    server.batch_outcome = "failed"
    failed, _ = await finished(client, await submit(client, jsonl(line("a", "x"))))
    server.batch_outcome = "expired"
    expired, _ = await finished(client, await submit(client, jsonl(line("a", "x"))))
    server.batch_outcome = "completed"
    completed, _ = await finished(client, await submit(client, jsonl(line("a", "x"))))
    assert (failed.status, expired.status, completed.status) == ("failed", "expired", "completed")
    assert failed.errors is not None
    assert failed.errors.data is not None
    assert failed.errors.data[0].code == "evalkit_injected_failure"
    assert expired.output_file_id is None
    errors = await lines_of(client, expired.error_file_id)
    assert errors["a"]["error"]["code"] == "batch_expired"
    assert server.stats.batch_requests == 1  # only the completed batch was answered
    with pytest.raises(ValueError, match="batch_outcome"):
        server.batch_outcome = "late"  # type: ignore[assignment]


async def test_a_cancelled_batch_keeps_the_answers_it_has(
    server: FakeOpenAIServer, client: AsyncOpenAI
) -> None:
    server.batch_delay = 10.0
    batch = await submit(client, jsonl(line("a", "x"), line("b", "y")))
    with anyio.fail_after(60):
        while server.stats.batch_requests < 2:
            await anyio.sleep(0.01)
    cancelling = await client.batches.cancel(batch.id)
    assert cancelling.status == "cancelling"
    batch, _ = await finished(client, cancelling)
    assert batch.status == "cancelled"
    assert batch.cancelled_at is not None
    assert set(await lines_of(client, batch.output_file_id)) == {"a", "b"}
    with pytest.raises(openai.BadRequestError, match="Cannot cancel"):
        await client.batches.cancel(batch.id)


async def test_unknown_ids_and_bad_requests(client: AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        await client.batches.retrieve("batch_nope")
    with pytest.raises(openai.NotFoundError):
        await client.files.content("file-nope")
    with pytest.raises(openai.NotFoundError):
        await client.batches.create(
            input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h"
        )
    other = await client.files.create(file=("in.jsonl", b"{}"), purpose="user_data")
    with pytest.raises(openai.BadRequestError, match="purpose"):
        await client.batches.create(
            input_file_id=other.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
    uploaded = await client.files.create(file=("in.jsonl", b"{}"), purpose="batch")
    with pytest.raises(openai.BadRequestError, match="batches only"):
        await client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h"
        )


async def test_the_batch_api_needs_the_key_when_one_is_set() -> None:
    async with (
        FakeOpenAIServer(api_key="secret") as server,
        AsyncOpenAI(base_url=server.base_url, api_key="wrong", max_retries=0) as client,
    ):
        with pytest.raises(openai.AuthenticationError):
            await client.files.create(file=("in.jsonl", b"{}"), purpose="batch")
        with pytest.raises(openai.AuthenticationError):
            await client.batches.retrieve("batch_x")
        assert server.stats.files == 0


async def test_counters_reset_but_batches_survive(
    server: FakeOpenAIServer, client: AsyncOpenAI
) -> None:
    batch, _ = await finished(client, await submit(client, jsonl(line("a", "x"))))
    server.reset()
    assert (server.stats.files, server.stats.batches, server.stats.batch_requests) == (0, 0, 0)
    assert (await client.batches.retrieve(batch.id)).status == "completed"


async def test_routes_with_path_parameters(server: FakeOpenAIServer) -> None:
    async def item(request: Request) -> Response:
        return Response.json(request.params)

    server.add_route("GET", "/v1/things/{thing}/parts/{part}", item)
    async with httpx2.AsyncClient(base_url=server.url) as http:
        found = await http.get("/v1/things/a1/parts/b2")
        wrong_method = await http.post("/v1/things/a1/parts/b2")
        empty_segment = await http.get("/v1/things//parts/b2")
    assert found.json() == {"thing": "a1", "part": "b2"}
    assert wrong_method.status_code == 405
    assert empty_segment.status_code == 404


def test_batch_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="batch_outcome"):
        FakeOpenAIServer(batch_outcome="late")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_errors_in"):
        FakeOpenAIServer(batch_errors_in="nowhere")  # type: ignore[arg-type]
