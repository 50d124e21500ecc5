"""The judge section of ``evalkit compare``: two runs' LLM judges against each other and, side
by side, each against the human labels, with a note when the runs differ in more."""

from __future__ import annotations

import math

from evalkit.agreement import Estimate
from evalkit.cli._format import one_line, text_table
from evalkit.compare import JudgeComparison


def _value(e: Estimate | None) -> str:
    if e is None:
        return "-"
    if math.isnan(e.value):
        return "undefined"
    if math.isnan(e.low):
        return f"{e.value:.3f}"
    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


def judges_section(judges: JudgeComparison) -> str:
    """Per compared scorer what differs in its judge, then one line per metric: each judge
    against the labels (as its run measured it) and the two judges against each other."""
    lines = ["\njudges (baseline's and candidate's, against the labels and each other):"]
    for s in judges:
        changed = "; ".join(one_line(d) for d in s.differences) or "the same judge"
        source = "from the labels" if s.kind_from == "labels" else "inferred from the scores"
        lines.append(f"  {one_line(s.scorer_id)}: {changed} ({s.kind}, {source})")
    columns = ["scorer", "metric", "baseline vs labels", "candidate vs labels",
               "baseline vs candidate", "paired"]  # fmt: skip
    rows = [
        [
            s.scorer_id,
            metric,
            _value(s.baseline.vs_labels.get(metric)),
            _value(s.candidate.vs_labels.get(metric)),
            _value(estimate),
            s.between.n,
        ]
        for s in judges
        for metric, estimate in s.between.metrics.items()
    ]
    lines.append(text_table(columns, rows))
    if judges.confounded:
        lines.append(
            "note: the runs differ in more than the judge, so the judges did not judge the same"
            " thing and the comparison is confounded: "
            + "; ".join(one_line(c) for c in judges.confounds)
        )
    return "\n".join(lines)
