"""Judges in batch mode against the local server's Batch API, over real sockets."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest
from anyio.from_thread import start_blocking_portal

from evalkit import Judge, JudgeCache, PromptStep, Scorer, ScorerRunError, create_scorer
from evalkit.judge import use_judge_cache
from evalkit.scorer import ScorerRunResult
from evalkit.testing import FakeOpenAIServer, Fault, Rule, ServerStats

ITEMS = 200
FAST = {"batch_flush_after": 0.1, "batch_poll_interval": 0.01}
RESUMED = 50  # items of the resume tests


class Words(pydantic.BaseModel):
    words: int


class Verdict(pydantic.BaseModel):
    supported: bool
    weight: float


def user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def count_words(body: dict[str, Any]) -> dict[str, int]:
    # Only the prompt, not the schema a JSON-mode fallback appends to it.
    return {"words": len(user_text(body).split("\n\n")[0].split())}


def verdict(body: dict[str, Any]) -> dict[str, Any]:
    words = int(user_text(body).rsplit(" ", 1)[1])
    return {"supported": words % 3 != 0, "weight": round(words / 20, 2)}


RULES = [
    Rule("Count the words", reply=count_words),
    Rule("Judge the count", reply=verdict),
]


def three_step_scorer(judge: Judge) -> Scorer:
    """preprocess (schema) → analyze (schema) → score in code → reason (text)."""
    return (
        create_scorer("Three steps", judge=judge)
        .preprocess(
            PromptStep("count", lambda run: f"Count the words: {run.output}", output_schema=Words)
        )
        .analyze(
            PromptStep(
                "judge",
                lambda results: f"Judge the count {results.preprocess_step_result['words']}",
                output_schema=Verdict,
            )
        )
        .generate_score(
            lambda results: (
                results.analyze_step_result["weight"] * results.analyze_step_result["supported"]
            )
        )
        .generate_reason(PromptStep("why", lambda run, score: f"Explain {score} for {run.output}"))
    )


def output(index: int) -> str:
    return " ".join(["word"] * (1 + index % 17)) + f" item {index}"


Outcome = ScorerRunResult | ScorerRunError


async def run_items(
    scorer: Scorer, *, count: int = ITEMS, cache: Path | JudgeCache | None = None
) -> dict[int, Outcome]:
    """Run ``count`` items at once with ``cache`` active."""
    async with use_judge_cache(cache):
        return await run_all(scorer, count=count)


async def run_all(scorer: Scorer, *, count: int = ITEMS) -> dict[int, Outcome]:
    """Run ``count`` items at once (``count`` in flight), as an orchestrator does."""
    results: dict[int, Outcome] = {}
    limiter = anyio.CapacityLimiter(count)

    async def one(index: int) -> None:
        async with limiter:
            try:
                results[index] = await scorer.run(
                    input=f"question {index}", output=output(index), run_id=f"run-{index}"
                )
            except ScorerRunError as exc:
                results[index] = exc

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            for index in range(count):
                group.start_soon(one, index)
    return results


def summary(results: dict[int, Outcome]) -> dict[int, tuple[Any, ...]]:
    """What must not depend on the mode: values, and each execution's output and usage."""
    out: dict[int, tuple[Any, ...]] = {}
    for index, result in results.items():
        assert isinstance(result, ScorerRunResult), result
        executions = [
            (step, e.status, e.attempt_count, e.output, e.usage if not e.cached else None)
            for step, record in result.judge.items()
            for e in record.executions
        ]
        out[index] = (
            result.score,
            result.reason,
            result.preprocess_step_result,
            result.analyze_step_result,
            executions,
        )
    return out


def batch_judge(judge: Judge, **changes: Any) -> Judge:
    return judge.replace(mode="batch", **{**FAST, **changes})


async def test_a_three_step_scorer_advances_one_batch_per_step(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    for rule in RULES:
        server.add_rule(rule)
    online = await run_items(three_step_scorer(judge))
    assert server.stats.requests == 3 * ITEMS
    batched = await run_items(three_step_scorer(batch_judge(judge)))
    assert summary(batched) == summary(online)
    assert len({r.score for r in online.values() if isinstance(r, ScorerRunResult)}) > 5
    stats = server.stats
    assert stats.requests == 3 * ITEMS  # nothing more was sent online
    assert (stats.batches, stats.files, stats.batch_requests) == (3, 3, 3 * ITEMS)
    assert [b["request_counts"]["total"] for b in server.batches] == [ITEMS] * 3
    execution = batched[0].judge["preprocess"].executions[0]  # type: ignore[union-attr]
    assert execution.model_call_count == 1
    assert execution.usage is not None
    assert (execution.usage.total_tokens or 0) > 0


async def test_a_fallback_joins_the_next_round(server: FakeOpenAIServer, judge: Judge) -> None:
    # Items 0, 10, 20, ... answer the first count with text: their JSON-mode retry goes in
    # round 2 with everyone's analyze step, and their later steps trail by one round.
    not_json = Rule(re.compile(r"item \d*0$"), reply="not json", response_format="json_schema")
    server.add_rule(not_json)
    for rule in RULES:
        server.add_rule(rule)
    results = await run_items(three_step_scorer(batch_judge(judge)))
    retried = [i for i in range(ITEMS) if i % 10 == 0]
    for index, result in results.items():
        assert isinstance(result, ScorerRunResult)
        (execution,) = result.judge["preprocess"].executions
        assert execution.attempt_count == (2 if index in retried else 1)
        assert execution.output == {"words": len(f"Count the words: {output(index)}".split())}
    totals = [b["request_counts"]["total"] for b in server.batches]
    assert totals == [ITEMS, ITEMS, ITEMS, len(retried)]


@pytest.mark.parametrize("errors_in", ["error_file", "output_file"])
@pytest.mark.parametrize(
    ("fault", "code", "name"),
    [(Fault.http(500), "500", "JudgeError"), (Fault.hang(), "request_timeout", "JudgeError")],
)
async def test_a_request_error_in_a_batch_is_a_failed_execution(
    judge: Judge, errors_in: Any, fault: Fault, code: str, name: str
) -> None:
    rules = [Rule("Explain", fault=fault, times=1), *RULES]
    async with FakeOpenAIServer(rules, batch_errors_in=errors_in) as server:
        scorer = three_step_scorer(batch_judge(judge, base_url=server.base_url))
        results = await run_items(scorer, count=10)
    failures = [r for r in results.values() if isinstance(r, ScorerRunError)]
    assert len(failures) == 1
    (failure,) = failures
    assert failure.failed_step == "generate_reason"
    assert failure.completed_steps == ("preprocess", "analyze", "generate_score")
    assert failure.result is not None
    (execution,) = failure.result.judge["generate_reason"].executions
    assert execution.status == "failed"
    assert execution.error is not None
    assert (execution.error.code, execution.error.name) == (code, name)
    assert execution.model_call_count == 0
    assert "fake-judge" in execution.error.message
    assert failure.result.score is not None  # the steps before it kept their results


@pytest.mark.parametrize(
    ("outcome", "code"), [("failed", "batch_failed"), ("expired", "batch_expired")]
)
async def test_a_batch_that_ends_badly_fails_its_calls(
    server: FakeOpenAIServer, judge: Judge, outcome: Any, code: str
) -> None:
    server.batch_outcome = outcome
    results = await run_items(three_step_scorer(batch_judge(judge)), count=5)
    assert server.stats.batches == 1
    for result in results.values():
        assert isinstance(result, ScorerRunError)
        assert result.failed_step == "preprocess"
        assert result.result is not None
        (execution,) = result.result.judge["preprocess"].executions
        assert execution.error is not None
        assert execution.error.code == code
        assert execution.attempt_count == 1
        assert server.batches[0]["id"] in execution.error.message


async def test_a_batch_api_error_fails_the_calls_with_its_status(judge_key: str) -> None:
    async with FakeOpenAIServer(api_key="other-key") as server:
        judge = Judge("m", base_url=server.base_url, api_key_env=judge_key, max_retries=0)
        results = await run_items(three_step_scorer(batch_judge(judge)), count=3)
    for result in results.values():
        assert isinstance(result, ScorerRunError)
        assert result.result is not None
        (execution,) = result.result.judge["preprocess"].executions
        assert execution.error is not None
        assert execution.error.code == "401"
        assert execution.error.name == "AuthenticationError"
        assert "uploading a batch input file" in execution.error.message


async def test_a_full_batch_is_sent_at_once(server: FakeOpenAIServer, judge: Judge) -> None:
    scorer = create_scorer(
        "One step", judge=batch_judge(judge, batch_max_requests=40)
    ).generate_score(PromptStep("score", lambda run: f"Score {run.output}"))
    results = await run_items(scorer, count=100)
    assert all(isinstance(r, ScorerRunResult) for r in results.values())
    assert sorted(b["request_counts"]["total"] for b in server.batches) == [20, 40, 40]


async def test_cache_hits_never_enter_a_batch(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    for rule in RULES:
        server.add_rule(rule)
    scorer = three_step_scorer(batch_judge(judge))
    first = await run_items(scorer, count=20, cache=tmp_path / "cache.duckdb")
    second = await run_items(scorer, count=20, cache=tmp_path / "cache.duckdb")
    assert server.stats.batches == 3
    assert {i: v[:4] for i, v in summary(second).items()} == {
        i: v[:4] for i, v in summary(first).items()
    }
    assert all(
        e.cached
        for r in second.values()
        if isinstance(r, ScorerRunResult)
        for record in r.judge.values()
        for e in record.executions
    )
    assert journal(tmp_path / "cache.duckdb") == []  # finished runs forget their batches


@pytest.mark.parametrize("when", ["gathering", "polling"])
async def test_a_cancelled_leader_hands_its_batch_over(
    server: FakeOpenAIServer, judge: Judge, when: str
) -> None:
    server.batch_delay = 0.3
    scorer = create_scorer("One step", judge=batch_judge(judge)).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )
    results: list[float | None] = []

    async def one(index: int, scope: anyio.CancelScope | None = None) -> None:
        with scope or anyio.CancelScope():
            results.append((await scorer.run(input="q", output=f"o{index}")).score)

    leader = anyio.CancelScope()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(one, 0, leader)
            await anyio.sleep(0.01)
            for index in range(1, 10):
                group.start_soon(one, index)
            if when == "gathering":
                await anyio.sleep(0.05)
            else:
                while server.stats.batches == 0:
                    await anyio.sleep(0.01)
            leader.cancel()
    assert len(results) == 9
    assert server.stats.batches == 1
    # Cancelled while gathering, its request never left; while polling, it had.
    assert server.stats.batch_requests == (9 if when == "gathering" else 10)


# -- resuming -------------------------------------------------------------------------------


class Interrupted(Exception):
    pass


def journal(path: Path) -> list[str]:
    return [batch["status"] for batch in JudgeCache(path).batches()]


async def interrupted_run(
    scorer: Scorer,
    cache: Path | JudgeCache,
    stats: Callable[[], ServerStats],
    *,
    batches: int,
    how: str,
) -> None:
    """Run the items, and stop once the server has seen ``batches`` batches."""
    async with use_judge_cache(cache):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: run_all(scorer, count=RESUMED))
            with anyio.fail_after(10):
                while stats().batches < batches:
                    await anyio.sleep(0.005)
            group.cancel_scope.cancel()  # as a task group does when a sibling fails
        if how == "raise":  # as Ctrl-C does: the cache block is left by an exception
            raise Interrupted


@pytest.mark.parametrize(
    ("batches", "how", "cache", "kept"),
    [
        (1, "cancel", True, ["submitted"]),
        (2, "cancel", True, ["submitted"]),
        (2, "raise", False, ["completed", "submitted"]),
    ],
)
def test_an_interrupted_run_picks_its_batches_up(
    judge_key: str, tmp_path: Path, batches: int, how: str, cache: bool, kept: list[str]
) -> None:
    path = tmp_path / "evalkit-cache.duckdb"
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(FakeOpenAIServer(RULES, batch_delay=0.15)) as server,
    ):
        judge = Judge(
            "fake-judge", "Grade.", base_url=server.base_url, api_key_env=judge_key, cache=cache
        )
        expected = anyio.run(lambda: run_items(three_step_scorer(judge), count=RESUMED))
        scorer = three_step_scorer(batch_judge(judge))

        def stats() -> ServerStats:
            return server.stats

        if how == "raise":
            with pytest.raises(Interrupted):
                anyio.run(lambda: interrupted_run(scorer, path, stats, batches=batches, how=how))
        else:
            anyio.run(lambda: interrupted_run(scorer, path, stats, batches=batches, how=how))
        assert server.stats.batches == batches
        assert journal(path) == kept
        pending = JudgeCache(path).batches()[-1]
        assert pending["batch_id"] == server.batches[batches - 1]["id"]
        assert (pending["host"], pending["model"]) == ("127.0.0.1", "fake-judge")
        assert pending["request_count"] == RESUMED
        resumed = anyio.run(lambda: run_items(scorer, count=RESUMED, cache=path))
        assert server.stats.batches == 3  # one per step, over both runs
        assert server.stats.batch_requests == 3 * RESUMED  # no request was sent twice
    assert {i: v[:4] for i, v in summary(resumed).items()} == {
        i: v[:4] for i, v in summary(expected).items()
    }
    assert journal(path) == []
    reused = [
        e.cached
        for r in resumed.values()
        if isinstance(r, ScorerRunResult)
        for e in r.judge["preprocess"].executions
    ]
    # With the cache, a round finished before the interruption is replayed from it.
    assert all(reused) == (cache and batches == 2)


async def test_a_remembered_batch_the_server_does_not_know_is_sent_again(
    judge: Judge, tmp_path: Path
) -> None:
    path = tmp_path / "evalkit-cache.duckdb"
    async with FakeOpenAIServer(RULES, batch_delay=5.0) as first:
        scorer = three_step_scorer(batch_judge(judge, base_url=first.base_url))
        await interrupted_run(scorer, path, lambda: first.stats, batches=1, how="cancel")
    assert journal(path) == ["submitted"]
    # The same endpoint, restarted: a server that never saw the batch.
    async with FakeOpenAIServer(RULES, port=first.port) as second:
        scorer = three_step_scorer(batch_judge(judge, base_url=second.base_url))
        results = await run_items(scorer, count=RESUMED, cache=path)
        assert second.stats.batches == 3
    assert all(isinstance(r, ScorerRunResult) for r in results.values())
    assert journal(path) == []


async def test_identical_requests_in_flight_are_told_apart(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    scorer = create_scorer("One step", judge=batch_judge(judge)).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )
    results: list[float | None] = []

    async def one(index: int) -> None:
        results.append((await scorer.run(input="q", output=f"o{index % 3}")).score)

    async with anyio.create_task_group() as group:
        for index in range(9):
            group.start_soon(one, index)
    assert results == [0.5] * 9
    assert server.stats.batches == 1
    assert server.stats.batch_requests == 9


async def test_a_run_retried_in_the_same_event_loop_picks_its_batches_up(
    judge: Judge, tmp_path: Path
) -> None:
    cache = JudgeCache(tmp_path / "evalkit-cache.duckdb")
    async with FakeOpenAIServer(RULES, batch_delay=0.2) as server:
        scorer = three_step_scorer(batch_judge(judge, base_url=server.base_url))
        with pytest.raises(Interrupted):
            await interrupted_run(scorer, cache, lambda: server.stats, batches=1, how="raise")
        results = await run_items(scorer, count=RESUMED, cache=cache)
        assert (server.stats.batches, server.stats.batch_requests) == (3, 3 * RESUMED)
    assert all(isinstance(r, ScorerRunResult) for r in results.values())
    assert cache.batches() == []


async def test_a_remembered_batch_that_expired_is_sent_again(judge: Judge, tmp_path: Path) -> None:
    path = tmp_path / "evalkit-cache.duckdb"
    async with FakeOpenAIServer(RULES, batch_delay=0.2, batch_outcome="expired") as server:
        scorer = three_step_scorer(batch_judge(judge, base_url=server.base_url))
        await interrupted_run(scorer, path, lambda: server.stats, batches=1, how="cancel")
        server.batch_outcome = "completed"
        results = await run_items(scorer, count=RESUMED, cache=path)
        statuses = [batch["status"] for batch in server.batches]
    assert statuses == ["expired", "completed", "completed", "completed"]
    assert all(isinstance(r, ScorerRunResult) for r in results.values())
    assert journal(path) == []


async def test_two_servers_on_one_host_resume_only_their_own_batches(
    judge: Judge, tmp_path: Path
) -> None:
    # The journal was keyed on the host alone: two servers on 127.0.0.1 shared it (issue 29
    # item 7). Each batch is recorded with its endpoint, and a run reads only its own.
    path = tmp_path / "evalkit-cache.duckdb"
    async with (
        FakeOpenAIServer(RULES, batch_delay=30.0) as first,
        FakeOpenAIServer(RULES, batch_delay=0.15) as second,
    ):
        on_first = three_step_scorer(batch_judge(judge, base_url=first.base_url))
        on_second = three_step_scorer(batch_judge(judge, base_url=second.base_url))
        await interrupted_run(on_first, path, lambda: first.stats, batches=1, how="cancel")
        await interrupted_run(on_second, path, lambda: second.stats, batches=1, how="cancel")
        endpoints = {b["batch_id"]: b["endpoint"] for b in JudgeCache(path).batches()}
        assert endpoints == {
            first.batches[0]["id"]: first.base_url.rstrip("/"),
            second.batches[0]["id"]: second.base_url.rstrip("/"),
        }
        results = await run_items(on_second, count=RESUMED, cache=path)
        assert (second.stats.batches, second.stats.batch_requests) == (3, 3 * RESUMED)
        assert first.stats.batches == 1
    assert all(isinstance(r, ScorerRunResult) for r in results.values())
    # The first server's batch is still remembered, for a run against it.
    assert [(b["endpoint"], b["status"]) for b in JudgeCache(path).batches()] == [
        (first.base_url.rstrip("/"), "submitted")
    ]
