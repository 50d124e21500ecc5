"""The judge call cache over real sockets and a real DuckDB file in tmp_path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pydantic
import pytest

from evalkit import (
    ConfigError,
    Judge,
    JudgeCache,
    PromptStep,
    Scorer,
    ScorerRunError,
    StoreError,
    create_scorer,
    use_judge_cache,
)
from evalkit.judge import active_judge_cache, default_cache_path
from evalkit.testing import FakeOpenAIServer, Fault, Rule


class Verdict(pydantic.BaseModel):
    verdict: str
    confidence: float


def score_scorer(judge: Judge, prompt: str = "Rate the answer to {input}") -> Scorer:
    return create_scorer("Cached", judge=judge).generate_score(
        PromptStep("score", lambda run: prompt.format(input=run.input))
    )


def full_scorer(judge: Judge) -> Scorer:
    return (
        create_scorer("Full", judge=judge)
        .analyze(PromptStep("judge", lambda run: f"Judge {run.output}", output_schema=Verdict))
        .generate_score(lambda results: results.analyze_step_result["confidence"])
        .generate_reason(PromptStep("why", lambda score: f"Explain {score}"))
    )


@pytest.fixture
def cache_path(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "evalkit-cache.duckdb"


async def test_a_hit_replays_the_output_without_a_request(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    server.add_rule(Rule("Judge", reply={"verdict": "good", "confidence": 0.75}))
    scorer = full_scorer(judge)
    async with use_judge_cache(JudgeCache(cache_path)) as cache:
        first = await scorer.run(input="q", output="Paris")
        requests = server.stats.requests
        second = await scorer.run(input="q", output="Paris")
        assert cache is not None
        assert (cache.hits, cache.misses, cache.writes) == (2, 2, 2)
    assert requests == 2
    assert server.stats.requests == 2  # the second run asked nothing
    assert (second.score, second.reason) == (first.score, first.reason)
    assert (
        second.analyze_step_result
        == first.analyze_step_result
        == {
            "verdict": "good",
            "confidence": 0.75,
        }
    )
    for step in ("analyze", "generate_reason"):
        (paid,) = first.judge[step].executions
        (cached,) = second.judge[step].executions
        assert (paid.cached, cached.cached) == (False, True)
        assert cached.status == "success"
        assert cached.output == paid.output
        assert cached.prompt == paid.prompt
        assert cached.usage is not None
        assert cached.usage.total_tokens == 0
        assert paid.usage is not None
        assert (paid.usage.total_tokens or 0) > 0
        assert (cached.model_call_count, cached.attempt_count, cached.cost) == (0, 1, None)
        assert cached.to_dict()["cached"] is True


async def test_entries_persist_in_the_file(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    scorer = score_scorer(judge)
    async with use_judge_cache(cache_path):
        await scorer.run(input="q", output="a")
    assert cache_path.exists()
    async with use_judge_cache(JudgeCache(cache_path)) as cache:
        result = await scorer.run(input="q", output="a")
        assert cache is not None
        assert cache.hits == 1
    assert result.judge["generate_score"].executions[0].cached
    assert server.stats.requests == 1
    assert active_judge_cache() is None


async def test_a_cached_reply_needs_no_api_key(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scorer = score_scorer(judge)
    async with use_judge_cache(cache_path):
        await scorer.run(input="q", output="a")
        monkeypatch.delenv(judge.api_key_env)
        result = await scorer.run(input="q", output="a")
    assert result.score == 0.5


def change_model(judge: Judge) -> Judge:
    return judge.replace(model="another-judge")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda j: j.replace(model="another-judge"), id="model"),
        pytest.param(lambda j: j.replace(instructions="Be lenient."), id="instructions"),
        pytest.param(lambda j: j.replace(max_tokens=50), id="max_tokens"),
        pytest.param(lambda j: j.replace(extra_body={"seed": 7}), id="extra_body"),
        pytest.param(lambda j: j.replace(temperature=0.5, cache=True), id="temperature"),
        pytest.param(
            lambda j: j.replace(base_url=j.base_url.replace("127.0.0.1", "localhost")),
            id="host",
        ),
    ],
)
async def test_any_change_to_the_judge_misses(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path, change: Any
) -> None:
    async with use_judge_cache(cache_path):
        await score_scorer(judge).run(input="q", output="a")
        changed = await score_scorer(change(judge)).run(input="q", output="a")
        again = await score_scorer(change(judge)).run(input="q", output="a")
    assert not changed.judge["generate_score"].executions[0].cached
    assert again.judge["generate_score"].executions[0].cached
    assert server.stats.requests == 2


async def test_judges_at_two_ports_get_their_own_servers_answers(
    judge: Judge, cache_path: Path
) -> None:
    async with (
        FakeOpenAIServer([Rule(reply={"score": 0.25})]) as first,
        FakeOpenAIServer([Rule(reply={"score": 0.75})]) as second,
        use_judge_cache(cache_path),
    ):
        assert first.port != second.port
        judges = [judge.replace(base_url=s.base_url) for s in (first, second)]
        rounds = [
            [(await score_scorer(j).run(input="q", output="a")).score for j in judges]
            for _ in range(2)
        ]
        assert (first.stats.requests, second.stats.requests) == (1, 1)
    assert rounds == [[0.25, 0.75], [0.25, 0.75]]  # the second round from the cache


async def closed_port_url() -> str:
    """The base URL of a server that has just stopped (its port is closed)."""
    gone = FakeOpenAIServer()
    async with gone:
        pass
    return gone.base_url


@pytest.mark.parametrize(
    "elsewhere",
    [
        pytest.param(lambda url: url.replace("http://", "https://"), id="scheme"),
        pytest.param(lambda url: url.rsplit("/", 1)[0] + "/v2", id="path"),
        pytest.param(None, id="port"),
    ],
)
async def test_a_judge_at_another_endpoint_is_not_answered_from_the_cache(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path, elsewhere: Any
) -> None:
    url = await closed_port_url() if elsewhere is None else elsewhere(server.base_url)
    moved = judge.replace(base_url=url, max_retries=0, timeout=2.0)
    async with use_judge_cache(cache_path):
        await score_scorer(judge).run(input="q", output="a")
        with pytest.raises(ScorerRunError) as info:
            await score_scorer(moved).run(input="q", output="a")
    snapshot = info.value.result
    assert snapshot is not None
    (execution,) = snapshot.judge["generate_score"].executions
    assert (execution.status, execution.cached) == ("failed", False)


@pytest.mark.parametrize(
    "spelling",
    [
        pytest.param(lambda url: url + "/", id="trailing-slash"),
        pytest.param(lambda url: url.replace("http://", "HTTP://"), id="scheme-case"),
    ],
)
async def test_the_same_endpoint_spelled_otherwise_hits(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path, spelling: Any
) -> None:
    async with use_judge_cache(cache_path):
        await score_scorer(judge).run(input="q", output="a")
        again = await score_scorer(judge.replace(base_url=spelling(server.base_url))).run(
            input="q", output="a"
        )
    assert again.judge["generate_score"].executions[0].cached
    assert server.stats.requests == 1


async def test_the_prompt_the_step_kind_and_the_schema_are_part_of_the_key(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    class Other(pydantic.BaseModel):
        verdict: str

    def analyze(schema: Any) -> Scorer:
        step = PromptStep("a", lambda: "Same prompt", output_schema=schema)
        return create_scorer("S", judge=judge).analyze(step).generate_score(lambda: 1)

    async with use_judge_cache(cache_path):
        await score_scorer(judge).run(input="q", output="a")
        await score_scorer(judge).run(input="another question", output="a")  # prompt
        await analyze(Verdict).run(input="q", output="a")
        await analyze(Other).run(input="q", output="a")  # schema
        reason = create_scorer("R", judge=judge).generate_score(lambda: 1)
        await reason.generate_reason(PromptStep("r", lambda: "Same prompt")).run(
            input="q", output="a"
        )  # the same prompt as the analyze steps, another kind
        assert server.stats.requests == 5
        await analyze(Other).run(input="q", output="a")
    assert server.stats.requests == 5


async def test_errors_are_never_cached(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    server.add_rule(Rule("broken", fault=Fault.http(500), times=2))
    server.add_rule(Rule("unreadable", reply="not a score"))
    async with use_judge_cache(cache_path) as cache:
        for prompt in ("broken {input}", "unreadable {input}"):
            with pytest.raises(ScorerRunError):
                await score_scorer(judge.replace(max_retries=1), prompt).run(input="q", output="a")
        recovered = await score_scorer(judge, "broken {input}").run(input="q", output="a")
        assert cache is not None
        assert cache.writes == 1  # only the recovered success
    assert not recovered.judge["generate_score"].executions[0].cached
    assert JudgeCache(cache_path).stats().entries == 1


async def test_a_fallback_success_is_replayed_with_its_attempt_count(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    server.add_rule(Rule(response_format="json_schema", reply="not json"))
    async with use_judge_cache(cache_path):
        first = await score_scorer(judge).run(input="q", output="a")
        second = await score_scorer(judge).run(input="q", output="a")
    paid = first.judge["generate_score"].executions[0]
    cached = second.judge["generate_score"].executions[0]
    assert (paid.attempt_count, paid.model_call_count) == (2, 2)
    assert (cached.attempt_count, cached.model_call_count, cached.cached) == (2, 0, True)
    assert cached.output == paid.output
    assert server.stats.requests == 2


@pytest.mark.parametrize(
    ("settings", "cached"),
    [
        ({}, True),  # temperature 0 by default
        ({"temperature": 0.7}, False),
        ({"temperature": 0.7, "cache": True}, True),
        ({"cache": False}, False),
        ({"temperature": None}, False),  # the provider's default temperature
        ({"extra_body": {"temperature": 0.9}}, False),
    ],
)
async def test_which_judges_are_cached(
    server: FakeOpenAIServer,
    judge: Judge,
    cache_path: Path,
    settings: dict[str, Any],
    cached: bool,
) -> None:
    changed = judge.replace(**settings)
    assert changed.caches is cached
    async with use_judge_cache(cache_path):
        for _ in range(2):
            result = await score_scorer(changed).run(input="q", output="a")
    assert result.judge["generate_score"].executions[0].cached is cached
    assert server.stats.requests == (1 if cached else 2)


async def test_nothing_is_cached_without_an_active_cache(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    for _ in range(2):
        await score_scorer(judge).run(input="q", output="a")
    async with use_judge_cache(None) as none:
        await score_scorer(judge).run(input="q", output="a")
    assert none is None
    assert server.stats.requests == 3
    assert not cache_path.exists()


async def test_a_zero_ttl_never_hits(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    async with use_judge_cache(JudgeCache(cache_path, ttl=0)):
        for _ in range(2):
            await score_scorer(judge).run(input="q", output="a")
    assert server.stats.requests == 2


async def test_expired_entries_miss_and_are_deleted_on_open(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    async with use_judge_cache(JudgeCache(cache_path, ttl=timedelta(hours=1))):
        await score_scorer(judge).run(input="q", output="a")
        await score_scorer(judge, "Other {input}").run(input="q", output="a")
    with duckdb.connect(str(cache_path)) as con:
        con.execute(
            "UPDATE judge_cache SET expires_at = now() - INTERVAL 1 MINUTE "
            "WHERE content IN (SELECT content FROM judge_cache LIMIT 1)"
        )
    stats = JudgeCache(cache_path).stats()
    assert (stats.entries, stats.expired) == (0, 2)  # both replies are the same text
    async with use_judge_cache(cache_path):
        result = await score_scorer(judge).run(input="q", output="a")
    assert not result.judge["generate_score"].executions[0].cached
    stats = JudgeCache(cache_path).stats()
    assert (stats.entries, stats.expired) == (1, 0)


async def test_stats_times_are_utc_and_bound_the_writes(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    # DuckDB 1.5 hands a TIMESTAMPTZ to Python only with pytz installed, 2.0 in the session's
    # time zone: the stats give aware UTC datetimes either way.
    before = datetime.now(UTC)
    async with use_judge_cache(cache_path):
        for index in range(2):
            await score_scorer(judge).run(input=f"q{index}", output="a")
    after = datetime.now(UTC)
    stats = JudgeCache(cache_path).stats()
    assert stats.oldest is not None
    assert stats.newest is not None
    assert before - timedelta(seconds=1) <= stats.oldest <= stats.newest <= after
    assert stats.oldest.tzinfo is UTC


async def test_stats_and_clear(server: FakeOpenAIServer, judge: Judge, cache_path: Path) -> None:
    empty = JudgeCache(cache_path).stats()
    assert (empty.entries, empty.size_bytes, empty.oldest) == (0, 0, None)
    assert not cache_path.exists()  # stats do not create the file
    async with use_judge_cache(cache_path):
        for index in range(3):
            await score_scorer(judge).run(input=f"q{index}", output="a")
        await score_scorer(judge.replace(model="big-judge")).run(input="q", output="a")
    cache = JudgeCache(cache_path)
    try:
        stats = cache.stats()
        assert not cache.is_open  # maintenance calls do not keep the file locked
        assert (stats.entries, stats.expired) == (4, 0)
        assert stats.by_model == {"big-judge": 1, "fake-judge": 3}
        assert stats.size_bytes > 0
        assert stats.oldest is not None
        assert stats.newest is not None
        assert stats.oldest <= stats.newest
        assert stats.path == cache_path
        assert cache.clear(older_than=timedelta(hours=1)) == 0
        assert cache.clear(older_than=0) == 4
        assert cache.stats().entries == 0
    finally:
        cache.close()
    assert JudgeCache(cache_path).clear() == 0


async def test_writes_are_batched_and_the_rest_written_on_exit(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    cache = JudgeCache(cache_path, batch_size=2)
    async with use_judge_cache(cache):
        for index in range(5):
            await score_scorer(judge).run(input=f"q{index}", output="a")
        await cache.aflush()
        assert cache.stats().entries == 5
        opened = cache.is_open  # read once: mypy would keep cache.is_open narrowed to True
        assert opened
    assert not cache.is_open  # opened by use_judge_cache, so closed by it
    assert JudgeCache(cache_path).stats().entries == 5


async def test_an_open_cache_stays_open_after_the_block(
    server: FakeOpenAIServer, judge: Judge, cache_path: Path
) -> None:
    async with JudgeCache(cache_path) as cache:
        async with use_judge_cache(cache):
            await score_scorer(judge).run(input="q", output="a")
        assert cache.is_open
        assert cache.stats().entries == 1  # flushed when the block ended
    assert not cache.is_open


def test_an_unusable_file_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "not-a-db.duckdb"
    path.write_text("hello, I am not a database")
    with pytest.raises(StoreError, match=r"judge cache .*not-a-db\.duckdb"):
        JudgeCache(path).open()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ttl": -1}, "ttl must be a number of seconds from 0 to 3,155,760,000, got -1"),
        ({"ttl": "7d"}, "ttl must be a number of seconds from 0 to 3,155,760,000, got '7d'"),
        ({"batch_size": 0}, "batch_size must be an integer from 1 to 1,000,000, got 0"),
    ],
)
def test_invalid_settings_are_config_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        JudgeCache("x.duckdb", **kwargs)


def test_default_cache_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "runs" / "evalkit.duckdb"
    assert default_cache_path(store) == tmp_path / "runs" / "evalkit-cache.duckdb"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "evalkit" / "judge-cache.duckdb"
    assert JudgeCache().path == default_cache_path()
    assert JudgeCache(ttl=timedelta(days=1)).ttl == 86400
