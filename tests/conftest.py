"""Shared fixtures: the shipped local OpenAI-compatible server and a judge pointed at it; a
throwaway PostgreSQL server (``tests/postgres.py``) and S3 server (``tests/s3.py``).

The servers that are slow to start run once per session, that is once per pytest-xdist worker
process, started on first use; each test gets a namespace of its own on them (a database, a
bucket), so tests stay independent of their order and of each other."""

from __future__ import annotations

import signal
import socket
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalkit import Judge
from evalkit.testing import FakeOpenAIServer, server_process
from tests.postgres import NoPostgres, PostgresServer, find_bin_dir, postgres_server

if TYPE_CHECKING:
    # moto and boto3 (the test extra) are imported by the S3 fixture when a test uses it: the
    # smoke tests of the lowest-direct install (.ci/run) run without them.
    from tests.s3 import S3Server

KEY_ENV = "EVALKIT_TEST_JUDGE_KEY"


@pytest.fixture(scope="module", params=["asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Async tests run on asyncio (test ids end in ``[asyncio]``, as before trio was
    installed). anyio's plugin would run each on every backend installed, and trio is: the
    test extra has it for tests/testing/test_trio.py, whose tests ask for it."""
    backend: str = request.param
    return backend


def pytest_configure(config: pytest.Config) -> None:
    """Python's own Ctrl-C handler, in the test session and so in every process it starts.

    A suite started as a background job (``nohup``, ``cmd &`` in a script) inherits SIGINT
    ignored, and so would each ``python -m evalkit`` that a test sends a Ctrl-C: the signal
    tests would then wait for a process that cannot hear them."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The order in which pytest-xdist hands test files to its workers (its own reordering is
    off in pyproject.toml): the files holding a ``long`` test first, the longest first, then
    the rest by their number of tests, most first (pytest-xdist's own order).

    Sorted by test count alone, a file of one long test (the soak's nights) came last and ran
    on one worker while the other had nothing left to do."""
    per_file = Counter(item.path for item in items)
    seconds: dict[Path, float] = {}
    for item in items:
        if marker := item.get_closest_marker("long"):
            seconds[item.path] = max(seconds.get(item.path, 0.0), marker.kwargs.get("seconds", 1.0))
    items.sort(key=lambda item: (-seconds.get(item.path, 0.0), -per_file[item.path]))


@pytest.fixture
def judge_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """Sets the API key variable the test judges read."""
    monkeypatch.setenv(KEY_ENV, "test-key")
    return KEY_ENV


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    """A fresh local server, no latency, no rules."""
    async with FakeOpenAIServer() as running:
        yield running


@pytest.fixture(scope="session")
def judge_process_url() -> Iterator[str]:
    """The base URL of the shipped test server in its own process, as a user would start it
    (``python -m evalkit.testing.server``), once per session: it has no rules and answers each
    request from the request alone, so tests share it without seeing each other. A test that
    sets rules or reads the server's counters starts a server of its own."""
    with server_process() as url:
        yield url


@pytest.fixture
def judge(server: FakeOpenAIServer, judge_key: str) -> Judge:
    """A judge calling ``server``, with few retries to keep failure tests fast."""
    return Judge(
        "fake-judge",
        "You are a strict grader.",
        base_url=server.base_url,
        api_key_env=judge_key,
        max_retries=1,
        timeout=60.0,  # far above a loaded machine's answer time: no test waits it out
    )


@pytest.fixture
def closed_url() -> str:
    """The base URL of a local port nothing listens on (bound, then closed): connecting to
    it is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="session")
def postgres_session() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session, started on first use; skips when the
    machine has no PostgreSQL server binaries."""
    try:
        bin_dir = find_bin_dir()
    except NoPostgres as exc:
        pytest.skip(str(exc))
    with postgres_server(bin_dir) as running:
        yield running


@pytest.fixture
def postgres(postgres_session: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> PostgresServer:
    """The session's PostgreSQL server with a new, empty database of this test's own as
    ``postgres.dbname``, its password in ``PGPASSWORD`` for this test (and the processes it
    starts): connect with ``postgres.dsn``, which holds no password."""
    monkeypatch.setenv("PGPASSWORD", postgres_session.password)
    return postgres_session.with_database()


@pytest.fixture
def postgres_own(monkeypatch: pytest.MonkeyPatch) -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test's own, which the test may stop and start again (a
    catalog outage), its password in ``PGPASSWORD``; skips without server binaries."""
    try:
        bin_dir = find_bin_dir()
    except NoPostgres as exc:
        pytest.skip(str(exc))
    with postgres_server(bin_dir) as running:
        monkeypatch.setenv("PGPASSWORD", running.password)
        yield running


@pytest.fixture(scope="session")
def s3_session() -> Iterator[S3Server]:
    """One S3 server (moto's) for the whole session, started on first use."""
    from tests.s3 import s3_server

    with s3_server() as running:
        yield running


@pytest.fixture
def s3(s3_session: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The session's S3 server with a new, empty bucket of this test's own as ``s3.bucket``,
    its keys and endpoint in the AWS environment variables for this test."""
    for name, value in s3_session.environ.items():
        monkeypatch.setenv(name, value)
    return s3_session.with_bucket()
