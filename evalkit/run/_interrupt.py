"""Telling an interruption (Ctrl-C, an anyio cancellation) from a failure, for both drivers.

An interrupted run is recorded ``cancelled``, a failed one ``failed``; the in-process and the
sharded drivers ask the same question, so they give the same answer. Under
[`run_evals_sync`][evalkit.run_evals_sync], a Ctrl-C before every item was scored cancels the run,
which raises [`RunInterrupted`][evalkit.run.RunInterrupted] carrying what it recorded; one after
that lets the run finish (docs/pages/design/ctrl-c-once.md).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from types import FrameType
from typing import TYPE_CHECKING, TypeVar

import anyio

if TYPE_CHECKING:
    from evalkit.run._experiment import ExperimentResult

T = TypeVar("T")

#: What a run says when a Ctrl-C came after every item was scored (and so did not cancel it).
LATE_CTRL_C = "evalkit: Ctrl-C after every item was scored: the run is finished"


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a [`run_evals_sync`][evalkit.run_evals_sync] run: a ``KeyboardInterrupt`` that
    carries what the run recorded, so a caller can report it and say how to resume it.

    Attributes:
        result: The stopped run (status ``"cancelled"``): the items finished before the
            Ctrl-C and their summary (a resumed run's over every pass). None when the run
            stopped before its experiment was written, or its result could not be read.
    """

    def __init__(self, result: ExperimentResult | None = None) -> None:
        if result is None:
            super().__init__()
        else:
            said = (
                f"experiment {result.experiment_id} ({result.name}) cancelled by Ctrl-C after"
                f" {result.summary.processed} of {result.summary.total_items} items"
            )
            if result.store is not None:
                said += f"; resume it with resume={result.experiment_id!r}"
            super().__init__(said)
        self.result = result


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` stops a run on request (``KeyboardInterrupt`` or a cancellation)."""
    return isinstance(exc, (anyio.get_cancelled_exc_class(), KeyboardInterrupt))


def leading_error(exc: BaseException) -> BaseException:
    """The exception that matters in what a task group raised: a real error before an
    interruption, so a failing flush or dataset read is reported as itself, not as a group."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves = _leaves(exc)
    for leaf in leaves:
        if not is_interrupt(leaf):
            return leaf
    for leaf in leaves:
        if isinstance(leaf, KeyboardInterrupt):
            return leaf
    return exc


def _leaves(exc: BaseException) -> Sequence[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


class CtrlC:
    """Ctrl-C for [`run_evals_sync`][evalkit.run_evals_sync]: the first SIGINT cancels the run,
    later ones are absorbed until it has recorded its status.

    asyncio's own handler cancels the main task once and raises ``KeyboardInterrupt`` at the
    second SIGINT wherever the main thread is (in a shielded write, a DuckDB callback, the
    interpreter's shutdown), killing the process or leaving the run ``running``; and a plain
    ``task.cancel()`` arriving in a shielded section can be consumed there, so the run goes on.
    Here the first SIGINT cancels an anyio scope around the whole run, which stays cancelled
    until the run leaves it (see docs/pages/design/ctrl-c-once.md).
    """

    def __init__(self) -> None:
        self.interrupted = False
        #: Every item of the run was scored: a Ctrl-C now lets the run finish.
        self.scored = False
        #: A Ctrl-C came after every item was scored (the run was not cancelled).
        self.late = False
        #: The result of the run this Ctrl-C cancelled, as far as it went.
        self.partial: ExperimentResult | None = None
        self._scope: anyio.CancelScope | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @contextmanager
    def installed(self) -> Iterator[CtrlC]:
        """Handle SIGINT inside the block (main thread only; elsewhere, nothing changes)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)

    async def run(self, call: Callable[[], Awaitable[T]]) -> T | None:
        """Await ``call()`` under the scope the first SIGINT cancels (None if it did)."""
        token = _ACTIVE.set(self)
        try:
            with anyio.CancelScope() as scope:
                self._scope, self._loop = scope, asyncio.get_running_loop()
                if self.interrupted:
                    scope.cancel()
                return await call()
            return None
        finally:
            _ACTIVE.reset(token)

    def all_scored(self) -> None:
        """The run scored its last item: from now on a Ctrl-C lets it finish (any thread)."""
        self.scored = True

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.interrupted:
            return  # absorbed: the run is already stopping
        self.interrupted = True
        if self._scope is None or self._loop is None:
            return  # not started yet: cancelled as it starts
        with suppress(RuntimeError):  # the loop already closed: nothing left to stop
            self._loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:
        # In the loop's thread, as the runner marks the last item scored: the two are ordered.
        if self.scored:
            self.late = True
        elif self._scope is not None:
            self._scope.cancel()


#: The :class:`CtrlC` of the ``run_evals_sync`` call this run is in, if any.
_ACTIVE: ContextVar[CtrlC | None] = ContextVar("evalkit_ctrl_c", default=None)


def on_all_scored() -> Callable[[], None]:
    """What a driver calls once every item of its run is scored (from any thread): a Ctrl-C
    then no longer cancels the run under ``run_evals_sync``. Does nothing elsewhere."""
    ctrl_c = _ACTIVE.get()
    return ctrl_c.all_scored if ctrl_c is not None else _nothing


def _nothing() -> None:
    return None


def wants_partial() -> bool:
    """Whether the caller keeps the result of a cancelled run (``run_evals_sync`` does)."""
    return _ACTIVE.get() is not None


def keep_partial(result: ExperimentResult) -> None:
    """Hand the result of a cancelled run to the ``run_evals_sync`` call that runs it."""
    ctrl_c = _ACTIVE.get()
    if ctrl_c is not None:
        ctrl_c.partial = result
