from __future__ import annotations

from typing import Any

import pytest

from evalkit import ConfigError, Threshold, create_scorer, run_evals
from evalkit.run._thresholds import parse_threshold
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
    }


async def test_no_thresholds_passes_and_no_scores_fails() -> None:
    broken = create_scorer("broken").generate_score(lambda run: "high")
    result = await run_evals(QA, [broken], store=None, progress=False)
    assert result.verdict.passed is True
    with_threshold = await run_evals(
        QA, [broken], store=None, progress=False, thresholds={"broken": 0.1}
    )
    assert with_threshold.verdict.passed is False
    assert with_threshold.verdict.scorers["broken"].mean is None


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
    ],
)
def test_threshold_passes(threshold: Threshold, value: float | None, passes: bool) -> None:
    assert threshold.passes(value) is passes
