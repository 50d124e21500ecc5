from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit import JudgeCost, create_scorer, run_evals
from tests.doubles import ScriptedJudgeStep


def rows_of(store: Path, sql: str) -> list[dict[str, Any]]:
    with duckdb.connect(str(store), read_only=True) as con:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


async def test_scorer_summary_hand_computed(store: Path) -> None:
    graded = {"a": 1.0, "b": 0.0, "c": 0.5, "d": 1.0}
    toxicity = {"a": 0.0, "b": 0.2, "c": 0.05, "d": 0.1, "e": 0.0}

    def grade(run: Any) -> float:
        if run.input == "e":
            raise ValueError("cannot grade e")
        return graded[run.input]

    scorers = [
        create_scorer("Graded").generate_score(grade),
        create_scorer("Toxicity", id="tox").generate_score(lambda run: toxicity[run.input]),
    ]
    result = await run_evals(
        [{"input": k, "output": k} for k in "abcde"],
        scorers,
        store=store,
        progress=False,
        experiment="views",
        thresholds={"graded": 0.6, "tox": {"max": 0.1}},
    )
    summary = {r["scorer_id"]: r for r in rows_of(store, "SELECT * FROM scorer_summary")}

    g = summary["graded"]
    stddev = math.sqrt(0.6875 / 3)  # squared deviations from 0.625 sum to 0.6875
    # Scores between 0 and 1: Wilson's score interval with t(0.975, 3) = 3.182 for z and the
    # effective n = 4 * 0.625 * 0.375 / stddev^2 = 4.0909 (docs/pages/design/score-intervals.md).
    t3, n_eff = 3.182, 4 * 0.625 * 0.375 / stddev**2
    a = t3 * t3 / n_eff
    centre = (0.625 + a / 2) / (1 + a)
    half = t3 / (1 + a) * math.sqrt(0.625 * 0.375 / n_eff + t3 * t3 / (4 * n_eff * n_eff))
    assert (g["experiment_id"], g["experiment_name"], g["scorer_name"]) == (
        result.experiment_id,
        "views",
        "Graded",
    )
    assert (g["n"], g["errors"]) == (4, 1)
    assert g["mean"] == pytest.approx(0.625)
    assert g["stddev"] == pytest.approx(stddev)
    assert g["ci95_low"] == pytest.approx(centre - half)
    assert g["ci95_high"] == pytest.approx(centre + half)
    assert (g["min"], g["median"], g["max"]) == (0.0, 0.75, 1.0)
    assert (g["threshold_min"], g["threshold_max"]) == (0.6, None)
    assert g["pass_rate"] == pytest.approx(0.5)  # 1.0 and 1.0 reach 0.6
    assert g["error_rate"] == pytest.approx(0.2)  # 1 error / (4 scored + 1 error)

    t = summary["tox"]
    assert (t["n"], t["errors"], t["error_rate"]) == (5, 0, 0.0)
    assert t["mean"] == pytest.approx(0.07)
    assert t["pass_rate"] == pytest.approx(0.8)  # all but 0.2 are at most 0.1
    assert (t["threshold_min"], t["threshold_max"]) == (None, 0.1)


async def test_confidence_interval_uses_student_t_beyond_the_table(store: Path) -> None:
    # 20 twos, 21 zeros: not between 0 and 1, so the interval is Student's t.
    values = [2.0 * (i % 2) for i in range(41)]
    await run_evals(
        [{"input": str(i), "output": "x"} for i in range(41)],
        [create_scorer("Alt").generate_score(lambda run: values[int(run.input)])],
        store=store,
        progress=False,
    )
    (row,) = rows_of(store, "SELECT n, mean, stddev, ci95_high FROM scorer_summary")
    assert row["n"] == 41
    # t(0.975, 40) = 2.0211; the expansion the view uses is within 0.001 of it.
    assert (row["ci95_high"] - row["mean"]) / (row["stddev"] / math.sqrt(41)) == pytest.approx(
        2.0211, abs=1e-3
    )


async def test_scorer_without_scores_still_has_a_row(store: Path) -> None:
    broken = create_scorer("Broken").generate_score(lambda run: None)
    await run_evals([{"input": "q", "output": "a"}], [broken], store=store, progress=False)
    (row,) = rows_of(store, "SELECT n, errors, mean, error_rate, pass_rate FROM scorer_summary")
    assert row == {"n": 0, "errors": 1, "mean": None, "error_rate": 1.0, "pass_rate": None}


async def test_judge_usage_hand_computed(store: Path) -> None:
    durations = {"a": 10.0, "b": 20.0, "c": 30.0, "d": 40.0, "e": 50.0}
    judged = create_scorer("Judged").generate_score(
        ScriptedJudgeStep(
            0.5,
            model="openai/gpt-4o-mini-2024-07-18",
            cost=JudgeCost(0.001, "USD", "litellm"),
            fails=lambda run: run.input == "e",
            duration=lambda run: durations[run.input],
        )
    )
    unpriced = create_scorer("Local").generate_score(
        ScriptedJudgeStep(1.0, model="my-finetune", provider="vllm")
    )
    result = await run_evals(
        [{"input": k, "output": k} for k in "abcde"],
        [judged, unpriced],
        store=store,
        progress=False,
    )
    usage = {r["scorer_id"]: r for r in rows_of(store, "SELECT * FROM judge_usage")}
    j = usage["judged"]
    assert j["experiment_id"] == result.experiment_id
    assert (j["judge_model_id"], j["judge_provider"]) == ("openai/gpt-4o-mini-2024-07-18", "openai")
    assert (j["executions"], j["succeeded"], j["failed"]) == (5, 4, 1)
    assert (j["attempts"], j["model_calls"]) == (5, 4)
    assert (j["input_tokens"], j["output_tokens"], j["total_tokens"]) == (4000, 800, 4800)
    assert (j["cached_input_tokens"], j["reasoning_tokens"]) == (1600, 0)
    assert j["latency_p50_ms"] == pytest.approx(30.0)
    assert j["latency_p95_ms"] == pytest.approx(48.0)
    assert j["cost_amount"] == pytest.approx(0.004)
    assert j["cost_unit"] == "USD"
    assert j["price_model"] == "gpt-4o-mini"
    # (4000 - 1600) x 0.15 + 1600 x 0.075 + 800 x 0.60, per million tokens
    assert j["estimated_cost_usd"] == pytest.approx(960 / 1e6)

    local = usage["local"]
    assert (local["executions"], local["price_model"], local["estimated_cost_usd"]) == (
        5,
        None,
        None,
    )


async def test_judge_usage_latency_is_the_request_time_not_evalkits_queue(store: Path) -> None:
    # (queue_ms, request_ms) per item; duration_ms is their sum plus 1 ms.
    timings = {"a": (0.0, 10.0), "b": (100.0, 20.0), "c": (200.0, 30.0), "d": (300.0, 40.0)}
    judged = create_scorer("Judged").generate_score(
        ScriptedJudgeStep(
            0.5,
            timing=lambda run: timings[run.input],
            duration=lambda run: sum(timings[run.input]) + 1.0,
        )
    )
    await run_evals(
        [{"input": k, "output": k} for k in "abcd"], [judged], store=store, progress=False
    )
    (j,) = rows_of(store, "SELECT * FROM judge_usage")
    assert j["latency_p50_ms"] == pytest.approx(25.0)
    assert j["latency_p95_ms"] == pytest.approx(38.5)
    assert j["queue_p50_ms"] == pytest.approx(150.0)
    assert j["queue_p95_ms"] == pytest.approx(285.0)


async def test_model_prices_are_editable(store: Path) -> None:
    judged = create_scorer("Judged").generate_score(ScriptedJudgeStep(0.5, model="my-finetune"))
    await run_evals([{"input": "q", "output": "a"}], [judged], store=store, progress=False)
    with duckdb.connect(str(store)) as con:
        con.execute(
            "INSERT INTO model_prices (model, provider, input_per_mtok, output_per_mtok)"
            " VALUES ('my-finetune', 'vllm', 1.0, 2.0)"
        )
    (row,) = rows_of(store, "SELECT estimated_cost_usd FROM judge_usage")
    # 1000 input tokens of which 400 cached (priced as input without a cached price), 200 out
    assert row["estimated_cost_usd"] == pytest.approx((1000 * 1.0 + 200 * 2.0) / 1e6)


@pytest.mark.parametrize(
    ("scores", "low", "high"),
    [
        ([1.0] * 9 + [0.0], 0.544, 0.986),  # Student t gave [0.674, 1.126]
        ([1.0] * 5, 0.394, 1.0),  # Student t gave [1, 1]
        ([1.0] + [0.0] * 19, 0.008, 0.254),  # Student t gave [-0.055, 0.155]
        ([0.0, 1.0], 0.003, 0.997),  # Student t gave [-5.85, 6.85]
    ],
)
async def test_interval_of_0_1_scores_stays_in_the_scale_and_has_width(
    store: Path, scores: list[float], low: float, high: float
) -> None:
    await run_evals(
        [{"input": str(i), "output": "x"} for i in range(len(scores))],
        [create_scorer("Pass").generate_score(lambda run: scores[int(run.input)])],
        store=store,
        progress=False,
    )
    (row,) = rows_of(store, "SELECT ci95_low, ci95_high FROM scorer_summary")
    assert 0.0 <= row["ci95_low"] < row["ci95_high"] <= 1.0
    assert (round(row["ci95_low"], 3), round(row["ci95_high"], 3)) == (low, high)
