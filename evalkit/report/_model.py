"""What a report shows, independent of how it is rendered (console, HTML, Markdown, JUnit)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from evalkit._numbers import shown_number
from evalkit.report._agreement import AgreementView
from evalkit.report._groups import FailureGroup

if TYPE_CHECKING:
    from evalkit.compare import SliceComparison

ReportVerdict = Literal["passed", "failed", "regressed"]


@dataclass(frozen=True, slots=True)
class ScorerRow:
    """One scorer's line in a report, with its verdict and the reasons for it.

    Every rendering (console, ``--json``, Markdown, HTML, JUnit) shows `verdict` and
    `reasons` and nothing else of the gates, so they cannot disagree.

    Attributes:
        scorer_id: The scorer's id.
        n: Successful scores (pairs scored).
        mean: Mean of the successful scores (None when there are none).
        ci_low: Lower bound of the 95% confidence interval of the mean.
        ci_high: Upper bound of it.
        failures: Pairs whose scorer ran and failed (never counted in the mean).
        not_run: Pairs the scorer never ran on (the item's target failed, or the run stopped).
        threshold: The gate as text (``">= 0.8"``, ``"<= 0.1"``), or None.
        higher_is_better: The scorer's direction.
        delta: Candidate minus baseline mean over paired items (None without baseline).
        delta_low: Lower bound of the paired CI of ``delta``.
        delta_high: Upper bound of it.
        regressed: Whether the regression gate failed for this scorer.
        comparison_note: Counts of unpaired or failed items in the comparison, the drop it can
            detect (`ScorerComparison.detectable_drop`) and its warning, as text.
        power_note: The comparison's warning that ``max_drop`` is below the drop it can detect
            (`ScorerComparison.power_note`), or None.
        reasons: One sentence per failed gate (no data, error rate, threshold, regression);
            empty when the scorer passed.
    """

    scorer_id: str
    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    failures: int
    not_run: int = 0
    threshold: str | None = None
    higher_is_better: bool = True
    delta: float | None = None
    delta_low: float | None = None
    delta_high: float | None = None
    regressed: bool = False
    comparison_note: str | None = None
    reasons: tuple[str, ...] = ()
    power_note: str | None = None

    @property
    def verdict(self) -> ReportVerdict:
        """``regressed`` beats ``failed`` (any other gate) beats ``passed``."""
        if self.regressed:
            return "regressed"
        return "failed" if self.reasons else "passed"

    @property
    def gate_failed(self) -> bool:
        """Whether this scorer makes the run fail."""
        return self.verdict != "passed"

    @property
    def coverage(self) -> str:
        """``scored/failed/not run``, e.g. ``"190/10/0"``."""
        return f"{self.n}/{self.failures}/{self.not_run}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields, the verdict and its reasons."""
        return {
            "scorer_id": self.scorer_id,
            "n": self.n,
            "mean": self.mean,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "failures": self.failures,
            "not_run": self.not_run,
            "threshold": self.threshold,
            "higher_is_better": self.higher_is_better,
            "delta": self.delta,
            "delta_low": self.delta_low,
            "delta_high": self.delta_high,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True, slots=True)
class ItemView:
    """An item shown in a report (a worst-scored item or a failure).

    ``reason_truncated`` says the reason is a judge reply cut at its token limit (the
    generate_reason step's execution was flagged ``truncated``).
    """

    item_id: str
    scorer_id: str
    score: float | None
    input: Any
    output: Any
    ground_truth: Any
    reason: str | None = None
    failed_step: str | None = None
    error: str | None = None
    reason_truncated: bool = False


@dataclass(frozen=True, slots=True)
class PairView:
    """A pair whose score dropped from the baseline to this run, both sides shown.

    ``reason_truncated`` and ``baseline_reason_truncated`` say that run's reason is a judge
    reply cut at its token limit.
    """

    item_id: str
    scorer_id: str
    baseline_score: float
    score: float
    delta: float
    input: Any
    ground_truth: Any
    baseline_output: Any
    output: Any
    baseline_reason: str | None = None
    reason: str | None = None
    slices: tuple[tuple[str, str | None], ...] = ()
    baseline_reason_truncated: bool = False
    reason_truncated: bool = False


@dataclass(frozen=True, slots=True)
class ReportData:
    """Everything a report of one experiment shows.

    ``failure_groups`` holds the failures grouped by scorer and error (see
    [`failure_groups`][evalkit.report.failure_groups]); empty when the run kept no per-item results.
    """

    experiment_id: str
    name: str
    status: str
    dataset: str | None
    started_at: str
    completed_at: str | None
    total_items: int
    succeeded_items: int
    failed_items: int
    scorers: tuple[ScorerRow, ...]
    distributions: dict[str, list[float]] = field(default_factory=dict)
    worst_items: dict[str, list[ItemView]] = field(default_factory=dict)
    failures: tuple[ItemView, ...] = ()
    baseline: str | None = None
    baseline_note: str | None = None
    failure_groups: tuple[FailureGroup, ...] = ()
    #: Per slice and scorer, the comparison with the baseline (Tarone-Holm corrected verdicts).
    slices: tuple[SliceComparison, ...] = ()
    #: Per scorer, the pairs that dropped most against the baseline (capped).
    regressed_items: dict[str, list[PairView]] = field(default_factory=dict)
    #: Per scorer, how many pairs dropped in all (the list above shows the first few).
    regressed_totals: dict[str, int] = field(default_factory=dict)
    #: Per scorer, the baseline's scores, overlaid on this run's histogram.
    baseline_distributions: dict[str, list[float]] = field(default_factory=dict)
    #: The baseline's experiment id, for the ``evalkit diff`` pointer.
    baseline_id: str | None = None
    #: Per labelled scorer, its agreement with the human labels (none without labels).
    agreement: tuple[AgreementView, ...] = ()
    #: Why the baseline was chosen ("newest passing run", "pinned by alice: …").
    baseline_reason: str | None = None

    @property
    def passed(self) -> bool:
        """True when no scorer failed a gate (coverage, error rate, threshold, regression)."""
        return not any(s.gate_failed for s in self.scorers)

    @property
    def partial(self) -> str | None:
        """Why the report covers only part of the run, as a sentence every rendering shows:
        the run was cancelled (Ctrl-C) or interrupted before every item was evaluated. None
        for a run that ended."""
        if self.status not in ("cancelled", "interrupted"):
            return None
        done = self.succeeded_items + self.failed_items
        return (
            f"Partial report: the run was {self.status} after {done} of {self.total_items}"
            f" items; its figures and verdict cover those items only. Resume it to finish it"
            f" (evalkit run FILE --resume {self.experiment_id})."
        )

    @property
    def verdict_line(self) -> str:
        """``PASSED``, or ``FAILED: `` and which bound failed for which scorer."""
        if self.passed:
            return "PASSED"
        failed = [f"{s.scorer_id} {s.verdict}: {'; '.join(s.reasons)}" for s in self.scorers
                  if s.gate_failed]  # fmt: skip
        return "FAILED: " + " | ".join(failed)

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON: passed, the verdict line and every scorer's row."""
        return {
            "experiment_id": self.experiment_id,
            "name": self.name,
            "status": self.status,
            "passed": self.passed,
            "verdict": self.verdict_line,
            "baseline": self.baseline,
            "baseline_reason": self.baseline_reason,
            "baseline_note": self.baseline_note,
            "scorers": [s.to_dict() for s in self.scorers],
            "slices": [row.to_dict() for row in self.slices],
            "regressed_slices": self.regressed_slices,
        }

    @property
    def regressed_slices(self) -> list[str]:
        """``key=value`` of every slice that regressed for some scorer, sorted."""
        return sorted({f"{r.key}={r.value}" for r in self.slices if r.verdict == "regressed"})


def fmt(value: float | None, digits: int = 3, *, minus: str = "-") -> str:
    """A score as a fixed decimal (``0.750``; ``1.000e+12`` from 1e9 up), or "-" when absent
    (None or NaN); ``minus`` is the minus sign (`evalkit._numbers.MINUS` on a page)."""
    return shown_number(value, digits, minus=minus)


def fmt_signed(value: float | None, digits: int = 3, *, minus: str = "-") -> str:
    """A difference with its sign (``+0.012``; exponent form from 1e9 up), or "-"."""
    return shown_number(value, digits, signed=True, minus=minus)


def delta_text(s: ScorerRow, *, minus: str = "-") -> str:
    """``-0.050 [-0.080, -0.020]``: the Δ vs baseline with its CI, or "-"."""
    if s.delta is None:
        return "-"
    low, high = fmt_signed(s.delta_low, minus=minus), fmt_signed(s.delta_high, minus=minus)
    return f"{fmt_signed(s.delta, minus=minus)} [{low}, {high}]"


def mean_text(s: ScorerRow, *, minus: str = "-") -> str:
    """``0.750 [0.702, 0.793]``: the mean with its 95% CI, whose ends are shown rather than a
    half-width because the interval of 0..1 scores is not symmetric (9 of 10 is ``0.900
    [0.544, 0.986]``; ``± 0.221`` would reach past 1)."""
    if s.mean is None:
        return "-"
    if s.ci_low is None or s.ci_high is None:
        return fmt(s.mean, minus=minus)
    low, high = fmt(s.ci_low, minus=minus), fmt(s.ci_high, minus=minus)
    return f"{fmt(s.mean, minus=minus)} [{low}, {high}]"
