"""What evalkit reads off a Python callable: whether calling it gives a coroutine, and the
name to record for it (the scorer's steps, the prebuilt judge steps, a function target and the
run's recorded config all ask). In the root layer, below every package:
docs/pages/design/public-and-internal-names.md."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def is_async_callable(fn: object) -> bool:
    """True for an ``async def`` function, a partial of one, or an object whose ``__call__`` is."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - the bound __call__ of a callable object
    )


def callable_name(fn: Callable[..., Any]) -> str:
    """``module.qualname`` of a function, or its type's for other callables."""
    target = fn if hasattr(fn, "__qualname__") else type(fn)
    module = getattr(target, "__module__", None) or "?"
    return f"{module}.{getattr(target, '__qualname__', repr(target))}"
