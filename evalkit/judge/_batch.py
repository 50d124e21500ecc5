"""Batch mode: the judge calls of concurrent scorer runs gathered into provider batch jobs.

A `BatchCollector` exists per event loop and per ``Judge.batch_key`` (endpoint, model,
batch settings) and active judge cache. Each call joins the *open group*; the group is sent as
one batch when no call joined it for ``batch_flush_after`` seconds, or at once when it holds
``batch_max_requests``. So a step's prompts, made by every item in flight at about the same
time, form one batch, and a multi-step scorer advances one step per batch round; a fallback
attempt simply joins the next round.

**No background task.** A group's work (waiting for the quiet period, uploading, creating,
polling, downloading) is done by one of its own callers, its *leader*: the first to join. The
leader is a member of the batch it drives, so it returns exactly when the batch ends, with
everyone else; if it is cancelled, the next waiting member takes over where it stopped.
Submission is shielded from cancellation, so a batch that was created is always recorded.
See docs/pages/design/batch-mode-in-the-judge-layer.md.

**Resume.** With a judge cache active, each submitted batch is recorded in the cache's file
(batch id, and every request's hash → ``custom_id``; ``_batch_journal.py``). A request's hash is
its judge cache key (for a fallback attempt, or an identical request already in flight, that
key hashed with the attempt or occurrence number), so a new run making the same calls finds
them: a call whose hash is in a remembered batch waits for, or reads, that batch instead of
being sent again. A remembered batch that is gone, failed, expired or was cancelled has its
unanswered calls sent anew.

Batch mode's jobs, one module each: gathering calls into batches (this module, with the
bookkeeping of its calls and groups, `Entry` and `Group`), talking to the provider's Batch
API (``_batch_api.py``), remembering a run's batches (``_batch_journal.py``) in the journal's
tables (``_batch_db.py``, below the cache, which creates every table of its file).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Hashable
from typing import Any

import anyio
from anyio.lowlevel import RunVar
from openai import AsyncOpenAI

from evalkit.errors import JudgeError
from evalkit.judge import _batch_api as api
from evalkit.judge._batch_journal import BatchJournal
from evalkit.judge._cache import JudgeCache
from evalkit.judge._judge import Judge
from evalkit.judge.transport._reply import Reply

# A batch that ended without answering gives its calls these codes.
_ENDED = {"failed": "batch_failed", "expired": "batch_expired", "cancelled": "batch_cancelled"}
# Codes of error lines meaning "the batch did not get to it" (asked again when resuming).
_UNANSWERED = frozenset({"batch_expired", "batch_cancelled", "batch_failed"})
_MAX_POLL_FAILURES = 10
# OpenAI takes input files up to 200 MB; stay clear of it.
_MAX_FILE_BYTES = 190_000_000


# Collectors used without a judge cache, per event loop. With a cache, the cache's run holds
# them (`_RunCollectors`), so they live as long as the run.
_COLLECTORS: RunVar[dict[Hashable, BatchCollector]] = RunVar("evalkit_batch_collectors")
_LOOP: RunVar[object] = RunVar("evalkit_batch_loop")


def batch_collector(
    judge: Judge, *, client: AsyncOpenAI, endpoint: str, host: str, cache: JudgeCache | None
) -> BatchCollector:
    """The running event loop's collector for ``judge`` (and the active ``cache``)."""
    journal = None if cache is None else BatchJournal.of(cache)
    if cache is None:
        try:
            collectors = _COLLECTORS.get()
        except LookupError:
            collectors = {}
            _COLLECTORS.set(collectors)
        key: Hashable = judge.batch_key
    else:
        # Events and groups belong to one event loop: key by the loop too.
        try:
            loop = _LOOP.get()
        except LookupError:
            loop = object()
            _LOOP.set(loop)
        collectors = cache._attach(_RunCollectors, _RunCollectors)
        key = (judge.batch_key, loop)
    collector = collectors.get(key)
    if collector is None:
        collector = BatchCollector(
            judge, client=client, endpoint=endpoint, host=host, journal=journal
        )
        collectors[key] = collector
    return collector


class _RunCollectors(dict[Hashable, "BatchCollector"]):
    """A judge cache run's batch collectors, by judge batch key and event loop."""

    def end_run(self, *, finished: bool) -> None:
        """Nothing to finish: the collectors are dropped with the run."""


class BatchCollector:
    """Gathers chat completion calls into batches, submits them, and hands out the answers.

    Args:
        judge: The first judge using it: its endpoint, model, batch settings, and the
            ``timeout``/``max_retries`` of the Batch API calls.
        client: The client of the endpoint.
        endpoint: The endpoint, ``scheme://host:port/path`` (``PreparedRequest.endpoint``):
            its batches are journaled and looked up by it.
        host: The endpoint's host name (recorded with each batch too).
        journal: The batch journal of the active judge cache's run; None for no resume.
    """

    def __init__(
        self,
        judge: Judge,
        *,
        client: AsyncOpenAI,
        endpoint: str,
        host: str,
        journal: BatchJournal | None,
    ) -> None:
        self.client = client
        self.endpoint = endpoint
        self.host = host
        self.model = judge.model or ""
        self.journal = journal
        self.max_requests = judge.batch_max_requests
        self.flush_after = judge.batch_flush_after
        self.poll_interval = judge.batch_poll_interval
        self.timeout = judge.policy.timeout
        self.max_retries = judge.policy.max_retries
        self._open: Group | None = None
        # Identical requests in flight at once, told apart by their occurrence numbers (the
        # lowest free one, so the same calls get the same numbers in the next run).
        self._in_flight: dict[bytes, set[int]] = {}
        self._remembered: dict[bytes, tuple[str, str]] | None = None
        self._loading: anyio.Event | None = None
        self._resumed: dict[str, Group] = {}

    async def complete(self, body: dict[str, Any], key: bytes, label: str) -> Reply:
        """The answer to ``body`` from a batch.

        Args:
            body: The chat completion request body.
            key: The request's hash (see `evalkit.judge._request.request_hash`).
            label: Names the judge in error messages.

        Raises:
            JudgeError: The request failed in its batch, or the batch failed (``code`` the
                request's HTTP status or error code, ``"batch_failed"``, ``"batch_expired"``,
                ``"batch_cancelled"``, or the HTTP status of a failed Batch API call).
        """
        remembered = await self._journal()
        base = key
        used = self._in_flight.setdefault(base, set())
        occurrence = 0
        while occurrence in used:
            occurrence += 1
        used.add(occurrence)
        try:
            if occurrence:
                data = key + occurrence.to_bytes(8, "big")
                key = hashlib.blake2b(data, digest_size=16).digest()
            entry = Entry(body, key, label)
            where = remembered.pop(key, None)
            if where is not None:
                batch_id, entry.custom_id = where
                self._join(self._resumed[batch_id], entry)
            else:
                self._join(self._open_group(), entry)
            try:
                while entry.outcome is None:
                    group = entry.group
                    assert group is not None
                    if group.leader is entry:
                        await self._lead(group, entry)
                    else:
                        await entry.wake.wait()
                        entry.wake = anyio.Event()
            except BaseException:
                self._leave(entry)
                raise
        finally:
            used.discard(occurrence)
            if not used:
                self._in_flight.pop(base, None)
        if isinstance(entry.outcome, JudgeError):
            raise entry.outcome
        return entry.outcome

    # -- groups ---------------------------------------------------------------------------

    def _open_group(self) -> Group:
        if self._open is None:
            self._open = Group()
        return self._open

    def _join(self, group: Group, entry: Entry) -> None:
        entry.group = group
        if group.resumed:
            group.remembered -= 1
            if group.lines is not None or group.failure is not None:
                self._answer(group, entry)
                return
        if not group.sealed:
            entry.line = api.jsonl_line(entry.custom_id, entry.body)
            if group.entries and group.bytes + len(entry.line) > _MAX_FILE_BYTES:
                self._seal(group)
                group = self._open_group()
                entry.group = group
            group.bytes += len(entry.line)
            group.last_arrival = anyio.current_time()
        group.entries[entry.custom_id] = entry
        group.queue.append(entry)
        if not group.sealed and len(group.entries) >= self.max_requests:
            self._seal(group)
        if group.leader is None:
            group.leader = entry

    def _leave(self, entry: Entry) -> None:
        """A waiting call was cancelled: keep it out of a batch not yet sent, and pass the
        lead on."""
        entry.left = True
        group = entry.group
        if group is None or entry.outcome is not None:
            return
        if not group.sealed:
            del group.entries[entry.custom_id]
            group.bytes -= len(entry.line)
        if group.leader is entry:
            group.leader = None
            while group.queue:
                candidate = group.queue.popleft()
                if candidate.outcome is None and not candidate.left and candidate.group is group:
                    group.leader = candidate
                    group.queue.appendleft(candidate)
                    candidate.wake.set()
                    break

    def _seal(self, group: Group) -> None:
        group.sealed = True
        group.full.set()
        if self._open is group:
            self._open = None

    # -- the leader's work ----------------------------------------------------------------

    async def _lead(self, group: Group, entry: Entry) -> None:
        if group.batch_id is None:
            while not group.sealed:
                wait = group.last_arrival + self.flush_after - anyio.current_time()
                if wait <= 0:
                    break
                with anyio.move_on_after(wait):
                    await group.full.wait()
            self._seal(group)
            await self._submit(group)
        while group.lines is None and group.failure is None and entry.group is group:
            await self._poll(group)

    async def _submit(self, group: Group) -> None:
        entries = list(group.entries.values())
        # Shielded: a batch that was created must be recorded, or a later run pays again.
        with anyio.CancelScope(shield=True):
            try:
                data = b"".join(e.line for e in entries)
                batch_id, file_id = await api.submit(
                    self.client, data, timeout=self.timeout, max_retries=self.max_retries
                )
            except Exception as exc:
                self._fail(group, _judge_error(exc, "submitting a batch"))
                return
            group.batch_id = batch_id
            group.next_poll = anyio.current_time() + self.poll_interval
            if self.journal is not None:
                await self.journal.record(
                    batch_id=batch_id,
                    endpoint=self.endpoint,
                    host=self.host,
                    model=self.model,
                    input_file_id=file_id,
                    requests=[(e.request_hash, e.custom_id) for e in entries],
                )

    async def _poll(self, group: Group) -> None:
        batch_id = group.batch_id
        assert batch_id is not None
        wait = group.next_poll - anyio.current_time()
        if wait > 0:
            await anyio.sleep(wait)
        group.next_poll = anyio.current_time() + self.poll_interval
        timeout, retries = self.timeout, self.max_retries
        try:
            state = await api.retrieve(self.client, batch_id, timeout=timeout, max_retries=retries)
            if state.status not in api.TERMINAL:
                group.poll_failures = 0
                return
            files = [
                await api.download(self.client, file_id, timeout=timeout, max_retries=retries)
                for file_id in (state.output_file_id, state.error_file_id)
                if file_id
            ]
        except Exception as exc:
            error = _judge_error(exc, f"polling batch {batch_id}")
            if error.code == "404" and group.resumed:  # not this server's (or account's) batch
                with anyio.CancelScope(shield=True):
                    await self._forget(group)
                    gone = JudgeError(f"batch {batch_id} is gone", code="batch_gone")
                    self._end(group, {}, gone)
                return
            group.poll_failures += 1
            if group.poll_failures > _MAX_POLL_FAILURES or error.code in ("401", "403", "404"):
                self._fail(group, error)
            return
        # Shielded: once the answers are in, hand them out rather than read them again.
        with anyio.CancelScope(shield=True):
            lines = await anyio.to_thread.run_sync(api.read_lines, *files)
            failure = None
            if state.status != "completed":
                why = f": {state.problem}" if state.problem else ""
                code = _ENDED[state.status]
                failure = JudgeError(f"batch {batch_id} {state.status}{why}", code=code)
                await self._forget(group)
            elif self.journal is not None:
                await self.journal.completed(batch_id)
            self._end(group, lines, failure)

    async def _forget(self, group: Group) -> None:
        batch_id = group.batch_id
        if self.journal is not None and batch_id is not None:
            await self.journal.forget(batch_id)

    def _fail(self, group: Group, error: JudgeError) -> None:
        group.lines = {}
        group.failure = error
        for entry in list(group.entries.values()):
            self._answer(group, entry)

    def _end(self, group: Group, lines: dict[str, api.Line], failure: JudgeError | None) -> None:
        group.lines = lines
        group.failure = failure
        for entry in list(group.entries.values()):
            self._answer(group, entry)
        if group.resumed and group.remembered <= 0 and group.batch_id is not None:
            self._resumed.pop(group.batch_id, None)

    def _answer(self, group: Group, entry: Entry) -> None:
        """Give ``entry`` its outcome from the ended ``group`` (or, for a remembered batch
        that did not answer it, send it in the next batch)."""
        if entry.outcome is not None or entry.left:
            return
        line = (group.lines or {}).get(entry.custom_id)
        unanswered = line is None or (line.status is None and line.code in _UNANSWERED)
        if group.resumed and unanswered:
            entry.custom_id = entry.request_hash.hex()
            self._join(self._open_group(), entry)
            entry.wake.set()
            return
        if line is not None:
            entry.outcome = line.outcome(entry.label, str(group.batch_id))
        elif group.failure is not None:
            error = JudgeError(f"{entry.label}: {group.failure}", code=group.failure.code)
            error.__cause__ = group.failure.__cause__ or group.failure
            entry.outcome = error
        else:
            entry.outcome = JudgeError(
                f"{entry.label}: batch {group.batch_id} ended without a line for request "
                f"{entry.custom_id}",
                code="batch_missing_result",
            )
        entry.wake.set()

    # -- the journal ----------------------------------------------------------------------

    async def _journal(self) -> dict[bytes, tuple[str, str]]:
        """The remembered requests not yet asked for: hash → (batch id, custom_id)."""
        while self._remembered is None:
            if self._loading is not None:
                await self._loading.wait()
                continue
            if self.journal is None:
                self._remembered = {}
                break
            self._loading = loading = anyio.Event()
            try:
                records = await self.journal.load(self.endpoint, self.host, self.model)
            finally:
                self._loading = None
                loading.set()
            remembered: dict[bytes, tuple[str, str]] = {}
            for request_hash, batch_id, custom_id, _status in records:
                remembered[request_hash] = (batch_id, custom_id)
            for batch_id, _custom_id in remembered.values():
                group = self._resumed.get(batch_id)
                if group is None:
                    group = self._resumed[batch_id] = Group(batch_id=batch_id)
                group.remembered += 1
            self._remembered = remembered
        return self._remembered


def _judge_error(exc: Exception, what: str) -> JudgeError:
    """``exc`` as a JudgeError (as is when it already is one)."""
    if isinstance(exc, JudgeError):
        return exc
    error = JudgeError(f"{what}: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


class Entry:
    """One call waiting for its batch's answer."""

    __slots__ = (
        "body",
        "custom_id",
        "group",
        "label",
        "left",
        "line",
        "outcome",
        "request_hash",
        "wake",
    )

    def __init__(self, body: dict[str, Any], request_hash: bytes, label: str) -> None:
        self.body = body
        self.line = b""  # its line of the input file, once it joins a batch to send
        self.request_hash = request_hash
        self.custom_id = request_hash.hex()
        self.label = label
        self.outcome: Reply | JudgeError | None = None
        self.wake = anyio.Event()
        self.group: Group | None = None
        self.left = False


class Group:
    """The calls of one batch: being gathered, submitted, or remembered from an earlier run."""

    __slots__ = (
        "batch_id",
        "bytes",
        "entries",
        "failure",
        "full",
        "last_arrival",
        "leader",
        "lines",
        "next_poll",
        "poll_failures",
        "queue",
        "remembered",
        "resumed",
        "sealed",
    )

    def __init__(self, *, batch_id: str | None = None) -> None:
        self.batch_id = batch_id
        self.resumed = batch_id is not None
        self.sealed = self.resumed
        self.entries: dict[str, Entry] = {}
        self.bytes = 0  # of the input file
        self.queue: deque[Entry] = deque()  # candidates for leadership, in arrival order
        self.leader: Entry | None = None
        self.full = anyio.Event()
        self.last_arrival = 0.0
        self.next_poll = 0.0
        self.poll_failures = 0
        self.lines: dict[str, api.Line] | None = None
        self.failure: JudgeError | None = None
        self.remembered = 0  # journal requests of a resumed batch not yet asked for
