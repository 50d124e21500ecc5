"""The judge cache file's writer: one thread, so writes land in the order they were submitted.

Writes leave the event loop: the cache hands each batch of entries (and the batch journal
each of its records) to this thread, which runs it on the file's connection under its lock.
A write that fails warns and is dropped: a cache that cannot be written must not fail an
evaluation.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

import anyio


class FileWriter:
    """Runs ``write(connection)`` calls on one thread, in order.

    Args:
        connected: Yields the file's open connection, under its lock (opening it if needed).
    """

    def __init__(self, connected: Callable[[], AbstractContextManager[Any]]) -> None:
        self._connected = connected
        self._thread: ThreadPoolExecutor | None = None
        self._writes: list[Future[None]] = []

    def submit(self, write: Callable[[Any], None], problem: str, consequence: str) -> Future[None]:
        """Queue ``write``; a failure warns with ``problem`` and ``consequence``."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="evalkit-cache-writer")
        self._writes = [f for f in self._writes if not f.done()]
        future = self._thread.submit(self._write_sync, write, problem, consequence)
        self._writes.append(future)
        return future

    def wait(self) -> None:
        """Wait for every write queued so far. Blocking."""
        writes, self._writes = self._writes, []
        _wait_for(writes)

    async def await_writes(self) -> None:
        """`wait` without blocking the event loop."""
        writes, self._writes = self._writes, []
        if writes:
            await anyio.to_thread.run_sync(_wait_for, writes)

    def shutdown(self) -> None:
        """Stop the thread after its queued writes (a later write starts a new one)."""
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None

    def _write_sync(self, write: Callable[[Any], None], problem: str, consequence: str) -> None:
        try:
            with self._connected() as con:
                write(con)
        except Exception as exc:
            # A cache that cannot be written must not fail an evaluation: say so and go on.
            warnings.warn(
                f"evalkit: {problem} ({exc}); {consequence}", RuntimeWarning, stacklevel=1
            )


def _wait_for(writes: list[Future[None]]) -> None:
    for future in writes:
        future.result()
