"""How a structured step asks for JSON, and what each endpoint has been seen to take.

Four request shapes, tried in this order (the *ladder*):

0. ``response_format`` ``json_schema`` (native structured output; the prompt as written);
1. JSON mode carrying the schema, ``{"type": "json_object", "schema": ...}``, which both
   llama.cpp servers turn into a grammar (the prompt gets the schema written in too);
2. bare JSON mode, ``{"type": "json_object"}`` (schema in the prompt);
3. no ``response_format`` at all: the schema in the prompt, the JSON taken out of the reply
   (a fenced block, or the outermost ``{...}``).

With ``structured_output="auto"`` a call starts at the step its endpoint and model are known
to take (0 for one never refused). A *format refusal* — an error status whose body says the
response format is not supported (``transport/_refusals.py``) — moves it one step down at once
(from step 1 straight to step 3 unless the refusal names the ``schema`` field), without
retrying the refused request, and is remembered for the process (`MEMORY`), so later
calls start there. The memory is read as each request is sent, not when the call began: calls
queued in the limiter behind the first refusal go straight to the step that works. A refusal
of one schema (OpenAI's "Invalid schema for response_format") moves that call only. Step 1 is
skipped at OpenAI's and Azure's own endpoints, which take no ``schema`` in JSON mode. A
*format failure* (a reply that is not the JSON asked for) gets one more attempt, one step down
(the JSON-mode fallback of SPEC §1). A pinned mode starts at its step and is never moved by a
refusal (except JSON mode dropping a ``schema`` the server refuses). The same memory holds the
length fields (``max_tokens``, ``max_completion_tokens``) an endpoint refused, which
`PreparedRequest.body` leaves out.

Why: docs/pages/design/format-refusals.md.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from evalkit.judge._structured import JsonSpec, OutputSpec
from evalkit.judge.transport._refusals import (
    refusal_names_schema,
    refusal_of_the_schema,
    refused_field,
)

JSON_SCHEMA, SCHEMA_JSON_MODE, JSON_MODE, PROMPT = range(4)
_NAMES = ("json_schema", "json_object with the schema", "json_object", "the schema in the prompt")
#: Each step's name in an attempt's record (``JudgeAttempt.format``); a plain-text step's is
#: :data:`TEXT`.
FORMATS = ("json_schema", "json_object+schema", "json_object", "prompt")
TEXT = "text"
_PINNED = {"json_schema": JSON_SCHEMA, "json_object": SCHEMA_JSON_MODE, "prompt": PROMPT}
_FENCED = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL)
#: Most endpoint-and-model pairs remembered (the oldest is forgotten past this).
MEMORY_SIZE = 1024

MemoryKey = tuple[str, str]


class FormatMemory:
    """What each endpoint and model refused, for the whole process (any thread, any loop).

    Entries only ever move one way (a format step down, a length field dropped), so a plain
    lock around the writes is all the coordination needed; reads are single dict lookups.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._start: dict[MemoryKey, int] = {}
        self._dropped: dict[MemoryKey, frozenset[str]] = {}

    def start(self, key: MemoryKey) -> int:
        """The ladder step calls to ``key`` start at (0 unless a refusal was seen)."""
        return self._start.get(key, JSON_SCHEMA)

    def dropped(self, key: MemoryKey) -> frozenset[str]:
        """The length fields ``key`` refused."""
        return self._dropped.get(key, frozenset())

    def format_refused(self, key: MemoryKey, start: int) -> None:
        """``key`` refused a request shape: start at ``start`` (or below) from now on."""
        with self._lock:
            if self._start.get(key, JSON_SCHEMA) < start:
                _bounded(self._start)[key] = start

    def field_refused(self, key: MemoryKey, name: str) -> None:
        """``key`` refused the request field ``name``: leave it out from now on."""
        with self._lock:
            _bounded(self._dropped)[key] = self._dropped.get(key, frozenset()) | {name}

    def clear(self) -> None:
        """Forget everything (a server restarted with other settings)."""
        with self._lock:
            self._start.clear()
            self._dropped.clear()


def _bounded(table: dict[MemoryKey, Any]) -> dict[MemoryKey, Any]:
    while len(table) >= MEMORY_SIZE:
        del table[next(iter(table))]
    return table


#: The process's memory of refused formats and fields.
MEMORY = FormatMemory()


class AttemptPlan:
    """The attempts of one prompt step's call: which shape comes next, and how to read it.

    `next` says whether an attempt is left, `request` gives its prompt text and
    extra request fields as they are to be sent now (called again before each request of
    the attempt, it follows what the endpoint was learned to take meanwhile); `refused`
    and `failed_format` say how the last one ended.
    """

    __slots__ = (
        "_auto",
        "_fallback_used",
        "_key",
        "_new",
        "_official",
        "_pending",
        "_step",
        "parsed",
        "tried",
    )

    def __init__(self, spec: OutputSpec, *, key: MemoryKey, official: bool, mode: str) -> None:
        """``key``, ``official`` and ``mode`` are the request's `PreparedRequest.memory_key`
        and ``official`` and its judge's ``structured_output``."""
        self._key = key
        self._official = official
        self._auto = mode == "auto"
        self._fallback_used = False
        self._step: int | None = None
        self._new = False
        #: The reply text the last :meth:`parse` read (the JSON taken out of it).
        self.parsed: str | None = None
        if not isinstance(spec, JsonSpec):
            self._pending: int | None = -1  # plain text: one shape
        elif self._auto:
            self._pending = self._skip(MEMORY.start(self._key))
        else:
            self._pending = self._skip(_PINNED[mode])
        self.tried: list[str] = []

    def _skip(self, step: int) -> int:
        return JSON_MODE if step == SCHEMA_JSON_MODE and self._official else min(step, PROMPT)

    def next(self) -> bool:
        """Whether an attempt is left (then `request` gives it)."""
        step, self._pending = self._pending, None
        if step is None:
            return False
        self._step = step
        self._new = True
        return True

    def request(self, prompt: str, spec: OutputSpec) -> tuple[str, dict[str, Any]]:
        """The current attempt's ``(prompt text, extra request fields)`` as sent now.

        With ``"auto"``, a step the endpoint was learned to refuse since the attempt was
        planned (another call's refusal, seen while this one queued) is skipped.
        """
        step = self._step
        assert step is not None
        if step < 0:
            return prompt, spec.first
        assert isinstance(spec, JsonSpec)
        if self._auto:
            step = self._step = max(step, self._skip(MEMORY.start(self._key)))
        if self._new:
            self.tried.append(_NAMES[step])
            self._new = False
        else:
            self.tried[-1] = _NAMES[step]
        if step == JSON_SCHEMA:
            return prompt, spec.first
        text = prompt + spec.fallback_suffix
        if step == SCHEMA_JSON_MODE:
            return text, {"response_format": {"type": "json_object", "schema": spec.request_schema}}
        if step == JSON_MODE:
            return text, {"response_format": {"type": "json_object"}}
        return text, {}

    @property
    def format(self) -> str:
        """The current attempt's format, as its record names it (`FORMATS`, or
        `TEXT` for a plain-text step)."""
        step = self._step
        return TEXT if step is None or step < 0 else FORMATS[step]

    def refused(self, error: BaseException, body: dict[str, Any]) -> bool:
        """Whether ``error`` refused a field of ``body`` that can be dropped: then the refusal
        is remembered and `next` gives the request without it."""
        field = refused_field(error)
        if field is None or field not in body:
            return False
        if field != "response_format":
            other = "max_tokens" if field == "max_completion_tokens" else "max_completion_tokens"
            if other not in body:
                return False  # the cap would be lost: not a request to send
            MEMORY.field_refused(self._key, field)
            self._pending = self._step
            return True
        step = self._step
        if step is None or step < 0 or step >= PROMPT:
            return False
        schema_only = step == SCHEMA_JSON_MODE and refusal_names_schema(error)
        if not self._auto and not schema_only:
            return False  # a pinned mode: the refusal is the answer
        following = self._skip(step + 1)
        if step == SCHEMA_JSON_MODE and not schema_only:
            following = PROMPT  # JSON mode itself was refused: no bare JSON mode either
        if self._auto and not refusal_of_the_schema(error):
            MEMORY.format_refused(self._key, following)
        self._pending = following
        return True

    def failed_format(self) -> None:
        """The reply was not the format asked for: one more attempt, one step down."""
        step = self._step
        if self._fallback_used or step is None or step < 0:
            return
        self._fallback_used = True
        if step == JSON_SCHEMA or self._auto:
            self._pending = self._skip(step + 1)
        else:
            self._pending = step

    def parse(self, spec: OutputSpec, content: str) -> tuple[Any, Any]:
        """``spec.parse`` of the reply, the JSON first taken out of any surrounding text
        when the shape did not constrain it (raises ``FormatFailure``)."""
        step = self._step
        if step is not None and step > JSON_SCHEMA:
            content = extract_json(content)
        self.parsed = content
        return spec.parse(content)

    def describe(self) -> str:
        """The shapes tried, in order: ``"json_schema, then json_object"``."""
        return ", then ".join(self.tried)


def extract_json(content: str) -> str:
    """The JSON in a reply: the reply itself when it is JSON, else its last fenced block that
    is, else its outermost ``{...}``; the reply unchanged when none is found."""
    text = content.strip()
    if _is_json(text):
        return text
    for block in reversed(_FENCED.findall(text)):
        candidate = str(block).strip()
        if _is_json(candidate):
            return candidate
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end and _is_json(text[start : end + 1]):
        return text[start : end + 1]
    return content


def _is_json(text: str) -> bool:
    if not text or text[0] not in "{[":
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
