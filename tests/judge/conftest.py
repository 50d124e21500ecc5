"""Fixtures of the judge's call tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
import pytest
from openai import DefaultAioHttpClient

from evalkit.judge import shared_openai_client
from evalkit.testing import FakeOpenAIServer


@pytest.fixture(params=["direct", "official"])
async def client(
    request: pytest.FixtureRequest, server: FakeOpenAIServer
) -> AsyncIterator[openai.AsyncOpenAI]:
    """A shared client (sent through evalkit's direct ``aiohttp`` path) or a client of the
    user's own (sent through the official ``client.post``): a test using it holds for both."""
    if request.param == "direct":
        yield await shared_openai_client(base_url=server.base_url, api_key="k")
        return
    own = openai.AsyncOpenAI(
        base_url=server.base_url, api_key="k", max_retries=0, http_client=DefaultAioHttpClient()
    )
    yield own
    await own.close()
