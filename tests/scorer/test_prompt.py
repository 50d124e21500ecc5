"""Prompt steps end to end, over real sockets against the shipped local server."""

from __future__ import annotations

import datetime as dt
import enum
import json
import re
from functools import partial
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from evalkit import (
    ConfigError,
    Judge,
    JudgeError,
    JudgeUsage,
    PromptStep,
    ScorerRunError,
    create_scorer,
)
from evalkit.testing import FakeOpenAIServer, Fault, Rule

VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["yes", "no"]},
        "reasons": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    "required": ["verdict", "reasons"],
}


class Label(enum.Enum):
    GOOD = "good"
    BAD = "bad"


class Claims(BaseModel):
    claims: list[str]
    relevant: bool
    weight: float = 1.0


def score_step(text: str = "Rate the answer") -> PromptStep:
    return PromptStep("score", lambda run: f"{text}: {run.output}")


async def run_failing(scorer: Any) -> ScorerRunError:
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(input="What is 2+2?", output="4", run_id="r-1")
    return info.value


async def test_score_and_reason_prompt_steps(server: FakeOpenAIServer, judge: Judge) -> None:
    server.add_rule(Rule("Rate", reply={"score": 0.75}))
    server.add_rule(Rule("Explain", reply="The answer is correct but terse."))
    scorer = (
        create_scorer("Quality", judge=judge)
        .generate_score(score_step())
        .generate_reason(PromptStep("why", lambda score, run: f"Explain {score} for {run.output}"))
    )
    result = await scorer.run(input="What is 2+2?", output="4")

    assert result.score == 0.75
    assert result.reason == "The answer is correct but terse."
    assert result.generate_score_prompt == "Rate the answer: 4"
    assert result.generate_reason_prompt == "Explain 0.75 for 4"
    score_exec = result.judge["generate_score"].executions[0]
    assert (score_exec.status, score_exec.output) == ("success", {"score": 0.75})
    assert (score_exec.attempt_count, score_exec.model_call_count) == (1, 1)
    assert score_exec.judge_model_id == "fake-judge"
    assert score_exec.judge_provider == "openai"
    assert score_exec.usage is not None
    used = score_exec.usage
    assert used.input_tokens is not None
    assert used.output_tokens is not None
    assert used.input_tokens > 0
    assert used.total_tokens == used.input_tokens + used.output_tokens
    assert score_exec.duration_ms > 0
    reason_exec = result.judge["generate_reason"].executions[0]
    assert reason_exec.output == "The answer is correct but terse."
    assert reason_exec.cost is None  # the server reported none


async def test_instructions_are_the_system_message_and_score_uses_strict_schema(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    scorer = create_scorer("Quality", judge=judge).generate_score(score_step())
    await scorer.run(input="q", output="4")

    (body,) = server.requests
    assert body["messages"] == [
        {"role": "system", "content": "You are a strict grader."},
        {"role": "user", "content": "Rate the answer: 4"},
    ]
    assert body["model"] == "fake-judge"
    assert body["temperature"] == 0.0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == ["score"]


async def test_reason_is_asked_as_plain_text(server: FakeOpenAIServer, judge: Judge) -> None:
    scorer = (
        create_scorer("Quality", judge=judge)
        .generate_score(lambda: 1)
        .generate_reason(PromptStep("why", lambda score: f"Why {score}?"))
    )
    result = await scorer.run(input="q", output="a")
    (body,) = server.requests
    assert "response_format" not in body
    assert result.reason
    assert "reply from the evalkit test server" in result.reason
    assert "generate_score" not in result.judge  # function steps create no judge entries


async def test_analyze_with_json_schema_yields_the_validated_value(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    step = PromptStep(
        "verdict", lambda run: f"Is {run.output} right?", output_schema=VERDICT_SCHEMA
    )
    scorer = (
        create_scorer("Verdict", judge=judge)
        .analyze(step)
        .generate_score(lambda results: float(results.analyze_step_result["verdict"] == "yes"))
    )
    result = await scorer.run(input="2+2?", output="4")

    assert result.analyze_step_result == {"verdict": "yes", "reasons": ["fake"]}
    assert result.score == 1.0
    assert result.analyze_prompt == "Is 4 right?"
    execution = result.judge["analyze"].executions[0]
    assert execution.output == result.analyze_step_result
    fmt = server.requests[0]["response_format"]["json_schema"]
    # The user's schema did not forbid extras: closing it is safe, so it is asked strictly.
    assert fmt["strict"] is True
    assert fmt["schema"]["additionalProperties"] is False


async def test_analyze_with_pydantic_model_yields_its_json_dump(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Claims in", reply={"claims": ["sky is blue"], "relevant": True}))
    step = PromptStep("extract", lambda run: f"Claims in {run.output}", output_schema=Claims)
    scorer = (
        create_scorer("Claims", judge=judge)
        .preprocess(step)
        .generate_score(lambda results: len(results.preprocess_step_result["claims"]))
    )
    result = await scorer.run(input="q", output="The sky is blue")

    # Defaults filled in by the model; the step result is JSON, not a model instance.
    assert result.preprocess_step_result == {
        "claims": ["sky is blue"],
        "relevant": True,
        "weight": 1.0,
    }
    assert result.score == 1
    assert server.requests[0]["response_format"]["json_schema"]["name"] == "Claims"


class Graded(BaseModel):
    grade: float
    passed: bool
    count: int
    when: dt.date
    label: Label


@pytest.mark.parametrize(
    ("field", "value"),
    [("grade", "1"), ("grade", True), ("grade", "1e0"), ("passed", "true"), ("passed", 1),
     ("count", "3"), ("count", 3.0), ("label", 1)],
)  # fmt: skip
async def test_a_users_pydantic_schema_is_validated_strictly_and_keeps_the_reply(
    server: FakeOpenAIServer, judge: Judge, field: str, value: Any
) -> None:
    # No coercion of a JSON value of the wrong type (issue 30, item 3): "1" or true is not a
    # number and 1 is not a boolean; the failed execution keeps the reply as evidence.
    reply = {"grade": 0.5, "passed": True, "count": 3, "when": "2026-12-07", "label": "good"}
    reply[field] = value
    server.add_rule(Rule("Grade", reply=reply))
    step = PromptStep("grade", lambda run: f"Grade {run.output}", output_schema=Graded)
    scorer = create_scorer("Graded", judge=judge).analyze(step).generate_score(lambda: 1.0)
    error = await run_failing(scorer)
    assert error.failed_step == "analyze"
    assert error.result is not None
    (execution,) = error.result.judge["analyze"].executions
    assert execution.error is not None
    assert (execution.status, execution.error.code, execution.output) == ("failed", "format", None)
    assert f"the reply fails Graded at {field}:" in execution.error.message
    assert execution.raw_output is not None
    assert json.loads(execution.raw_output) == reply


async def test_a_users_pydantic_schema_still_reads_json_dates_and_enum_values(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    # Strict, but as JSON: a date and an enum value are strings in JSON, and an integer is a
    # number for a float field.
    reply = {"grade": 1, "passed": False, "count": 3, "when": "2026-12-07", "label": "good"}
    server.add_rule(Rule("Grade", reply=reply))
    step = PromptStep("grade", lambda run: f"Grade {run.output}", output_schema=Graded)
    scorer = (
        create_scorer("Graded", judge=judge)
        .analyze(step)
        .generate_score(lambda results: results.analyze_step_result["grade"])
    )
    result = await scorer.run(input="q", output="a")
    assert result.analyze_step_result == {**reply, "grade": 1.0}
    assert result.score == 1.0


async def test_non_object_schema_is_wrapped_and_unwrapped(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 2}
    scorer = (
        create_scorer("List", judge=judge)
        .analyze(PromptStep("numbers", lambda: "Give numbers", output_schema=schema))
        .generate_score(lambda results: sum(results.analyze_step_result))
    )
    result = await scorer.run(input="q", output="a")
    assert result.analyze_step_result == [1, 1]
    assert result.score == 2
    sent = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert sent["properties"]["value"] == schema


async def test_fallback_success_counts_two_attempts_and_sums_usage(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Rate", reply="Sure! I'd say 0.8", response_format="json_schema"))
    scorer = create_scorer("Quality", judge=judge).generate_score(score_step())
    result = await scorer.run(input="q", output="4")

    assert result.score == 0.5  # generated from the schema written into the fallback prompt
    (execution,) = result.judge["generate_score"].executions
    assert execution.status == "success"
    assert (execution.attempt_count, execution.model_call_count) == (2, 2)
    assert execution.prompt == "Rate the answer: 4"  # the step's prompt, not the fallback's
    first, second = server.requests
    # JSON mode with the schema, which llama.cpp's servers turn into a grammar (issue 20)
    assert second["response_format"]["type"] == "json_object"
    assert second["response_format"]["schema"]["required"] == ["score"]
    assert "JSON Schema" in second["messages"][-1]["content"]
    assert second["messages"][-1]["content"].startswith("Rate the answer: 4")
    replies = ("Sure! I'd say 0.8", '{"score": 0.5}')
    per_call = [
        server.usage.usage(body["messages"], content)
        for body, content in zip((first, second), replies, strict=True)
    ]
    assert execution.usage == JudgeUsage(
        input_tokens=sum(u["prompt_tokens"] for u in per_call),
        output_tokens=sum(u["completion_tokens"] for u in per_call),
        total_tokens=sum(u["total_tokens"] for u in per_call),
    )


@pytest.mark.parametrize(
    ("rule", "raw", "finish", "code"),
    [
        (Rule(reply="definitely not JSON"), "definitely not JSON", "stop", "format"),
        (Rule(reply=""), "", "stop", "format"),
        (Rule(reply={"score": "high"}), '{"score": "high"}', "stop", "format"),
        (Rule(reply='{"score": 0.', finish_reason="length"), '{"score": 0.', "length", "format"),
        (Rule(refusal="I cannot grade this."), "I cannot grade this.", "stop", "refusal"),
    ],
)
async def test_persistent_format_failure_fails_with_raw_output_and_no_output(
    server: FakeOpenAIServer, judge: Judge, rule: Rule, raw: str, finish: str, code: str
) -> None:
    server.add_rule(rule)
    scorer = create_scorer("Quality", judge=judge).generate_score(score_step())
    error = await run_failing(scorer)

    assert error.failed_step == "generate_score"
    assert error.completed_steps == ()
    assert isinstance(error.__cause__, JudgeError)
    assert error.__cause__.code == code
    assert error.result is not None
    assert error.result.score is None
    assert (error.result.run_id, error.result.input) == ("r-1", "What is 2+2?")
    assert error.result.generate_score_prompt == "Rate the answer: 4"
    (execution,) = error.result.judge["generate_score"].executions
    assert execution.status == "failed"
    assert (execution.attempt_count, execution.model_call_count) == (2, 2)
    assert execution.output is None
    assert "output" not in execution.to_dict()
    assert execution.raw_output == raw
    assert execution.finish_reason == finish
    assert execution.usage is not None
    assert (execution.usage.input_tokens or 0) > 0
    assert execution.error is not None
    assert (execution.error.name, execution.error.code) == ("JudgeError", code)
    assert "after 2 attempts" in execution.error.message
    assert len(server.requests) == 2


async def test_reason_failing_with_http_500_after_score_of_zero(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Rate", reply={"score": 0}))
    server.add_rule(Rule("Explain", fault=Fault.http(500, "the judge fell over")))
    scorer = (
        create_scorer("flaky", judge=judge.replace(max_retries=0))
        .generate_score(score_step())
        .generate_reason(PromptStep("why", lambda score: f"Explain {score}"))
    )
    error = await run_failing(scorer)

    assert str(error) == (
        "Scorer 'flaky' failed at generate_reason: judge 'fake-judge' at "
        f"{judge.base_url}: HTTP 500 the judge fell over"
    )
    assert (error.failed_step, error.completed_steps) == ("generate_reason", ("generate_score",))
    assert error.result is not None
    assert error.result.score == 0
    assert error.result.reason is None
    assert error.result.judge["generate_score"].executions[0].status == "success"
    (failed,) = error.result.judge["generate_reason"].executions
    assert failed.status == "failed"
    assert (failed.attempt_count, failed.model_call_count) == (1, 0)
    assert failed.usage is None
    assert failed.raw_output is None
    assert failed.output is None
    assert failed.error is not None
    assert (failed.error.name, failed.error.code) == ("InternalServerError", "500")
    assert "error.result" not in str(error.to_dict())


async def test_transport_errors_do_not_trigger_the_fallback(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule(fault=Fault.http(400, "bad schema")))
    scorer = create_scorer("Quality", judge=judge).generate_score(score_step())
    error = await run_failing(scorer)
    assert error.result is not None
    (execution,) = error.result.judge["generate_score"].executions
    assert (execution.attempt_count, execution.model_call_count) == (1, 0)
    assert execution.error is not None
    assert execution.error.code == "400"
    assert server.stats.requests == 1  # 400 is not retried by the client either


async def test_rate_limits_are_retried_and_each_request_is_an_attempt(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule(fault=Fault.rate_limit(retry_after=0.01), times=2))
    scorer = create_scorer("Quality", judge=judge.replace(max_retries=0)).generate_score(
        score_step()
    )
    result = await scorer.run(input="q", output="a")
    assert result.score == 0.5
    (execution,) = result.judge["generate_score"].executions
    # SPEC: every HTTP request is one recorded attempt (a 429 retry included).
    assert (execution.attempt_count, execution.model_call_count) == (3, 1)
    assert [a.status for a in execution.attempts] == ["failed", "failed", "success"]
    assert [a.error.code for a in execution.attempts if a.error] == ["429", "429"]
    assert server.stats.requests == 3
    assert server.stats.faults == 2


@pytest.mark.parametrize(
    ("cost_per_token", "expect_cost"), [(None, False), (2e-6, True)], ids=["absent", "reported"]
)
async def test_cost_is_recorded_only_when_the_provider_reports_it(
    judge_key: str, cost_per_token: float | None, expect_cost: bool
) -> None:
    async with FakeOpenAIServer(cost_per_token=cost_per_token) as server:
        judge = Judge("m", "grade", base_url=server.base_url, api_key_env=judge_key)
        scorer = create_scorer("Costly", judge=judge).generate_score(score_step())
        result = await scorer.run(input="q", output="a")
    (execution,) = result.judge["generate_score"].executions
    if not expect_cost:
        assert execution.cost is None
        assert "cost" not in execution.to_dict()
        return
    assert execution.cost is not None
    assert execution.usage is not None
    assert execution.usage.total_tokens is not None
    assert execution.cost.amount == pytest.approx(execution.usage.total_tokens * 2e-6)
    assert (execution.cost.unit, execution.cost.source) == ("USD", "openai")


async def test_usage_details_are_normalised(judge_key: str) -> None:
    async with FakeOpenAIServer(cache_ratio=0.5, reasoning_tokens=7) as server:
        judge = Judge("m", "grade", base_url=server.base_url, api_key_env=judge_key)
        scorer = create_scorer("Usage", judge=judge).generate_score(score_step())
        result = await scorer.run(input="q", output="a")
    usage = result.judge["generate_score"].executions[0].usage
    assert usage is not None
    assert usage.reasoning_tokens == 7
    assert usage.input_tokens is not None
    assert usage.cached_input_tokens == usage.input_tokens // 2
    assert (usage.output_tokens or 0) > 7


async def test_step_judge_overrides_the_scorer_judge_field_by_field(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    bigger = Judge("big-judge", temperature=0.7)
    briefer = Judge(instructions="Be brief.")
    scorer = (
        create_scorer("Mixed", judge=judge)
        .generate_score(PromptStep("score", lambda: "Rate", judge=bigger))
        .generate_reason(PromptStep("why", lambda: "Explain", judge=briefer))
    )
    result = await scorer.run(input="q", output="a")

    score_body, reason_body = server.requests
    assert (score_body["model"], score_body["temperature"]) == ("big-judge", 0.7)
    # instructions were not set on the step judge: the scorer's stay
    assert score_body["messages"][0] == {"role": "system", "content": "You are a strict grader."}
    assert (reason_body["model"], reason_body["temperature"]) == ("fake-judge", 0.0)
    assert reason_body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert result.judge["generate_score"].executions[0].judge_model_id == "big-judge"
    assert result.judge["generate_reason"].executions[0].judge_model_id == "fake-judge"


async def test_step_judge_alone_needs_no_scorer_judge(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    scorer = create_scorer("Solo").generate_score(PromptStep("s", lambda: "Rate", judge=judge))
    result = await scorer.run(input="q", output="a")
    assert result.score == 0.5


@pytest.mark.parametrize(
    "step_judge", [None, Judge(temperature=0.3)], ids=["no-judge", "step-judge-without-model"]
)
async def test_missing_judge_fails_naming_scorer_and_step(step_judge: Judge | None) -> None:
    scorer = create_scorer("Judgeless").generate_score(
        PromptStep("score", lambda: "Rate", judge=step_judge)
    )
    error = await run_failing(scorer)
    assert isinstance(error.__cause__, ConfigError)
    assert "Scorer 'Judgeless', generate_score step" in str(error)
    assert "without a judge model" in str(error)
    assert error.result is None  # nothing was asked


async def test_missing_api_key_fails_naming_the_variable(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALKIT_MISSING_KEY", raising=False)
    judge = Judge("m", "grade", base_url=server.base_url, api_key_env="EVALKIT_MISSING_KEY")
    scorer = create_scorer("Keyless", judge=judge).generate_score(score_step())
    error = await run_failing(scorer)
    assert isinstance(error.__cause__, ConfigError)
    assert "environment variable EVALKIT_MISSING_KEY is not set" in str(error)
    assert server.stats.requests == 0


async def test_judge_max_concurrency_is_respected_across_scorers(judge_key: str) -> None:
    # 0.2 s an answer: far longer than a loaded machine takes to send the next requests, so
    # the calls allowed at once are at the server together.
    async with FakeOpenAIServer(latency=0.2) as server:
        base = Judge("m", "grade", base_url=server.base_url, api_key_env=judge_key)
        first = create_scorer("A", judge=base.replace(max_concurrency=3)).generate_score(
            score_step()
        )
        # Other instructions, same model, endpoint and limit: the same limiter.
        second = create_scorer(
            "B", judge=base.replace(instructions="Other rubric.", max_concurrency=3)
        ).generate_score(score_step())

        async with anyio.create_task_group() as group:
            for index in range(16):
                scorer = first if index % 2 else second
                group.start_soon(partial(scorer.run, input="q", output="a"))
        assert server.stats.requests == 16
        assert server.stats.max_in_flight == 3


async def test_without_max_concurrency_calls_overlap(
    server: FakeOpenAIServer, judge_key: str
) -> None:
    server.latency = 0.2  # far longer than a loaded machine takes to send all six
    judge = Judge("m", "grade", base_url=server.base_url, api_key_env=judge_key)
    scorer = create_scorer("Free", judge=judge).generate_score(score_step())
    async with anyio.create_task_group() as group:
        for _ in range(6):
            group.start_soon(lambda: scorer.run(input="q", output="a"))
    assert server.stats.max_in_flight == 6


async def test_async_create_prompt_with_chosen_arguments(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    async def make_prompt(run: Any, results: Any, score: float) -> str:
        return f"{run.input}|{results.analyze_step_result}|{score}"

    scorer = (
        create_scorer("Args", judge=judge)
        .analyze(lambda: "looked")
        .generate_score(lambda: 0.25)
        .generate_reason(PromptStep("why", make_prompt))
    )
    result = await scorer.run(input="Q", output="A")
    assert result.generate_reason_prompt == "Q|looked|0.25"


def test_create_prompt_arguments_are_checked_when_the_step_is_added() -> None:
    step = PromptStep("s", lambda run, score: "x")
    message = "Scorer 'Bad', generate_score step, create_prompt: parameter 'score'"
    with pytest.raises(ConfigError, match=re.escape(message)):
        create_scorer("Bad").generate_score(step)


@pytest.mark.parametrize(
    ("kind", "schema", "message"),
    [
        ("analyze", None, "needs an output_schema"),
        ("preprocess", None, "needs an output_schema"),
        ("generate_score", {"type": "object"}, 'always asks for {"score": number}'),
        ("generate_reason", {"type": "object"}, "always asks for plain text"),
        ("analyze", {"type": "nope"}, "not a valid JSON Schema"),
        ("analyze", [1, 2], "pydantic model class or a JSON Schema dict, not list"),
    ],
)
def test_output_schema_is_checked_when_the_step_is_added(
    kind: str, schema: Any, message: str
) -> None:
    step = PromptStep("s", lambda: "x", output_schema=schema)
    with pytest.raises(ConfigError, match=re.escape(message)):
        getattr(create_scorer("Schemas"), kind)(step)


def test_prompt_step_arguments_are_checked() -> None:
    with pytest.raises(ConfigError, match="create_prompt must be a function"):
        PromptStep("s", "not callable")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="judge must be a Judge"):
        PromptStep("s", lambda: "x", judge="gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="judge must be a Judge"):
        create_scorer("x", judge="gpt-4o")  # type: ignore[arg-type]


async def test_create_prompt_must_return_text(server: FakeOpenAIServer, judge: Judge) -> None:
    # An int on purpose (hence the type: ignore): the check at run time is under test.
    prompt = PromptStep("s", lambda: 42)  # type: ignore[arg-type, return-value]
    scorer = create_scorer("Untyped", judge=judge).generate_score(prompt)
    error = await run_failing(scorer)
    assert "create_prompt returned int, not the prompt text" in str(error)
    assert server.stats.requests == 0


async def test_with_judge_rebinds_the_prompt_steps_and_leaves_the_original(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule("Rate", reply={"score": 0.5}))
    without = create_scorer("Judged", higher_is_better=False).generate_score(score_step())
    judged = without.with_judge(judge)
    assert (judged.judge, without.judge) == (judge, None)
    assert (judged.id, judged.name, judged.higher_is_better) == ("judged", "Judged", False)
    assert (await judged.run(input="q", output="4")).score == 0.5
    error = await run_failing(without)
    assert "prompt step without a judge model" in str(error)
    other = judged.with_judge(
        Judge("other-model", base_url=judge.base_url, api_key_env=judge.api_key_env)
    )
    result = await other.run(input="q", output="4")
    assert result.judge["generate_score"].executions[0].judge_model_id == "other-model"
    with pytest.raises(ConfigError, match="judge must be a Judge, not str"):
        judged.with_judge("gpt-4o")  # type: ignore[arg-type]
