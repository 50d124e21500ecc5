"""One chat completion over the ``openai`` client's lean documented path, errors translated once.

``client.post("/chat/completions", cast_to=object, ...)`` is the client's documented low-level
request method: it keeps auth, retries with back-off, timeouts and error classes, but returns the
decoded JSON instead of building a pydantic ``ChatCompletion`` — the model-building is most of
the client's per-call CPU cost, and a judge reads four fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import openai
from openai import AsyncOpenAI

from evalkit.errors import JudgeError
from evalkit.judge._records import JudgeUsage
from evalkit.judge._usage import normalize_usage, reported_cost


@dataclass(frozen=True, slots=True)
class Reply:
    """The parts of a chat completion a judge reads."""

    content: str | None
    refusal: str | None
    finish_reason: str | None
    usage: JudgeUsage | None
    cost: float | None


async def chat_completion(
    client: AsyncOpenAI, body: dict[str, Any], *, timeout: float, max_retries: int, label: str
) -> Reply:
    """POST ``body`` to ``/chat/completions`` and read the reply.

    Raises:
        JudgeError: The call failed (``code`` is the HTTP status, ``"timeout"``,
            ``"connection"`` or ``"bad_response"``), chained from the ``openai`` error.
    """
    options: Any = {"timeout": timeout, "max_retries": max_retries}
    try:
        data = await client.post("/chat/completions", cast_to=object, body=body, options=options)
    except openai.APIStatusError as exc:
        raise JudgeError(
            f"{label}: HTTP {exc.status_code} {_error_message(exc)}", code=str(exc.status_code)
        ) from exc
    except openai.APITimeoutError as exc:
        if _dropped(exc):
            raise JudgeError(
                f"{label}: the server closed the connection", code="connection"
            ) from exc
        raise JudgeError(
            f"{label}: no reply within the {timeout:g} s timeout "
            f"({max_retries} retr{'y' if max_retries == 1 else 'ies'} allowed)",
            code="timeout",
        ) from exc
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        raise JudgeError(f"{label}: connection failed: {cause}", code="connection") from exc
    except openai.OpenAIError as exc:
        raise JudgeError(f"{label}: {type(exc).__name__}: {exc}") from exc
    except ValueError as exc:  # the body said JSON but was not
        raise JudgeError(
            f"{label}: the response body is not valid JSON ({exc})", code="bad_response"
        ) from exc
    return parse_reply(data, label)


def _dropped(exc: BaseException) -> bool:
    """Whether a "timeout" was really a dropped connection.

    The ``aiohttp`` transport maps every ``ClientConnectionError``, including a server closing
    the connection, to ``httpx.ConnectTimeout``; the root cause tells them apart.
    """
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, TimeoutError):
            return False
        if isinstance(cause, (aiohttp.ClientConnectionError, ConnectionError)):
            return True
        cause = cause.__cause__
    return False


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return str(body["message"])
    return exc.message


def parse_reply(data: Any, label: str) -> Reply:
    """The :class:`Reply` in a decoded chat completion.

    Raises:
        JudgeError: ``data`` is not a chat completion (code ``"bad_response"``).
    """
    try:
        choice = data["choices"][0]
        message = choice["message"]
        if not isinstance(message, Mapping):
            raise TypeError("message is not an object")
    except (KeyError, IndexError, TypeError) as exc:
        shown = repr(data)
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        raise JudgeError(
            f"{label}: the response is not a chat completion: {shown}", code="bad_response"
        ) from exc
    content = message.get("content")
    if isinstance(content, list):  # content parts, as some compatible servers send
        content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    refusal = message.get("refusal")
    finish_reason = choice.get("finish_reason")
    usage = data.get("usage")
    return Reply(
        content=content if isinstance(content, str) else None,
        refusal=refusal if isinstance(refusal, str) and refusal else None,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=normalize_usage(usage),
        cost=reported_cost(usage),
    )
