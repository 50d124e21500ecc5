"""A run prepared once, for either driver: every option checked, the dataset and target
loaded, the endpoints checked, the config, ids and store records built.

Both drivers (in-process, sharded) take the same `RunSpec`, so an option is checked
and recorded in one place, and nothing is written to the store before every check passed.
A sharded run's own setup (executor, workers, shards) is ``_sharding.py``'s.
Why: docs/pages/design/one-run-pipeline.md.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from evalkit._json import dumps
from evalkit.agreement import LabelSpec
from evalkit.agreement._gate import parse_min_agreement
from evalkit.agreement._labels import (
    check_label_columns,
    config_of,
    parse_labels,
    with_label_columns,
)
from evalkit.dataset import Dataset, DatasetLike, load_dataset
from evalkit.errors import ConfigError
from evalkit.run._checks import (
    check_lock_timeout,
    check_repeats_kept,
    check_resume_options,
    check_run_options,
    check_scorers,
    check_target,
    refuse_for_sharded,
)
from evalkit.run._config import build_config, evalkit_version
from evalkit.run._options import RunOptions
from evalkit.run._preflight import check_endpoints
from evalkit.run._resume_plan import ResumePlan, Resuming, check_shard_resume, plan_resume
from evalkit.run._shard_retry import ShardRetry, plan_shard_retry
from evalkit.run._sharding import Sharding, check_sharding, plan_sharding
from evalkit.run._thresholds import Threshold, parse_error_rates, parse_thresholds
from evalkit.scorer import Scorer
from evalkit.store._writer import ExperimentRecord, ScorerRecord
from evalkit.target import DatasetOutput, FunctionTarget, Target


def as_target(target: object) -> Target:
    """The target a run uses for ``target``.

    Args:
        target: None (the dataset's ``output`` column), an object implementing
            [`Target`][evalkit.Target], or a plain callable (wrapped in
            [`FunctionTarget`][evalkit.FunctionTarget]).

    Raises:
        ConfigError: ``target`` is none of these.
    """
    if target is None:
        return DatasetOutput()
    if isinstance(target, Target):
        return target
    if callable(target):
        return FunctionTarget(target)
    raise ConfigError(f"target must be None, a callable or a Target, not {type(target).__name__}")


def new_experiment_id() -> str:
    """A fresh experiment id: 12 hex digits, short enough to type, random enough to be unique."""
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything a driver needs to run an experiment, checked (see `prepare`).

    Attributes:
        options: The options as given.
        experiment_id: The experiment's id (the resumed one's, when resuming).
        name: The experiment's name.
        dataset: The dataset, loaded and checked.
        target: The resolved target.
        scorers: The checked scorers, in order.
        thresholds: The thresholds by scorer id.
        max_error_rates: The error-rate gates by scorer id.
        config: The configuration stored with the experiment, secrets redacted.
        record: The experiment row a new run begins with (unused when resuming).
        scorer_records: The ``experiment_scorers`` rows.
        total_items: The experiment's items (all of its shards' rows, when sharded).
        plan: The pairs a pair-by-pair resume runs (an in-process resume, or a sharded
            ``retry_errors`` pass), or None.
        sharding: How a sharded run splits the dataset, or None for an in-process run.
        labels, min_agreement: The scorers' human labels and agreement gates, by scorer id.
    """

    options: RunOptions
    experiment_id: str
    name: str
    dataset: Dataset
    target: Target
    scorers: tuple[Scorer, ...]
    thresholds: Mapping[str, Threshold]
    max_error_rates: Mapping[str, float]
    config: dict[str, Any]
    record: ExperimentRecord
    scorer_records: tuple[ScorerRecord, ...]
    total_items: int
    plan: ResumePlan | None
    sharding: Sharding | None
    labels: Mapping[str, LabelSpec] = dataclasses.field(default_factory=dict)
    min_agreement: Mapping[str, Mapping[str, float]] = dataclasses.field(default_factory=dict)

    @property
    def scorer_ids(self) -> tuple[str, ...]:
        """The scorers' ids, in order."""
        return tuple(s.id for s in self.scorers)

    @property
    def store(self) -> str | None:
        """The score store file, or None."""
        store = self.options.store
        return None if store is None else str(store)

    @property
    def started_at(self) -> dt.datetime:
        """When the run started (UTC)."""
        return self.record.started_at

    @property
    def keep_results(self) -> bool:
        """Whether the items' results are kept in memory (never in a sharded run)."""
        return self.options.keep_results and self.sharding is None

    @property
    def to_run(self) -> int:
        """Items this pass evaluates (a resume's, or a sharded retry pass's, remaining ones)."""
        return self.plan.to_run if self.plan is not None else self.total_items


async def prepare(
    data: DatasetLike, scorers: Sequence[Scorer] | Scorer, options: RunOptions
) -> RunSpec:
    """Check ``run_evals``'s arguments and prepare the run; nothing is written yet (a resume
    only reads the stored experiment it will finish).

    Raises:
        ConfigError: A scorer, threshold or option is invalid, or ``options.resume`` names an
            experiment this call cannot finish.
        DatasetError: The dataset cannot be read or lacks a column it needs.
        StoreError: The store has no experiment ``options.resume``.
        PreflightError: With ``options.preflight``, a judge's or the target's endpoint fails.
    """
    _check_options(options)
    checked = check_scorers(scorers)
    target = as_target(options.target)
    # As soon as the judges and the target are known, for both drivers: before the data is
    # read and a sharded run's slice is checked (tests/run/test_preflight.py relies on it).
    if options.preflight:
        await check_endpoints(checked, target)
    workers, piece = 1, None
    if options.sharded:
        workers, piece = check_sharding(data, options.executor, options.workers, options.shard)
    scorer_ids = [s.id for s in checked]
    thresholds = parse_thresholds(options.thresholds, scorer_ids)
    error_rates = parse_error_rates(options.max_error_rate, scorer_ids)
    labels = parse_labels(options.labels, scorer_ids)
    min_agreement = parse_min_agreement(options.min_agreement, labels)
    dataset = load_dataset(data, columns=with_label_columns(options.columns, labels))
    check_label_columns(dataset.columns.metadata_columns, labels, dataset.source)
    check_target(target, dataset)
    if options.regenerate and isinstance(target, DatasetOutput):
        raise ConfigError(
            "regenerate needs a target: outputs read from the dataset's output column cannot"
            " be produced again"
        )

    name = options.experiment or _default_name(dataset)
    limit = options.limit
    if not options.sharded:
        await _read_through(dataset, limit)
    sharding = None
    if options.sharded:
        sharding = plan_sharding(
            dataset.source,
            executor=options.executor,
            workers=workers,
            piece=piece,
            limit=limit,
            ray_address=options.ray_address,
            target=target,
            scorers=checked,
        )
        total = sum(s.rows for s in sharding.shards)
    else:
        total = dataset.num_rows if limit is None else min(limit, dataset.num_rows)
    group = f"{name}|{dataset.source}"
    config = build_config(
        dataset=dataset,
        target=target,
        scorers=checked,
        thresholds=thresholds,
        options=_recorded_options(
            options, sharding, error_rates, config_of(labels, min_agreement), group=group
        ),
        metadata=options.metadata,
    )
    experiment_id, plan = new_experiment_id(), None
    resume, store = options.resume, options.store
    if resume is not None and store is not None:  # _check_options: a resume has a store
        plan, retries = await _plan_any_resume(
            options, config, checked, dataset, total=total, sharding=sharding
        )
        experiment_id = resume
        if plan is not None:
            experiment_id, name = plan.stored.id, plan.stored.name
        if sharding is not None and retries is not None:
            sharding = dataclasses.replace(sharding, retries=retries)
    record = ExperimentRecord(
        id=experiment_id,
        name=name,
        description=options.description,
        dataset=dataset.source,
        config=config,
        metadata=options.metadata,
        total_items=total,
        started_at=dt.datetime.now(dt.UTC),
        evalkit_version=evalkit_version(),
        partial=limit is not None or piece is not None,
    )
    records = _scorer_records(checked, thresholds)
    return RunSpec(options, experiment_id, name, dataset, target, checked, thresholds,
                   error_rates, config, record, records, total, plan, sharding, labels,
                   min_agreement)  # fmt: skip


def check_slices(slices: object) -> None:
    """Slices are distinct, non-empty metadata keys.

    Raises:
        ConfigError: Anything else, named.
    """
    if isinstance(slices, str) or not isinstance(slices, tuple | list):
        raise ConfigError(f"slices must be a list of metadata keys, got {slices!r}")
    for key in slices:
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f"slices: each slice is a metadata key (non-empty text), got {key!r}")
    if len(set(slices)) != len(slices):
        raise ConfigError(f"slices: a key appears twice in {list(slices)!r}")


def _check_options(options: RunOptions) -> None:
    """Check the options that need neither the scorers nor the data."""
    check_slices(options.slices)
    check_resume_options(options.resume, options.store, retry_errors=options.retry_errors,
                         force=options.force, regenerate=options.regenerate)  # fmt: skip
    if options.sharded:
        refuse_for_sharded(options.regenerate, options.on_item_complete)
    check_run_options(options.concurrency, options.limit, options.flush_interval, options.repeats)
    check_lock_timeout(options.lock_timeout)
    check_repeats_kept(options.repeats, options.store, options.keep_results and not options.sharded)


def _recorded_options(
    options: RunOptions,
    sharding: Sharding | None,
    error_rates: Mapping[str, float],
    labelled: Mapping[str, Any],
    *,
    group: str,
) -> dict[str, Any]:
    """The options recorded in the stored config (a resume compares some of them)."""
    recorded: dict[str, Any] = {
        "concurrency": options.concurrency,
        "limit": options.limit,
        "keep_results": options.keep_results and sharding is None,
    }
    if sharding is not None:
        recorded.update(executor=sharding.executor, workers=sharding.workers)
    recorded["max_error_rate"] = error_rates
    if options.slices:
        recorded["slices"] = list(options.slices)
    if options.repeats > 1:
        recorded["repeats"] = options.repeats
    recorded.update(labelled)
    if sharding is not None and sharding.slice is not None:
        # The group lets `evalkit merge` find the slices of one matrix run.
        index, count = sharding.slice
        recorded["shard"] = {"index": index, "count": count, "group": group}
    return recorded


async def _plan_any_resume(
    options: RunOptions,
    config: dict[str, Any],
    scorers: Sequence[Scorer],
    dataset: Dataset,
    *,
    total: int,
    sharding: Sharding | None,
) -> tuple[ResumePlan | None, dict[int, ShardRetry] | None]:
    """Check this run can finish the stored experiment ``options.resume`` and plan its pass.

    Returns:
        An in-process resume's plan (no retries); a sharded retry pass's plan and per-shard
        retries; or neither for a sharded resume (it skips the finished shards).
    """
    run = Resuming(options, config, scorers, dataset)
    if sharding is not None and options.retry_errors:
        retry = functools.partial(plan_shard_retry, run, sharding.shards)
        plan, retries = await anyio.to_thread.run_sync(retry)
        return plan, retries
    if sharding is not None:
        await anyio.to_thread.run_sync(check_shard_resume, run, sharding.shards)
        return None, None
    call = functools.partial(plan_resume, run, total=total)
    return await anyio.to_thread.run_sync(call), None


async def _read_through(dataset: Dataset, limit: int | None) -> None:
    """Read the rows the run will read, once, before anything is written.

    A cell that cannot be read (a text cell past a column of numbers, a value Python cannot
    hold) is found on the way, so a dataset that cannot be read creates no run in the store
    (the cost: one more pass over the data, without a target or a scorer; a sharded run's
    workers read their own row groups instead). A Ctrl-C stops the reading at the next batch
    rather than leaving a thread reading to the end, which the process would wait for.
    """
    stop = threading.Event()

    def read() -> None:
        for _ in dataset.batches(limit=limit):
            if stop.is_set():
                return

    try:
        await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
    finally:
        stop.set()


def _default_name(dataset: Dataset) -> str:
    path = Path(dataset.source)
    return path.stem if dataset.source and not dataset.source.startswith("<") else "experiment"


def _scorer_records(
    scorers: Sequence[Scorer], thresholds: Mapping[str, Threshold]
) -> tuple[ScorerRecord, ...]:
    return tuple(
        ScorerRecord(
            s.id, s.name, s.description, i,
            thresholds[s.id].min if s.id in thresholds else None,
            thresholds[s.id].max if s.id in thresholds else None,
            s.higher_is_better, dumps(s.metadata) if s.metadata else None,
        )
        for i, s in enumerate(scorers)
    )  # fmt: skip
