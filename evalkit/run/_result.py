"""The one place a run's [`ExperimentResult`][evalkit.ExperimentResult] is built, whichever driver
ran it.

See docs/pages/design/one-run-pipeline.md.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any, cast

import anyio.to_thread

from evalkit.agreement import JudgeStability, LabelSpec, ScorerAgreement, measure_stored
from evalkit.agreement._record import measure_labels, measure_stability, measure_stability_stored
from evalkit.agreement._table import LabeledScores
from evalkit.run._experiment import ExperimentResult
from evalkit.run._outcome import ItemResult
from evalkit.run._spec import RunSpec
from evalkit.run._summary import ExperimentStatus, RunSummary, summary_from_counts
from evalkit.store._read import read_run_counts
from evalkit.store._writer import StoreWriter


@dataclass(frozen=True, slots=True)
class Driven:
    """What a driver reports of a run it finished.

    Attributes:
        status: The status the run ended with.
        summary: The summary of the items the driver saw (a sharded resume's includes the
            shards finished before).
        items: The kept item results, in dataset order.
        dataset_fingerprint: The fingerprint of the rows read, or None.
        stop: The interruption (Ctrl-C, a cancellation) that stopped the run, recorded
            ``cancelled``; ``run_evals`` raises it again once it has built the result.
    """

    status: ExperimentStatus
    summary: RunSummary
    items: tuple[ItemResult, ...]
    dataset_fingerprint: str | None
    stop: BaseException | None = None


async def build_result(
    spec: RunSpec, driven: Driven, writer: StoreWriter | None
) -> ExperimentResult:
    """The result of the run ``spec`` that a driver ``driven`` into ``writer``."""
    status, summary = driven.status, driven.summary
    if spec.plan is not None and writer is not None and writer.final_status is not None:
        # Over every pass, not just this one (see StoreWriter.finish): the verdict of a
        # resumed run judges the whole experiment.
        status = cast(ExperimentStatus, writer.final_status)
        counts = await anyio.to_thread.run_sync(read_run_counts, writer.path, spec.experiment_id)
        summary = summary_from_counts(counts, spec.scorer_ids)
    agreement: dict[str, ScorerAgreement] = {}
    if spec.labels and status != "cancelled":
        if writer is not None:
            measure = functools.partial(measure_stored, source=spec.dataset.source)
            agreement = await anyio.to_thread.run_sync(
                measure, writer.path, spec.experiment_id, spec.labels
            )
        else:
            read = functools.partial(_labeled, driven.items)
            agreement = measure_labels(spec.labels, read, source=spec.dataset.source)
    stability: dict[str, JudgeStability] = {}
    if spec.options.repeats > 1 and status != "cancelled":
        if writer is not None:
            stability = await anyio.to_thread.run_sync(
                measure_stability_stored, writer.path, spec.experiment_id, spec.labels
            )
        else:
            executions, fresh = _executions(driven.items)
            stability = measure_stability(executions, spec.labels, fresh)
    return result_of(
        spec, status, summary, driven.items, driven.dataset_fingerprint,
        agreement=agreement, stability=stability,
    )  # fmt: skip


def judged_before_stored(spec: RunSpec) -> bool:
    """Whether the run's verdict on its own gates needs nothing but what the run saw: no
    labels (their agreement is measured on the stored rows), one execution per pair, not a
    resume (its counts and status are recounted from the store)."""
    return not spec.labels and spec.options.repeats == 1 and spec.plan is None


def result_of(
    spec: RunSpec,
    status: ExperimentStatus,
    summary: RunSummary,
    items: tuple[ItemResult, ...],
    dataset_fingerprint: str | None,
    *,
    agreement: dict[str, ScorerAgreement] | None = None,
    stability: dict[str, JudgeStability] | None = None,
) -> ExperimentResult:
    """The [`ExperimentResult`][evalkit.ExperimentResult] of the run ``spec`` as it ended."""
    return ExperimentResult(
        experiment_id=spec.experiment_id,
        name=spec.name,
        description=spec.options.description,
        status=status,
        started_at=spec.started_at,
        completed_at=dt.datetime.now(dt.UTC),
        dataset=spec.dataset.source,
        dataset_fingerprint=dataset_fingerprint,
        scorer_ids=spec.scorer_ids,
        summary=summary,
        thresholds=spec.thresholds,
        items=items,
        config=spec.config,
        store=spec.store,
        results_kept=spec.keep_results,
        max_error_rates=spec.max_error_rates,
        agreement=agreement or {},
        min_agreement=spec.min_agreement,
        stability=stability or {},
    )


def _executions(
    items: tuple[ItemResult, ...],
) -> tuple[dict[str, list[list[float | None]]], dict[str, float]]:
    """Per repeated scorer, each pair's executions' scores (None where one failed), and the
    share of its pairs whose execution 0 asked the judge rather than the cache."""
    found: dict[str, list[list[float | None]]] = {}
    fresh: dict[str, list[bool]] = {}
    for item in items:
        for o in item.outcomes:
            if o.repeats:
                first = o.score if o.status == "success" else None
                found.setdefault(o.scorer_id, []).append([first, *(r.score for r in o.repeats)])
                calls = [e for r in (o.result.judge if o.result else {}).values()
                         for e in r.executions]  # fmt: skip
                fresh.setdefault(o.scorer_id, []).append(any(not e.cached for e in calls))
    return found, {sid: sum(f) / len(f) for sid, f in fresh.items()}


def _labeled(items: tuple[ItemResult, ...], spec: LabelSpec) -> LabeledScores:
    """One scorer's successful scores beside each item's labels, from the kept results."""
    ids, scores, reasons, cut = [], [], [], []
    labels: dict[str, list[Any]] = {column: [] for column in spec.columns}
    for item in items:
        for outcome in item.outcomes:
            if outcome.scorer_id != spec.scorer_id or outcome.score is None:
                continue
            if outcome.status != "success":
                continue
            ids.append(item.item.id)
            scores.append(outcome.score)
            reasons.append(outcome.reason)
            cut.append(outcome.reason_truncated)
            metadata = item.item.metadata if isinstance(item.item.metadata, dict) else {}
            for column in spec.columns:
                labels[column].append(metadata.get(column))
    return LabeledScores(tuple(ids), tuple(scores), tuple(reasons),
                         {c: tuple(v) for c, v in labels.items()}, tuple(cut))  # fmt: skip
