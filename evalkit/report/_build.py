"""Building a `ReportData` from a finished run and, optionally, its comparison."""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalkit._intervals import mean_interval95
from evalkit.report._agreement import agreement_views
from evalkit.report._groups import failure_groups
from evalkit.report._model import ItemView, PairView, ReportData, ScorerRow, fmt_signed

if TYPE_CHECKING:
    from evalkit.agreement import ScorerAgreement
    from evalkit.compare import Comparison, ScorerComparison, SliceComparison
    from evalkit.run import ExperimentResult


def _comparison_note(c: ScorerComparison) -> str | None:
    parts = []
    if c.only_in_baseline + c.only_in_candidate or c.failed_in_either:
        parts.append(
            f"{c.n_paired} items paired; {c.only_in_baseline} only in the baseline, "
            f"{c.only_in_candidate} only in this run, {c.failed_in_either} failed in either"
        )
    if c.detectable_drop is not None:
        # docs/pages/design/detectable-drop.md
        parts.append(f"detects a drop of {c.detectable_drop:.3g} or more with 80% power")
    if c.power_note is not None:
        parts.append(c.power_note)
    return "; ".join(parts) or None


def _regression_reason(c: ScorerComparison) -> str:
    if c.note is not None:
        return f"Δ {fmt_signed(c.difference)} over {c.n_paired} paired items: {c.note}"
    return (
        f"Δ {fmt_signed(c.difference)} "
        f"[{fmt_signed(c.ci_low)}, {fmt_signed(c.ci_high)}] over {c.n_paired} paired items, "
        f"beyond max_drop {c.max_drop:g} (p = {c.p_value:.3g})"
    )


def _view(item: Any, o: Any) -> ItemView:
    row = item.item
    return ItemView(
        row.id, o.scorer_id, o.score, row.input, item.output, row.ground_truth,
        reason=o.reason, failed_step=o.failed_step,
        error=o.error.message if o.error is not None else None,
        reason_truncated=o.reason_truncated,
    )  # fmt: skip


def build_report(
    result: ExperimentResult,
    *,
    comparison: Comparison | None = None,
    baseline: str | None = None,
    baseline_note: str | None = None,
    baseline_reason: str | None = None,
    directions: Mapping[str, str] | None = None,
    worst: int = 5,
    slices: tuple[SliceComparison, ...] = (),
    regressed_items: Mapping[str, list[PairView]] | None = None,
    regressed_totals: Mapping[str, int] | None = None,
    baseline_distributions: Mapping[str, list[float]] | None = None,
    baseline_id: str | None = None,
    agreement: Mapping[str, ScorerAgreement] | None = None,
) -> ReportData:
    """What the console table, HTML, Markdown and JUnit reports of ``result`` show.

    Args:
        result: The finished run (with its per-item results kept, for worst items and
            failures and failure groups; without them the report has only the statistics).
        comparison: The run judged against its baseline, if there is one.
        baseline: How to name the baseline in the report (``"quickstart (a1b2c3…)"``).
        baseline_note: Why there is no baseline, when there is none (one line).
        baseline_reason: Why the baseline was chosen (``"newest passing run"``, ``"pinned
            by alice: v2 is the new normal"``, ``"named explicitly"``).
        directions: ``"higher"`` or ``"lower"`` per scorer id (default higher).
        worst: How many of the worst-scored items to show per scorer.
        slices: The per-slice comparison (`compare_slices`, evalkit/compare/_slices.py).
        regressed_items: Per scorer, the pairs that dropped most against the baseline.
        regressed_totals: Per scorer, how many pairs dropped in all.
        baseline_distributions: Per scorer, the baseline's scores (overlaid on histograms).
        baseline_id: The baseline's id, for the report's ``evalkit diff`` pointer.
        agreement: Per labelled scorer, its agreement with the human labels (default: the
            run's own, ``result.agreement``; one rebuilt from the store by
            ``evalkit.cli``'s reports shows the same), judged on ``result.min_agreement``.
    """
    directions = directions or {}
    compared = {c.scorer_id: c for c in comparison} if comparison is not None else {}
    verdict = result.verdict
    rows = []
    for scorer_id in result.scorer_ids:
        s = result.summary.scorers[scorer_id]
        # The store's scorer_summary gives the same interval (evalkit/_intervals.py).
        interval = mean_interval95(s.n, s.mean, s.stddev, s.min, s.max)
        low, high = interval if interval is not None else (None, None)
        threshold = result.thresholds.get(scorer_id)
        gate = verdict.scorers[scorer_id]
        c = compared.get(scorer_id)
        regressed = bool(c and c.verdict == "regressed")
        rows.append(
            ScorerRow(
                scorer_id=scorer_id,
                n=s.n,
                mean=s.mean,
                ci_low=low,
                ci_high=high,
                failures=s.failed,
                not_run=gate.not_run,
                threshold=str(threshold) if threshold is not None else None,
                higher_is_better=directions.get(scorer_id, "higher") != "lower",
                delta=c.difference if c else None,
                delta_low=c.ci_low if c else None,
                delta_high=c.ci_high if c else None,
                regressed=regressed,
                comparison_note=_comparison_note(c) if c else None,
                power_note=c.power_note if c else None,
                reasons=gate.reasons + ((_regression_reason(c),) if c and regressed else ()),
            )
        )

    distributions: dict[str, list[float]] = {sid: [] for sid in result.scorer_ids}
    # Per scorer, (score, item position, outcome position) of every success: only the worst
    # few become ItemViews (a 100,000-item run would otherwise build 100,000 per scorer).
    successes: dict[str, list[tuple[float, int, int]]] = {sid: [] for sid in result.scorer_ids}
    failures: list[ItemView] = []
    items = result.items
    for n, item in enumerate(items):
        row = item.item
        if item.error is not None:
            failures.append(
                ItemView(row.id, "(target)", None, row.input, None, row.ground_truth,
                         error=f"{item.error.name}: {item.error.message}")
            )  # fmt: skip
        for k, o in enumerate(item.outcomes):
            if o.status == "success" and o.score is not None:
                distributions[o.scorer_id].append(o.score)
                successes[o.scorer_id].append((o.score, n, k))
            else:
                failures.append(_view(item, o))
    worst_items = {}
    for sid, found in successes.items():
        lower_better = directions.get(sid, "higher") == "lower"
        picked = heapq.nlargest(worst, found, key=lambda t: (t[0] or 0.0, -t[1])) if lower_better \
            else heapq.nsmallest(worst, found, key=lambda t: (t[0] or 0.0, t[1]))  # fmt: skip
        worst_items[sid] = [_view(items[n], items[n].outcomes[k]) for _, n, k in picked]

    summary = result.summary
    return ReportData(
        experiment_id=result.experiment_id,
        name=result.name,
        status=result.status,
        dataset=result.dataset,
        started_at=result.started_at.isoformat(timespec="seconds"),
        completed_at=result.completed_at.isoformat(timespec="seconds"),
        total_items=summary.total_items,
        succeeded_items=summary.succeeded,
        failed_items=summary.failed,
        scorers=tuple(rows),
        distributions={k: v for k, v in distributions.items() if v},
        worst_items=worst_items,
        failures=tuple(failures),
        baseline=baseline,
        baseline_note=baseline_note,
        baseline_reason=baseline_reason,
        failure_groups=failure_groups(result.items, scorer_ids=result.scorer_ids),
        slices=tuple(slices),
        regressed_items=dict(regressed_items or {}),
        regressed_totals=dict(regressed_totals or {}),
        baseline_distributions=dict(baseline_distributions or {}),
        baseline_id=baseline_id,
        agreement=agreement_views(
            result.agreement if agreement is None else agreement, result.min_agreement
        ),
    )
