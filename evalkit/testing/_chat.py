"""Chat completion replies of the local server: content, usage and faults, shaped like OpenAI's."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from evalkit.testing._http import Response, error_body
from evalkit.testing._instances import instance_from_schema
from evalkit.testing._profiles import ServerProfile
from evalkit.testing._rules import Fault, Rule

_FENCED_JSON = re.compile(r"```(?:json)?\s*\n(.*?)\n```", re.DOTALL)
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_denied",
    404: "not_found_error",
    429: "rate_limit_exceeded",
}


@dataclass(frozen=True, slots=True)
class UsageModel:
    """How the server counts tokens: about four characters a token, like English text."""

    cache_ratio: float = 0.0
    reasoning_tokens: int = 0
    cost_per_token: float | None = None

    @staticmethod
    def prompt_tokens(messages: list[Any]) -> int:
        """The prompt's tokens: about four characters a token, plus a few per message."""
        prompt_chars = sum(len(_text(m.get("content"))) for m in messages if isinstance(m, dict))
        return prompt_chars // 4 + 4 * len(messages) + 3

    def usage(self, messages: list[Any], content: str) -> dict[str, Any]:
        prompt_tokens = self.prompt_tokens(messages)
        completion_tokens = max(1, len(content) // 4) + self.reasoning_tokens
        total = prompt_tokens + completion_tokens
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": total,
            "prompt_tokens_details": {
                "cached_tokens": int(prompt_tokens * self.cache_ratio),
                "audio_tokens": 0,
            },
            "completion_tokens_details": {
                "reasoning_tokens": self.reasoning_tokens,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        if self.cost_per_token is not None:
            usage["cost"] = round(total * self.cost_per_token, 12)
        return usage


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def conversation_text(messages: list[Any]) -> str:
    """All message texts joined by newlines: what [`Rule`][evalkit.testing.Rule] ``match``
    searches."""
    return "\n".join(_text(m.get("content")) for m in messages if isinstance(m, dict))


def response_format_kind(body: dict[str, Any]) -> str:
    """``"json_schema"``, ``"json_object"`` or ``"text"``: what the request asked for."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object"):
        return str(fmt["type"])
    return "text"


def generated_content(
    body: dict[str, Any], kind: str, text: str, *, json_mode_schema: bool = False
) -> str:
    """The content a well-behaved model would answer when no rule says otherwise.

    JSON mode follows a ``schema`` given in ``response_format`` when ``json_mode_schema``
    (llama.cpp's servers), else a JSON Schema written in the prompt in a fenced block; a
    plain-text request whose prompt holds such a schema is answered with an instance of it
    in a fenced block, after a sentence, as a model following the prompt would.
    """
    if kind == "json_schema":
        schema = body["response_format"].get("json_schema", {}).get("schema", {})
        return json.dumps(instance_from_schema(schema))
    if kind == "json_object":
        given = body["response_format"].get("schema")
        if json_mode_schema and isinstance(given, dict):
            return json.dumps(instance_from_schema(given))
        schema = _prompt_schema(text)
        return json.dumps(instance_from_schema(schema)) if schema is not None else "{}"
    schema = _prompt_schema(text)
    if schema is not None:
        instance = json.dumps(instance_from_schema(schema), indent=2)
        return f"Here is my answer:\n```json\n{instance}\n```"
    return f"This is a reply from the evalkit test server to a {len(text)}-character prompt."


def _prompt_schema(text: str) -> dict[str, Any] | None:
    """The last JSON Schema written in ``text`` in a fenced block, or None."""
    for block in reversed(_FENCED_JSON.findall(text)):
        try:
            schema = json.loads(block)
        except ValueError:
            continue
        if isinstance(schema, dict) and ("type" in schema or "properties" in schema):
            return schema
    return None


def rule_content(rule: Rule, body: dict[str, Any]) -> str | None:
    """The content a rule scripts, or None when it scripts none."""
    reply = rule.reply
    if callable(reply):
        reply = reply(body)
    if reply is None or isinstance(reply, str):
        return reply
    return json.dumps(reply)


def completion(
    body: dict[str, Any],
    content: str | None,
    *,
    number: int,
    usage: UsageModel,
    refusal: str | None = None,
    finish_reason: str = "stop",
    profile: ServerProfile | None = None,
    usage_override: Mapping[str, Any] | None = None,
) -> Response:
    """A ``chat.completion`` response for ``body`` (as ``profile``'s server sends it).

    ``usage_override`` (a rule's ``usage``) replaces the computed ``usage``'s entries, sent as
    given, so a test can script a provider's odd counts.
    """
    messages = body.get("messages", [])
    computed = usage.usage(messages, content or refusal or "")
    if usage_override is not None:
        computed = override_usage(computed, usage_override)
    payload = {
        "id": f"chatcmpl-evalkit-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "refusal": refusal,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": computed,
        "service_tier": "default",
        "system_fingerprint": "fp_evalkit",
    }
    if profile is not None and profile.name != "openai":
        payload = profile.shape(payload, body)
    return Response.json(payload, headers=[("x-request-id", f"req-evalkit-{number}")])


def override_usage(usage: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``usage`` with ``override``'s entries in place of its own; a dict in both (such as
    ``completion_tokens_details``) is merged one level down."""
    out = dict(usage)
    for key, value in override.items():
        own = out.get(key)
        if isinstance(value, Mapping) and isinstance(own, dict):
            out[key] = {**own, **value}
        else:
            out[key] = value
    return out


def retry_after_headers(seconds: float) -> list[tuple[str, str]]:
    """``Retry-After`` and ``retry-after-ms``, as OpenAI sends them."""
    return [("retry-after", f"{seconds:g}"), ("retry-after-ms", f"{seconds * 1000:g}")]


async def fault_response(fault: Fault) -> Response:
    """The response (or dropped connection) a fault produces."""
    if fault.kind == "http":
        message = fault.message or f"The test server injected an HTTP {fault.status} error"
        kind = _ERROR_TYPES.get(fault.status, "server_error")
        code = fault.code or ("rate_limit_exceeded" if fault.status == 429 else None)
        response = Response.json(error_body(message, kind, code), fault.status)
        if fault.retry_after is not None:
            response.headers.extend(retry_after_headers(fault.retry_after))
        response.headers.extend(fault.headers)
        return response
    if fault.kind == "huge_body":
        return _huge(fault)
    if fault.kind == "cut_body":
        start = b'{"id": "chatcmpl-evalkit", "choices": [{"message": {"con'
        return Response(200, parts=[start], length=len(start) + 4096, close=True)
    if fault.kind == "malformed_body":
        return Response(200, b'{"id": "chatcmpl-evalkit", "choices": [{"message": {"con')
    if fault.kind == "hang":
        if fault.seconds is None:
            await anyio.sleep_forever()
        await anyio.sleep(fault.seconds or 0)
    return Response(abort=True)


_PART = 64 * 1024


def _huge(fault: Fault) -> Response:
    """A body of ``fault.size`` bytes of text inside a completion (or an error), in parts."""
    if 200 <= fault.status < 300:
        head = b'{"id":"chatcmpl-evalkit-huge","object":"chat.completion","choices":[{"index":0,'
        head += b'"message":{"role":"assistant","content":"'
        tail = b'"},"finish_reason":"stop"}]}'
    else:
        head = b'{"error":{"type":"server_error","code":null,"message":"'
        tail = b'"}}'

    def parts() -> Iterator[bytes]:
        yield head
        left = fault.size
        filler = b"a" * _PART
        while left > 0:
            yield filler[: min(left, _PART)]
            left -= _PART
        yield tail

    length = len(head) + fault.size + len(tail) if fault.content_length else None
    return Response(fault.status, parts=parts(), length=length)
