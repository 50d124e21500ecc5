"""The viewer's hold on the store: one read-only DuckDB database shared by the requests, kept
open only briefly, so a run that writes the store meanwhile always gets its turn.

DuckDB lets one process write a file, or several read it, never both; a run opens the store
for each flush and waits (up to 30 s) while a reader holds it. Opening the file for every
request would be simplest, but a fresh database starts with an empty cache and reads and
decompresses every column a page touches again: on a store of a million score rows that is
most of a page's time. So requests share one open database while they come, and it is closed
after `IDLE` seconds without a request, or after `HOLD` seconds open at the latest
(requests then wait for the ones in flight, the store is closed for `GAP` seconds, in
which a waiting writer takes its lock, and opened again). A run's flush so waits at most
about ``HOLD + GAP`` seconds, and pages show what was flushed within that time.
See docs/pages/design/viewer-stack.md.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import duckdb

from evalkit._sql import quote_ident
from evalkit.store import connection

#: Seconds the store stays open without a request.
IDLE = 0.5
#: Seconds the store stays open at most, however busy the viewer is.
HOLD = 2.0
#: Seconds the store stays closed after being held :data:`HOLD` seconds, for a writer.
GAP = 0.3
#: How long a request waits for a run's flush to release the store, in seconds.
LOCK_TIMEOUT = 20.0


class Reader:
    """The store, opened read-only and shared by the requests for a bounded time."""

    def __init__(
        self, store: str | os.PathLike[str], *, idle: float = IDLE, hold: float = HOLD
    ) -> None:
        self.store = str(store)
        self._idle = idle
        self._hold = hold
        self._state = threading.Condition()
        self._con: duckdb.DuckDBPyConnection | None = None
        # Closes ``_con``: the store's connection is held across requests, not one block.
        self._open = ExitStack()
        self._catalog: str | None = None
        self._opened = 0.0
        self._last = 0.0
        self._users = 0
        self._closed_at = float("-inf")

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection of its own (temporary tables included) to the shared database."""
        con = self._acquire()
        try:
            with con.cursor() as cursor:
                if self._catalog is not None:
                    # A new cursor starts in DuckDB's own catalog: a DuckLake store's lake is
                    # attached beside it, and made current again here.
                    cursor.execute(f"USE {quote_ident(self._catalog)}")
                yield cursor
        finally:
            self._release()

    def _acquire(self) -> duckdb.DuckDBPyConnection:
        with self._state:
            # Past its time, the store is held no more: wait for the requests in flight.
            while self._con is not None and time.monotonic() - self._opened > self._hold:
                if self._users == 0:
                    self._close()
                    break
                self._state.wait(0.05)
            if self._con is None:
                pause = self._closed_at + GAP - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                self._con = self._open.enter_context(
                    connection(self.store, read_only=True, lock_timeout=LOCK_TIMEOUT)
                )
                self._catalog = self._con.execute("SELECT current_database()").fetchall()[0][0]
                self._opened = time.monotonic()
            self._users += 1
            return self._con

    def _release(self) -> None:
        with self._state:
            self._users -= 1
            self._last = time.monotonic()
            if self._users == 0 and self._last - self._opened > self._hold:
                self._close()
            self._state.notify_all()

    def close_if_idle(self) -> None:
        """Close the store when no request used it for ``idle`` seconds (called on a timer)."""
        with self._state:
            idle = time.monotonic() - self._last > self._idle
            if self._con is not None and self._users == 0 and idle:
                self._close()

    def close(self) -> None:
        """Close the store (waiting for the requests in flight)."""
        with self._state:
            while self._users:
                self._state.wait(0.05)
            if self._con is not None:
                self._close()

    def _close(self) -> None:
        assert self._con is not None
        self._open.close()
        self._con = None
        self._closed_at = time.monotonic()
