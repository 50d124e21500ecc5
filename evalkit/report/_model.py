"""What a report shows, independent of how it is rendered (console, HTML, Markdown, JUnit)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from evalkit.report._groups import FailureGroup

Verdict = Literal["passed", "failed", "regressed", "no data"]


@dataclass(frozen=True, slots=True)
class ScorerRow:
    """One scorer's line in a report.

    Attributes:
        scorer_id: The scorer's id.
        n: Successful scores.
        mean: Mean of the successful scores (None when there are none).
        ci_low: Lower bound of the 95% confidence interval of the mean.
        ci_high: Upper bound of it.
        failures: Failed scorer runs (never counted in the mean).
        threshold: The gate as text (``">= 0.8"``, ``"<= 0.1"``), or None.
        threshold_passed: Whether the mean meets the threshold (None without one).
        higher_is_better: The scorer's direction.
        delta: Candidate minus baseline mean over paired items (None without baseline).
        delta_low: Lower bound of the paired bootstrap CI of ``delta``.
        delta_high: Upper bound of it.
        regressed: Whether the regression gate failed for this scorer.
        comparison_note: Counts of unpaired or failed items in the comparison, as text.
    """

    scorer_id: str
    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    failures: int
    threshold: str | None = None
    threshold_passed: bool | None = None
    higher_is_better: bool = True
    delta: float | None = None
    delta_low: float | None = None
    delta_high: float | None = None
    regressed: bool = False
    comparison_note: str | None = None

    @property
    def verdict(self) -> Verdict:
        """``regressed`` beats ``failed`` (threshold) beats ``passed``; ``no data`` if n == 0."""
        if self.regressed:
            return "regressed"
        if self.threshold_passed is False:
            return "failed"
        if self.n == 0:
            return "no data"
        return "passed"

    @property
    def gate_failed(self) -> bool:
        """Whether this scorer makes the run fail."""
        return self.regressed or self.threshold_passed is False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields and the verdict."""
        return {
            "scorer_id": self.scorer_id,
            "n": self.n,
            "mean": self.mean,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "failures": self.failures,
            "threshold": self.threshold,
            "higher_is_better": self.higher_is_better,
            "delta": self.delta,
            "delta_low": self.delta_low,
            "delta_high": self.delta_high,
            "verdict": self.verdict,
        }


@dataclass(frozen=True, slots=True)
class ItemView:
    """An item shown in a report (a worst-scored item or a failure)."""

    item_id: str
    scorer_id: str
    score: float | None
    input: Any
    output: Any
    ground_truth: Any
    reason: str | None = None
    failed_step: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ReportData:
    """Everything a report of one experiment shows.

    ``failure_groups`` holds the failures grouped by scorer and error (see
    :func:`~evalkit.report.failure_groups`); empty when the run kept no per-item results.
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
    failure_groups: tuple[FailureGroup, ...] = ()

    @property
    def passed(self) -> bool:
        """True when no scorer's threshold or regression gate failed."""
        return not any(s.gate_failed for s in self.scorers)


def fmt(value: float | None, digits: int = 3) -> str:
    """A score as a fixed decimal (``0.750``), or "-" when absent."""
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_signed(value: float | None, digits: int = 3) -> str:
    """A difference with its sign (``+0.012``), or "-" when absent."""
    return "-" if value is None else f"{value:+.{digits}f}"


def delta_text(s: ScorerRow) -> str:
    """``-0.050 [-0.080, -0.020]``: the Δ vs baseline with its CI, or "-"."""
    if s.delta is None:
        return "-"
    return f"{fmt_signed(s.delta)} [{fmt_signed(s.delta_low)}, {fmt_signed(s.delta_high)}]"


def mean_text(s: ScorerRow) -> str:
    """``0.750 ± 0.031``: the mean with the half-width of its 95% CI."""
    if s.mean is None:
        return "-"
    if s.ci_low is None or s.ci_high is None:
        return fmt(s.mean)
    return f"{fmt(s.mean)} ± {fmt((s.ci_high - s.ci_low) / 2)}"
