"""The judge cache of a sharded run's workers: read the file, hand new entries to the driver.

A DuckDB file has one writer process at a time, and a sharded run has many workers, so a
worker never writes the cache: `WorkerCache` looks entries up by opening the file
read-only for a moment (a file missing, or held by another process, is a miss), and keeps the
replies it got in `WorkerCache.collected`. The shard's result carries them to the
driver, which writes them all with `store_entries` once its workers are done (also when
the run was cancelled or failed). See docs/pages/design/sharded-judge-cache.md.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import duckdb

from evalkit._duckdb import connect_offline
from evalkit.judge import _cache_db as db
from evalkit.judge._cache import JudgeCache


class WorkerCache(JudgeCache):
    """A [`JudgeCache`][evalkit.JudgeCache] that reads ``path`` read-only and never writes it."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.collected: list[db.Row] = []

    def open(self) -> None:
        """Nothing to open: every lookup opens the file for a moment."""

    def _close(self) -> None:
        self._steps.clear()

    def flush(self) -> None:
        self._hand_over()

    async def aflush(self) -> None:
        self._hand_over()

    def _hand_over(self) -> None:
        self.collected.extend(self._pending)
        self._pending = []
        self._handed = time.monotonic()

    def _load_sync(self, step_key: bytes) -> list[tuple[bytes, str, int, float]]:
        if not self.path.exists():
            return []
        try:
            with connect_offline(str(self.path), read_only=True) as con:
                return db.load(con, step_key, time.time())
        except duckdb.Error:
            return []  # held by a writer, or not a cache yet: the calls are made


def store_entries(path: str | Path, rows: Sequence[db.Row]) -> None:
    """Write the entries a sharded run's workers collected into the cache file ``path``.

    A cache that cannot be written warns (the calls are made again next time), as any cache
    write does.
    """
    if not rows:
        return
    cache = JudgeCache(path)
    cache._pending.extend(rows)
    cache.close()
