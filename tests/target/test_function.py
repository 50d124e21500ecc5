from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from evalkit import ConfigError, FunctionTarget, Item, Target, TargetError
from evalkit.run._spec import as_target
from evalkit.target import DatasetOutput

ITEM = Item(id="i1", input="hello", ground_truth="HELLO", output="old", request_context={"u": 1})


async def test_sync_function_runs_in_a_worker_thread() -> None:
    seen: list[str] = []

    def upper(text: str) -> str:
        seen.append(threading.current_thread().name)
        return text.upper()

    assert await FunctionTarget(upper)(ITEM) == "HELLO"
    assert seen[0] != threading.main_thread().name


async def test_sync_function_inline_when_asked() -> None:
    seen: list[str] = []

    def upper(text: str) -> str:
        seen.append(threading.current_thread().name)
        return text.upper()

    assert await FunctionTarget(upper, in_thread=False)(ITEM) == "HELLO"
    assert seen == [threading.main_thread().name]


async def test_async_function_gets_request_context_and_kwargs() -> None:
    calls: list[tuple[Any, ...]] = []

    async def answer(text: str, *, request_context: Any = None, style: str = "") -> str:
        calls.append((text, request_context, style))
        await anyio.sleep(0)
        return f"{style}{text}"

    target = FunctionTarget(answer, kwargs={"style": "> "})
    assert await target(ITEM) == "> hello"
    assert calls == [("hello", {"u": 1}, "> ")]


async def test_request_context_only_when_declared() -> None:
    assert await FunctionTarget(lambda text: text * 2)(ITEM) == "hellohello"
    assert await FunctionTarget(lambda text, **kw: kw)(ITEM) == {"request_context": {"u": 1}}


async def test_callable_object_with_async_call() -> None:
    class App:
        async def __call__(self, text: str) -> str:
            return text[::-1]

    assert await FunctionTarget(App())(ITEM) == "olleh"


async def test_timeout_raises_target_error_naming_item() -> None:
    async def slow(text: str) -> str:
        await anyio.sleep(5)
        return text

    with pytest.raises(TargetError, match=r"'i1' within 0\.05 s"):
        await FunctionTarget(slow, timeout=0.05)(ITEM)


async def test_errors_propagate_unchanged() -> None:
    def broken(text: str) -> str:
        raise ConnectionError("app is down")

    with pytest.raises(ConnectionError, match="app is down"):
        await FunctionTarget(broken)(ITEM)


def test_describe_names_the_function() -> None:
    def my_app(text: str) -> str:
        return text

    described = FunctionTarget(my_app, timeout=3, kwargs={"k": 1}).describe()
    assert described["type"] == "function"
    assert described["name"].endswith("test_describe_names_the_function.<locals>.my_app")
    assert (described["timeout"], described["kwargs"]) == (3, {"k": 1})


def test_invalid_options() -> None:
    with pytest.raises(ConfigError, match="callable"):
        FunctionTarget("nope")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="positive"):
        FunctionTarget(str, timeout=0)


async def test_as_target() -> None:
    assert isinstance(as_target(None), DatasetOutput)
    assert await as_target(None)(ITEM) == "old"
    assert isinstance(as_target(str.upper), FunctionTarget)
    custom = DatasetOutput()
    assert as_target(custom) is custom
    assert isinstance(custom, Target)
    with pytest.raises(ConfigError, match="not int"):
        as_target(3)
