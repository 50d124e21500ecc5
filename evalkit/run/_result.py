"""The one place a run's :class:`ExperimentResult` is built, whichever driver ran it.

See docs/pages/design/one-run-pipeline.md.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import cast

import anyio.to_thread

from evalkit.run._experiment import ExperimentResult, ExperimentStatus
from evalkit.run._outcome import ItemResult
from evalkit.run._spec import RunSpec
from evalkit.run._summary import RunSummary, summary_from_counts
from evalkit.store import StoreWriter, read_run_counts


@dataclass(frozen=True, slots=True)
class Driven:
    """What a driver reports of a run it finished.

    Attributes:
        status: The status the run ended with.
        summary: The summary of the items the driver saw (a sharded resume's includes the
            shards finished before).
        items: The kept item results, in dataset order.
        dataset_fingerprint: The fingerprint of the rows read, or None.
    """

    status: ExperimentStatus
    summary: RunSummary
    items: tuple[ItemResult, ...]
    dataset_fingerprint: str | None


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
    return ExperimentResult(
        experiment_id=spec.experiment_id,
        name=spec.name,
        description=spec.options.description,
        status=status,
        started_at=spec.started_at,
        completed_at=dt.datetime.now(dt.UTC),
        dataset=spec.dataset.source,
        dataset_fingerprint=driven.dataset_fingerprint,
        scorer_ids=spec.scorer_ids,
        summary=summary,
        thresholds=spec.thresholds,
        items=driven.items,
        config=spec.config,
        store=spec.store,
        results_kept=spec.keep_results,
        max_error_rates=spec.max_error_rates,
    )
