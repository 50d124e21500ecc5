"""The shared clients' direct path for chat completions: one ``aiohttp`` session, fixed headers.

Why it exists: measured on two cores against the local server (64 calls in flight), the
official client's ``post`` spends about 0.45 ms of CPU per call around the ``aiohttp``
transport it uses anyway — request options, merged headers, URL objects, an ``httpx`` request
and response — against about 0.2 ms for the ``aiohttp`` request itself. At a thousand judge
calls a second that difference is half a core. A client evalkit builds itself
([`shared_openai_client`][evalkit.judge.shared_openai_client]) has a fixed base URL, key and
headers, so all of that can be computed once: this module sends the same request (the URL, the
client's own ``default_headers`` and ``auth_headers``, the JSON body) straight through ``aiohttp``.

Errors keep the official path's shape: a non-2xx reply is raised as the ``openai`` package's
own exception (built by the client from the response, so ``RateLimitError``,
``AuthenticationError`` ... with the same ``body``/``code``), a timeout as ``APITimeoutError``
and a dropped or refused connection as ``APIConnectionError``, chained from the ``aiohttp``
error. The caller's retries, limiter, breaker and messages therefore do not know which path
sent the request. A client the user passes (``client=``) always takes the official path: it
may carry its own auth, query parameters or transport. The figures and what was tried first:
docs/pages/design/direct-aiohttp-path.md.
"""

from __future__ import annotations

import json
import ssl
import urllib.parse
import urllib.request
from typing import Any

import aiohttp
import httpx2
import openai
from openai import AsyncOpenAI

from evalkit.judge.transport._body import DEFAULT_MAX_REPLY_BYTES, ReplyTooLarge, read_capped

# The parts a body is read in.
_PART = 64 * 1024


class RawReply:
    """A 2xx reply: its headers (case-insensitive ``get``) and its body, decoded on demand."""

    __slots__ = ("body", "headers")

    def __init__(self, headers: Any, body: bytes) -> None:
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        """The body decoded as JSON (raises ``ValueError`` when it is not)."""
        return json.loads(self.body)


class ChatTransport:
    """``POST {base_url}/chat/completions`` for one shared client, on the running event loop.

    The session is created at the first request (in the loop that sends) and closed by
    `aclose`, which the shared-client registry calls when the loop shuts down.
    """

    def __init__(self, client: AsyncOpenAI) -> None:
        self._client = client
        self.url = f"{str(client.base_url).rstrip('/')}/chat/completions"
        self._headers: dict[str, str] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._proxy: str | None = None
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}

    async def post(
        self, body: dict[str, Any], *, timeout: float, max_bytes: int = DEFAULT_MAX_REPLY_BYTES
    ) -> RawReply:
        """Send ``body``; return a 2xx reply or raise as the official client would.

        The body is read as it arrives, up to ``max_bytes`` (``_body.py``): an error reply's
        is cut there.

        Raises:
            openai.APIStatusError: The server answered with an error status (the subclass
                the client picks for it).
            openai.APITimeoutError: No answer within ``timeout`` (connect or read).
            openai.APIConnectionError: The connection failed or was dropped.
            ReplyTooLarge: A 2xx reply's body is larger than ``max_bytes``.
        """
        session = self._session or self._open()
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        try:
            async with session.post(
                self.url,
                data=data,
                headers=self._headers,
                timeout=self._timeout(timeout),
                allow_redirects=False,
                proxy=self._proxy,
            ) as response:
                status = response.status
                headers = response.headers
                content, whole = await read_capped(
                    response.content.iter_chunked(_PART), max_bytes, response.content_length
                )
                if not whole:
                    response.close()  # the rest is never read: the connection is not reused
        except TimeoutError as exc:
            raise openai.APITimeoutError(request=self._request()) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise openai.APIConnectionError(request=self._request()) from exc
        if 200 <= status < 300:
            if not whole:
                raise ReplyTooLarge(max_bytes, response.content_length, content)
            return RawReply(headers, content)
        raise self._status_error(status, headers, content)

    async def aclose(self) -> None:
        """Close the session (a later request opens a new one)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def _open(self) -> aiohttp.ClientSession:
        # Computed in the loop: the client's headers name the async library in use.
        merged = {**self._client.default_headers, **self._client.auth_headers}
        self._headers = {name: value for name, value in merged.items() if isinstance(value, str)}
        # HTTP(S)_PROXY / NO_PROXY apply, as they do to the official client; resolved once
        # here, since aiohttp's trust_env resolves them again for every request (~0.4 ms).
        self._proxy = _env_proxy(self.url)
        # No pool limit of its own (the official transport's is 100): the judges' and targets'
        # max_concurrency and the run's concurrency bound the requests, and a judge given
        # max_concurrency=200 should get 200 connections, not a silent 100.
        connector = aiohttp.TCPConnector(limit=0, ssl=_ssl_context())
        self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    def _timeout(self, seconds: float) -> aiohttp.ClientTimeout:
        timeout = self._timeouts.get(seconds)
        if timeout is None:
            timeout = self._timeouts[seconds] = aiohttp.ClientTimeout(
                total=None, sock_connect=seconds, sock_read=seconds
            )
        return timeout

    def _request(self) -> httpx2.Request:
        # With the headers sent: error handling masks the credential they carry.
        return httpx2.Request("POST", self.url, headers=self._headers)

    def _status_error(self, status: int, headers: Any, content: bytes) -> openai.APIStatusError:
        response = httpx2.Response(
            status, headers=list(headers.items()), content=content, request=self._request()
        )
        # The client's own factory: the same exception class, message, body and code as on
        # the official path (it reads the body we just gave the response).
        return self._client._make_status_error_from_response(response)


def _env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (None when none applies or it is bypassed)."""
    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def _ssl_context() -> ssl.SSLContext:
    """Certificates as the official client verifies them: certifi's bundle when installed."""
    try:
        import certifi
    except ImportError:  # pragma: no cover - httpx depends on certifi
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())
