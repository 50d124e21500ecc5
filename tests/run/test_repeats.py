"""``run_evals(repeats=K)``: every LLM-judged pair executed K times, stored, and the judge's
agreement with itself measured."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import duckdb
import krippendorff
import numpy as np
import pytest

from evalkit import ConfigError, Judge, PromptStep, Scorer, create_scorer, run_evals
from evalkit.agreement._stability import STABLE_ALPHA
from evalkit.testing import FakeOpenAIServer, Fault, Rule

DATA = [{"id": f"i{n}", "input": f"question {n}", "output": f"answer {n}"} for n in range(30)]


def judged(judge: Judge):  # type: ignore[no-untyped-def]
    step = PromptStep("grade", lambda run: f"Grade {run.output!r} for {run.input!r}.")
    return create_scorer("graded", judge=judge).generate_score(step)


def exact() -> Scorer:
    return create_scorer("exact").generate_score(lambda run: float(run.output == "answer 1"))


def noisy_replies(server: FakeOpenAIServer, *, noisy_every: int) -> None:
    """Items whose number is a multiple of ``noisy_every`` get a score that changes at each
    call (0, 0.5, 1, 0, ...); the others always the same one, by item."""
    calls = itertools.count()

    def reply(body: dict[str, Any]) -> dict[str, float]:
        text = " ".join(str(m.get("content")) for m in body["messages"])
        n = int(re.search(r"answer (\d+)", text).group(1))  # type: ignore[union-attr]
        if n % noisy_every == 0:
            return {"score": (next(calls) % 3) / 2}
        return {"score": (n % 3) / 2}

    server.add_rule(Rule("Grade", reply=reply))


async def test_three_repeats_store_three_executions_per_pair_and_the_self_agreement(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    noisy_replies(server, noisy_every=5)
    store = tmp_path / "evalkit.duckdb"
    result = await run_evals(DATA, [judged(judge), exact()], store=store, progress=False, repeats=3)
    assert server.stats.requests == 90  # 30 pairs x 3, the code scorer never repeated
    with duckdb.connect(str(store), read_only=True) as con:
        counts = con.execute(
            "SELECT scorer_id, count(*), count(DISTINCT item_id), min(repeat_index),"
            " max(repeat_index) FROM score_repeats GROUP BY ALL"
        ).fetchall()
        spread = con.execute(
            "SELECT item_id, executions, score_range FROM pair_spread WHERE score_range > 0"
            " ORDER BY item_id"
        ).fetchall()
        calls = con.execute(
            "SELECT repeat_index, count(*) FROM judge_executions GROUP BY ALL ORDER BY 1"
        ).fetchall()
        view = con.execute(
            "SELECT scorer_id, repeats, pairs, self_alpha, unstable_share FROM judge_stability"
        ).fetchall()
        ratings = con.execute(
            "SELECT list(score ORDER BY repeat_index) FROM score_repeats GROUP BY item_id"
        ).fetchall()
    assert counts == [("graded", 90, 30, 0, 2)]
    # i0, i5, ... i25 changed score between executions; the others did not.
    assert [row[0] for row in spread] == ["i0", "i10", "i15", "i20", "i25", "i5"]
    assert all(row[1] == 3 for row in spread)
    assert calls == [(0, 30), (1, 30), (2, 30)]  # every execution's judge call recorded

    stable = result.stability["graded"]
    assert set(result.stability) == {"graded"}
    expected = krippendorff.alpha(
        np.array([r[0] for r in ratings]).T, level_of_measurement="ordinal",
        value_domain=[0.0, 0.5, 1.0],
    )  # fmt: skip
    assert stable.kind == "ordinal"
    assert stable.alpha.value == pytest.approx(expected)
    assert stable.alpha.low <= stable.alpha.value <= stable.alpha.high
    assert stable.unstable_share == pytest.approx(6 / 30)
    assert (stable.pairs, stable.repeats) == (30, 3)
    assert view == [("graded", 3.0, 30, pytest.approx(expected), pytest.approx(0.2))]
    # Execution 0 is the pair's score.
    outcome = result.items[0].outcome("graded")
    assert outcome is not None
    assert len(outcome.repeats) == 2
    assert result.to_dict()["stability"]["graded"]["pairs"] == 30


async def test_a_judge_that_disagrees_with_itself_is_flagged(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    noisy_replies(server, noisy_every=1)  # every score changes at every call
    result = await run_evals(DATA, [judged(judge)], store=None, progress=False, repeats=3)
    stable = result.stability["graded"]
    assert stable.alpha.value < STABLE_ALPHA
    assert stable.flagged
    assert "judge unstable" in (stable.note() or "")
    assert stable.unstable_share == 1.0


async def test_a_steady_judge_is_not_flagged_and_repeats_skip_the_cache(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    noisy_replies(server, noisy_every=10**6)  # only i0 is noisy
    store = tmp_path / "evalkit.duckdb"
    await run_evals(DATA, [judged(judge)], store=store, progress=False)
    assert server.stats.requests == 30
    result = await run_evals(DATA, [judged(judge)], store=store, progress=False, repeats=2)
    # Execution 0 comes from the cache of the first run; the repeats ask the judge again.
    assert server.stats.requests == 60
    assert not result.stability["graded"].flagged
    # No pair was judged afresh: a difference from the first run carries no judge noise.
    assert result.stability["graded"].fresh_share == 0.0
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT fresh_share FROM judge_stability").fetchall() == [(0.0,)]
    kept = await run_evals(DATA, [judged(judge)], store=None, progress=False, repeats=2,
                           cache=False)  # fmt: skip
    assert kept.stability["graded"].fresh_share == 1.0


async def test_without_repeats_nothing_is_repeated(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    store = tmp_path / "evalkit.duckdb"
    result = await run_evals(DATA, [judged(judge)], store=store, progress=False)
    assert result.stability == {}
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM score_repeats").fetchone() == (0,)


@pytest.mark.parametrize("repeats", [0, 21, 2.5, True, "3"])
async def test_repeats_out_of_range_is_a_config_error(repeats: Any) -> None:
    with pytest.raises(ConfigError, match="repeats must be an integer from 1 to 20"):
        await run_evals(DATA, [exact()], store=None, progress=False, repeats=repeats)


async def test_a_resumed_repeated_run_repeats_its_rerun_pairs_and_is_measured_again(
    server: FakeOpenAIServer, judge: Judge, tmp_path: Path
) -> None:
    server.add_rule(Rule("'answer 0'", fault=Fault.http(400, "bad request"), times=3))
    noisy_replies(server, noisy_every=5)
    store = tmp_path / "evalkit.duckdb"
    first = await run_evals(DATA, [judged(judge)], store=store, progress=False, repeats=3)
    assert first.stability["graded"].pairs == 29  # i0 failed all three times
    with pytest.raises(ConfigError, match="repeats: 3 -> None"):
        await run_evals(DATA, [judged(judge)], store=store, progress=False,
                        resume=first.experiment_id, retry_errors=True)  # fmt: skip
    again = await run_evals(DATA, [judged(judge)], store=store, progress=False, repeats=3,
                            resume=first.experiment_id, retry_errors=True)  # fmt: skip
    assert again.stability["graded"].pairs == 30
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            "SELECT count(*), count(score) FROM score_repeats WHERE item_id = 'i0'"
        ).fetchone()
        stored = con.execute("SELECT pairs FROM judge_stability").fetchall()
    assert rows == (3, 3)  # the failed executions replaced by the new pass's
    assert stored == [(30,)]


async def test_repeats_with_nowhere_to_keep_the_executions_is_refused() -> None:
    with pytest.raises(ConfigError, match="repeats needs somewhere to keep the executions"):
        await run_evals(DATA, [exact()], store=None, keep_results=False, progress=False,
                        repeats=2)  # fmt: skip
