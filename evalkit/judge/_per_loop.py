"""A value of which each running event loop has one: the shared clients, limiters, breakers.

An anyio ``RunVar`` holds it, so a process that runs several loops in turn (tests, repeated
``asyncio.run``) gets a fresh one in each: an ``aiohttp`` session or an
``anyio.CapacityLimiter`` belongs to the loop it was created in (see
docs/pages/design/per-event-loop-clients.md). One implementation for both registries:
docs/pages/design/one-implementation-each.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from anyio.lowlevel import RunVar

T = TypeVar("T")


class PerLoop(Generic[T]):
    """The running event loop's one value, made by ``factory`` at the first `get`.

    Args:
        name: The ``RunVar``'s name.
        factory: Makes the value of a loop that has none yet.
    """

    __slots__ = ("_factory", "_var")

    def __init__(self, name: str, factory: Callable[[], T]) -> None:
        self._var: RunVar[T] = RunVar(name)
        self._factory = factory

    def get(self) -> T:
        """The running loop's value, made now if it has none."""
        try:
            return self._var.get()
        except LookupError:
            value = self._factory()
            self._var.set(value)
            return value

    def existing(self) -> T | None:
        """The running loop's value if it has one; None if not, or outside an event loop."""
        try:
            return self._var.get()
        except LookupError:
            return None
        except RuntimeError:  # anyio's NoEventLoopError: no loop runs in this thread
            return None
