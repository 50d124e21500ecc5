"""The sharded driver: hand the spec's shards to an executor, record each finished shard
(rows + ``shards_done``) in one transaction, and skip finished shards on resume. A
``retry_errors`` pass runs the failed pairs of the finished shards holding them, and each
rewritten shard replaces their older rows (``_shard_retry.py``).

Only the driver opens the store, so DuckDB's single-writer rule holds however many workers
run. Items are not kept in memory (``results_kept`` is False); the store has every row. See
docs/pages/design/sharding-by-row-group.md, and one-run-pipeline.md for the two drivers.
"""

from __future__ import annotations

import datetime as dt
import functools
import threading
from typing import Any

import anyio
import anyio.to_thread

from evalkit.judge import default_cache_path
from evalkit.judge._cache import store_entries
from evalkit.run._checks import asks_judge
from evalkit.run._executors import ShardConfig, ShardResult, Stopped, execute
from evalkit.run._interrupt import is_interrupt, on_all_scored
from evalkit.run._progress import Progress
from evalkit.run._result import Driven
from evalkit.run._sharding import Sharding
from evalkit.run._shards import Shard
from evalkit.run._spec import RunSpec
from evalkit.run._summary import ExperimentStatus, SummaryBuilder, state_from_counts
from evalkit.store._shard_writer import ShardRecord, ShardWriter


async def drive_sharded(spec: RunSpec, sharding: Sharding, writer: ShardWriter | None) -> Driven:
    """Run the spec's shards (a resume's unfinished ones) on its executor into ``writer``.

    An interruption (Ctrl-C, a cancellation) is recorded ``cancelled`` and returned as the
    run so far (the shards finished), with its ``stop`` for ``run_evals`` to raise again.

    Raises:
        BaseException: Whatever else stopped the run, after it was recorded ``failed``.
    """
    retries = sharding.retries
    summary = SummaryBuilder(spec.scorer_ids, spec.total_items)
    done: dict[int, str] = {}
    config = spec.config if spec.options.force else None
    if writer is not None and retries is not None:
        assert spec.plan is not None  # planned with the retries
        claim = functools.partial(
            writer.reopen, spec.experiment_id, total_items=spec.total_items,
            scorers=spec.scorer_records, config=config, expected=spec.plan.stored.claim_state,
        )  # fmt: skip
        await anyio.to_thread.run_sync(claim)
    elif writer is not None and spec.options.resume is not None:
        resumed = functools.partial(writer.resume, spec.experiment_id, config=config)
        done = await anyio.to_thread.run_sync(resumed)
        for state in done.values():
            summary.merge(state)
    elif writer is not None:
        await anyio.to_thread.run_sync(writer.begin, spec.record, spec.scorer_records)

    if retries is not None:
        todo = [s for s in sharding.shards if s.index in retries]
        rows = sum(retries[s.index].items for s in todo)
    else:
        todo = [s for s in sharding.shards if s.index not in done]
        rows = sum(s.rows for s in todo)
    shard_config = ShardConfig(
        experiment_id=spec.experiment_id,
        columns=spec.dataset.columns,
        batch_size=spec.dataset.batch_size,
        concurrency=spec.options.concurrency,
        scorer_ids=spec.scorer_ids,
        scorer_names={s.id: s.name for s in spec.scorers},
        rate_share=sharding.workers,
        payload=sharding.payload,
        cache_path=_cache_path(spec),
        repeats=spec.options.repeats,
    )
    entries: list[Any] = []
    bar = Progress(rows, name=spec.name, enabled=spec.options.progress)
    status: ExperimentStatus

    stop, ended, lock = threading.Event(), threading.Event(), threading.Lock()
    started = False
    all_scored = on_all_scored()

    def drive() -> None:
        nonlocal started
        with lock:
            if stop.is_set():
                return  # cancelled before this thread began
            started = True
        try:
            for result in execute(
                todo, shard_config, executor=sharding.executor, workers=sharding.workers,
                target=spec.target, scorers=spec.scorers, ray_address=sharding.ray_address,
                stop=stop, retries=retries,
            ):  # fmt: skip
                state = result.summary.state()
                entries.extend(result.cache_rows)
                _record(writer, result, state, rewrite=retries is not None, ids=spec.scorer_ids)
                summary.merge(state)
                for _ in range(result.summary.processed):
                    bar.item_done(False)
        except Stopped:
            pass  # the cancellation that asked for it is raised by the awaiting task
        else:
            all_scored()  # every shard is recorded: a Ctrl-C now lets the run finish
        finally:
            ended.set()

    try:
        try:
            # Abandoned on cancellation (Ctrl-C), which sets ``stop``: the executor cancels
            # pending shards and ends its workers, and the shards recorded so far are kept
            # (docs/pages/design/sharded-stop.md).
            await anyio.to_thread.run_sync(drive, abandon_on_cancel=True)
        finally:
            with lock:
                stop.set()
            with anyio.CancelScope(shield=True):
                if started:
                    await anyio.to_thread.run_sync(ended.wait)
                # The workers are done: the driver alone writes what they asked the judges.
                if shard_config.cache_path is not None:
                    await anyio.to_thread.run_sync(store_entries, shard_config.cache_path, entries)
    except BaseException as exc:
        status = "cancelled" if is_interrupt(exc) else "failed"
        bar.close()
        if writer is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_finish, writer, status)
        if status == "failed":
            raise
        return Driven(status, summary.build(), (), None, stop=exc)
    bar.close()
    status = summary.status()
    if writer is not None:
        # Every shard is recorded: a cancellation arriving now must not leave it `running`.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_finish, writer, status)
    return Driven(status, summary.build(), (), None)


def _cache_path(spec: RunSpec) -> str | None:
    """The judge cache file of a run that asks a judge (see ``run_evals``'s ``cache``); its
    workers read it and the driver writes it (docs/pages/design/sharded-judge-cache.md)."""
    cache, store = spec.options.cache, spec.store
    if not any(asks_judge(s) for s in spec.scorers):
        return None
    if cache is False or (cache is None and store is None):
        return None
    if cache is None or cache is True:
        return str(default_cache_path(store))
    return str(cache)


def _record(
    writer: ShardWriter | None,
    result: ShardResult,
    state: str,
    *,
    rewrite: bool,
    ids: tuple[str, ...],
) -> None:
    if writer is None:
        return
    shard: Shard = result.shard
    summary = result.summary
    record = ShardRecord(shard.index, shard.file, shard.row_group, shard.offset, shard.rows, state)
    if rewrite:
        # A retried shard's summary is what its rows now hold, over every pass.
        writer.rewrite_shard(result.tables, record, lambda counts: state_from_counts(counts, ids))
        return
    writer.write_shard(result.tables, record, succeeded=summary.succeeded, failed=summary.failed)


def _finish(writer: ShardWriter, status: str) -> None:
    writer.finish(status=status, completed_at=dt.datetime.now(dt.UTC), dataset_fingerprint=None)
