"""What an error reply says about the request rather than the server: refusals and overflows.

Servers that speak "OpenAI-compatible" differ in what they take. A server that does not take
a request field says so with an error status whose body names the field — llama-cpp-python's
500 ``… 'loc': ('body', 'response_format', 'type'), 'msg': "Input should be 'text' or
'json_object'" …``, OpenAI's 400 ``Unsupported parameter: 'max_tokens' …`` (``param``
``max_tokens``), a gateway's 400 ``response_format … not supported``. Such an error is no
transient failure: sending it again gets the same answer. `refused_field` finds the
field, so the call policy does not retry it and the judge sends the request without it
(``evalkit/judge/_formats.py``). `context_overflow` finds a prompt too long for the
model's context (llama.cpp's ``exceed_context_size_error``, OpenAI's and vLLM's
``context_length_exceeded``), which no retry and no fallback can fix either.

Why detection reads the body and not only the status: docs/pages/design/format-refusals.md.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

if TYPE_CHECKING:  # openai loads with the first client: a judge-less run never imports it
    import openai

RefusedField = Literal["response_format", "max_tokens", "max_completion_tokens"]

# Statuses that say something else first: the key, the route, the pace, or a gateway's trouble.
_NOT_REFUSALS = frozenset({401, 403, 404, 408, 409, 429, 502, 503, 504})
_LENGTH_FIELDS: tuple[RefusedField, ...] = ("max_completion_tokens", "max_tokens")
_UNSUPPORTED = re.compile(
    r"unsupported|not supported|not permitted|unrecognized|unknown (?:field|param)|"
    r"extra (?:inputs|fields)|not allowed|\binvalid\b|input should be|must be (?:one of|either)",
)
_FORMAT_WORDS = ("response_format", "response format", "json_schema", "structured output")
_SCHEMA_WORD = re.compile(r"(?<!json_)\bschema\b|'schema'|\"schema\"")
_THIS_SCHEMA = re.compile(r"invalid (?:json )?schema|schema (?:is )?(?:invalid|not valid)")
_OVERFLOW_WORDS = (
    "exceed_context_size_error",
    "context_length_exceeded",
    "maximum context length",
    "exceeds the available context size",
    "context window",
)


def refused_field(error: BaseException) -> RefusedField | None:
    """The request field the server refused in ``error`` (or what it was raised from).

    ``"response_format"`` when an error status's body speaks of the response format (its type,
    ``json_schema``, structured output) being unsupported or invalid; ``"max_tokens"`` or
    ``"max_completion_tokens"`` when it names that field as unsupported. None for any other
    error, and for a context overflow (its message may name the completion's tokens).
    """
    status_error = _status_error(error)
    if status_error is None or status_error.status_code in _NOT_REFUSALS:
        return None
    text = _body_text(status_error)
    if any(word in text for word in _OVERFLOW_WORDS):
        return None
    param = status_error.param if isinstance(status_error.param, str) else None
    for name in _LENGTH_FIELDS:
        if param == name or f"unsupported parameter: '{name}'" in text:
            return name
    if param == "response_format" or (
        any(word in text for word in _FORMAT_WORDS) and _UNSUPPORTED.search(text)
    ):
        return "response_format"
    for name in _LENGTH_FIELDS:
        if re.search(rf"['\"`]?{name}['\"`]?[^.]{{0,40}}(?:{_UNSUPPORTED.pattern})", text):
            return name
    return None


def refusal_names_schema(error: BaseException) -> bool:
    """Whether an error refusing the response format names a ``schema`` field in it (not
    ``json_schema``): JSON mode may be taken without the schema."""
    status_error = _status_error(error)
    return status_error is not None and bool(_SCHEMA_WORD.search(_body_text(status_error)))


def refusal_of_the_schema(error: BaseException) -> bool:
    """Whether an error refusing ``json_schema`` refuses this one schema (OpenAI's "Invalid
    schema for response_format ..."), not the format: worth a fallback, not remembering."""
    status_error = _status_error(error)
    return status_error is not None and bool(_THIS_SCHEMA.search(_body_text(status_error)))


def context_overflow(error: BaseException) -> str | None:
    """What the server said of a prompt too long for the model's context, with the token
    counts it gave (llama.cpp's ``n_prompt_tokens`` and ``n_ctx``), or None."""
    status_error = _status_error(error)
    if status_error is None or status_error.status_code in _NOT_REFUSALS:
        return None
    text = _body_text(status_error)
    if not any(word in text for word in _OVERFLOW_WORDS):
        return None
    body = status_error.body
    message = body.get("message") if isinstance(body, Mapping) else None
    said = message if isinstance(message, str) else status_error.message
    counts = []
    if isinstance(body, Mapping):
        for field, what in (("n_prompt_tokens", "prompt"), ("n_ctx", "context")):
            value = body.get(field)
            if isinstance(value, int) and str(value) not in said:
                counts.append(f"{what} {value} tokens")
    return f"{said} ({', '.join(counts)})" if counts else said


def _status_error(error: BaseException) -> openai.APIStatusError | None:
    module = sys.modules.get("openai")
    if module is None:  # never imported: no openai error
        return None
    seen: BaseException | None = error
    depth = 0
    while seen is not None and depth < 8:
        if isinstance(seen, module.APIStatusError):
            return cast("openai.APIStatusError", seen)
        seen = seen.__cause__
        depth += 1
    return None


def _body_text(error: openai.APIStatusError) -> str:
    body: Any = error.body
    try:
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    except (TypeError, ValueError):
        text = str(body)
    if body is None:
        text = error.message
    return text.lower()
