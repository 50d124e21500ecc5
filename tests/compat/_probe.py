"""Raw probes of a model server with the plain ``openai`` client, no evalkit in between.

Each probe asks one question of the server (does it take ``json_schema``? does it honour
``max_tokens``?) and returns a small JSON-ready dict of what it saw: the HTTP status, a short
excerpt of an error body, whether the reply was JSON matching the schema. These are the
figures of the compatibility table (tests/compat/table.py renders them).
"""

from __future__ import annotations

import json
from typing import Any

import openai
from openai.types.chat import ChatCompletionMessageParam

EXCERPT = 300
# No free-text field: a small model constrained to the schema writes a short reply, where a
# "reason" string ran on to the token cap (measured), leaving JSON cut mid-string.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "number"}},
    "required": ["score"],
    "additionalProperties": False,
}
# The structured-output probes ask for something other than JSON: JSON matching the schema
# comes back only if the server constrained the output to it.
UNCONSTRAINED_PROMPT = "Write one short sentence about the sea."
SCHEMA_PROMPT = (
    "Rate from 0 to 1 how well the answer fits the question.\nQuestion: What is 2 + 2?\n"
    "Answer: 4\nReply with only a JSON object matching this JSON Schema:\n" + json.dumps(SCHEMA)
)
LONG_REPLY_PROMPT = "Count from 1 to 40, one number per line."
LENGTH_CAP = 8
BACKSTOP = 5 * LENGTH_CAP
# With a system message: llama-cpp-python's fallback chat format answered a lone user message
# with no token at all (measured), which says nothing about a length cap.
SYSTEM_PROMPT = "You are a helpful assistant."
TOKENS_PER_WORD = 1  # "word " repeated: about one token each for Gemma's tokenizer


def excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def _matches(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"score"}
        and isinstance(value["score"], int | float)
        and not isinstance(value["score"], bool)
    )


def _error(exc: openai.APIError) -> dict[str, Any]:
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "response", None)
    text = body.text if body is not None else str(exc)
    return {"status": status, "error": excerpt(text)}


def _structured(client: openai.OpenAI, model: str, **request: Any) -> dict[str, Any]:
    try:
        reply = client.chat.completions.create(model=model, temperature=0, max_tokens=96, **request)
    except openai.APIStatusError as exc:
        return {"accepted": False, **_error(exc)}
    content = reply.choices[0].message.content or ""
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    return {
        "accepted": True,
        "status": 200,
        "json": value is not None,
        "matches_schema": _matches(value),
        "finish_reason": reply.choices[0].finish_reason,
        "reply": excerpt(content),
    }


def probe_structured_output(client: openai.OpenAI, model: str) -> dict[str, Any]:
    """The three ways evalkit can ask for JSON: ``json_schema``, ``json_object`` with the
    schema beside it (llama.cpp's servers and vLLM constrain to it), and the schema written into
    the prompt (no ``response_format``)."""
    ask = [{"role": "user", "content": UNCONSTRAINED_PROMPT}]
    return {
        "json_schema": _structured(
            client,
            model,
            messages=ask,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True},
            },
        ),
        "json_object_schema": _structured(
            client,
            model,
            messages=ask,
            response_format={"type": "json_object", "schema": SCHEMA},
        ),
        "json_object": _structured(
            client, model, messages=ask, response_format={"type": "json_object"}
        ),
        "prompt": _structured(client, model, messages=[{"role": "user", "content": SCHEMA_PROMPT}]),
    }


def _ask(text: str) -> list[ChatCompletionMessageParam]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": text},
    ]


def _length(client: openai.OpenAI, model: str, field: str) -> dict[str, Any]:
    cap = {field: LENGTH_CAP}
    if field != "max_tokens":
        # A backstop the probe can tell apart: a server ignoring the field stops at 5x the cap
        # instead of running on to the end of its context (which llama-cpp-python did).
        cap["max_tokens"] = BACKSTOP
    try:
        reply = client.chat.completions.create(
            model=model, temperature=0, messages=_ask(LONG_REPLY_PROMPT), extra_body=cap
        )
    except openai.APIStatusError as exc:
        return {"honoured": False, **_error(exc)}
    tokens = reply.usage.completion_tokens if reply.usage else None
    finish = reply.choices[0].finish_reason
    if tokens is not None and tokens < LENGTH_CAP and finish != "length":
        return {"honoured": None, "completion_tokens": tokens, "finish_reason": finish}
    return {
        "honoured": tokens is not None and tokens <= LENGTH_CAP,
        "completion_tokens": tokens,
        "finish_reason": reply.choices[0].finish_reason,
    }


def probe_length_fields(client: openai.OpenAI, model: str) -> dict[str, Any]:
    """Whether a cap of 8 tokens is honoured when sent as ``max_tokens`` and as
    ``max_completion_tokens`` (the reply asked for is about 80 tokens long; ``honoured`` is
    None when the model stopped on its own before the cap, which proves nothing)."""
    return {
        "max_tokens": _length(client, model, "max_tokens"),
        "max_completion_tokens": _length(client, model, "max_completion_tokens"),
    }


def probe_usage(client: openai.OpenAI, model: str) -> dict[str, Any]:
    """Which usage fields a reply carries, and the reply's fields beyond OpenAI's."""
    reply = client.chat.completions.create(
        model=model,
        temperature=0,
        max_tokens=16,
        messages=_ask("Say hello to the reader of this page."),
    )
    usage = reply.usage.model_dump(exclude_none=True) if reply.usage else {}
    standard = {"id", "choices", "created", "model", "object", "usage", "system_fingerprint"}
    standard |= {"service_tier"}
    extra = sorted(set(reply.model_dump(exclude_none=True)) - standard)
    return {
        "fields": sorted(usage),
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "total_tokens": usage.get("total_tokens"),
        "cached_tokens": "prompt_tokens_details" in usage
        and "cached_tokens" in usage["prompt_tokens_details"],
        "extra_reply_fields": extra,
        "finish_reason": reply.choices[0].finish_reason,
    }


def probe_errors(base_url: str, model: str, api_key: str, context: int) -> dict[str, Any]:
    """The status and body of a wrong API key, and of a prompt longer than the context."""
    out: dict[str, Any] = {}
    wrong = openai.OpenAI(base_url=base_url, api_key="not-the-key", max_retries=0, timeout=60)
    try:
        wrong.chat.completions.create(
            model=model, max_tokens=4, messages=[{"role": "user", "content": "Hi."}]
        )
        out["unauthorized"] = {"status": 200, "error": "accepted a wrong key"}
    except openai.APIStatusError as exc:
        out["unauthorized"] = {**_error(exc), "openai_shape": _openai_shape(exc)}
    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=300)
    words = 2 * context // TOKENS_PER_WORD
    try:
        reply = client.chat.completions.create(
            model=model,
            max_tokens=4,
            messages=[{"role": "user", "content": "word " * words}],
        )
        out["context_overflow"] = {
            "status": 200,
            "error": f"accepted {words} words (finish_reason {reply.choices[0].finish_reason})",
        }
    except openai.APIStatusError as exc:
        out["context_overflow"] = {**_error(exc), "openai_shape": _openai_shape(exc)}
    return out


def _openai_shape(exc: openai.APIStatusError) -> bool:
    """Whether the error body is OpenAI's ``{"error": {"message": ...}}``."""
    try:
        body = exc.response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and isinstance(body.get("error"), dict)
