from __future__ import annotations

import math
from typing import Any

import pytest

from evalkit import ConfigError, Threshold, create_scorer, run_evals
from evalkit.run._thresholds import parse_threshold, scorer_verdict
from tests.run.conftest import QA, exact_scorer


def constant(name: str, value: float) -> Any:
    return create_scorer(name).generate_score(lambda run: value)


async def test_verdict_per_scorer_and_overall() -> None:
    scorers = [exact_scorer(), constant("toxicity", 0.05), constant("bias", 0.3)]
    result = await run_evals(
        QA,
        scorers,
        store=None,
        progress=False,
        thresholds={"exact": 0.8, "toxicity": {"max": 0.1}, "bias": {"max": 0.2}},
    )
    verdict = result.verdict
    assert verdict.scorers["exact"].passed is False  # mean 4/6 < 0.8
    assert verdict.scorers["exact"].mean == pytest.approx(4 / 6)
    assert verdict.scorers["toxicity"].passed is True
    assert verdict.scorers["bias"].passed is False
    assert verdict.passed is False
    assert verdict.failed == ["exact", "bias"]
    assert result.thresholds["toxicity"].lower_is_better


async def test_verdict_passes_when_every_threshold_holds() -> None:
    result = await run_evals(
        QA,
        [exact_scorer(), constant("toxicity", 0.05)],
        store=None,
        progress=False,
        thresholds={"exact": 0.6, "toxicity": {"max": 0.1}},
    )
    assert result.verdict.passed is True
    assert result.verdict.failed == []
    assert result.to_dict()["verdict"] == {
        "passed": True,
        "scorers": {"exact": True, "toxicity": True},
        "reasons": {"exact": [], "toxicity": []},
    }


async def test_a_scorer_without_scores_fails_with_or_without_a_threshold() -> None:
    broken = create_scorer("broken").generate_score(lambda run: "high")
    for thresholds in (None, {"broken": 0.1}):
        result = await run_evals(QA, [broken], store=None, progress=False, thresholds=thresholds)
        verdict = result.verdict.scorers["broken"]
        assert result.verdict.passed is False
        assert verdict.mean is None
        assert verdict.reasons[0] == "no data: none of its 6 pairs was scored"
        assert (verdict.scored, verdict.failed, verdict.not_run) == (0, 6, 0)


def failing_on(prefix: str) -> Any:
    def score(run: Any) -> float:
        if run.input.startswith(prefix):
            raise RuntimeError("judge unreachable")
        return 1.0

    return create_scorer("Flaky", id="flaky").generate_score(score)


async def test_failures_above_the_default_error_rate_fail_the_run() -> None:
    # 2 of 6 pairs fail: 33%, above the default 5%, and no threshold is set at all.
    result = await run_evals(QA, [exact_scorer(), failing_on("bad:")], store=None, progress=False)
    assert result.verdict.passed is False
    assert result.verdict.failed == ["flaky"]
    flaky = result.verdict.scorers["flaky"]
    assert flaky.error_rate == pytest.approx(2 / 6)
    assert flaky.reasons == (
        "error rate 33.3% above max_error_rate 5% (2 failed, 0 not run of 6 pairs)",
    )


@pytest.mark.parametrize(
    ("max_error_rate", "passed"),
    [(0.5, True), ({"flaky": 0.34}, True), ({"flaky": 0.3}, False), (0.0, False)],
)
async def test_max_error_rate_per_scorer_or_for_all(max_error_rate: Any, passed: bool) -> None:
    result = await run_evals(
        QA, [exact_scorer(), failing_on("bad:")], store=None, progress=False,
        max_error_rate=max_error_rate,
    )  # fmt: skip
    assert result.verdict.passed is passed


async def test_pairs_whose_target_failed_count_as_not_run() -> None:
    def target(question: str) -> str:
        if question.startswith("bad:"):
            raise RuntimeError("model down")
        return "4"

    result = await run_evals(QA, [exact_scorer()], target=target, store=None, progress=False)
    exact = result.verdict.scorers["exact"]
    assert (exact.scored, exact.failed, exact.not_run) == (4, 0, 2)
    assert not exact.passed


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1.5, "between 0 and 1"),
        (-0.1, "between 0 and 1"),
        ("high", "must be a number"),
        ({"nope": 0.1}, "no scorer with id 'nope'"),
    ],
)
async def test_bad_max_error_rate(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        await run_evals(QA, [exact_scorer()], store=None, progress=False, max_error_rate=value)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (0.8, Threshold(min=0.8)),
        (1, Threshold(min=1.0)),
        ({"min": 0.2}, Threshold(min=0.2)),
        ({"max": 0.1}, Threshold(max=0.1)),
        ({"min": 0.2, "max": 0.9}, Threshold(0.2, 0.9)),
        (Threshold(max=0.5), Threshold(max=0.5)),
    ],
)
def test_parse_threshold(spec: Any, expected: Threshold) -> None:
    assert parse_threshold("s", spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("high", "must be a number"),
        (True, "must be a number"),
        (float("nan"), "finite"),
        ({"minimum": 0.2}, "unknown key 'minimum'"),
        ({}, "give 'min' and/or 'max'"),
        ({"min": 0.9, "max": 0.1}, "above max"),
    ],
)
def test_bad_thresholds(spec: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_threshold("s", spec)


@pytest.mark.parametrize(
    ("threshold", "value", "passes"),
    [
        (Threshold(min=0.8), 0.8, True),
        (Threshold(min=0.8), 0.79, False),
        (Threshold(max=0.1), 0.1, True),
        (Threshold(max=0.1), 0.2, False),
        (Threshold(0.2, 0.4), 0.3, True),
        (Threshold(0.2, 0.4), 0.5, False),
        (Threshold(min=0.0), None, False),
        (Threshold(max=0.1), math.nan, False),
        (Threshold(min=0.5), math.inf, False),
    ],
)
def test_threshold_passes(threshold: Threshold, value: float | None, passes: bool) -> None:
    assert threshold.passes(value) is passes


def huge(scale: float, positives: int) -> Any:
    """``+scale`` on QA's first ``positives`` items, ``-scale`` on the others."""
    plus = {row["input"] for row in QA[:positives]}
    return create_scorer("huge").generate_score(lambda run: scale if run.input in plus else -scale)


@pytest.mark.parametrize("scale", [1e308, 1e307, -1e308])
async def test_huge_scores_give_their_true_mean_and_spread(scale: float) -> None:
    # Issue 30, item 4: ±1e308 gave `nan ± nan` (inf - inf); ±1e307 an infinite spread.
    result = await run_evals(QA, [huge(scale, 3)], store=None, progress=False)
    summary = result.summary.scorers["huge"]
    assert summary.mean == pytest.approx(0.0, abs=abs(scale) * 1e-15)
    assert summary.stddev == pytest.approx(abs(scale) * math.sqrt(1.2), rel=1e-12)
    assert (summary.min, summary.max) == (-abs(scale), abs(scale))


@pytest.mark.parametrize("scale", [1e308, 1e307])
async def test_huge_scores_fail_the_gate_they_miss(scale: float) -> None:
    # The mean is 2/3 of the scale (6.7e307), far above the bound: a NaN mean passed every bound.
    result = await run_evals(
        QA, [huge(scale, 5)], store=None, progress=False, thresholds={"huge": {"max": 0.1}}
    )
    verdict = result.verdict.scorers["huge"]
    assert verdict.passed is False
    assert verdict.mean == pytest.approx(scale / 6 * 4)
    # In exponent form: not the 300 digits of f"{1e307:.3f}".
    assert verdict.reasons == (f"mean {scale / 6 * 4:.3e} misses the threshold <= 0.1",)


@pytest.mark.parametrize("mean", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("threshold", [None, Threshold(min=0.5), Threshold(max=0.1)])
def test_a_mean_that_is_not_finite_fails_its_gate(mean: float, threshold: Threshold | None) -> None:
    verdict = scorer_verdict("huge", threshold=threshold, mean=mean, scored=6, failed=0, not_run=0)
    assert verdict.passed is False
    assert verdict.reasons == (
        f"mean {mean} is not a finite number: the scores cannot be summarised",
    )
