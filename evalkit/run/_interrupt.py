"""Telling an interruption (Ctrl-C, an anyio cancellation) from a failure, for both drivers.

An interrupted run is recorded ``cancelled``, a failed one ``failed``; the in-process and the
sharded drivers ask the same question, so they give the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio


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
