"""One scorer measured against its human labels: the statistics of ``_stats.py`` put together.

With one label column the scorer is compared with it. With several, the scorer is compared
with their consensus (the most frequent label for binary and categorical labels, the lower
median for ordinal ones, the mean for continuous ones) and with each column, and the columns'
agreement with each other (Krippendorff's alpha) says how far people themselves agree: a judge
cannot be expected to agree with people better than they agree among themselves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from evalkit.agreement._arguments import LabelKind
from evalkit.agreement._labels import LabelSpec
from evalkit.agreement._stats import (
    Agreement,
    Estimate,
    agreement,
    disagreements,
    inter_rater_alpha,
)

FloatArray = npt.NDArray[np.float64]

CONSENSUS = "consensus"
"""What the scorer is compared with when it has several label columns
(``scorer_agreement.compared_with``)."""
RATERS = "raters"
"""What ``scorer_agreement.compared_with`` says for the people's agreement among themselves."""


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A pair where the scorer and the people differ most (``reason_truncated``: the reason is
    a judge reply cut at its token limit)."""

    item_id: str
    score: float
    label: float
    reason: str | None
    reason_truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "score": self.score, "label": self.label,
                "reason": self.reason, "reason_truncated": self.reason_truncated}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ScorerAgreement:
    """How far one scorer agrees with its human labels.

    Attributes:
        scorer_id: The scorer.
        labels: Where its labels are and how they are read.
        kind: The kind of labels (given, or inferred from them).
        consensus: The scorer against the label column, or the columns' consensus.
        columns: With several label columns, the scorer against each one.
        raters: With several label columns, Krippendorff's alpha among them; else None.
        disagreements: The pairs where scorer and consensus differ most, largest first.
    """

    scorer_id: str
    labels: LabelSpec
    kind: LabelKind
    consensus: Agreement
    columns: Mapping[str, Agreement] = field(default_factory=dict)
    raters: Estimate | None = None
    disagreements: tuple[Disagreement, ...] = ()

    def metric(self, name: str) -> Estimate | None:
        """The consensus metric ``name`` (``"kappa"``…), or None when this kind has none."""
        if name == "alpha":
            return self.raters
        return self.consensus.metrics.get(name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the consensus, each column, the raters' alpha and the disagreements."""
        return {
            "scorer_id": self.scorer_id,
            "labels": self.labels.to_dict(),
            "kind": self.kind,
            "consensus": self.consensus.to_dict(),
            "columns": {column: a.to_dict() for column, a in self.columns.items()},
            "raters_alpha": None if self.raters is None else _estimate(self.raters),
            "disagreements": [d.to_dict() for d in self.disagreements],
        }


def _estimate(e: Estimate) -> dict[str, float | None]:
    def clean(v: float) -> float | None:
        return None if math.isnan(v) else v

    return {"value": clean(e.value), "low": clean(e.low), "high": clean(e.high)}


def resolve_kind(spec: LabelSpec, labels: FloatArray) -> tuple[LabelKind, tuple[float, ...] | None]:
    """The kind of ``spec``'s labels and their levels on the scale (None when continuous).

    The spec's ``kind`` when it gives one; else a label set is ``binary`` with two levels and
    ``ordinal`` with more, and numbers are ``binary`` when ``labels`` take at most two values,
    else ``continuous``. Without a label set the levels are the values ``labels`` take (padded
    with the scale's ends when fewer than two).
    """
    levels = spec.level_values()
    if spec.kind is not None:
        kind = spec.kind
    elif levels is not None:
        kind = "binary" if len(levels) == 2 else "ordinal"
    else:
        seen = np.unique(labels[~np.isnan(labels)])
        kind = "binary" if len(seen) <= 2 else "continuous"
    if kind == "continuous":
        return kind, None
    if levels is None:
        seen = np.unique(labels[~np.isnan(labels)])
        low, high = spec.scale
        found = tuple(float(v) for v in seen)
        if len(found) < 2:
            found = tuple(sorted({*found, low, high}))[:2] if found else (low, high)
        levels = found
    return kind, levels


def consensus_of(rows: FloatArray, kind: LabelKind) -> FloatArray:
    """Per item (column of ``rows``, one row per label column), the people's consensus."""
    out = np.full(rows.shape[1], math.nan)
    for j in range(rows.shape[1]):
        present = rows[~np.isnan(rows[:, j]), j]
        if present.size == 0:
            continue
        if kind == "continuous":
            out[j] = float(present.mean())
        elif kind == "ordinal":
            ordered = np.sort(present)
            out[j] = float(ordered[(ordered.size - 1) // 2])  # the lower median
        else:
            values, counts = np.unique(present, return_counts=True)
            out[j] = float(values[int(np.argmax(counts))])  # the most frequent, ties lowest
    return out


def measure(
    spec: LabelSpec,
    item_ids: Sequence[str],
    scores: Sequence[float],
    reasons: Sequence[str | None],
    labels: Mapping[str, Sequence[Any]],
    *,
    confidence: float = 0.95,
    seed: int = 0,
    limit: int = 10,
    source: str = "labels",
    truncated: Sequence[bool] = (),
) -> ScorerAgreement:
    """Measure one scorer's agreement with its labels.

    Args:
        spec: The scorer's labels.
        item_ids: The items the scorer scored, in order.
        scores: Their scores.
        reasons: Their reasons.
        labels: Per label column of ``spec``, the raw label of each item (None if absent).
        confidence: The bootstrap intervals' level.
        seed: Seeds the bootstrap (the same run gives the same intervals).
        limit: Disagreements kept.
        source: The dataset, named by a label's error.
        truncated: Per item, whether its reason is a judge reply cut at its token limit
            (empty: none is).

    Raises:
        DatasetError: A label is not one of the levels, or not a number.
    """
    judge = np.asarray(scores, dtype=np.float64)
    rows = np.empty((len(spec.columns), 0))
    if item_ids:
        rows = np.vstack([spec.values(c, labels[c], item_ids, source=source) for c in spec.columns])
    kind, levels = resolve_kind(spec, rows.ravel())
    human = rows[0] if len(spec.columns) == 1 else consensus_of(rows, kind)
    options: dict[str, Any] = {"kind": kind, "levels": levels, "confidence": confidence,
                               "seed": seed}  # fmt: skip
    main = agreement(judge, human, **options)
    columns: dict[str, Agreement] = {}
    raters = None
    if len(spec.columns) > 1:
        columns = {c: agreement(judge, rows[k], **options) for k, c in enumerate(spec.columns)}
        raters = inter_rater_alpha(rows, **options)
    picked = disagreements(judge, human, kind=kind, levels=levels, limit=limit)
    found = tuple(
        Disagreement(item_ids[i], float(judge[i]), float(human[i]), reasons[i],
                     bool(truncated[i]) if truncated else False)
        for i in picked
    )  # fmt: skip
    return ScorerAgreement(spec.scorer_id, spec, kind, main, columns, raters, found)
