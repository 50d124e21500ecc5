"""The in-process driver: the spec's items through one `Runner` into a store writer.

One of the two drivers of docs/pages/design/one-run-pipeline.md.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from evalkit.run._checks import asks_judge
from evalkit.run._feed import ItemFeed
from evalkit.run._interrupt import is_interrupt, leading_error, on_all_scored
from evalkit.run._item import ItemEvaluator
from evalkit.run._progress import Progress
from evalkit.run._result import Driven, judged_before_stored, result_of
from evalkit.run._resume_plan import ResumeBatches
from evalkit.run._runner import Runner
from evalkit.run._spec import RunSpec
from evalkit.run._summary import ExperimentStatus, SummaryBuilder
from evalkit.run._verdict_record import verdict_record
from evalkit.store._verdicts import VerdictRecord
from evalkit.store._writer import StoreWriter

if TYPE_CHECKING:
    from evalkit.judge import JudgeCache


async def drive_local(spec: RunSpec, writer: StoreWriter | None) -> Driven:
    """Run the spec's items (a resume's remaining pairs) in this process into ``writer``.

    An interruption (Ctrl-C, a cancellation) is recorded ``cancelled`` and returned as the
    run so far, with its ``stop`` for ``run_evals`` to raise again.

    Raises:
        BaseException: Whatever else stopped the run, after it was recorded ``failed`` (see
            `Runner`).
    """
    plan, options = spec.plan, spec.options
    rows = spec.dataset.batches(limit=options.limit)
    batches = (
        rows
        if plan is None
        else ResumeBatches(
            rows, functools.partial(plan.wanted, scorer_ids=frozenset(spec.scorer_ids))
        )
    )
    summary = SummaryBuilder(spec.scorer_ids, spec.to_run)
    runner = Runner(
        experiment_id=spec.experiment_id,
        feed=ItemFeed(batches),
        evaluator=ItemEvaluator(
            spec.target,
            spec.scorers,
            run_prefix=spec.experiment_id,
            skip=plan.skip if plan is not None else None,
            outputs=plan.outputs if plan is not None else None,
            repeats=options.repeats,
        ),
        summary=summary,
        progress=Progress(spec.to_run, name=spec.name, enabled=options.progress),
        writer=writer,
        scorer_names={s.id: s.name for s in spec.scorers},
        concurrency=options.concurrency,
        max_items=spec.to_run,
        keep_results=spec.keep_results,
        on_item_complete=options.on_item_complete,
        flush_interval=options.flush_interval,
        all_scored=on_all_scored(),
        verdict=_own_verdict(spec, summary, lambda: runner.feed.fingerprint)
        if writer is not None and judged_before_stored(spec)
        else None,
    )
    # Only runs that ask a judge open the cache, and before the experiment row is written:
    # a cache that cannot open leaves no row behind (the file is then opened for each read
    # and write only, so several runs share it: docs/pages/design/judge-cache-opened-briefly.md).
    judged = any(asks_judge(s) for s in spec.scorers)
    opened: list[bool] = []  # set in the writer's thread: a cancel lands only after it returns

    def open_row() -> None:
        assert writer is not None
        if plan is not None:
            writer.reopen(
                spec.experiment_id, total_items=spec.total_items, scorers=spec.scorer_records,
                config=spec.config if options.force else None, expected=plan.stored.claim_state,
            )  # fmt: skip
        else:
            writer.begin(spec.record, spec.scorer_records)
        opened.append(True)

    try:
        async with _judge_cache_of(judged, options.cache, spec.store):
            if writer is not None:
                await anyio.to_thread.run_sync(open_row)
            status = await runner.run()
    except BaseException as exc:
        interrupted = is_interrupt(leading_error(exc))
        if writer is not None and opened and not runner.recorded:
            # Stopped after the experiment row was written but before the runner started
            # (a Ctrl-C in between): the row must not stay `running`.
            stopped = "cancelled" if interrupted else "failed"
            finish = functools.partial(
                writer.finish, status=stopped, completed_at=dt.datetime.now(dt.UTC),
                dataset_fingerprint=None,
            )  # fmt: skip
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(finish)
        if not interrupted or (writer is not None and not opened):
            raise  # nothing of the run was recorded: nothing to report
        return Driven("cancelled", summary.build(), runner.sorted_items(), None, stop=exc)
    return Driven(status, summary.build(), runner.sorted_items(), runner.feed.fingerprint)


def _own_verdict(
    spec: RunSpec, summary: SummaryBuilder, fingerprint: Callable[[], str | None]
) -> Callable[[ExperimentStatus], VerdictRecord]:
    """The run's verdict on its own gates as it ends, for its writer to keep with its outcome
    (one write of the store fewer: docs/pages/design/one-database-per-process.md)."""

    def judge(status: ExperimentStatus) -> VerdictRecord:
        return verdict_record(result_of(spec, status, summary.build(), (), fingerprint()))

    return judge


@contextlib.asynccontextmanager
async def _judge_cache_of(
    judged: bool, cache: bool | str | os.PathLike[str] | None, store: str | None
) -> AsyncIterator[None]:
    """The judge cache of a run that asks a judge, in use inside the block. Only a prompt step
    reads the cache, so a run without one neither enters it nor imports it (its DuckDB files,
    the batch journal: issue 31 item 6)."""
    if not judged:
        yield
        return
    from evalkit.judge import use_judge_cache

    async with use_judge_cache(_judge_cache(cache, store)):
        yield


def _judge_cache(
    cache: bool | str | os.PathLike[str] | None, store: str | None
) -> JudgeCache | None:
    from evalkit.judge import JudgeCache, default_cache_path

    if cache is False or (cache is None and store is None):
        return None
    if cache is None or cache is True:
        return JudgeCache(default_cache_path(store))
    return JudgeCache(cache)
