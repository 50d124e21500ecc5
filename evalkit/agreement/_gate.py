"""Agreement gates: ``min_agreement = { kappa = 0.6 }`` fails a run whose judge disagrees with
the people, even when its mean score looks fine.

A gate bounds the point estimate of a consensus metric (``accuracy``, ``kappa``,
``weighted_kappa``, ``pearson``, ``spearman``) or of the raters' own agreement (``alpha``, which
fails a run whose labels are too noisy to judge a judge by). An undefined value (kappa when
everyone used one class) or a scorer with no labelled pair fails its gate: no evidence of
agreement is never a pass.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from evalkit._scorer_ids import close_id
from evalkit.agreement._labels import LabelSpec
from evalkit.agreement._measure import ScorerAgreement
from evalkit.errors import ConfigError

CATEGORICAL_METRICS = ("accuracy", "kappa", "weighted_kappa")
CONTINUOUS_METRICS = ("pearson", "spearman")
GATED = (*CATEGORICAL_METRICS, *CONTINUOUS_METRICS, "alpha")


def parse_min_agreement(
    min_agreement: Mapping[str, Any] | None, labels: Mapping[str, LabelSpec]
) -> dict[str, dict[str, float]]:
    """Check ``min_agreement={"rubric": {"kappa": 0.6}}`` against the scorers' labels.

    Raises:
        ConfigError: A scorer without labels, an unknown metric, one its labels cannot give,
            or a bound that is not a number in [-1, 1].
    """
    if not min_agreement:
        return {}
    if not isinstance(min_agreement, Mapping):
        raise ConfigError(
            "min_agreement must map scorer ids to bounds, e.g. {'rubric': {'kappa': 0.6}}, "
            f"not {type(min_agreement).__name__}"
        )
    parsed: dict[str, dict[str, float]] = {}
    for scorer_id, bounds in min_agreement.items():
        where = f"min_agreement[{scorer_id!r}]"
        spec = labels.get(scorer_id)
        if spec is None:
            close = close_id(scorer_id, list(labels))
            if close is not None:
                raise ConfigError(
                    f"{where}: no labelled scorer {scorer_id!r} (did you mean {close!r}?)"
                )
            raise ConfigError(
                f"{where}: scorer {scorer_id!r} has no labels to agree with (give "
                f'labels = {{ {scorer_id} = "<label column>" }})'
            )
        if not isinstance(bounds, Mapping) or not bounds:
            raise ConfigError(
                f"{where}: give metric bounds, e.g. {{ kappa = 0.6 }}, got {bounds!r}"
            )
        parsed[scorer_id] = {}
        for metric, bound in bounds.items():
            _check_metric(metric, spec, where)
            if isinstance(bound, bool) or not isinstance(bound, numbers.Real):
                raise ConfigError(f"{where}[{metric!r}] must be a number, got {bound!r}")
            if not -1.0 <= float(bound) <= 1.0:
                raise ConfigError(f"{where}[{metric!r}] must be between -1 and 1, got {bound!r}")
            parsed[scorer_id][metric] = float(bound)
    return parsed


def _check_metric(metric: Any, spec: LabelSpec, where: str) -> None:
    if metric == "mae":
        raise ConfigError(
            f"{where}: mae is an error, not an agreement (lower is better); bound pearson or "
            "spearman instead"
        )
    if metric not in GATED:
        raise ConfigError(f"{where}: unknown metric {metric!r}; metrics are {', '.join(GATED)}")
    if metric == "alpha" and len(spec.columns) < 2:
        raise ConfigError(f"{where}: alpha is the agreement among several label columns; "
                          f"scorer {spec.scorer_id!r} has one")  # fmt: skip
    categorical = spec.levels is not None or spec.kind not in (None, "continuous")
    if categorical and metric in CONTINUOUS_METRICS:
        raise ConfigError(f"{where}: {metric} is measured on continuous labels; these have "
                          f"levels (use {', '.join(CATEGORICAL_METRICS)})")  # fmt: skip
    if spec.kind == "continuous" and metric in CATEGORICAL_METRICS:
        raise ConfigError(f"{where}: {metric} is measured on labels with levels; these are "
                          f"continuous (use {', '.join(CONTINUOUS_METRICS)})")  # fmt: skip
    if metric == "weighted_kappa" and spec.kind in ("binary", "categorical"):
        raise ConfigError(f"{where}: weighted_kappa needs ordered (ordinal) labels")


def agreement_reasons(
    measured: ScorerAgreement | None, bounds: Mapping[str, float]
) -> tuple[str, ...]:
    """One sentence per agreement gate ``measured`` fails (none when it passes them all)."""
    if not bounds:
        return ()
    if measured is None or measured.consensus.n == 0:
        return ("no labelled pair to measure agreement on",)
    reasons = []
    for metric, bound in bounds.items():
        found = measured.metric(metric)
        if found is None:
            reasons.append(f"{metric} is not measured for {measured.kind} labels")
        elif math.isnan(found.value):
            reasons.append(f"{metric} is undefined (n={measured.consensus.n}: one class only?)")
        elif found.value < bound:
            reasons.append(f"{metric} {found.value:.3f} below min_agreement {bound:g} "
                           f"(n={measured.consensus.n})")  # fmt: skip
    return tuple(reasons)
