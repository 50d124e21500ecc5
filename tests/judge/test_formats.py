"""Format refusals, the fallback ladder and the per-endpoint memory, against the test server's
profiles of the servers people run (issue 20, points 1 and 2)."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import anyio
import httpx2
import pytest

from evalkit import Judge, run_evals
from evalkit.errors import ConfigError
from evalkit.judge import PreparedRequest, ScoreSpec, ask
from evalkit.scorers import llm_rubric
from evalkit.testing import (
    PROFILES,
    FakeOpenAIServer,
    Fault,
    Rule,
    ServerProfile,
    server_process,
)

REFUSES_ALL = dataclasses.replace(PROFILES["llama-cpp-python"], formats=frozenset())
ROWS = [{"input": f"Question {i}?", "output": f"Answer {i}."} for i in range(60)]


def judge_for(server: FakeOpenAIServer, key_env: str, **options: Any) -> Judge:
    return Judge("fake-judge", base_url=server.base_url, api_key_env=key_env, **options)


def formats_sent(server: FakeOpenAIServer) -> list[str]:
    kinds = []
    for body in server.requests:
        fmt = body.get("response_format")
        kind = fmt["type"] if fmt else "text"
        kinds.append(f"{kind}+schema" if fmt and "schema" in fmt else kind)
    return kinds


async def ask_score(judge: Judge, prompt: str = "Grade this.") -> Any:
    return await ask(PreparedRequest(judge), prompt, ScoreSpec(), time.perf_counter())


@pytest.mark.parametrize(
    ("profile", "most_requests"),
    [
        (PROFILES["llama-cpp-python"], 60 + 8),  # json_schema → 500, once per item in flight
        (REFUSES_ALL, 60 + 2 * 8),  # json_schema and json_object refused: the prompt alone
    ],
    ids=["json_schema-500", "refuses-every-format"],
)
async def test_llm_rubric_scores_every_item_with_about_one_request_each(
    judge_key: str, profile: ServerProfile, most_requests: int
) -> None:
    async with FakeOpenAIServer(profile=profile) as server:
        judge = judge_for(server, judge_key)
        scorer = llm_rubric(judge=judge, rubric="Answers the question.")
        result = await run_evals(ROWS, [scorer], store=None, progress=False, concurrency=8)
        frame = result.to_pandas()
        assert list(frame["status"]) == ["success"] * 60
        assert set(frame["score"]) == {0.5}
        # Counted at the server: no refused request was retried, and once the refusal was
        # seen the later items went straight to the shape the server takes.
        assert server.stats.requests <= most_requests <= 2 * 60
        assert formats_sent(server).count("json_schema") <= 8
        server.reset()
        await run_evals(ROWS[:10], [scorer], store=None, progress=False)
        expected = "json_object+schema" if profile is not REFUSES_ALL else "text"
        assert formats_sent(server) == [expected] * 10


@pytest.mark.parametrize("mode", ["concurrency", "tokens"])
async def test_calls_queued_behind_the_first_refusal_go_straight_to_the_working_format(
    judge_key: str, mode: str
) -> None:
    # One call at a time: the first is refused, and every call that queued behind it (built
    # before the refusal was seen) is sent in the format learned, not refused once more.
    async with FakeOpenAIServer(profile="llama-cpp-python") as server:
        options: dict[str, Any] = {"max_concurrency": 1}
        if mode == "tokens":
            options["tpm"] = 10_000_000  # a token estimate is made before the call queues
        judge = judge_for(server, judge_key, **options)
        outcomes: list[Any] = []

        async def one(index: int) -> None:
            outcomes.append(await ask_score(judge, f"Grade answer {index}."))

        async with anyio.create_task_group() as group:
            for index in range(12):
                group.start_soon(one, index)
        refused = formats_sent(server).count("json_schema")
        assert refused == 1
        assert server.stats.requests == 12 + 1
    assert [o.value for o in outcomes] == [0.5] * 12
    attempts = sorted(o.execution.attempt_count for o in outcomes)
    assert attempts == [1] * 11 + [2]
    queued = [o.execution.attempts for o in outcomes if o.execution.attempt_count == 1]
    assert {a[0].format for a in queued} == {"json_object+schema"}


async def test_a_refusal_is_not_retried_and_the_fallback_carries_the_schema(
    judge_key: str,
) -> None:
    async with FakeOpenAIServer(profile="llama-cpp-python") as server:
        asked = await ask_score(judge_for(server, judge_key, max_retries=3))
        assert asked.error is None
        assert asked.value == 0.5
        assert formats_sent(server) == ["json_schema", "json_object+schema"]
        schema = server.requests[1]["response_format"]["schema"]
        assert schema["required"] == ["score"]
        execution = asked.execution
        assert (execution.status, execution.attempt_count, execution.model_call_count) == (
            "success",
            2,
            1,
        )


async def test_the_prompt_mode_takes_the_json_out_of_a_reply_in_prose(judge_key: str) -> None:
    async with FakeOpenAIServer(profile=REFUSES_ALL) as server:
        asked = await ask_score(judge_for(server, judge_key))
        assert formats_sent(server) == ["json_schema", "json_object+schema", "text"]
        assert asked.value == 0.5
        assert asked.execution.attempt_count == 3
        assert "Here is my answer" not in str(asked.execution.output)


@pytest.mark.parametrize("name", ["llama-server", "vllm", "ollama", "openai"])
async def test_each_servers_own_refusal_is_recognised(judge_key: str, name: str) -> None:
    profile = dataclasses.replace(PROFILES[name], formats=frozenset({"json_object"}))
    async with FakeOpenAIServer(profile=profile) as server:
        asked = await ask_score(judge_for(server, judge_key, max_retries=2))
        assert asked.error is None, asked.error
        assert formats_sent(server)[0] == "json_schema"
        assert len(server.requests) == 2


async def test_a_pinned_mode_is_sent_first_and_a_refusal_of_it_is_an_error(
    judge_key: str,
) -> None:
    async with FakeOpenAIServer(profile="llama-cpp-python") as server:
        pinned = judge_for(server, judge_key, structured_output="json_schema", max_retries=3)
        asked = await ask_score(pinned)
        assert asked.error is not None
        assert "response_format" in str(asked.error)
        assert asked.execution.attempt_count == 1
        assert server.stats.requests == 1  # not retried
        server.reset()
        for mode in ("prompt", "json_object"):
            asked = await ask_score(judge_for(server, judge_key, structured_output=mode))
            assert asked.value == 0.5
        assert formats_sent(server) == ["text", "json_object+schema"]


async def test_a_format_failure_falls_back_once_with_the_schema(judge_key: str) -> None:
    async with FakeOpenAIServer(
        [Rule(reply="not json", response_format="json_schema")], profile="llama-server"
    ) as server:
        asked = await ask_score(judge_for(server, judge_key))
        assert asked.value == 0.5
        assert formats_sent(server) == ["json_schema", "json_object+schema"]
        server.reset()
        server.add_rule(Rule(reply="not json"))
        asked = await ask_score(judge_for(server, judge_key))
        assert asked.error is not None
        assert "after 2 attempts (json_schema, then json_object with the schema)" in str(
            asked.error
        )
        # A format failure is no refusal: the next call still starts with json_schema.
        assert formats_sent(server)[0] == "json_schema"


def test_openai_own_endpoint_gets_bare_json_mode_and_one_length_field() -> None:
    judge = Judge("o3-mini", base_url="https://api.openai.com/v1", max_tokens=50)
    request = PreparedRequest(judge)
    body = request.body("x", {})
    assert body["max_completion_tokens"] == 50
    assert "max_tokens" not in body
    assert request.official
    local = PreparedRequest(judge.replace(base_url="http://127.0.0.1:1/v1"))
    assert local.body("x", {})["max_tokens"] == 50
    assert not local.official


def test_structured_output_is_checked() -> None:
    with pytest.raises(ConfigError, match="structured_output must be 'auto', 'json_schema'"):
        Judge("m", structured_output="grammar")  # type: ignore[arg-type]
    assert Judge("m").structured_output == "auto"
    assert Judge("m", structured_output="prompt").explicit_fields == {"model", "structured_output"}


def test_the_memory_is_shared_by_threads_and_event_loops(judge_key: str) -> None:
    def requests_at(url: str) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = httpx2.get(
            url.removesuffix("/v1") + "/_evalkit/requests"
        ).json()
        return sent

    with server_process("--profile", "llama-cpp-python") as url:
        judge = Judge("fake-judge", base_url=url, api_key_env=judge_key)
        values: list[Any] = []

        def five_calls() -> None:
            async def calls() -> None:
                for _ in range(5):
                    values.append((await ask_score(judge)).value)

            anyio.run(calls)

        threads = [threading.Thread(target=five_calls) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert values == [0.5] * 20
        sent = requests_at(url)
        schema_first = [body for body in sent if body["response_format"]["type"] == "json_schema"]
        assert len(schema_first) <= 4  # at most each thread's first call before one learnt
        assert len(sent) == 20 + len(schema_first)
        anyio.run(ask_score, judge)  # a new loop in this thread: straight to JSON mode
        assert requests_at(url)[-1]["response_format"]["type"] == "json_object"
        assert len(requests_at(url)) == len(sent) + 1


async def test_a_refused_schema_field_leaves_bare_json_mode(judge_key: str) -> None:
    no_schema = Fault.http(
        400, "response_format: Additional properties are not allowed ('schema' was unexpected)"
    )
    rules = [
        Rule(response_format="json_schema", fault=Fault.http(400, "json_schema is not supported")),
        Rule(match=None, response_format="json_object", fault=no_schema, times=1),
    ]
    async with FakeOpenAIServer(rules) as server:
        judge = judge_for(server, judge_key)
        asked = await ask_score(judge)
        assert asked.value == 0.5
        assert formats_sent(server) == ["json_schema", "json_object+schema", "json_object"]
        await ask_score(judge)
        assert formats_sent(server)[-1] == "json_object"
        assert server.stats.requests == 4


async def test_a_refusal_of_one_schema_is_not_remembered(judge_key: str) -> None:
    invalid = Fault.http(
        400,
        "Invalid schema for response_format 'score': In context=(), 'additionalProperties' "
        "is required to be supplied and to be false.",
    )
    async with FakeOpenAIServer([Rule(fault=invalid, times=1)]) as server:
        judge = judge_for(server, judge_key)
        assert (await ask_score(judge)).value == 0.5
        assert (await ask_score(judge)).value == 0.5
        assert formats_sent(server) == ["json_schema", "json_object+schema", "json_schema"]
