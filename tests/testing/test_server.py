"""The shipped local OpenAI-compatible server, exercised over real sockets."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from openai import AsyncOpenAI

from evalkit.testing import FakeOpenAIServer, Fault, RateLimitPolicy, Request, Response, Rule

SCHEMA = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "enum": ["good", "bad"]},
        "score": {"type": "number", "minimum": 0, "maximum": 10},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
    },
    "required": ["label", "score", "tags"],
    "additionalProperties": False,
}


def chat(prompt: str = "hello", **extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": prompt}],
        **extra,
    }


@pytest.fixture
async def http(server: FakeOpenAIServer) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(base_url=server.url, timeout=60) as client:
        yield client


async def completion_content(http: httpx2.AsyncClient, body: dict[str, Any]) -> Any:
    response = await http.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


async def test_works_with_the_official_client(server: FakeOpenAIServer) -> None:
    async with AsyncOpenAI(base_url=server.base_url, api_key="k") as client:
        completion = await client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "Say hi"}]
        )
        models = await client.models.list()
    assert completion.model == "gpt-test"
    assert completion.choices[0].message.content
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.total_tokens > 0
    assert [m.id for m in models.data] == ["evalkit-fake"]


async def test_json_schema_reply_is_a_valid_instance(
    server: FakeOpenAIServer, http: httpx2.AsyncClient
) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA, "strict": True}}
    content = await completion_content(http, chat(response_format=fmt))
    value = json.loads(content)
    jsonschema.validate(value, SCHEMA)
    assert value == {"label": "good", "score": 5.0, "tags": ["fake", "fake"]}


async def test_json_mode_reply_follows_a_schema_written_in_the_prompt(
    http: httpx2.AsyncClient,
) -> None:
    prompt = f"Grade it. Schema:\n```json\n{json.dumps(SCHEMA)}\n```"
    content = await completion_content(http, chat(prompt, response_format={"type": "json_object"}))
    jsonschema.validate(json.loads(content), SCHEMA)
    plain = await completion_content(http, chat(response_format={"type": "json_object"}))
    assert json.loads(plain) == {}


async def test_text_reply_by_default(http: httpx2.AsyncClient) -> None:
    content = await completion_content(http, chat("abc"))
    assert content == "This is a reply from the evalkit test server to a 7-character prompt."


async def test_usage_is_derived_from_text_length() -> None:
    async with (
        FakeOpenAIServer(
            [Rule(reply="x" * 40)], cache_ratio=0.25, reasoning_tokens=3, cost_per_token=0.5
        ) as server,
        httpx2.AsyncClient(base_url=server.url) as http,
    ):
        response = await http.post("/v1/chat/completions", json=chat("y" * 397))
    usage = response.json()["usage"]
    # (3 + 397) chars / 4 + 4 per message + 3
    assert usage["prompt_tokens"] == 100 + 8 + 3
    assert usage["completion_tokens"] == 10 + 3
    assert usage["total_tokens"] == 111 + 13
    assert usage["prompt_tokens_details"]["cached_tokens"] == 27
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 3
    assert usage["cost"] == 124 * 0.5


async def test_a_rule_scripts_the_usage_sent_as_given() -> None:
    odd = {"completion_tokens": 10**20, "completion_tokens_details": {"reasoning_tokens": 1e20}}
    async with (
        FakeOpenAIServer([Rule("odd", reply="x" * 40, usage=odd), Rule(reply="y")]) as server,
        httpx2.AsyncClient(base_url=server.url) as http,
    ):
        first = await http.post("/v1/chat/completions", json=chat("odd"))
        second = await http.post("/v1/chat/completions", json=chat("plain"))
    usage = first.json()["usage"]
    assert '"completion_tokens":100000000000000000000' in first.text
    assert usage["completion_tokens"] == 10**20
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 1e20
    assert usage["completion_tokens_details"]["audio_tokens"] == 0  # merged, not replaced
    assert 0 < usage["prompt_tokens"] < 100  # the counts it does not name are computed
    assert second.json()["usage"]["completion_tokens"] == 1


async def test_rules_match_substring_or_regex_in_order(
    server: FakeOpenAIServer, http: httpx2.AsyncClient
) -> None:
    server.add_rule(Rule("capital", reply="Paris"))
    server.add_rule(Rule(re.compile(r"\d+ \+ \d+"), reply={"answer": 4}))
    server.add_rule(Rule("sys", reply=lambda body: body["model"].upper()))
    assert await completion_content(http, chat("What is the capital?")) == "Paris"
    assert json.loads(await completion_content(http, chat("2 + 2"))) == {"answer": 4}
    # "sys" is in the system message, which rules search too
    assert await completion_content(http, chat("anything")) == "M"
    assert server.rules[0].match == "capital"


async def test_rule_times_and_response_format_filter(
    server: FakeOpenAIServer, http: httpx2.AsyncClient
) -> None:
    server.add_rule(Rule(reply="once", times=1))
    server.add_rule(Rule(reply="json only", response_format="json_object"))
    assert await completion_content(http, chat()) == "once"
    assert await completion_content(http, chat()) != "once"
    fmt = {"type": "json_object"}
    assert await completion_content(http, chat(response_format=fmt)) == "json only"


async def test_probabilistic_faults_are_reproducible_with_a_seed() -> None:
    async def statuses(seed: int) -> list[int]:
        rule = Rule(fault=Fault.http(503), probability=0.3)
        async with (
            FakeOpenAIServer([rule], seed=seed) as server,
            httpx2.AsyncClient(base_url=server.url) as http,
        ):
            return [
                (await http.post("/v1/chat/completions", json=chat())).status_code
                for _ in range(40)
            ]

    first, again, other = await statuses(7), await statuses(7), await statuses(8)
    assert first == again
    assert first != other
    assert 0 < first.count(503) < 40
    assert set(first) == {200, 503}


async def test_rate_limit_fault_sends_retry_after(
    server: FakeOpenAIServer, http: httpx2.AsyncClient
) -> None:
    server.add_rule(Rule(fault=Fault.rate_limit(retry_after=1.5)))
    response = await http.post("/v1/chat/completions", json=chat())
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1.5"
    assert response.headers["retry-after-ms"] == "1500"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    assert server.stats.faults == 1
    assert server.stats.completions == 0


async def test_malformed_body_fault(server: FakeOpenAIServer, http: httpx2.AsyncClient) -> None:
    server.add_rule(Rule(fault=Fault.malformed_body()))
    response = await http.post("/v1/chat/completions", json=chat())
    assert response.status_code == 200
    with pytest.raises(ValueError, match=r"Unterminated string|Expecting"):
        response.json()


async def test_hang_and_disconnect_faults(
    server: FakeOpenAIServer, http: httpx2.AsyncClient
) -> None:
    server.add_rule(Rule("hang", fault=Fault.hang()))
    server.add_rule(Rule("drop", fault=Fault.disconnect()))
    server.add_rule(Rule("short", fault=Fault.hang(0.01)))
    with pytest.raises(httpx2.ReadTimeout):
        # Only the wait for the reply is short: connecting on a loaded machine may take longer.
        await http.post(
            "/v1/chat/completions", json=chat("hang"), timeout=httpx2.Timeout(60, read=0.2)
        )
    for prompt in ("drop", "short"):
        with pytest.raises(httpx2.RemoteProtocolError):
            await http.post("/v1/chat/completions", json=chat(prompt))
    assert server.stats.in_flight == 1  # the hanging request, until the server stops


async def test_latency_and_counters() -> None:
    async with FakeOpenAIServer(latency=0.05) as server:
        async with httpx2.AsyncClient(base_url=server.url) as http, anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(lambda: http.post("/v1/chat/completions", json=chat()))
        stats = server.stats
    assert (stats.requests, stats.completions, stats.in_flight) == (5, 5, 0)
    assert stats.max_in_flight == 5
    assert len(server.requests) == 5


async def test_rule_latency_overrides_server_latency(
    server: FakeOpenAIServer, http: httpx2.AsyncClient
) -> None:
    server.latency = 120.0
    server.add_rule(Rule(latency=0.0, reply="quick"))
    with anyio.fail_after(60):
        assert await completion_content(http, chat()) == "quick"


async def test_reset_restores_constructor_rules_and_zeroes_counters() -> None:
    async with (
        FakeOpenAIServer([Rule(reply="initial", times=1)]) as server,
        httpx2.AsyncClient(base_url=server.url) as client,
    ):
        server.add_rule(Rule(reply="added"))
        assert await completion_content(client, chat()) == "initial"
        assert await completion_content(client, chat()) == "added"
        server.reset()
        assert server.stats.requests == 0
        assert server.requests == []
        assert await completion_content(client, chat()) == "initial"
        assert len(server.rules) == 1
        assert (await client.get("/_evalkit/stats")).json()["requests"] == 1
        assert (await client.post("/_evalkit/reset")).json()["requests"] == 0
        assert server.stats.requests == 0


async def test_api_key_is_enforced_when_set() -> None:
    async with (
        FakeOpenAIServer(api_key="secret") as server,
        httpx2.AsyncClient(base_url=server.url) as http,
    ):
        denied = await http.post("/v1/chat/completions", json=chat())
        allowed = await http.post(
            "/v1/chat/completions", json=chat(), headers={"authorization": "Bearer secret"}
        )
    assert denied.status_code == 401
    assert denied.json()["error"]["code"] == "invalid_api_key"
    assert allowed.status_code == 200


async def test_the_models_list_needs_the_key_when_one_is_set_and_is_counted() -> None:
    async with (
        FakeOpenAIServer(api_key="secret") as server,
        httpx2.AsyncClient(base_url=server.url) as http,
    ):
        denied = await http.get("/v1/models")
        allowed = await http.get("/v1/models", headers={"authorization": "Bearer secret"})
        stats = server.stats
    assert denied.status_code == 401
    assert denied.json()["error"]["code"] == "invalid_api_key"
    assert allowed.status_code == 200
    assert (stats.models, stats.requests) == (2, 0)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "must be a JSON object"),
        (b'{"messages": [{"role": "user", "content": "x"}]}', "'model' is required"),
        (b'{"model": "m", "messages": []}', "'messages' is required"),
        (b'{"model": "m", "messages": [{"role": "user"}], "stream": true}', "not supported"),
    ],
)
async def test_invalid_requests_get_openai_shaped_400s(
    http: httpx2.AsyncClient, content: bytes, message: str
) -> None:
    response = await http.post(
        "/v1/chat/completions", content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert message in error["message"]
    assert error["type"] == "invalid_request_error"


async def test_unknown_routes_and_methods(http: httpx2.AsyncClient) -> None:
    assert (await http.get("/v1/nothing")).status_code == 404
    assert (await http.get("/v1/chat/completions")).status_code == 405
    assert (await http.get("/v1/models?limit=1")).status_code == 200


async def test_keep_alive_serves_many_requests_on_one_connection(
    server: FakeOpenAIServer,
) -> None:
    limits = httpx2.Limits(max_connections=1)
    async with httpx2.AsyncClient(base_url=server.url, limits=limits) as http:
        for _ in range(20):
            assert (await http.post("/v1/chat/completions", json=chat())).status_code == 200
            assert (await http.get("/v1/models")).headers["connection"] == "keep-alive"
    assert server.stats.requests == 20


def test_port_is_unknown_until_started() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        _ = FakeOpenAIServer().base_url
    assert FakeOpenAIServer(port=8123).base_url == "http://127.0.0.1:8123/v1"


def test_runs_as_a_module_from_the_command_line() -> None:
    cmd = [sys.executable, "-m", "evalkit.testing.server", "--port", "0", "--latency", "0.001"]
    cmd += ["--fault", "429", "--fault-rate", "1", "--retry-after", "2"]
    cmd += ["--batch-delay", "0.05", "--batch-errors-in", "output_file"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.fullmatch(
            r"evalkit test server listening on (http://127\.0\.0\.1:\d+/v1)\n", line
        )
        assert match, line
        with httpx2.Client(timeout=60) as http:
            response = http.post(f"{match[1]}/chat/completions", json=chat())
            request = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions"}
            data = json.dumps({**request, "body": chat()}).encode()
            upload = http.post(
                f"{match[1]}/files", files={"file": ("in.jsonl", data)}, data={"purpose": "batch"}
            )
            created = http.post(
                f"{match[1]}/batches",
                json={
                    "input_file_id": upload.json()["id"],
                    "endpoint": "/v1/chat/completions",
                    "completion_window": "24h",
                },
            ).json()
            batch = created
            deadline = time.monotonic() + 60  # a batch delay of 50 ms: far above what it needs
            while batch["status"] != "completed" and time.monotonic() < deadline:
                time.sleep(0.01)
                batch = http.get(f"{match[1]}/batches/{created['id']}").json()
            output = http.get(f"{match[1]}/files/{batch['output_file_id']}/content").json()
        assert response.status_code == 429
        assert response.headers["retry-after"] == "2"
        assert created["status"] == "validating"
        assert batch["status"] == "completed"
        # The 429 fault answers the batch line too, and errors go to the output file.
        assert output["response"]["status_code"] == 429
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 0, stderr
    assert stderr == ""


async def test_a_failing_handler_answers_500_and_the_server_keeps_serving(
    server: FakeOpenAIServer, http: httpx2.AsyncClient
) -> None:
    def explode(body: dict[str, Any]) -> str:
        raise RuntimeError("scripted reply exploded")

    server.add_rule(Rule("boom", reply=explode))
    response = await http.post("/v1/chat/completions", json=chat("boom"))
    assert response.status_code == 500
    assert "RuntimeError: scripted reply exploded" in response.json()["error"]["message"]
    assert (await http.post("/v1/chat/completions", json=chat("fine"))).status_code == 200


async def test_custom_routes_extend_the_server(
    server: FakeOpenAIServer, http: httpx2.AsyncClient
) -> None:
    async def files(request: Request) -> Response:
        return Response.json({"object": "list", "data": [], "query": request.query}, 201)

    server.add_route("GET", "/v1/files", files)
    response = await http.get("/v1/files?purpose=batch")
    assert response.status_code == 201
    assert response.json()["query"] == "purpose=batch"


async def test_fault_headers_and_error_code(
    server: FakeOpenAIServer, http: httpx2.AsyncClient
) -> None:
    quota = Fault.http(429, "Quota spent", code="insufficient_quota", headers={"x-a": "1"})
    server.add_rule(Rule("quota", fault=quota))
    server.add_rule(Rule("bare", fault=Fault.rate_limit(None)))
    response = await http.post("/v1/chat/completions", json=chat("quota"))
    assert response.status_code == 429
    assert response.headers["x-a"] == "1"
    assert "retry-after" not in response.headers
    assert response.json()["error"]["code"] == "insufficient_quota"
    response = await http.post("/v1/chat/completions", json=chat("bare"))
    assert response.status_code == 429
    assert "retry-after" not in response.headers
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


async def test_rate_limit_policy_counts_requests_per_window_with_headers() -> None:
    policy = RateLimitPolicy(requests=2, window=60.0)
    async with (
        FakeOpenAIServer(rate_limit=policy) as server,
        httpx2.AsyncClient(base_url=server.url, timeout=60) as http,
    ):
        responses = [await http.post("/v1/chat/completions", json=chat()) for _ in range(3)]
        stats = server.stats
    assert [r.status_code for r in responses] == [200, 200, 429]
    first, second, refused = (r.headers for r in responses)
    assert first["x-ratelimit-limit-requests"] == "2"
    assert first["x-ratelimit-remaining-requests"] == "1"
    assert second["x-ratelimit-remaining-requests"] == "0"
    assert re.fullmatch(r"59(\.\d+)?s", second["x-ratelimit-reset-requests"])
    assert refused["x-ratelimit-remaining-requests"] == "0"
    assert 59 < float(refused["retry-after"]) <= 60  # what is left of the window
    assert "x-ratelimit-limit-tokens" not in first
    assert (stats.requests, stats.completions, stats.rate_limited, stats.faults) == (3, 2, 1, 0)


async def test_rate_limit_policy_tokens_and_a_fixed_retry_after() -> None:
    policy = RateLimitPolicy(tokens=30, window=0.2, retry_after=1.0)
    async with (
        FakeOpenAIServer(rate_limit=policy) as server,
        httpx2.AsyncClient(base_url=server.url, timeout=60) as http,
    ):
        first = await http.post("/v1/chat/completions", json=chat("x" * 100))
        refused = await http.post("/v1/chat/completions", json=chat())
        await anyio.sleep(0.25)  # a new window
        again = await http.post("/v1/chat/completions", json=chat())
        assert server.stats.rate_limited == 1
    used = first.json()["usage"]["total_tokens"]
    assert used >= 30
    assert first.headers["x-ratelimit-remaining-tokens"] == "0"
    assert first.headers["x-ratelimit-limit-tokens"] == "30"
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    assert again.status_code == 200
    assert int(again.headers["x-ratelimit-remaining-tokens"]) < 30


async def test_arrivals_are_recorded_in_order(
    server: FakeOpenAIServer, http: httpx2.AsyncClient
) -> None:
    for _ in range(3):
        await completion_content(http, chat())
    arrivals = server.arrivals
    assert len(arrivals) == 3
    assert arrivals == sorted(arrivals)
    server.reset()
    assert server.arrivals == []
