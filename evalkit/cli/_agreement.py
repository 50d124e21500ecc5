"""The console table of how far each labelled scorer agrees with its human labels."""

from __future__ import annotations

import math
from collections.abc import Mapping

from evalkit.agreement import RATERS, Estimate, ScorerAgreement
from evalkit.cli._format import one_line, text_table


def _value(e: Estimate) -> str:
    if math.isnan(e.value):
        return "undefined"
    if math.isnan(e.low):
        return f"{e.value:.3f}"
    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


def _gate(value: float, bound: float | None) -> str:
    if bound is None:
        return ""
    passed = not math.isnan(value) and value >= bound
    return f">= {bound:g} " + ("passed" if passed else "FAILED")


def agreement_table(
    measured: Mapping[str, ScorerAgreement], gates: Mapping[str, Mapping[str, float]]
) -> str:
    """One line per scorer and metric: against the labels' consensus, then the raters'
    agreement among themselves; a gated metric says whether it passed."""
    columns = ["scorer", "labels", "kind", "n", "metric", "value [CI]", "gate"]
    rows = []
    for scorer_id, m in measured.items():
        bounds = gates.get(scorer_id, {})
        labels = ", ".join(one_line(c) for c in m.labels.columns)
        for metric, estimate in m.consensus.metrics.items():
            rows.append([scorer_id, labels, m.kind, m.consensus.n, metric, _value(estimate),
                         _gate(estimate.value, bounds.get(metric))])  # fmt: skip
        if m.raters is not None:
            rows.append([scorer_id, f"{labels} ({RATERS})", m.kind, m.consensus.n, "alpha",
                         _value(m.raters), _gate(m.raters.value, bounds.get("alpha"))])  # fmt: skip
    return "agreement with human labels:\n" + text_table(columns, rows)
