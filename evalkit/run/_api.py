"""``run_evals`` and ``run_evals_sync``: check the arguments, compose the stages, run them."""

from __future__ import annotations

import datetime as dt
import functools
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread

from evalkit._json import dumps
from evalkit.dataset._dataset import Dataset, ItemBatches, load_dataset
from evalkit.errors import ConfigError
from evalkit.judge import JudgeCache, default_cache_path, use_judge_cache
from evalkit.run._checks import asks_judge, check_scorers, check_target
from evalkit.run._config import build_config, evalkit_version
from evalkit.run._executors import ExecutorName
from evalkit.run._experiment import ExperimentResult, ExperimentStatus
from evalkit.run._feed import ItemFeed
from evalkit.run._item import ItemEvaluator
from evalkit.run._preflight import check_endpoints
from evalkit.run._progress import Progress
from evalkit.run._resume_plan import ResumeBatches, plan_resume
from evalkit.run._runner import ItemCallback, Runner
from evalkit.run._sharded import run_sharded
from evalkit.run._summary import SummaryBuilder, summary_from_counts
from evalkit.run._thresholds import parse_error_rates, parse_thresholds
from evalkit.scorer._scorer import Scorer
from evalkit.store import read_run_counts
from evalkit.store._connect import DEFAULT_STORE
from evalkit.store._writer import ExperimentRecord, ScorerRecord, StoreWriter
from evalkit.target import DatasetOutput, as_target


def _default_name(dataset: Dataset) -> str:
    path = Path(dataset.source)
    return path.stem if dataset.source and not dataset.source.startswith("<") else "experiment"


def _judge_cache(
    cache: bool | str | os.PathLike[str] | None, store: str | os.PathLike[str] | None
) -> JudgeCache | None:
    if cache is False or (cache is None and store is None):
        return None
    if cache is None or cache is True:
        return JudgeCache(default_cache_path(store))
    return JudgeCache(cache)


def new_experiment_id() -> str:
    """A fresh experiment id: 12 hex digits, short enough to type, random enough to be unique."""
    return uuid.uuid4().hex[:12]


async def run_evals(
    data: Any,
    scorers: Sequence[Scorer] | Scorer,
    *,
    target: Any = None,
    concurrency: int = 8,
    store: str | os.PathLike[str] | None = DEFAULT_STORE,
    experiment: str | None = None,
    description: str | None = None,
    thresholds: Mapping[str, Any] | None = None,
    max_error_rate: float | Mapping[str, float] | None = None,
    on_item_complete: ItemCallback | None = None,
    progress: bool = True,
    metadata: Mapping[str, Any] | None = None,
    keep_results: bool = True,
    limit: int | None = None,
    columns: Mapping[str, str] | None = None,
    flush_interval: float = 2.0,
    cache: bool | str | os.PathLike[str] | None = None,
    resume: str | None = None,
    retry_errors: bool = False,
    force: bool = False,
    regenerate: bool = False,
    executor: ExecutorName = "local",
    workers: int | None = None,
    shard: str | tuple[int, int] | None = None,
    ray_address: str | None = None,
    preflight: bool = True,
) -> ExperimentResult:
    """Run scorers over every item of a dataset and record the results.

    Args:
        data: A Parquet file or folder, a pandas DataFrame, a pyarrow Table, a list of dicts
            or a :class:`~evalkit.dataset.Dataset`.
        scorers: The scorers to run on every item (ids must be unique).
        target: What produces the outputs: None (the dataset's ``output`` column), a Python
            callable ``f(input, *, request_context=None)``, sync or async, or a
            :class:`~evalkit.target.Target`.
        concurrency: Items in flight at once.
        store: The DuckDB score store file; None keeps everything in memory only.
        experiment: The experiment name; defaults to the dataset file's stem.
        description: Free text stored with the experiment.
        thresholds: Per scorer id, ``0.8`` (mean at least 0.8) or ``{"max": 0.1}`` (mean at
            most 0.1, for lower-is-better scorers), or both bounds.
        max_error_rate: The largest share of a scorer's pairs that may end without a score
            (the scorer failed, or the item's target did) before the scorer fails the run:
            one number for every scorer, or a mapping by scorer id. Default 0.05 for every
            scorer; 1.0 turns the gate off. A scorer with no successful score always fails.
        on_item_complete: Called (or awaited) with each :class:`ItemResult` as it finishes.
        progress: Show a progress bar on stderr.
        metadata: JSON-ready data stored with the experiment (secrets redacted).
        keep_results: Keep every item's results in memory. With False only the summaries are
            kept, so a dataset of any size runs in flat memory (the store still gets every
            row).
        limit: Evaluate only the first ``limit`` rows.
        columns: Map roles to differently named columns, e.g. ``{"input": "question"}``.
        flush_interval: Seconds between writes to the store at most.
        cache: The judge call cache: None (default) uses ``evalkit-cache.duckdb`` beside the
            store, or none without a store; True the default file even without a store
            (``~/.cache/evalkit``); False none; a path that file. Only deterministic judges
            (temperature 0, or ``cache=True`` on the judge) are cached.
        resume: The id of a stored experiment to finish instead of starting a new one, in
            the same experiment row. An experiment resumes the way it was run: a
            single-process one by a single-process call (its pairs already scored are
            skipped, its failed and never-run pairs are run), a sharded one by a sharded call
            (``executor`` other than ``"local"``, or ``shard``, the same slice as before; its
            finished shards are skipped). Its fingerprint (dataset, scorers and their
            versions, judges, target, limit) must match this call's. A failed pair of an
            item whose target succeeded is scored on the item's stored output (the target
            is not called again); an item whose target failed is evaluated afresh.
        retry_errors: With ``resume`` of a single-process run, run only the failed pairs
            (items never evaluated stay so); also allows resuming a
            ``completed_with_errors`` experiment. Refused for a sharded run.
        force: With ``resume``, resume even when the fingerprint differs (a sharded
            experiment's scorers still cannot change).
        regenerate: With ``resume`` of a single-process run, give every evaluated item that
            has a pair left to run a new output from the target, and run all of its scorers
            again on it (its earlier scores are replaced). Needs a target.
        executor: ``"local"`` (this process), ``"process"`` (a process pool) or ``"ray"``
            (Ray tasks). Anything but ``"local"``, or ``shard``, runs the Parquet dataset
            shard by shard (one row group each, see the README's "Sharded runs"); items are
            then not kept in memory, and ``on_item_complete`` and the judge cache are
            refused.
        workers: Worker processes for ``process``/``ray`` (default: the CPUs); each judge's
            rpm, tpm and max_concurrency are divided among them.
        shard: ``"i/n"``: run only slice ``i`` of ``n`` of the shards (CI matrix jobs; join
            the stores with ``evalkit merge``).
        ray_address: An existing Ray cluster's address; None starts a local one.
        preflight: Before the first item, check every judge's API key and endpoint, and an
            OpenAI target's, with one ``GET /models`` per distinct endpoint and key (see
            :func:`evalkit.judge.preflight`); False skips the check.

    Returns:
        The :class:`ExperimentResult`.

    Raises:
        ConfigError: A scorer, threshold or option is invalid, or ``resume`` names an
            experiment this call cannot finish (the message says which options will).
        DatasetError: The dataset cannot be read, lacks ``input``, or lacks ``output`` with
            no target.
        StoreError: The store cannot be written, or has no experiment ``resume``.
        PreflightError: With ``preflight``, a judge's or the target's API key is missing,
            refused (401/403), or its endpoint does not answer; nothing was run or stored.
    """
    if resume is None and (retry_errors or force or regenerate):
        raise ConfigError("retry_errors, force and regenerate only apply with resume=EXPERIMENT_ID")
    if resume is not None and store is None:
        raise ConfigError("resume needs the store that holds the experiment (store=None given)")
    if executor != "local" or shard is not None:
        if retry_errors or regenerate:
            raise ConfigError(
                "retry_errors (--retry-errors) and regenerate (--regenerate) re-run the failed"
                " pairs of a single-process run; a sharded run (executor=/shard=,"
                " --executor/--shard) resumes by skipping its finished shards and cannot"
                " re-run failed pairs"
            )
        if on_item_complete is not None:
            raise ConfigError(
                "on_item_complete is not available with executor=/shard=: a sharded run's "
                "items finish in worker processes (read them from the store afterwards)"
            )
        if cache not in (None, False):
            raise ConfigError(
                "a sharded run (executor=/shard=) cannot use the judge cache: its workers "
                "would all write one DuckDB file; pass cache=None or False"
            )
        if preflight:
            await check_endpoints(check_scorers(scorers), as_target(target))
        return await run_sharded(
            data, scorers, executor=executor, workers=workers, shard=shard,
            ray_address=ray_address, resume=resume, force=force, target=target,
            concurrency=concurrency, store=None if store is None else str(store),
            experiment=experiment, description=description, thresholds=thresholds,
            max_error_rate=max_error_rate, progress=progress, metadata=metadata, limit=limit,
            columns=columns,
        )  # fmt: skip
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be a positive integer, got {concurrency!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ConfigError(f"limit must be a non-negative integer, got {limit!r}")
    if flush_interval <= 0:
        raise ConfigError(f"flush_interval must be positive, got {flush_interval!r}")
    checked = check_scorers(scorers)
    scorer_ids = [s.id for s in checked]
    parsed_thresholds = parse_thresholds(thresholds, scorer_ids)
    error_rates = parse_error_rates(max_error_rate, scorer_ids)
    dataset = load_dataset(data, columns=columns)
    resolved_target = as_target(target)
    check_target(resolved_target, dataset)
    if regenerate and isinstance(resolved_target, DatasetOutput):
        raise ConfigError(
            "regenerate needs a target: outputs read from the dataset's output column cannot"
            " be produced again"
        )
    if preflight:
        await check_endpoints(checked, resolved_target)

    name = experiment or _default_name(dataset)
    experiment_id = new_experiment_id()
    total = dataset.num_rows if limit is None else min(limit, dataset.num_rows)
    config = build_config(
        dataset=dataset,
        target=resolved_target,
        scorers=checked,
        thresholds=parsed_thresholds,
        options={
            "concurrency": concurrency,
            "limit": limit,
            "keep_results": keep_results,
            "max_error_rate": error_rates,
        },
        metadata=metadata,
    )
    started_at = dt.datetime.now(dt.UTC)
    writer = StoreWriter(store) if store is not None else None
    plan = None
    batches: ItemBatches | ResumeBatches = dataset.batches(limit=limit)
    scorer_records = [
        ScorerRecord(
            s.id,
            s.name,
            s.description,
            i,
            parsed_thresholds[s.id].min if s.id in parsed_thresholds else None,
            parsed_thresholds[s.id].max if s.id in parsed_thresholds else None,
            s.higher_is_better,
            dumps(s.metadata) if s.metadata else None,
        )
        for i, s in enumerate(checked)
    ]
    if resume is not None and writer is not None:
        plan = await anyio.to_thread.run_sync(
            functools.partial(
                plan_resume, writer.path, resume, config=config, scorers=checked,
                dataset=dataset, total=total, limit=limit, retry_errors=retry_errors, force=force,
                regenerate=regenerate,
            )
        )  # fmt: skip
        reopen = functools.partial(
            writer.reopen, plan.stored.id, total_items=total, scorers=scorer_records,
            config=config if force else None,
        )  # fmt: skip
        experiment_id, name, total = plan.stored.id, plan.stored.name, plan.to_run
        batches = ResumeBatches(dataset.batches(limit=limit), plan, frozenset(scorer_ids))
        await anyio.to_thread.run_sync(reopen)
    elif writer is not None:
        record = ExperimentRecord(
            id=experiment_id,
            name=name,
            description=description,
            dataset=dataset.source,
            config=config,
            metadata=metadata,
            total_items=total,
            started_at=started_at,
            evalkit_version=evalkit_version(),
            partial=limit is not None,
        )
        await anyio.to_thread.run_sync(writer.begin, record, scorer_records)

    summary = SummaryBuilder(scorer_ids, total)
    runner = Runner(
        experiment_id=experiment_id,
        feed=ItemFeed(batches),
        evaluator=ItemEvaluator(
            resolved_target,
            checked,
            run_prefix=experiment_id,
            skip=plan.skip if plan is not None else None,
            outputs=plan.outputs if plan is not None else None,
        ),
        summary=summary,
        progress=Progress(total, name=name, enabled=progress),
        writer=writer,
        scorer_names={s.id: s.name for s in checked},
        concurrency=concurrency,
        keep_results=keep_results,
        on_item_complete=on_item_complete,
        flush_interval=flush_interval,
    )
    # Only runs that ask a judge open the cache: its file is held for the whole run.
    judged = any(asks_judge(s) for s in checked)
    async with use_judge_cache(_judge_cache(cache, store) if judged else None):
        status = await runner.run()
    run_summary = summary.build()
    if plan is not None and writer is not None and writer.final_status is not None:
        # Over every pass, not just this one (see StoreWriter.finish): the verdict of a
        # resumed run judges the whole experiment.
        status = cast(ExperimentStatus, writer.final_status)
        counts = await anyio.to_thread.run_sync(read_run_counts, writer.path, experiment_id)
        run_summary = summary_from_counts(counts, scorer_ids)
    return ExperimentResult(
        experiment_id=experiment_id,
        name=name,
        description=description,
        status=status,
        started_at=started_at,
        completed_at=dt.datetime.now(dt.UTC),
        dataset=dataset.source,
        dataset_fingerprint=runner.feed.fingerprint,
        scorer_ids=tuple(scorer_ids),
        summary=run_summary,
        thresholds=parsed_thresholds,
        items=runner.sorted_items(),
        config=config,
        store=str(store) if store is not None else None,
        results_kept=keep_results,
        max_error_rates=error_rates,
    )


def run_evals_sync(
    data: Any,
    scorers: Sequence[Scorer] | Scorer,
    **options: Any,
) -> ExperimentResult:
    """:func:`run_evals` for synchronous code: same arguments, same result.

    Raises:
        ConfigError: Called from inside a running event loop (``await run_evals`` there).
    """
    call = functools.partial(run_evals, data, scorers, **options)
    try:
        return anyio.run(call)
    except RuntimeError as exc:
        if "Already running" not in str(exc):
            raise
        raise ConfigError(
            "run_evals_sync() cannot run inside an event loop; use await run_evals(...)"
        ) from exc
