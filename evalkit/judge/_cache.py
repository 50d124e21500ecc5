"""``JudgeCache``: replies of deterministic judge calls, replayed instead of asked again.

Where the time goes, and why the design is as it is (see also
docs/pages/design/judge-cache-under-the-prompt-step.md and cache-lookups-off-the-hot-path.md):

- **Reads never touch the database on the hot path.** Entries are grouped by *step key* (a
  hash of everything but the prompt: endpoint (scheme, host, port, path), model,
  instructions, sampling settings, step kind, schema and fallback). The first call of a step
  loads that step's live entries in one query, in a worker thread; every later lookup is a
  dict lookup.
- **Writes leave the event loop.** New entries are buffered and handed, ``batch_size`` at a
  time (and at least every few seconds), to one writer thread that appends them through
  Arrow in one transaction. [`JudgeCache.aclose`][evalkit.JudgeCache.aclose] (or leaving
  [`use_judge_cache`][evalkit.use_judge_cache]) writes the rest.
- **A separate file**, not a table of the score store: the store's writer owns its
  connection, while the cache is shared by every experiment and can be deleted at any time.
- **The batch journal shares the file** (judges in batch mode): its tables are
  ``_batch_db.py``'s, as the entries' are ``_cache_db.py``'s, both created through
  ``_duckdb.py`` when the file opens. The cache knows nothing else of batches: it offers its
  file to the parts of a run that keep state in it (`JudgeCache._attach`, used by
  ``_batch_journal.py``), reads through its lock and writes through the same single writer
  thread, after the entries buffered before them, so a batch is never forgotten before the
  replies read from it are written.
- **Its file's writer** (`FileWriter`) is one thread, so writes land in the order they were
  submitted; a write that fails warns and is dropped: a cache that cannot be written must not
  fail an evaluation.
- **The cache judge calls use** is a context variable, set by
  [`use_judge_cache`][evalkit.use_judge_cache] (`active_judge_cache`).
- **By default** the file lives beside the score store (`default_cache_path`): the cache only
  needs a path, the run and ``evalkit cache`` pass the store.
- **A sharded run's workers** never write the file (a DuckDB file has one writer process at a
  time): `WorkerCache` looks entries up by opening the file read-only for a moment (a file
  missing, or held by another process, is a miss) and keeps the replies it got in
  `WorkerCache.collected`; the shard's result carries them to the driver, which writes them
  all with `store_entries` once its workers are done (also when the run was cancelled or
  failed). See docs/pages/design/sharded-judge-cache.md.

One module for the cache's whole job (its file's table, ``_cache_db.py``, aside: the SQL the
writer thread runs); the path, writer, context variable and worker parts were once four
modules of their own, split only to keep this one under 400 lines.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TypeVar

import anyio
import duckdb
import pyarrow as pa

from evalkit._ceilings import CACHE_BATCH, CACHE_TTL, check_allowed
from evalkit._duckdb import connect_offline
from evalkit.judge import _batch_db
from evalkit.judge import _cache_db as db
from evalkit.judge._cache_db import CachedReply, JudgeCacheStats
from evalkit.judge._duckdb import connect
from evalkit.store import store_location

CACHE_FILE_NAME = "evalkit-cache.duckdb"


def default_cache_path(store: str | os.PathLike[str] | None = None) -> Path:
    """Where the judge cache lives by default.

    ``evalkit-cache.duckdb`` in the score store's folder; without a store, ``judge-cache.duckdb``
    in ``$XDG_CACHE_HOME/evalkit`` (``~/.cache/evalkit``).

    Args:
        store: The score store (a file, or a ``ducklake:`` attach string), if any.
    """
    if store is not None:
        # Beside the store file, or a DuckLake store's catalog file (else the working folder).
        return store_location(store).local_dir().absolute() / CACHE_FILE_NAME
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "evalkit" / "judge-cache.duckdb"


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


T = TypeVar("T")
P = TypeVar("P", bound="RunPart")
# The tables of the file's owners: the entries, and the batch journal.
_SCHEMAS = (db.SCHEMA, _batch_db.SCHEMA)

DEFAULT_TTL = timedelta(days=7)
_FLUSH_SECONDS = 5.0


class RunPart(Protocol):
    """State a run keeps with its judge cache (see `JudgeCache._attach`)."""

    def end_run(self, *, finished: bool) -> None:
        """The run ended (``finished``: normally, not by an exception)."""


class JudgeCache:
    """Judge replies kept in a DuckDB file, keyed by everything that determines them.

    Activate one for a run with [`use_judge_cache`][evalkit.use_judge_cache]; judges whose calls are
    cacheable ([`Judge.caches`][evalkit.Judge.caches]: temperature 0 unless ``cache=`` says
    otherwise) then look each call up before asking and store each success. Errors are never cached.
    A cached call is recorded as a success with ``cached=True``, ``model_call_count=0``, zero usage
    and no cost.

    The maintenance methods ([`stats`][evalkit.JudgeCache.stats],
    [`clear`][evalkit.JudgeCache.clear]) are synchronous, for the CLI.

    Args:
        path: The cache file; None for [`default_cache_path`][evalkit.judge.default_cache_path]
            ``()``.
        ttl: How long an entry stays valid (a ``timedelta`` or seconds, 0 to 100 years);
            default 7 days.
        batch_size: New entries handed to the writer thread at a time, 1 to 1,000,000.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        ttl: timedelta | float = DEFAULT_TTL,
        batch_size: int = 1000,
    ) -> None:
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
        check_allowed("JudgeCache ttl", seconds, CACHE_TTL)
        check_allowed("JudgeCache batch_size", batch_size, CACHE_BATCH)
        self.path = Path(path) if path is not None else default_cache_path()
        self.ttl = float(seconds)
        self.batch_size = batch_size
        self.hits = self.misses = self.writes = 0
        self._lock = threading.Lock()
        self._opened = False
        self._steps: dict[bytes, dict[bytes, CachedReply] | anyio.Event] = {}
        self._pending: list[db.Row] = []
        self._handed = time.monotonic()
        self._writer = FileWriter(self._connected)
        # What the run keeps with this cache (the batch journal's view), until it ends.
        self._parts: dict[Hashable, RunPart] = {}

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path)!r}, ttl={self.ttl:g})"

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """Whether the file is open (by [`open`][evalkit.JudgeCache.open], ``async with``, or a
        maintenance call)."""
        return self._opened

    def open(self) -> None:
        """Open the file (creating it), delete expired entries. Blocking; see
        [`aopen`][evalkit.JudgeCache.aopen].

        Raises:
            StoreError: The file cannot be opened (another process may be using it).
        """
        with self._connected() as con:
            if not self._opened:
                db.prune(con, time.time())
                _batch_db.prune(con, time.time())
                self._opened = True
        # pyarrow imports pandas (~0.3 s, holding the GIL) at its first conversion of a Python
        # list; a run opens its cache before it starts, so pay for that here rather than at
        # the first write, in the middle of the run's judge calls.
        pa.array([], pa.string())

    async def aopen(self) -> None:
        """[`open`][evalkit.JudgeCache.open], in a worker thread."""
        await anyio.to_thread.run_sync(self.open)

    def flush(self) -> None:
        """Write every pending entry and wait for the writer. Blocking; see
        [`aflush`][evalkit.JudgeCache.aflush]."""
        if self._pending:
            self._hand_over()
        self._writer.wait()

    async def aflush(self) -> None:
        """[`flush`][evalkit.JudgeCache.flush] without blocking the event loop."""
        # Hand over here, on the loop's thread, which is the only one appending entries.
        if self._pending:
            self._hand_over()
        await self._writer.await_writes()

    def close(self) -> None:
        """Write pending entries and close the file (it reopens on next use). Blocking.

        Closing ends the run for the batch journal: batches whose results were read are
        forgotten (an interrupted run leaves them to be picked up, see `__aexit__`).
        """
        self._end_run(finished=True)
        self._close()

    def _close(self) -> None:
        self.flush()
        self._writer.shutdown()
        with self._lock:
            self._opened = False
            self._steps.clear()

    async def aclose(self) -> None:
        """[`close`][evalkit.JudgeCache.close] without blocking the event loop."""
        await self._aclose(finished=True)

    async def _aclose(self, *, finished: bool) -> None:
        self._end_run(finished=finished)
        await self.aflush()
        await anyio.to_thread.run_sync(self._close)

    async def __aenter__(self) -> JudgeCache:
        await self.aopen()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # A run left by an exception keeps its batches for the next run to pick up.
        with anyio.CancelScope(shield=True):
            await self._aclose(finished=exc_type is None)

    # -- maintenance (CLI) --------------------------------------------------------------------

    def stats(self) -> JudgeCacheStats:
        """Entries, expired entries, size, age bounds, entries per model and this process's
        hits/misses/writes. Does not create the file when it does not exist."""
        self.flush()
        size = 0
        summary: dict[str, Any] = {"entries": 0, "expired": 0, "oldest": None, "newest": None}
        if self.path.exists():
            with self._briefly() as con:
                summary = db.summary(con, time.time())
            size = sum(
                p.stat().st_size for p in (self.path, Path(f"{self.path}.wal")) if p.exists()
            )
        return JudgeCacheStats(
            path=self.path,
            entries=summary["entries"],
            expired=summary["expired"],
            size_bytes=size,
            oldest=summary["oldest"],
            newest=summary["newest"],
            by_model=summary.get("by_model", {}),
            hits=self.hits,
            misses=self.misses,
            writes=self.writes,
        )

    def clear(self, older_than: timedelta | float | None = None) -> int:
        """Delete entries; return how many were deleted.

        Args:
            older_than: Delete only entries written more than this long ago (a ``timedelta``
                or seconds); None deletes everything.
        """
        self.flush()
        if not self.path.exists():
            return 0
        before = None
        if older_than is not None:
            age = older_than.total_seconds() if isinstance(older_than, timedelta) else older_than
            before = time.time() - float(age)
        with self._briefly() as con:
            deleted = db.delete(con, before)
        self._steps.clear()
        return deleted

    def batches(self) -> list[dict[str, Any]]:
        """The provider batches the journal remembers, oldest first (judges in batch mode).

        Each is a dict with ``batch_id``, ``endpoint`` (``scheme://host:port/path``, what a
        run looks its batches up by; None for a batch recorded before it was kept), ``host``,
        ``model``, ``input_file_id``, ``request_count``, ``status`` (``"submitted"``: not
        known to be over; ``"completed"``: answered, not yet read by a run that ended
        normally), ``created_at`` and ``updated_at``. A run picks these batches up instead
        of sending their requests again. Does not create a missing file.
        """
        self.flush()
        if not self.path.exists():
            return []
        with self._briefly() as con:
            return _batch_db.batches(con)

    # -- lookups and writes (the judge's hot path) -------------------------------------------

    async def get(self, step_key: bytes, prompt_key: bytes) -> CachedReply | None:
        """The live reply cached for this step and prompt, or None (counted as a miss)."""
        entries = self._steps.get(step_key)
        if not isinstance(entries, dict):
            entries = await self._load(step_key)
        reply = entries.get(prompt_key)
        if reply is None or reply.expires_at <= time.time():
            self.misses += 1
            return None
        self.hits += 1
        return reply

    def put(
        self,
        step_key: bytes,
        prompt_key: bytes,
        content: str,
        *,
        attempt_count: int,
        model: str,
        host: str,
        step: str,
    ) -> None:
        """Remember a successful reply (written to the file in the next batch)."""
        now = time.time()
        expires = now + self.ttl
        entries = self._steps.get(step_key)
        if isinstance(entries, dict):
            entries[prompt_key] = CachedReply(content, attempt_count, expires)
        self._pending.append(
            (step_key, prompt_key, content, attempt_count, model, host, step, now, expires)
        )
        self.writes += 1
        if (
            len(self._pending) >= self.batch_size
            or time.monotonic() - self._handed > _FLUSH_SECONDS
        ):
            self._hand_over()

    # -- the file, for the other state a run keeps in it (the batch journal) ------------------

    def _attach(self, key: Hashable, make: Callable[[], P]) -> P:
        """The run's part under ``key``, made by ``make()`` at the first call of the run.

        Parts are dropped when the run ends, after their ``end_run`` (a next run makes them
        afresh)."""
        part = self._parts.get(key)
        if part is None:
            part = self._parts[key] = make()
        return part  # type: ignore[return-value]

    async def _read(self, read: Callable[[Any], T]) -> T:
        """``read(connection)`` in a worker thread, under the file's lock."""
        return await anyio.to_thread.run_sync(self._read_sync, read)

    async def _write(self, write: Callable[[Any], None], *, failure: str) -> None:
        """``write(connection)`` on the writer thread, after the entries buffered so far, and
        wait until it is done. A failure warns, saying ``failure`` (what it means for the
        run)."""
        future = self._submit(write, failure)
        await anyio.to_thread.run_sync(future.result)

    def _end_run(self, *, finished: bool) -> None:
        """Tell the run's parts it ended (``finished``: normally) and drop them."""
        parts, self._parts = self._parts, {}
        for part in parts.values():
            part.end_run(finished=finished)

    # -- internals ----------------------------------------------------------------------------

    async def _load(self, step_key: bytes) -> dict[bytes, CachedReply]:
        while True:
            state = self._steps.get(step_key)
            if isinstance(state, dict):
                return state
            if state is not None:
                await state.wait()
                continue
            loading = self._steps[step_key] = anyio.Event()
            try:
                rows = await anyio.to_thread.run_sync(self._load_sync, step_key)
            except BaseException:
                del self._steps[step_key]
                loading.set()
                raise
            entries = {key: CachedReply(content, n, expires) for key, content, n, expires in rows}
            self._steps[step_key] = entries
            loading.set()
            return entries

    def _load_sync(self, step_key: bytes) -> list[tuple[bytes, str, int, float]]:
        with self._connected() as con:
            return db.load(con, step_key, time.time())

    def _read_sync(self, read: Callable[[Any], T]) -> T:
        with self._connected() as con:
            return read(con)

    def _hand_over(self) -> None:
        rows, self._pending = self._pending, []
        self._handed = time.monotonic()
        self._writer.submit(
            lambda con: db.write(con, rows),
            f"could not write {len(rows)} entries to the judge cache {self.path}",
            "those judge calls will be made again next time",
        )

    def _submit(self, write: Callable[[Any], None], failure: str) -> Future[None]:
        """Run ``write(connection)`` on the writer thread, after every entry buffered so far
        (one thread, so writes land in the order they were submitted)."""
        if self._pending:
            self._hand_over()
        return self._writer.submit(
            write, f"could not write to the judge cache {self.path}", failure
        )

    @contextmanager
    def _connected(self) -> Iterator[Any]:
        """The file, opened for one read or write under the cache's lock, closed after it.

        Holding the file only that long lets several runs (processes) share one cache: each
        waits for the others' short holds (docs/pages/design/judge-cache-opened-briefly.md).
        """
        with self._lock:
            con = connect(self.path, _SCHEMAS)
            try:
                yield con
            finally:
                con.close()

    _briefly = _connected


_ACTIVE: ContextVar[JudgeCache | None] = ContextVar("evalkit_judge_cache", default=None)


def active_judge_cache() -> JudgeCache | None:
    """The cache judge calls use here (set by [`use_judge_cache`][evalkit.use_judge_cache]), or
    None."""
    return _ACTIVE.get()


@asynccontextmanager
async def use_judge_cache(
    cache: JudgeCache | str | os.PathLike[str] | None,
) -> AsyncIterator[JudgeCache | None]:
    """Use ``cache`` for the judge calls made inside the block.

    The cache applies to this task and every task it starts inside the block (a context
    variable), so an orchestrator enters it once around its task group. On the way out,
    pending entries are written; a cache opened here (or given as a path) is also closed.
    ``None`` turns caching off inside the block.

    Example::

        async with use_judge_cache(JudgeCache("evalkit-cache.duckdb")):
            await scorer.run(input=..., output=...)

    Raises:
        StoreError: The cache file cannot be opened.
    """
    if cache is not None and not isinstance(cache, JudgeCache):
        cache = JudgeCache(cache)
    owned = cache is not None and not cache.is_open
    if cache is not None and owned:
        await cache.aopen()
    token = _ACTIVE.set(cache)
    ended = False
    try:
        yield cache
        ended = True
    finally:
        _ACTIVE.reset(token)
        if cache is not None:
            # Left by an exception, the run keeps its batches for the next run to pick up.
            with anyio.CancelScope(shield=True):
                if owned:
                    await cache._aclose(finished=ended)
                else:
                    cache._end_run(finished=ended)
                    await cache.aflush()


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
