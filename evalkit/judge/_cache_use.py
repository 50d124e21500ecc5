"""The judge cache judge calls use here: a context variable, set by
[`use_judge_cache`][evalkit.use_judge_cache]."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar

import anyio

from evalkit.judge._cache import JudgeCache

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
