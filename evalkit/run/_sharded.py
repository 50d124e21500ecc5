"""The driver of a sharded run: plan shards, hand them to an executor, record each finished
shard (rows + ``shards_done``) in one transaction, and skip finished shards on resume.

Only the driver opens the store, so DuckDB's single-writer rule holds however many workers
run. Items are not kept in memory (``results_kept`` is False); the store has every row.
"""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from evalkit._json import dumps
from evalkit.dataset._dataset import load_dataset
from evalkit.errors import ConfigError
from evalkit.run._checks import check_scorers, check_target
from evalkit.run._config import build_config, evalkit_version
from evalkit.run._executors import EXECUTORS, ExecutorName, ShardConfig, ShardResult, execute, pack
from evalkit.run._experiment import ExperimentResult, ExperimentStatus
from evalkit.run._interrupt import is_interrupt
from evalkit.run._progress import Progress
from evalkit.run._resume_plan import check_shard_resume
from evalkit.run._shards import Shard, parse_shard_spec, plan_shards, select_shards
from evalkit.run._summary import SummaryBuilder
from evalkit.run._thresholds import parse_error_rates, parse_thresholds
from evalkit.scorer._scorer import Scorer
from evalkit.store._shard_writer import ShardRecord, ShardWriter
from evalkit.store._writer import ExperimentRecord, ScorerRecord
from evalkit.target._resolve import as_target


async def run_sharded(
    data: Any,
    scorers: Sequence[Scorer] | Scorer,
    *,
    executor: ExecutorName = "local",
    workers: int | None = None,
    shard: str | tuple[int, int] | None = None,
    ray_address: str | None = None,
    resume: str | None = None,
    force: bool = False,
    target: Any = None,
    concurrency: int = 8,
    store: str | None = None,
    experiment: str | None = None,
    description: str | None = None,
    thresholds: Mapping[str, Any] | None = None,
    max_error_rate: float | Mapping[str, float] | None = None,
    progress: bool = True,
    metadata: Mapping[str, Any] | None = None,
    limit: int | None = None,
    columns: Mapping[str, str] | None = None,
) -> ExperimentResult:
    """Run an experiment shard by shard (see ``run_evals``'s ``executor`` argument).

    Raises:
        ConfigError: The data is not a Parquet path, an option is invalid, or a scorer
            cannot be shipped to the workers.
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    count = workers if workers is not None else (1 if executor == "local" else _cpus())
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")
    if not isinstance(data, (str, Path)):
        raise ConfigError(
            f"executor={executor!r} and shard need a Parquet file or folder path as data "
            f"(shards are its row groups), not a {type(data).__name__}"
        )
    spec = parse_shard_spec(shard)
    checked = check_scorers(scorers)
    scorer_ids = [s.id for s in checked]
    parsed_thresholds = parse_thresholds(thresholds, scorer_ids)
    error_rates = parse_error_rates(max_error_rate, scorer_ids)
    dataset = load_dataset(data, columns=columns)
    resolved_target = as_target(target)
    check_target(resolved_target, dataset)
    shards = select_shards(plan_shards(str(data), limit=limit), spec)
    total = sum(s.rows for s in shards)
    name = experiment or Path(str(data)).stem
    options: dict[str, Any] = {
        "concurrency": concurrency,
        "limit": limit,
        "keep_results": False,
        "executor": executor,
        "workers": count,
        "max_error_rate": error_rates,
    }
    if spec is not None:
        # The group lets `evalkit merge` find the slices of one matrix run.
        options["shard"] = {"index": spec[0], "count": spec[1], "group": f"{name}|{data}"}
    config = build_config(
        dataset=dataset,
        target=resolved_target,
        scorers=checked,
        thresholds=parsed_thresholds,
        options=options,
        metadata=metadata,
    )
    summary = SummaryBuilder(scorer_ids, total)
    writer = ShardWriter(store) if store is not None else None
    started_at = dt.datetime.now(dt.UTC)
    experiment_id = resume or uuid.uuid4().hex[:12]
    done: dict[int, str] = {}
    if writer is not None and resume is not None:
        await anyio.to_thread.run_sync(
            functools.partial(
                check_shard_resume, writer.path, resume, config=config, scorers=checked,
                dataset=dataset, limit=limit, force=force,
            )
        )  # fmt: skip
        resumed = functools.partial(writer.resume, resume, config=config if force else None)
        done = await anyio.to_thread.run_sync(resumed)
        for state in done.values():
            summary.merge(state)
    elif resume is not None:
        raise ConfigError("resume needs a store")
    elif writer is not None:
        record = ExperimentRecord(
            experiment_id, name, description, str(data), config, metadata, total,
            started_at, evalkit_version(), partial=limit is not None or spec is not None,
        )  # fmt: skip
        scorer_records = [
            ScorerRecord(
                s.id, s.name, s.description, i,
                parsed_thresholds[s.id].min if s.id in parsed_thresholds else None,
                parsed_thresholds[s.id].max if s.id in parsed_thresholds else None,
                s.higher_is_better, dumps(s.metadata) if s.metadata else None,
            )
            for i, s in enumerate(checked)
        ]  # fmt: skip
        await anyio.to_thread.run_sync(writer.begin, record, scorer_records)

    todo = [s for s in shards if s.index not in done]
    shard_config = ShardConfig(
        experiment_id=experiment_id,
        columns=dataset.columns,
        batch_size=dataset.batch_size,
        concurrency=concurrency,
        scorer_ids=tuple(scorer_ids),
        scorer_names={s.id: s.name for s in checked},
        rate_share=count,
        payload=b"" if executor == "local" else pack(resolved_target, checked),
    )
    bar = Progress(sum(s.rows for s in todo), name=name, enabled=progress)
    status: ExperimentStatus

    def drive() -> None:
        for result in execute(
            todo, shard_config, executor=executor, workers=count,
            target=resolved_target, scorers=checked, ray_address=ray_address,
        ):  # fmt: skip
            state = result.summary.state()
            _record(writer, result, state)
            summary.merge(state)
            for _ in range(result.summary.processed):
                bar.item_done(False)

    try:
        await anyio.to_thread.run_sync(drive)
    except BaseException as exc:
        status = "cancelled" if is_interrupt(exc) else "failed"
        bar.close()
        if writer is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_finish, writer, status)
        raise
    bar.close()
    status = summary.status()
    if writer is not None:
        await anyio.to_thread.run_sync(_finish, writer, status)
    return ExperimentResult(
        experiment_id=experiment_id,
        name=name,
        description=description,
        status=status,
        started_at=started_at,
        completed_at=dt.datetime.now(dt.UTC),
        dataset=str(data),
        dataset_fingerprint=None,
        scorer_ids=tuple(scorer_ids),
        summary=summary.build(),
        thresholds=parsed_thresholds,
        items=(),
        config=config,
        store=str(store) if store is not None else None,
        results_kept=False,
        max_error_rates=error_rates,
    )


def _record(writer: ShardWriter | None, result: ShardResult, state: str) -> None:
    if writer is None:
        return
    shard: Shard = result.shard
    summary = result.summary
    writer.write_shard(
        result.tables,
        ShardRecord(
            shard.index, shard.file, shard.row_group, shard.offset, shard.rows, state,
        ),
        succeeded=summary.succeeded,
        failed=summary.failed,
    )  # fmt: skip


def _finish(writer: ShardWriter, status: str) -> None:
    writer.finish(status=status, completed_at=dt.datetime.now(dt.UTC), dataset_fingerprint=None)


def _cpus() -> int:
    import os

    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
