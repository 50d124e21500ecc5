"""Python callables as targets: ``f(input, *, request_context=None, **kwargs) -> output``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from evalkit._callables import callable_name
from evalkit.dataset import Item
from evalkit.errors import ConfigError, TargetError


def _is_async(fn: Callable[..., Any]) -> bool:
    # A callable object counts as async when its __call__ method is.
    call = type(fn).__call__ if not inspect.isroutine(fn) else None
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _accepts_request_context(fn: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind is p.VAR_KEYWORD or (p.name == "request_context" and p.kind is not p.POSITIONAL_ONLY)
        for p in parameters
    )


class FunctionTarget:
    """A Python function that produces the output of an item from its input.

    The function is called as ``fn(item.input, request_context=item.request_context,
    **kwargs)``; ``request_context`` is passed only when the function declares it (or takes
    ``**kwargs``). An async function is awaited; a sync one runs in a worker thread, so a
    blocking call (an HTTP request to your application) does not stall the other items.

    Args:
        fn: The function, sync or async.
        name: A name for the stored config; defaults to the function's qualified name.
        timeout: Seconds an item may take before it fails with
            [`TargetError`][evalkit.errors.TargetError].
        in_thread: Run a sync function in a worker thread (default). Pass False for cheap
            pure-Python functions, which then run on the event loop without thread overhead.
        kwargs: Extra keyword arguments passed on every call.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        timeout: float | None = None,
        in_thread: bool = True,
        kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(fn):
            raise ConfigError(f"a target must be callable, got {type(fn).__name__}")
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"target timeout must be positive, got {timeout!r}")
        self.fn = fn
        self.name = name or callable_name(fn)
        self.timeout = timeout
        self.in_thread = in_thread
        self.kwargs = dict(kwargs or {})
        self._async = _is_async(fn)
        self._pass_context = _accepts_request_context(fn)

    def __repr__(self) -> str:
        return f"FunctionTarget({self.name!r})"

    async def __call__(self, item: Item) -> Any:
        """Call the function on ``item.input``; raise what it raises."""
        kwargs = self.kwargs
        if self._pass_context:
            kwargs = {**kwargs, "request_context": item.request_context}
        if self.timeout is None:
            return await self._call(item.input, kwargs)
        try:
            with anyio.fail_after(self.timeout):
                return await self._call(item.input, kwargs)
        except TimeoutError as exc:
            raise TargetError(
                f"target {self.name!r} gave no output for item {item.id!r} "
                f"within {self.timeout:g} s"
            ) from exc

    async def _call(self, value: Any, kwargs: dict[str, Any]) -> Any:
        if self._async:
            return await self.fn(value, **kwargs)
        if self.in_thread:
            result = await anyio.to_thread.run_sync(functools.partial(self.fn, value, **kwargs))
        else:
            result = self.fn(value, **kwargs)
        if inspect.isawaitable(result):
            return await result
        return result

    def describe(self) -> dict[str, Any]:
        """Type, function name, timeout and the extra keyword arguments."""
        return {
            "type": "function",
            "name": self.name,
            "timeout": self.timeout,
            "kwargs": self.kwargs,
        }
