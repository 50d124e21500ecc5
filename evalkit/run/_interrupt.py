"""Telling an interruption (Ctrl-C, an anyio cancellation) from a failure, for both drivers.

An interrupted run is recorded ``cancelled``, a failed one ``failed``; the in-process and the
sharded drivers ask the same question, so they give the same answer.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from types import FrameType
from typing import TypeVar

import anyio

T = TypeVar("T")


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
    """Ctrl-C for :func:`run_evals_sync`: the first SIGINT cancels the run, later ones are
    absorbed until it has recorded its status.

    asyncio's own handler cancels the main task once and raises ``KeyboardInterrupt`` at the
    second SIGINT wherever the main thread is (in a shielded write, a DuckDB callback, the
    interpreter's shutdown), killing the process or leaving the run ``running``; and a plain
    ``task.cancel()`` arriving in a shielded section can be consumed there, so the run goes on.
    Here the first SIGINT cancels an anyio scope around the whole run, which stays cancelled
    until the run leaves it (see docs/pages/design/ctrl-c-once.md).
    """

    def __init__(self) -> None:
        self.interrupted = False
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
        with anyio.CancelScope() as scope:
            self._scope, self._loop = scope, asyncio.get_running_loop()
            if self.interrupted:
                scope.cancel()
            return await call()
        return None

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.interrupted:
            return  # absorbed: the run is already stopping
        self.interrupted = True
        if self._scope is None or self._loop is None:
            return  # not started yet: cancelled as it starts
        with suppress(RuntimeError):  # the loop already closed: nothing left to stop
            self._loop.call_soon_threadsafe(self._scope.cancel)
