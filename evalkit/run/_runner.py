"""The run itself: workers pulling items, results collected, rows flushed to the store.

Concurrency is a fixed pool of ``concurrency`` workers pulling from one `ItemFeed`, so
at most that many items are in flight and no task is created per row
(docs/pages/design/fixed-worker-pool.md); never more workers than items, so a concurrency far
above the row count costs nothing (docs/pages/design/ceilings-on-inputs.md). Finished items go to
the in-memory result, the progress bar, the store buffer and the user's callback, in that
order and with no wait in between: an item in the buffer, which is written however the run
ends, was handed to the callback, even when a cancellation lands as it finishes. The buffer is
written when it is large or a couple of seconds old (a ticker task covers quiet periods),
always in a shielded scope so a cancellation never loses a batch that was taken. On
cancellation or a fatal error, the rows already finished are flushed and the experiment is
marked ``cancelled`` or ``failed`` before the exception propagates.
"""

from __future__ import annotations

import datetime as dt
import gc
import inspect
import time
from collections.abc import Callable

import anyio
import anyio.lowlevel
import anyio.to_thread

from evalkit._startup_gc import froze_at_start
from evalkit.run._feed import ItemFeed
from evalkit.run._interrupt import is_interrupt, leading_error
from evalkit.run._item import ItemEvaluator
from evalkit.run._options import ItemCallback
from evalkit.run._outcome import ItemResult
from evalkit.run._progress import Progress
from evalkit.run._rows import RowBuffer
from evalkit.run._summary import ExperimentStatus, SummaryBuilder
from evalkit.scorer._limits import StepWatchdog
from evalkit.store._verdicts import VerdictRecord
from evalkit.store._writer import StoreWriter

#: Rows buffered before a write is due regardless of time. Each write has a fixed cost of
#: about 100 ms (open, commit, checkpoint); DuckDB's memory during a commit grows with the
#: batch. 100,000 rows: B2 +27% and B4 +70% runs/s over 25,000, B4's peak RSS 436 MB
#: (docs/pages/design/store-rows-via-arrow.md).
FLUSH_ROWS = 100_000

#: Items a worker takes back to back before it yields to the event loop.
YIELD_EVERY = 32

#: Kept results between two ``gc.freeze()`` calls.
FREEZE_EVERY = 10_000


class Runner:
    """Runs one experiment's items and records them (built and awaited by ``run_evals``)."""

    def __init__(
        self,
        *,
        experiment_id: str,
        feed: ItemFeed,
        evaluator: ItemEvaluator,
        summary: SummaryBuilder,
        progress: Progress,
        writer: StoreWriter | None,
        scorer_names: dict[str, str],
        concurrency: int,
        max_items: int,
        keep_results: bool,
        on_item_complete: ItemCallback | None,
        flush_interval: float,
        all_scored: Callable[[], None] = lambda: None,
        verdict: Callable[[ExperimentStatus], VerdictRecord] | None = None,
    ) -> None:
        self.experiment_id = experiment_id
        self.feed = feed
        self.evaluator = evaluator
        self.summary = summary
        self.progress = progress
        self.writer = writer
        self.scorer_names = scorer_names
        # A worker with no item to take would only cost memory (and 10**6 of them, minutes).
        self.concurrency = max(1, min(concurrency, max_items))
        self.max_items = max_items
        #: Called once every item is scored: a Ctrl-C (under run_evals_sync) then lets the
        #: run finish (docs/pages/design/ctrl-c-once.md). A shard's runner has none.
        self._all_scored = all_scored
        #: The run's verdict on its own gates, for a run that ended on its own: the writer
        #: keeps it with the outcome (None: ``run_evals`` records it once the result is built).
        self._verdict = verdict
        self.keep_results = keep_results
        self.on_item_complete = on_item_complete
        self.flush_interval = flush_interval
        self.items: list[ItemResult] = []
        #: Whether the run's end was recorded (its writer finished), however it ended.
        self.recorded = False
        self._buffer = RowBuffer(experiment_id, scorer_names)
        self._flush_lock = anyio.Lock()
        self._last_flush = time.monotonic()
        self._unfrozen = 0
        self._froze = False
        # A process that freezes objects itself (a pre-forking server) is left alone:
        # gc.unfreeze() at the end would hand its objects back to the collector too. The
        # evalkit command's own freeze of what it loaded is not such a process: handing its
        # modules back after a run changes nothing (docs/pages/design/startup-objects-frozen.md).
        self._may_freeze = keep_results and (gc.get_freeze_count() == 0 or froze_at_start())

    async def run(self) -> ExperimentStatus:
        """Process every item; returns the final status or raises after recording it."""
        # A sync step past its scorer's step_timeout is stopped by the watchdog (see
        # docs/pages/design/step-time-limits.md); it looks ten times within the smallest limit.
        limits = [s.step_timeout for s in self.evaluator.scorers if s.step_timeout is not None]
        try:
            with StepWatchdog(poll=min(limits, default=10.0) / 10):
                return await self._run()
        finally:
            if self._froze:
                # Hand the kept results back to the collector (see _complete).
                gc.unfreeze()

    async def _run(self) -> ExperimentStatus:
        try:
            async with anyio.create_task_group() as outer:
                if self.writer is not None:
                    outer.start_soon(self._ticker)
                async with anyio.create_task_group() as workers:
                    for _ in range(self.concurrency):
                        workers.start_soon(self._worker)
                self._all_scored()  # also when the feed held fewer items than planned
                outer.cancel_scope.cancel()
        except BaseException as exc:
            error = leading_error(exc)
            status: ExperimentStatus = "cancelled" if is_interrupt(error) else "failed"
            with anyio.CancelScope(shield=True):
                try:
                    await self._finish(status)
                except Exception as secondary:
                    error.add_note(f"and recording the {status} run failed too: {secondary}")
            if error is exc:
                raise
            raise error from None
        status = self.summary.status()
        await self._finish(status, judged=True)
        return status

    async def _worker(self) -> None:
        feed, evaluate, complete = self.feed, self.evaluator, self._complete
        taken = 0
        while (item := await feed.next()) is not None:
            await complete(await evaluate(item))
            taken += 1
            if taken % YIELD_EVERY == 0:
                # Scorers that never await would keep this worker from yielding: give the
                # other tasks (flushes, progress, a pending cancellation) their turn.
                await anyio.lowlevel.checkpoint()

    async def _complete(self, result: ItemResult) -> None:
        self.summary.add(result)
        if self.summary.processed >= self.max_items:
            self._all_scored()
        if self.keep_results:
            self.items.append(result)
            self._unfrozen += 1
            if self._may_freeze and self._unfrozen >= FREEZE_EVERY:
                # Kept results live until the run ends; without this every full collection
                # rescans all of them (a third of the run time at 100,000 items; see
                # docs/pages/design/gc-freeze-kept-results.md).
                gc.freeze()
                self._froze = True
                self._unfrozen = 0
        self.progress.item_done(result.status != "success")
        if self.writer is not None:
            self._buffer.add(result)
        # The callback comes before a due write: taking the flush lock is a checkpoint, where a
        # cancellation would leave the item buffered (so written as the run stops) with its
        # callback never called.
        if self.on_item_complete is not None:
            value = self.on_item_complete(result)
            if inspect.isawaitable(value):
                await value
        if self.writer is not None and (
            self._buffer.rows >= FLUSH_ROWS
            or time.monotonic() - self._last_flush >= self.flush_interval
        ):
            await self._flush()

    async def _ticker(self) -> None:
        while True:
            await anyio.sleep(self.flush_interval / 2)
            if time.monotonic() - self._last_flush >= self.flush_interval:
                await self._flush()

    async def _flush(self, *, keep: bool = False) -> None:
        """Write the buffered rows (``keep``: hand them to the writer for its `finish`)."""
        writer = self.writer
        if writer is None:
            return
        async with self._flush_lock:
            buffer = self._buffer
            self._buffer = RowBuffer(self.experiment_id, self.scorer_names)
            self._last_flush = time.monotonic()
            if buffer.rows:
                # Shielded: once taken from the buffer, a batch is written even if the run
                # is being cancelled.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(writer.keep if keep else writer.write, buffer)

    async def _finish(self, status: ExperimentStatus, *, judged: bool = False) -> None:
        """Record how the run ended (``judged``: it ended on its own, and its verdict is kept
        with its outcome when the runner was given one)."""
        self.recorded = True
        self.progress.close()
        writer = self.writer
        if writer is None:
            return
        verdict = self._verdict if judged else None

        def finish(status: ExperimentStatus) -> None:
            try:
                kept = verdict(status) if verdict is not None else None
            except Exception:
                kept = None  # the end and the rows are written; run_evals records the verdict
            writer.finish(
                status=status,
                completed_at=dt.datetime.now(dt.UTC),
                dataset_fingerprint=self.feed.fingerprint,
                verdict=kept,
            )

        def finish_failed(status: ExperimentStatus) -> None:
            writer.finish(
                status=status,
                completed_at=dt.datetime.now(dt.UTC),
                dataset_fingerprint=self.feed.fingerprint,
            )

        try:
            # The last batch is kept, not written: finish writes it with the run's outcome,
            # one open of the store and one checkpoint instead of two.
            await self._flush(keep=True)
        except BaseException as exc:
            # The last batch is not in the store: the run is never recorded as finished
            # well (it was recorded `completed` with none of its rows, issue 30).
            failed: ExperimentStatus = "cancelled" if status == "cancelled" else "failed"
            with anyio.CancelScope(shield=True):
                try:
                    await anyio.to_thread.run_sync(finish_failed, failed)
                except Exception as secondary:
                    exc.add_note(f"and recording the {failed} run failed too: {secondary}")
            raise
        # Shielded as the flush is: the last batch was handed over to be written with the
        # outcome, so a cancellation arriving now must not leave it unwritten. It ends the run
        # as cancelled once the end is written.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(finish, status)

    def sorted_items(self) -> tuple[ItemResult, ...]:
        """The kept results in dataset order."""
        return tuple(sorted(self.items, key=lambda r: r.item.index))
