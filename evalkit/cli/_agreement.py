"""The console tables of how far each labelled scorer agrees with its human labels, and each
repeated judge with itself."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from evalkit.agreement import RATERS, Estimate, JudgeStability, ScorerAgreement
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


def stability_table(
    stability: Mapping[str, JudgeStability],
    shares: Mapping[str, float | None],
    regressed: Iterable[str] = (),
) -> str:
    """One line per repeated scorer: its judge's agreement with itself, the share of the
    regression interval its noise explains, and a flag when it is unstable (said again of a
    ``regressed`` scorer: its regression is not to be believed yet)."""
    doubtful = set(regressed)
    columns = ["scorer", "executions", "pairs", "kind", "self alpha [CI]", "mean spread",
               "changed", "noise share", "flag"]  # fmt: skip
    rows = []
    notes = []
    for scorer_id, s in stability.items():
        share = shares.get(scorer_id)
        rows.append([scorer_id, s.repeats, s.pairs, s.kind, _value(s.alpha), _number(s.mean_spread),
                     _share(s.unstable_share), "" if share is None else _share(share),
                     "UNSTABLE" if s.flagged else ""])  # fmt: skip
        note = s.note()
        if note:
            notes.append(f"{one_line(scorer_id)}: {note}")
        if s.flagged and scorer_id in doubtful:
            notes.append(f"{one_line(scorer_id)}: its regression above comes from an unstable "
                         "judge: repeat or re-judge before believing it")  # fmt: skip
    text = "judge stability across repeated executions:\n" + text_table(columns, rows)
    return "\n".join([text, *notes])


def _number(value: float) -> str:
    return "undefined" if math.isnan(value) else f"{value:.3f}"


def _share(value: float) -> str:
    return "undefined" if math.isnan(value) else f"{value:.0%}"
