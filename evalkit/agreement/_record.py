"""Agreement after a run: measured from the store (every pass of the run, sharded or not) or
from the scores held in memory, and kept in the store's ``scorer_agreement`` table."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping

from evalkit.agreement._labels import LabelSpec
from evalkit.agreement._measure import CONSENSUS, RATERS, ScorerAgreement, measure
from evalkit.agreement._stats import Agreement, Estimate
from evalkit.store import AgreementRow, LabeledScores, read_labeled_scores, write_agreement

Read = Callable[[LabelSpec], LabeledScores]


def measure_labels(
    labels: Mapping[str, LabelSpec], read: Read, *, source: str = "labels"
) -> dict[str, ScorerAgreement]:
    """Each labelled scorer measured on the pairs ``read`` gives it (``source``: the dataset,
    named by a label's error)."""
    measured = {}
    for scorer_id, spec in labels.items():
        found = read(spec)
        measured[scorer_id] = measure(spec, found.item_ids, found.scores, found.reasons,
                                      found.labels, source=source)  # fmt: skip
    return measured


def measure_stored(
    store: str | os.PathLike[str],
    experiment_id: str,
    labels: Mapping[str, LabelSpec],
    *,
    source: str = "labels",
) -> dict[str, ScorerAgreement]:
    """Measure a stored run's scorers against their labels and keep the figures in the store
    (replacing any it had: a resumed run is measured over all its passes again)."""

    def read(spec: LabelSpec) -> LabeledScores:
        return read_labeled_scores(store, experiment_id, spec.scorer_id, spec.columns)

    measured = measure_labels(labels, read, source=source)
    write_agreement(store, experiment_id, agreement_rows(measured))
    return measured


def agreement_rows(measured: Mapping[str, ScorerAgreement]) -> list[AgreementRow]:
    """The ``scorer_agreement`` rows of ``measured``: per scorer, the consensus's metrics, each
    label column's (several columns), and the raters' alpha."""
    rows: list[AgreementRow] = []
    for scorer_id, m in measured.items():
        rows.extend(_rows(scorer_id, CONSENSUS, m.consensus))
        for column, found in m.columns.items():
            rows.extend(_rows(scorer_id, column, found))
        if m.raters is not None:
            items = m.consensus.n + m.consensus.missing
            rows.append(
                AgreementRow(scorer_id, RATERS, m.kind, "alpha", *_values(m.raters), n=items,
                             missing=0)
            )  # fmt: skip
    return rows


def _rows(scorer_id: str, compared_with: str, found: Agreement) -> list[AgreementRow]:
    levels, confusion = found.levels or None, found.confusion or None
    return [
        AgreementRow(
            scorer_id,
            compared_with,
            found.kind,
            metric,
            *_values(estimate),
            n=found.n,
            missing=found.missing,
            levels=levels,
            confusion=confusion,
        )
        for metric, estimate in found.metrics.items()
    ]


def _values(e: Estimate) -> tuple[float | None, float | None, float | None]:
    return tuple(None if math.isnan(v) else v for v in (e.value, e.low, e.high))  # type: ignore[return-value]
