"""Shared ``openai`` clients and their direct chat paths: created lazily, one per event loop.

Everything here is scoped to the running event loop (``judge/_per_loop.py``) because an
``aiohttp`` session belongs to the loop it was created in: a process that runs several loops
in turn (tests, repeated ``asyncio.run``) gets fresh ones in each. Within a loop there is
exactly one client per ``(base_url, API key)``, whoever asks — judges and the OpenAI target
alike. (The limiters and breakers that share a model's budget live beside them, in
``policy/_registry.py``.)

Clients are closed when their loop shuts down, without the caller having to: the first client
of a loop starts a tiny async generator whose ``finally`` closes them, and both ``asyncio``
(``shutdown_asyncgens``, run by ``asyncio.run`` and anyio) and trio finalise live async
generators before the loop closes. `aclose_shared_clients` closes them earlier. See
docs/pages/design/per-event-loop-clients.md.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from anyio.lowlevel import current_token

from evalkit._masking import mask_secrets
from evalkit.errors import ConfigError
from evalkit.judge._per_loop import PerLoop

if TYPE_CHECKING:  # openai loads with the first client: a judge-less run never imports it
    from openai import AsyncOpenAI

    from evalkit.judge.transport._http import ChatTransport


class _LoopState:
    __slots__ = ("clients", "closer", "transports")

    def __init__(self) -> None:
        self.clients: dict[tuple[str | None, str], AsyncOpenAI] = {}
        # The direct chat path of each shared client on asyncio, by the client's id().
        self.transports: dict[int, ChatTransport] = {}
        self.closer: AsyncGenerator[None, None] | None = None


_STATE = PerLoop("evalkit_openai_state", _LoopState)


async def shared_openai_client(*, base_url: str | None, api_key: str) -> AsyncOpenAI:
    """The process's ``AsyncOpenAI`` for ``(base_url, api_key)``, created at the first call.

    One client (and so one connection pool) serves every caller with the same endpoint and
    key in the running event loop; use it for any OpenAI-compatible call (judges, targets).
    On asyncio it uses the ``openai`` package's documented ``DefaultAioHttpClient`` transport
    (the ``openai[aiohttp]`` extra), much cheaper per request than the default, and evalkit's
    judges and targets send chat completions through a direct ``aiohttp`` path with the
    client's URL and headers (``transport/_http.py``); elsewhere (trio) the default ``httpx``
    transport. The client is built with ``max_retries=0``: pass
    ``timeout`` and ``max_retries`` per request (``options={...}``), since callers differ.
    It is closed when the event loop shuts down (or by `aclose_shared_clients`); do not
    close it yourself.

    Args:
        base_url: The endpoint, e.g. ``"http://127.0.0.1:8000/v1"``; None for OpenAI's
            (``OPENAI_BASE_URL`` if set).
        api_key: The API key sent as ``Authorization: Bearer ...``.

    Returns:
        The shared client.
    """
    state = _STATE.get()
    key = (base_url, api_key)
    client = state.clients.get(key)
    if client is None:
        from openai import AsyncOpenAI, DefaultAioHttpClient, DefaultAsyncHttpxClient

        from evalkit.judge.transport._http import ChatTransport

        on_asyncio = isinstance(current_token().native_token, asyncio.AbstractEventLoop)
        http_client = DefaultAioHttpClient() if on_asyncio else DefaultAsyncHttpxClient()
        client = AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, http_client=http_client
        )
        state.clients[key] = client
        if on_asyncio:
            state.transports[id(client)] = ChatTransport(client)
        if state.closer is None:
            state.closer = _close_at_shutdown(state)
            await state.closer.asend(None)
    return client


def chat_transport(client: AsyncOpenAI) -> ChatTransport | None:
    """The direct chat-completions path of ``client`` when it is a shared client of the running
    asyncio loop (see ``transport/_http.py``); None for any other client, which keeps the official
    ``client.post`` path."""
    state = _STATE.existing()
    if state is None:
        return None
    return state.transports.get(id(client))


async def _close_at_shutdown(state: _LoopState) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        clients = list(state.clients.values())
        transports = list(state.transports.values())
        state.clients.clear()
        state.transports.clear()
        state.closer = None
        for transport in transports:
            await transport.aclose()
        for client in clients:
            await client.close()


async def aclose_shared_clients() -> None:
    """Close the running event loop's shared clients now (new ones are made on demand)."""
    state = _STATE.get()
    closer, state.closer = state.closer, None
    if closer is not None:
        await closer.aclose()


async def openai_client_for(
    *, client: AsyncOpenAI | None, base_url: str | None, api_key_env: str, user: str
) -> AsyncOpenAI:
    """``client`` if given, else the shared client for ``base_url`` and the key in the env.

    Args:
        client: A prepared client, returned as is.
        base_url: The endpoint of the shared client.
        api_key_env: The environment variable holding the API key.
        user: Who needs the client, for the error message (e.g. ``"judge 'gpt-4o'"``).

    Raises:
        ConfigError: ``api_key_env`` is not set (or empty), naming the variable.
    """
    if client is not None:
        return client
    api_key = os.environ.get(api_key_env)
    if not api_key:
        raise ConfigError(
            f"{mask_secrets(user)} needs an API key: the environment variable {api_key_env} "
            f"is not set (set it, pass api_key_env= to name another variable, or pass client=)"
        )
    return await shared_openai_client(base_url=base_url, api_key=api_key)
