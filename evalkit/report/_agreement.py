"""What a report shows of the agreement of scorers with human labels, built from the
`ScorerAgreement` of each labelled scorer (held by the run, or
rebuilt from the store) and its ``min_agreement`` gates.

Every rendering (HTML, Markdown, ``evalkit diff``) reads these views, so they show the same
figures, the same level names and the same gate verdicts as the console table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalkit.agreement import Agreement, Estimate, ScorerAgreement

#: A judge's reason is cut to this many characters in a report's list of disagreements.
MAX_REASON = 300


@dataclass(frozen=True, slots=True)
class MetricView:
    """One agreement metric with its bootstrap interval and its gate, if it has one.

    Attributes:
        name: ``accuracy``, ``kappa``, ``weighted_kappa``, ``pearson``, ``spearman``, ``mae``
            or (the raters' agreement among themselves) ``alpha``.
        value: The point estimate; None when undefined.
        low: The interval's lower end; None when undefined.
        high: Its upper end.
        bound: The ``min_agreement`` bound on it, or None.
    """

    name: str
    value: float | None
    low: float | None
    high: float | None
    bound: float | None = None

    @property
    def passed(self) -> bool | None:
        """Whether the gate holds (None without a gate); an undefined value fails it."""
        if self.bound is None:
            return None
        return self.value is not None and self.value >= self.bound

    @property
    def text(self) -> str:
        """``0.764 [0.688, 0.837]``, ``0.764`` without an interval, or ``undefined``."""
        if self.value is None:
            return "undefined"
        if self.low is None or self.high is None:
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"

    @property
    def gate(self) -> str:
        """``>= 0.6 passed`` or ``>= 0.6 FAILED`` as the console shows it; "" without a gate."""
        if self.bound is None:
            return ""
        return f">= {self.bound:g} " + ("passed" if self.passed else "FAILED")


@dataclass(frozen=True, slots=True)
class HeatCell:
    """One cell of a confusion matrix: its pair count and its shade (count / largest count)."""

    count: int
    shade: float
    human: str
    judge: str

    @property
    def title(self) -> str:
        """What the cell means, in words (its tooltip)."""
        pairs = "pair" if self.count == 1 else "pairs"
        return f"human {self.human}, judge {self.judge}: {self.count} {pairs}"


@dataclass(frozen=True, slots=True)
class DisagreementView:
    """A pair where the judge and the people differ most, ready to show.

    Attributes:
        scorer_id: The scorer.
        item_id: The item.
        score: The judge's score.
        label: The people's label (their consensus) on the scorer's scale.
        label_text: The label as the people wrote it (``good``), or the number.
        reason: The judge's reason, cut to `MAX_REASON` characters (None: none given).
        reason_truncated: The reason is a judge reply cut at its token limit.
    """

    scorer_id: str
    item_id: str
    score: float
    label: float
    label_text: str
    reason: str | None
    reason_truncated: bool = False


@dataclass(frozen=True, slots=True)
class AgreementView:
    """One labelled scorer's agreement with its human labels, as a report shows it.

    Attributes:
        scorer_id: The scorer.
        columns: Its label columns.
        kind: The labels' kind.
        n: Pairs with both a score and a label (consensus).
        missing: Pairs without a label, left out.
        metrics: Against the label column, or the columns' consensus.
        per_column: With several label columns, the metrics against each one.
        raters: With several label columns, Krippendorff's alpha among them; else None.
        levels: The level names, the confusion matrix's headers (none when continuous).
        confusion: Rows: the people's level; columns: the judge's score snapped to a level.
        disagreements: The pairs that differ most, largest difference first.
        reasons: One sentence per failed agreement gate (the scorer's verdict holds them too).
    """

    scorer_id: str
    columns: tuple[str, ...]
    kind: str
    n: int
    missing: int
    metrics: tuple[MetricView, ...]
    per_column: tuple[tuple[str, tuple[MetricView, ...]], ...] = ()
    raters: MetricView | None = None
    levels: tuple[str, ...] = ()
    confusion: tuple[tuple[HeatCell, ...], ...] = ()
    disagreements: tuple[DisagreementView, ...] = ()
    reasons: tuple[str, ...] = ()

    @property
    def compared_with(self) -> str:
        """What the metrics compare the scorer with, in words."""
        if len(self.columns) == 1:
            return f"the label column {self.columns[0]}"
        return f"the consensus of {', '.join(self.columns)}"


def _none(value: float) -> float | None:
    return None if math.isnan(value) else value


def _metric(name: str, e: Estimate, bound: float | None) -> MetricView:
    return MetricView(name, _none(e.value), _none(e.low), _none(e.high), bound)


def _metrics(found: Agreement, bounds: Mapping[str, float]) -> tuple[MetricView, ...]:
    return tuple(_metric(name, e, bounds.get(name)) for name, e in found.metrics.items())


def level_names(m: ScorerAgreement) -> dict[float, str]:
    """Each level's value on the scorer's scale → its name as the labels spell it."""
    values = m.labels.level_values()
    names = m.labels.levels
    if values is not None and names is not None:
        return {value: _name(name) for value, name in zip(values, names, strict=True)}
    return {value: f"{value:g}" for value in m.consensus.levels}


def _name(level: str | float) -> str:
    return level if isinstance(level, str) else f"{level:g}"


def _heat(m: ScorerAgreement, names: Mapping[float, str]) -> tuple[tuple[HeatCell, ...], ...]:
    headers = [names.get(v, f"{v:g}") for v in m.consensus.levels]
    top = max((c for row in m.consensus.confusion for c in row), default=0)
    return tuple(
        tuple(HeatCell(c, c / top if top else 0.0, headers[i], headers[j])
              for j, c in enumerate(row))
        for i, row in enumerate(m.consensus.confusion)
    )  # fmt: skip


def _cut(text: str | None) -> str | None:
    """``text`` cut to `MAX_REASON` characters, at a space if one is near the end."""
    if text is None or len(text) <= MAX_REASON:
        return text
    cut = text[:MAX_REASON]
    space = cut.rfind(" ", MAX_REASON - 40)
    return (cut[:space] if space > 0 else cut).rstrip() + "…"


def agreement_view(m: ScorerAgreement, bounds: Mapping[str, float] | None = None) -> AgreementView:
    """What a report shows of ``m``, with the gates ``bounds`` (``{"kappa": 0.6}``)."""
    from evalkit.agreement._gate import agreement_reasons

    bounds = bounds or {}
    # A consensus of labels with levels is one of them; of continuous labels, any number.
    names = level_names(m) if m.consensus.levels else {}
    return AgreementView(
        scorer_id=m.scorer_id,
        columns=m.labels.columns,
        kind=m.kind,
        n=m.consensus.n,
        missing=m.consensus.missing,
        metrics=_metrics(m.consensus, bounds),
        per_column=tuple((column, _metrics(a, {})) for column, a in m.columns.items()),
        raters=None if m.raters is None else _metric("alpha", m.raters, bounds.get("alpha")),
        levels=tuple(names.get(v, f"{v:g}") for v in m.consensus.levels),
        confusion=_heat(m, names),
        disagreements=tuple(
            DisagreementView(
                m.scorer_id,
                d.item_id,
                d.score,
                d.label,
                names.get(d.label, f"{d.label:g}"),
                _cut(d.reason),
                d.reason_truncated,
            )
            for d in m.disagreements
        ),
        reasons=agreement_reasons(m, bounds),
    )


def agreement_views(
    measured: Mapping[str, ScorerAgreement], gates: Mapping[str, Mapping[str, float]]
) -> tuple[AgreementView, ...]:
    """One `AgreementView` per labelled scorer of ``measured``, in its order."""
    return tuple(agreement_view(m, gates.get(sid)) for sid, m in measured.items())
