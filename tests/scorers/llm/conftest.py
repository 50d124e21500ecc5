"""One local judge server per test module, reset before each test, and a judge calling it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from evalkit import Judge
from evalkit.testing import FakeOpenAIServer

KEY_ENV = "EVALKIT_TEST_LLM_SCORERS_KEY"


@pytest.fixture(scope="module")
def _llm_key() -> Iterator[str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, "test-key")
        yield KEY_ENV


@pytest.fixture(scope="module")
async def _shared_server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as running:
        yield running


@pytest.fixture
def llm_server(_shared_server: FakeOpenAIServer) -> FakeOpenAIServer:
    """The module's server, with no rules, counters at zero and no recorded requests."""
    _shared_server.reset()
    return _shared_server


@pytest.fixture(scope="module")
def llm_judge(_shared_server: FakeOpenAIServer, _llm_key: str) -> Judge:
    """A judge calling the module's server; its own instructions must not reach the model."""
    return Judge(
        "fake-judge",
        "The experiment's own instructions.",
        base_url=_shared_server.base_url,
        api_key_env=_llm_key,
        max_retries=0,
        timeout=60.0,  # far above a loaded machine's answer time: no test waits it out
    )
