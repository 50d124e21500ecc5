from __future__ import annotations

import math

import pytest

from evalkit.agreement import Agreement, Estimate, LabelSpec, ScorerAgreement
from evalkit.agreement._gate import agreement_reasons, parse_min_agreement
from evalkit.agreement._labels import parse_labels
from evalkit.errors import ConfigError

LABELS = parse_labels(
    {
        "rubric": {"columns": ["a", "b"], "levels": ["bad", "ok", "good"]},
        "sim": {"columns": "h", "kind": "continuous"},
        "any": "h",
    },
    ("rubric", "sim", "any", "free"),
)


@pytest.mark.parametrize(
    ("gates", "message"),
    [
        ({"free": {"kappa": 0.6}}, "scorer 'free' has no labels"),
        ({"rubric": {}}, "give metric bounds"),
        ({"rubric": {"kapa": 0.6}}, "unknown metric 'kapa'"),
        ({"rubric": {"mae": 0.1}}, "mae is an error"),
        ({"rubric": {"pearson": 0.5}}, "pearson is measured on continuous labels"),
        ({"sim": {"kappa": 0.5}}, "kappa is measured on labels with levels"),
        ({"sim": {"alpha": 0.5}}, "alpha is the agreement among several label columns"),
        ({"rubric": {"kappa": 1.5}}, "between -1 and 1"),
        ({"rubric": {"kappa": True}}, "must be a number"),
    ],
)
def test_bad_gates_are_config_errors_naming_scorer_and_metric(
    gates: dict[str, dict[str, float]], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_min_agreement(gates, LABELS)


def test_good_gates_parse_as_floats() -> None:
    gates = {"rubric": {"kappa": 0.6, "alpha": 0.5}, "sim": {"spearman": 0}, "any": {"kappa": 1}}
    assert parse_min_agreement(gates, LABELS) == {
        "rubric": {"kappa": 0.6, "alpha": 0.5}, "sim": {"spearman": 0.0}, "any": {"kappa": 1.0}
    }  # fmt: skip


def _measured(kappa: float, n: int = 50, alpha: float | None = None) -> ScorerAgreement:
    metrics = {"accuracy": Estimate(0.8, 0.7, 0.9), "kappa": Estimate(kappa, kappa - 0.1, kappa)}
    found = Agreement("ordinal", n, 0, metrics, (0.0, 0.5, 1.0), ())
    raters = None if alpha is None else Estimate(alpha, alpha - 0.1, alpha + 0.1)
    return ScorerAgreement("rubric", LabelSpec("rubric", ("a", "b")), "ordinal", found, {}, raters)


def test_a_gate_fails_below_its_bound_when_undefined_and_without_labelled_pairs() -> None:
    assert agreement_reasons(_measured(0.7), {"kappa": 0.6}) == ()
    assert agreement_reasons(_measured(0.42), {"kappa": 0.6}) == (
        "kappa 0.420 below min_agreement 0.6 (n=50)",
    )
    [undefined] = agreement_reasons(_measured(math.nan), {"kappa": 0.6})
    assert "kappa is undefined" in undefined
    assert agreement_reasons(_measured(0.7, n=0), {"kappa": 0.6}) == (
        "no labelled pair to measure agreement on",
    )
    assert agreement_reasons(None, {"kappa": 0.6}) == ("no labelled pair to measure agreement on",)
    assert agreement_reasons(_measured(0.9, alpha=0.3), {"alpha": 0.5}) == (
        "alpha 0.300 below min_agreement 0.5 (n=50)",
    )
    assert agreement_reasons(_measured(0.1), {}) == ()
