"""The batch journal as one run sees it, kept with the run's judge cache.

The journal's tables are ``_batch_db.py``'s, in the judge cache's file; this is the run's side
of them: reads through the cache's lock, writes through its writer thread (after the entries
buffered before them), the batches whose results this run read (forgotten when the run ends
normally; an interrupted run leaves them for the next one to pick up) and the run's batch
collectors. It is attached to the cache for the run (``JudgeCache._attach``) and dropped
when the run ends, so calls still waiting keep theirs and a next run reads the journal afresh.
Why the journal is in the cache's file: docs/pages/design/batch-journal-in-the-cache-file.md.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from evalkit.judge import _batch_db as db
from evalkit.judge._cache import JudgeCache

_NOT_RECORDED = "if this run is interrupted, the next one sends these requests again"
_NOT_UPDATED = "the next run may look at this batch again"


class BatchJournal:
    """The batch journal of a judge cache's run (get it with `of`)."""

    __slots__ = ("_cache", "_read")

    def __init__(self, cache: JudgeCache) -> None:
        self._cache = cache
        # Batches whose results were read in this run, forgotten when the run ends normally.
        self._read: set[str] = set()

    @staticmethod
    def of(cache: JudgeCache) -> BatchJournal:
        """The journal of ``cache``'s current run (made at its first use in the run)."""
        return cache._attach(BatchJournal, lambda: BatchJournal(cache))

    async def load(self, endpoint: str, host: str, model: str) -> list[db.Record]:
        """The remembered requests of batches to ``model`` at ``endpoint`` (``host``: its
        host name, for batches recorded before the endpoint was; see ``_batch_db``)."""
        return await self._cache._read(lambda con: db.load(con, endpoint, host, model))

    async def record(
        self,
        *,
        batch_id: str,
        endpoint: str,
        host: str,
        model: str,
        input_file_id: str,
        requests: Sequence[tuple[bytes, str]],
    ) -> None:
        """Remember a submitted batch and its ``(request_hash, custom_id)`` pairs."""
        now = time.time()
        await self._cache._write(
            lambda con: db.record(
                con,
                batch_id=batch_id,
                endpoint=endpoint,
                host=host,
                model=model,
                input_file_id=input_file_id,
                requests=requests,
                now=now,
            ),
            failure=_NOT_RECORDED,
        )

    async def completed(self, batch_id: str) -> None:
        """Note that a batch completed and that this run read its results."""
        await self._cache._write(
            lambda con: db.set_status(con, batch_id, "completed", time.time()),
            failure=_NOT_UPDATED,
        )
        self._read.add(batch_id)

    async def forget(self, batch_id: str) -> None:
        """Remove a batch that ended without answering (its requests are asked again)."""
        await self._cache._write(lambda con: db.forget(con, [batch_id]), failure=_NOT_UPDATED)

    def end_run(self, *, finished: bool) -> None:
        """When the run ``finished`` normally, forget the batches it read (after the entries
        written from them)."""
        if not finished or not self._read:
            return
        done, self._read = sorted(self._read), set()
        self._cache._submit(
            lambda con: db.forget(con, done),
            f"{len(done)} finished batches stay in the journal; the next run may read them again",
        )
