"""``Reply``: the parts of a chat completion a judge reads, from a decoded reply body."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalkit.errors import JudgeError
from evalkit.judge._records import JudgeUsage
from evalkit.judge._usage import normalize_usage, reported_cost

if TYPE_CHECKING:
    import httpx2

    from evalkit.judge.transport._http import RawReply


@dataclass(frozen=True, slots=True)
class Reply:
    """The parts of a chat completion a judge reads."""

    content: str | None
    refusal: str | None
    finish_reason: str | None
    usage: JudgeUsage | None
    cost: float | None


def read_reply(response: RawReply | httpx2.Response, label: str) -> Reply:
    """The `Reply` in a 2xx response of either send path.

    Raises:
        JudgeError: The body is not JSON, or not a chat completion (code ``"bad_response"``).
    """
    try:
        data = response.json()
    except ValueError as exc:  # the body said JSON but was not
        raise JudgeError(
            f"{label}: the response body is not valid JSON ({exc})", code="bad_response"
        ) from exc
    return parse_reply(data, label)


def parse_reply(data: Any, label: str) -> Reply:
    """The `Reply` in a decoded chat completion.

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
