"""A real, local OpenAI-compatible server for testing LLM judges offline.

In a test, run it in-process::

    async with FakeOpenAIServer([Rule("capital", reply={"score": 1})], latency=0.01) as server:
        judge = Judge("any-model", "You grade answers.", base_url=server.base_url)
        ...
        assert server.stats.max_in_flight <= 4

Or as its own process (so client and server each get a core)::

    python -m evalkit.testing.server --port 8000 --latency 0.05

It answers ``POST /v1/chat/completions`` like OpenAI does: JSON-mode and ``json_schema`` replies
are built from the requested schema, ``usage`` counts tokens from the text (with cached and
reasoning details, and ``usage.cost`` when asked), and [`Rule`][evalkit.testing.Rule] scripts
replies or faults (HTTP errors, 429 with ``Retry-After``, malformed bodies, hangs, dropped
connections) per prompt. ``GET /v1/models`` lists a model (and, like chat completions, answers 401
without the ``api_key`` when one is set; serve another answer with ``add_route``, e.g. a 404 as from
a gateway without it); ``GET /_evalkit/stats``, ``GET /_evalkit/requests`` (the recent request
bodies) and ``POST /_evalkit/reset`` expose the counters to other processes. ``/v1/files`` and
``/v1/batches`` serve OpenAI's Batch API, answering each line of a batch with the same chat
handler (see ``_batches.py``).

This module holds the server's shell: its settings, routes, counters and lifecycle. Chat
completions are answered in ``_completions.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import SocketAttribute

from evalkit.testing._batch_records import BatchErrorsIn, BatchOutcome
from evalkit.testing._batches import BatchService
from evalkit.testing._chat import UsageModel
from evalkit.testing._completions import CompletionService
from evalkit.testing._http import Handler, HttpServer, Request, Response
from evalkit.testing._profiles import ServerProfile, server_profile
from evalkit.testing._rules import RateLimitPolicy, Rule


@dataclass(frozen=True, slots=True)
class ServerStats:
    """Counters of a [`FakeOpenAIServer`][evalkit.testing.FakeOpenAIServer] since it started or was
    last reset.

    Attributes:
        requests: Chat completion requests received.
        completions: Requests answered with a completion (HTTP 200, well-formed).
        in_flight: Requests being handled right now.
        max_in_flight: The most requests handled at the same time.
        rate_limited: Requests refused with HTTP 429 by the server's ``rate_limit`` policy.
        faults: Requests (online, or lines of a batch) answered with an injected fault.
        files: Files uploaded to ``POST /v1/files``.
        batches: Batches created with ``POST /v1/batches``.
        batch_requests: Lines of batches answered by the chat handler.
        models: Requests to ``GET /v1/models`` (what a run's preflight check sends).
    """

    requests: int = 0
    completions: int = 0
    faults: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    rate_limited: int = 0
    files: int = 0
    batches: int = 0
    batch_requests: int = 0
    models: int = 0

    def to_dict(self) -> dict[str, int]:
        """The counters as a plain dict."""
        return asdict(self)


class FakeOpenAIServer:
    """An OpenAI-compatible chat completions server on a loopback socket.

    Use it as ``async with FakeOpenAIServer(...) as server:``; ``server.base_url`` is what an
    ``openai`` client (or a [`Judge`][evalkit.Judge]) takes as ``base_url``.

    Args:
        rules: [`Rule`][evalkit.testing.Rule] objects tried in order for each request; the first
            matching one scripts the reply or fault. Unmatched requests get a generated, valid
            reply.
        host: The interface to listen on (loopback by default).
        port: The port; 0 picks a free one (read it from ``server.port``).
        latency: Seconds to wait before each answer, like a model thinking.
        api_key: When set, requests must send ``Authorization: Bearer <api_key>`` (else 401).
        seed: Seed of the generator used by rules with a ``probability`` below 1.
        cache_ratio: Share of prompt tokens reported as ``cached_tokens``.
        reasoning_tokens: Reasoning tokens reported (and added to completion tokens) per reply.
        cost_per_token: When set, ``usage.cost`` is reported as total tokens times this,
            as OpenRouter and LiteLLM report an authoritative cost.
        history: How many request bodies [`requests`][evalkit.testing.FakeOpenAIServer.requests]
            (and arrival times [`arrivals`][evalkit.testing.FakeOpenAIServer.arrivals]) are kept
            (the most recent).
        rate_limit: A provider-like rate limit to enforce, with ``x-ratelimit-*`` headers on
            every response and 429s with ``Retry-After`` beyond it.
        batch_delay: Seconds from a batch's creation before it can complete (its lines are
            answered at once; it stays ``in_progress`` until then).
        batch_errors_in: Where a batch puts a request answered with an HTTP error:
            ``"error_file"`` (as OpenAI does) or ``"output_file"``, with its status code.
        batch_outcome: How batches created from now on end: ``"completed"``, ``"failed"``
            (at validation, with an ``errors`` list) or ``"expired"`` (no request answered,
            each one a ``batch_expired`` line of the error file). Settable as
            [`batch_outcome`][evalkit.testing.FakeOpenAIServer.batch_outcome].
        profile: Answer as this kind of server does: ``"openai"`` (the default),
            ``"llama-server"``, ``"llama-cpp-python"``, ``"vllm"``, ``"ollama"``, or a
            [`ServerProfile`][evalkit.testing.ServerProfile] (which response formats it takes, which
            length field it reads, its error, 401 and context-overflow bodies, its ``usage``).
    """

    def __init__(
        self,
        rules: Iterable[Rule] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        api_key: str | None = None,
        seed: int | None = None,
        cache_ratio: float = 0.0,
        reasoning_tokens: int = 0,
        cost_per_token: float | None = None,
        history: int = 1000,
        rate_limit: RateLimitPolicy | None = None,
        batch_delay: float = 0.0,
        batch_errors_in: BatchErrorsIn = "error_file",
        batch_outcome: BatchOutcome = "completed",
        profile: str | ServerProfile = "openai",
    ) -> None:
        self.profile = profile  # the setter takes a name too
        self.host = host
        self.latency = latency
        self.api_key = api_key
        self.usage = UsageModel(cache_ratio, reasoning_tokens, cost_per_token)
        self._port = port
        self._stack: AsyncExitStack | None = None
        self.rate_limit = rate_limit
        self._completions = CompletionService(
            tuple(rules), self, self._refuse, seed=seed, history=history
        )
        self._http = HttpServer()
        self._http.add_route("POST", "/v1/chat/completions", self._completions.handle)
        self._http.add_route("GET", "/v1/models", self._models)
        self._http.add_route("GET", "/_evalkit/stats", self._stats_route)
        self._http.add_route("POST", "/_evalkit/reset", self._reset_route)
        self._http.add_route("GET", "/_evalkit/requests", self._requests_route)
        self._batches = BatchService(
            self._completions.batch_line,
            self._refuse,
            delay=batch_delay,
            errors_in=batch_errors_in,
            outcome=batch_outcome,
        )
        for method, path, handler in self._batches.routes():
            self._http.add_route(method, path, handler)
        self.batch_outcome = batch_outcome  # validated by the setter
        if batch_errors_in not in ("error_file", "output_file"):
            raise ValueError(
                f"batch_errors_in must be 'error_file' or 'output_file', not {batch_errors_in!r}"
            )
        self.reset()

    # -- public surface -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port the server listens on (known once started)."""
        if self._stack is None and self._port == 0:
            raise RuntimeError("the server is not started; use `async with FakeOpenAIServer()`")
        return self._port

    @property
    def url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://host:port/v1``: the ``base_url`` for ``openai`` clients and judges."""
        return f"{self.url}/v1"

    @property
    def stats(self) -> ServerStats:
        """A snapshot of the counters."""
        completions = self._completions
        return ServerStats(
            completions.requests,
            completions.completions,
            completions.faults,
            completions.in_flight,
            completions.max_in_flight,
            completions.rate_limited,
            self._batches.files_uploaded,
            self._batches.batches_created,
            self._batches.lines_answered,
            self._models_listed,
        )

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the most recent chat completion requests (online, or lines of a
        batch as they are answered), oldest first."""
        return list(self._completions.history)

    @property
    def arrivals(self) -> list[float]:
        """When the most recent chat completion requests arrived (``time.monotonic()``; for a
        batch line, when it was answered)."""
        return list(self._completions.arrivals)

    @property
    def batches(self) -> list[dict[str, Any]]:
        """Every batch created, as ``GET /v1/batches/{id}`` shows it, oldest first."""
        return self._batches.batch_objects()

    @property
    def batch_outcome(self) -> BatchOutcome:
        """How batches created from now on end (``"completed"``, ``"failed"``, ``"expired"``)."""
        return self._batches.outcome

    @batch_outcome.setter
    def batch_outcome(self, outcome: BatchOutcome) -> None:
        if outcome not in ("completed", "failed", "expired"):
            raise ValueError(f"batch_outcome must be completed, failed or expired, not {outcome!r}")
        self._batches.outcome = outcome

    @property
    def batch_delay(self) -> float:
        """Seconds from a batch's creation before it can complete."""
        return self._batches.delay

    @batch_delay.setter
    def batch_delay(self, seconds: float) -> None:
        self._batches.delay = seconds

    @property
    def profile(self) -> ServerProfile:
        """Which server's answers this one imitates; settable to a profile or its name."""
        return self._profile

    @profile.setter
    def profile(self, profile: str | ServerProfile) -> None:
        self._profile = server_profile(profile)

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The rules in force, in the order they are tried."""
        return tuple(self._completions.rules)

    def add_rule(self, rule: Rule) -> None:
        """Append ``rule`` to the rules tried for each request."""
        self._completions.add_rule(rule)

    def add_route(self, method: str, path: str, handler: Handler) -> None:
        """Serve ``handler`` (an async function of a request) at ``method path``.

        ``{name}`` segments of ``path`` match any segment; the handler reads their values
        from ``request.params``.
        """
        self._http.add_route(method, path, handler)

    def reset(self) -> None:
        """Zero the counters, forget recorded requests and restore the constructor's rules.

        Uploaded files and batches are kept, so batches in progress still complete.
        """
        self._completions.reset(self.rate_limit)
        self._models_listed = 0
        self._batches.reset_counters()

    async def __aenter__(self) -> FakeOpenAIServer:
        stack = AsyncExitStack()
        listener = await anyio.create_tcp_listener(local_host=self.host, local_port=self._port)
        stack.push_async_callback(listener.aclose)
        self._port = listener.extra(SocketAttribute.local_port)
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)
        group.start_soon(listener.serve, self._http.serve_connection, group)
        self._batches.start(group.start_soon)
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    # -- handlers -----------------------------------------------------------------------------

    def _refuse(self, request: Request) -> Response | None:
        """A 401 response when the server wants a key and ``request`` lacks it, else None."""
        if (
            self.api_key is not None
            and self.profile.auth != "none"
            and request.headers.get("authorization") != f"Bearer {self.api_key}"
        ):
            return self.profile.unauthorized()
        return None

    async def _models(self, request: Request) -> Response:
        self._models_listed += 1
        if (refused := self._refuse(request)) is not None:
            return refused
        models = [{"id": "evalkit-fake", "object": "model", "created": 0, "owned_by": "evalkit"}]
        return Response.json({"object": "list", "data": models})

    async def _stats_route(self, request: Request) -> Response:
        return Response.json(self.stats.to_dict())

    async def _requests_route(self, request: Request) -> Response:
        return Response.json(self.requests)

    async def _reset_route(self, request: Request) -> Response:
        self.reset()
        return Response.json(self.stats.to_dict())
