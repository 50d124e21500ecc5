"""``run_evals`` checks its judges and its OpenAI target before the first item."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit import Judge, OpenAITarget, PreflightError, PromptStep, create_scorer, run_evals
from evalkit.testing import FakeOpenAIServer

DATA = [{"id": f"i{n:03d}", "input": f"q{n}", "output": f"a{n}"} for n in range(300)]


def judged(judge: Judge, name: str = "graded") -> Any:
    step = PromptStep("grade", lambda run: f"Grade {run.output!r}.")
    return create_scorer(name, judge=judge).generate_score(step)


def exact() -> Any:
    return create_scorer("exact").generate_score(lambda run: float(run.output == "a1"))


async def test_a_judge_at_a_closed_port_stops_the_run_before_anything_is_stored(
    closed_url: str, judge_key: str, tmp_path: Path
) -> None:
    judge = Judge("gpt-4o-mini", base_url=closed_url, api_key_env=judge_key)
    store = tmp_path / "evalkit.duckdb"
    seen: list[Any] = []
    with pytest.raises(PreflightError, match="cannot connect") as info:
        await run_evals(
            DATA, [exact(), judged(judge)], store=store, progress=False,
            on_item_complete=seen.append,
        )  # fmt: skip
    assert info.value.model == "gpt-4o-mini"
    assert seen == []
    assert not store.exists()  # no experiment row: the run never started


async def test_a_missing_key_stops_the_run(server: FakeOpenAIServer, tmp_path: Path) -> None:
    judge = Judge("m", base_url=server.base_url, api_key_env="EVALKIT_RUN_ABSENT_KEY")
    with pytest.raises(PreflightError, match="EVALKIT_RUN_ABSENT_KEY is not set"):
        await run_evals(DATA[:3], [judged(judge)], store=None, progress=False)
    assert server.stats.requests == 0


async def test_an_openai_target_is_checked_too(closed_url: str, judge_key: str) -> None:
    target = OpenAITarget("app-model", base_url=closed_url, api_key_env=judge_key)
    data = [{"input": "2+2"}]
    with pytest.raises(PreflightError, match=r"^target 'app-model' at .*cannot connect") as info:
        await run_evals(data, [exact()], target=target, store=None, progress=False)
    assert info.value.role == "target"


async def test_a_healthy_run_checks_each_endpoint_once(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    scorers = [judged(judge), judged(judge.replace(model="other"), "second")]
    result = await run_evals(DATA[:5], scorers, store=None, progress=False)
    assert result.status == "completed"
    assert server.stats.models == 1


async def test_a_run_without_judges_makes_no_check(server: FakeOpenAIServer) -> None:
    await run_evals(DATA[:3], [exact()], store=None, progress=False)
    assert server.stats.models == 0


async def test_without_preflight_a_dead_judge_fails_every_pair_fast(
    closed_url: str, judge_key: str, tmp_path: Path
) -> None:
    """The breaker stops the calls of an endpoint that never answered: 300 items do not each
    wait out their retries, and every pair is a recorded failure."""
    judge = Judge("gpt-4o-mini", base_url=closed_url, api_key_env=judge_key, max_retries=2)
    store = tmp_path / "evalkit.duckdb"
    result = await run_evals(
        DATA, [judged(judge)], store=store, progress=False, concurrency=16, preflight=False,
        cache=False,
    )  # fmt: skip
    assert result.summary.scorers["graded"].failed == 300
    codes = Counter(
        # An outcome without an error drops out, so the count below no longer adds up.
        (e.data or {}).get("cause", {}).get("name")
        for o in result.results_for("graded")
        if (e := o.error) is not None
    )
    assert codes == {"JudgeError": 300}
    with duckdb.connect(str(store), read_only=True) as con:
        stored = con.execute(
            "SELECT error_code, count(*) FROM judge_executions GROUP BY ALL ORDER BY 1"
        ).fetchall()
        errors = con.execute("SELECT count(*) FROM scorer_errors").fetchone()
    assert errors == (300,)
    by_code = dict(stored)
    # At most the calls already in flight when the breaker opened saw the refusal itself.
    assert by_code.get("connection", 0) <= 16
    assert by_code["unreachable"] >= 300 - 16
    assert sum(by_code.values()) == 300


async def test_a_sharded_run_is_checked_before_its_shards_start(
    closed_url: str, judge_key: str, tmp_path: Path
) -> None:
    import pandas as pd

    data = tmp_path / "data.parquet"
    pd.DataFrame(DATA[:4]).to_parquet(data)
    judge = Judge("m", base_url=closed_url, api_key_env=judge_key)
    store = tmp_path / "evalkit.duckdb"
    with pytest.raises(PreflightError, match="cannot connect"):
        await run_evals(data, [judged(judge)], shard="1/1", store=store, progress=False)
    assert not store.exists()
