"""Transport errors as evalkit sees them: the ``openai`` package's exceptions, translated once.

Both send paths (the shared clients' direct ``aiohttp`` path and a user client's ``post``)
raise the ``openai`` package's exceptions; `translate_error` turns one into the
[`JudgeError`][evalkit.errors.JudgeError] a caller records (its ``code`` the HTTP status,
``"timeout"`` or ``"connection"``), masking any credential the request carried, and
`failed_to_connect` tells a connection never made from one dropped or too slow (what the
breaker's "unreachable" rule counts).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp
import httpx2
import openai
from openai import AsyncOpenAI

from evalkit._masking import mask_secrets
from evalkit.errors import JudgeError
from evalkit.judge.transport._refusals import context_overflow

# Request headers that carry the credential a provider might echo back in an error.
_SECRET_HEADERS = ("authorization", "api-key", "x-api-key", "x-goog-api-key")


def translate_error(
    error: openai.OpenAIError,
    label: str,
    timeout: float,
    retries: int,
    *,
    known: Iterable[str | None] = (),
) -> JudgeError:
    """``error`` as a [`JudgeError`][evalkit.errors.JudgeError] whose ``code`` is the HTTP status,
    ``"timeout"`` or ``"connection"``, chained from it; ``retries`` is how many retries were made.

    ``known`` are the credentials the caller sent (the client's ``api_key``): they are masked
    even when the error's request no longer carries them (recent ``openai`` releases strip the
    ``Authorization`` header from the request an error keeps).
    """
    translated = _translated(error, label, timeout, retries)
    # A provider may echo the key it refused, and an endpoint URL may carry credentials
    # (docs/pages/design/masking-at-the-boundary.md).
    masked = mask_secrets(str(translated), [*known, *_sent_secrets(error)])
    if masked != str(translated):
        translated = JudgeError(masked, code=translated.code)
    translated.__cause__ = error
    return translated


def _sent_secrets(error: openai.OpenAIError) -> list[str]:
    """The credentials the failed request sent (a Bearer token, an ``api-key`` header)."""
    try:
        headers = error.request.headers  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # no request (httpx raises RuntimeError)
        return []
    found = []
    for name in _SECRET_HEADERS:
        value = headers.get(name)
        if value:
            found.append(value.split(" ", 1)[1] if value.lower().startswith("bearer ") else value)
    return found


def request_of(client: AsyncOpenAI) -> httpx2.Request:
    """A request object for an error raised before the client made one (the deadline)."""
    return httpx2.Request("POST", f"{str(client.base_url).rstrip('/')}/chat/completions")


def _translated(error: openai.OpenAIError, label: str, timeout: float, retries: int) -> JudgeError:
    if isinstance(error, openai.APIStatusError):
        code = str(error.status_code)
        overflow = context_overflow(error)
        if overflow is not None:
            return JudgeError(
                f"{label}: HTTP {code}: the prompt does not fit the model's context (not "
                f"retried; shorten the input or raise the server's context size): {overflow}",
                code=code,
            )
        message = server_message(error)
        if error.status_code in (401, 403):
            message = f"the endpoint refused the API key: {message}"
        return JudgeError(f"{label}: HTTP {code} {message}", code=code)
    if _dropped(error):
        return JudgeError(f"{label}: the server closed the connection", code="connection")
    if isinstance(error, openai.APITimeoutError):
        return JudgeError(
            f"{label}: no reply within the {timeout:g} s timeout "
            f"({retries} retr{'y' if retries == 1 else 'ies'} made)",
            code="timeout",
        )
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__ or error
        return JudgeError(f"{label}: connection failed: {cause}", code="connection")
    return JudgeError(f"{label}: {type(error).__name__}: {error}")


def _dropped(exc: BaseException) -> bool:
    """Whether a connection error or "timeout" was really a connection the server dropped.

    The official ``aiohttp`` transport maps every ``ClientConnectionError``, including a server
    closing the connection, to ``httpx.ConnectTimeout``; the root cause tells them apart (a
    refused connection is not a dropped one).
    """
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, (TimeoutError, aiohttp.ClientConnectorError, ConnectionRefusedError)):
            return False
        if isinstance(cause, (aiohttp.ClientConnectionError, ConnectionError)):
            return True
        cause = cause.__cause__
    return False


# Root causes meaning no server is there at all (the endpoint is down or misnamed). A connect
# that timed out is not one: a loaded machine opening a hundred connections at once sees a few,
# and five of them at a run's start would stop a healthy judge. The preflight, with its own
# timeout, finds an endpoint that never answers.
_NOT_CONNECTED = (
    ConnectionRefusedError,
    socket.gaierror,
    aiohttp.ClientConnectorError,
    httpx2.ConnectError,
)


def failed_to_connect(exc: BaseException) -> bool:
    """Whether a connection error means no server is there (refused, unknown host), as opposed
    to a connection dropped, a connect that was slow, or a reply too slow."""
    if _dropped(exc):
        return False
    cause = exc.__cause__
    depth = 0
    while cause is not None and depth < 8:
        if isinstance(cause, _NOT_CONNECTED):
            return True
        cause = cause.__cause__
        depth += 1
    return False


def server_message(exc: openai.APIStatusError) -> str:
    """What the server said in an error reply: OpenAI's ``error.message``, FastAPI's
    ``detail`` (llama-cpp-python and other Python servers), or a bare ``{"error": "..."}``
    string; else the client's text."""
    body = exc.body
    if isinstance(body, str) and body.strip():
        return body
    if not isinstance(body, Mapping):
        return exc.message
    for name in ("message", "detail"):
        value = body.get(name)
        if isinstance(value, str) and value.strip():
            return value
    detail = body.get("detail")
    if isinstance(detail, list) and detail:  # FastAPI validation errors
        return "; ".join(_validation_error(item) for item in detail[:3])
    return exc.message


def _validation_error(item: Any) -> str:
    if not isinstance(item, Mapping):
        return str(item)
    where = ".".join(str(part) for part in item.get("loc", ()) if part != "body")
    return f"{where}: {item.get('msg', '')}" if where else str(item.get("msg", item))
