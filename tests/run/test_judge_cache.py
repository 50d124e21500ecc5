from __future__ import annotations

from pathlib import Path

import duckdb

from evalkit import Judge, PromptStep, create_scorer, run_evals
from evalkit.testing import FakeOpenAIServer

DATA = [{"id": f"i{n}", "input": f"question {n}", "output": f"answer {n}"} for n in range(20)]


def judged(judge: Judge):  # type: ignore[no-untyped-def]
    step = PromptStep("grade", lambda run: f"Grade {run.output!r} for {run.input!r}.")
    return create_scorer("graded", judge=judge).generate_score(step)


async def test_a_rerun_is_answered_from_the_cache_beside_the_store(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    store = tmp_path / "runs" / "evalkit.duckdb"
    store.parent.mkdir()
    first = await run_evals(DATA, [judged(judge)], store=store, progress=False)
    assert server.stats.requests == 20
    second = await run_evals(DATA, [judged(judge)], store=store, progress=False)
    assert server.stats.requests == 20  # no new call
    assert second.scores == first.scores
    assert (tmp_path / "runs" / "evalkit-cache.duckdb").exists()
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            "SELECT experiment_id, cached, count(*), sum(input_tokens) FROM judge_executions"
            " GROUP BY ALL ORDER BY cached"
        ).fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (first.experiment_id, False, 20),
        (second.experiment_id, True, 20),
    ]
    assert rows[1][3] == 0  # cached calls cost nothing


async def test_cache_false_always_asks_the_judge(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    store = tmp_path / "evalkit.duckdb"
    for _ in range(2):
        await run_evals(DATA, [judged(judge)], store=store, progress=False, cache=False)
    assert server.stats.requests == 40
    assert not (tmp_path / "evalkit-cache.duckdb").exists()


async def test_no_store_means_no_cache_unless_one_is_named(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    await run_evals(DATA, [judged(judge)], store=None, progress=False)
    await run_evals(DATA, [judged(judge)], store=None, progress=False)
    assert server.stats.requests == 40
    named = tmp_path / "judge.duckdb"
    for _ in range(2):
        await run_evals(DATA, [judged(judge)], store=None, progress=False, cache=named)
    assert server.stats.requests == 60
