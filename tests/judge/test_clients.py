from __future__ import annotations

import anyio
import pytest
from openai import AsyncOpenAI

from evalkit import ConfigError
from evalkit.judge import shared_openai_client
from evalkit.judge.policy._registry import shared_limiter
from evalkit.judge.transport._clients import aclose_shared_clients, openai_client_for


async def test_one_client_per_base_url_and_key() -> None:
    first = await shared_openai_client(base_url="http://127.0.0.1:9/v1", api_key="a")
    again = await shared_openai_client(base_url="http://127.0.0.1:9/v1", api_key="a")
    other_key = await shared_openai_client(base_url="http://127.0.0.1:9/v1", api_key="b")
    other_url = await shared_openai_client(base_url="http://127.0.0.1:8/v1", api_key="a")
    assert first is again
    assert len({id(first), id(other_key), id(other_url)}) == 3
    assert first.api_key == "a"
    assert str(first.base_url) == "http://127.0.0.1:9/v1/"
    assert first.max_retries == 0  # callers pass their own per request


async def test_aclose_shared_clients_closes_them_and_new_ones_follow() -> None:
    client = await shared_openai_client(base_url="http://127.0.0.1:9/v1", api_key="a")
    await aclose_shared_clients()
    assert client.is_closed()
    fresh = await shared_openai_client(base_url="http://127.0.0.1:9/v1", api_key="a")
    assert fresh is not client
    assert not fresh.is_closed()


def test_clients_belong_to_their_event_loop_and_close_with_it() -> None:
    async def grab() -> AsyncOpenAI:
        return await shared_openai_client(base_url="http://127.0.0.1:9/v1", api_key="a")

    first = anyio.run(grab)
    second = anyio.run(grab)
    assert first is not second
    assert first.is_closed()
    assert second.is_closed()


async def test_openai_client_for_prefers_the_given_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVALKIT_CLIENTS_KEY", "from-env")
    given = AsyncOpenAI(api_key="given", base_url="http://127.0.0.1:9/v1")
    try:
        got = await openai_client_for(
            client=given, base_url=None, api_key_env="UNSET_VAR", user="judge 'm'"
        )
        assert got is given
    finally:
        await given.close()
    shared = await openai_client_for(
        client=None, base_url="http://127.0.0.1:9/v1", api_key_env="EVALKIT_CLIENTS_KEY", user="x"
    )
    assert shared.api_key == "from-env"


@pytest.mark.parametrize("value", [None, ""])
async def test_missing_api_key_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("EVALKIT_ABSENT_KEY", raising=False)
    else:
        monkeypatch.setenv("EVALKIT_ABSENT_KEY", value)
    with pytest.raises(ConfigError, match="environment variable EVALKIT_ABSENT_KEY is not set"):
        await openai_client_for(
            client=None, base_url=None, api_key_env="EVALKIT_ABSENT_KEY", user="judge 'm'"
        )


async def test_shared_limiter_is_one_per_key() -> None:
    first = shared_limiter(("chat", "m", 3), 3)
    assert shared_limiter(("chat", "m", 3), 3) is first
    assert first.total_tokens == 3
    other = shared_limiter(("chat", "n", 3), 3)
    assert other is not first
