"""Scripted behaviour of the local server: which reply (or fault) a request gets."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

FaultKind = Literal["http", "malformed_body", "hang", "disconnect", "huge_body", "cut_body"]
ResponseFormatKind = Literal["json_schema", "json_object", "text"]


@dataclass(frozen=True, slots=True)
class Fault:
    """A failure the server injects instead of a normal completion.

    Build one with the class methods: [`http`][evalkit.testing.Fault.http],
    [`rate_limit`][evalkit.testing.Fault.rate_limit],
    [`malformed_body`][evalkit.testing.Fault.malformed_body], [`hang`][evalkit.testing.Fault.hang],
    [`disconnect`][evalkit.testing.Fault.disconnect] and
    [`huge_body`][evalkit.testing.Fault.huge_body].
    """

    kind: FaultKind
    status: int = 500
    message: str = ""
    retry_after: float | None = None
    seconds: float | None = None
    headers: tuple[tuple[str, str], ...] = ()
    code: str | None = None
    size: int = 0
    content_length: bool = False

    @classmethod
    def http(
        cls,
        status: int = 500,
        message: str = "",
        *,
        retry_after: float | None = None,
        headers: Mapping[str, str] | None = None,
        code: str | None = None,
    ) -> Fault:
        """Answer with HTTP ``status`` and an OpenAI-shaped error body.

        Args:
            status: The HTTP status, e.g. 500, 503, 400.
            message: The error message; a default naming the status when empty.
            retry_after: Seconds to send in a ``Retry-After`` header, if any.
            headers: More response headers, e.g. ``{"x-ratelimit-reset-requests": "250ms"}``.
            code: The body's ``error.code`` (for a 429, ``"rate_limit_exceeded"`` by default;
                ``"insufficient_quota"`` says the quota is spent).
        """
        return cls(
            "http",
            status=status,
            message=message,
            retry_after=retry_after,
            headers=tuple((headers or {}).items()),
            code=code,
        )

    @classmethod
    def rate_limit(
        cls, retry_after: float | None = 1.0, *, headers: Mapping[str, str] | None = None
    ) -> Fault:
        """Answer HTTP 429 with ``Retry-After: retry_after`` (seconds, may be fractional;
        None sends no ``Retry-After``) and any extra ``headers``."""
        return cls.http(429, "Rate limit reached", retry_after=retry_after, headers=headers)

    @classmethod
    def malformed_body(cls) -> Fault:
        """Answer HTTP 200 whose body is truncated, invalid JSON."""
        return cls("malformed_body")

    @classmethod
    def hang(cls, seconds: float | None = None) -> Fault:
        """Never answer: wait ``seconds`` (forever when None) and drop the connection."""
        return cls("hang", seconds=seconds)

    @classmethod
    def disconnect(cls) -> Fault:
        """Close the connection without answering."""
        return cls("disconnect")

    @classmethod
    def cut_body(cls) -> Fault:
        """Answer HTTP 200 with a ``Content-Length``, send the start of the body and close the
        connection: a connection lost while the reply is read."""
        return cls("cut_body")

    @classmethod
    def huge_body(
        cls, size: int = 10_000_000, *, status: int = 200, content_length: bool = False
    ) -> Fault:
        """Answer with a body of about ``size`` bytes: for a 2xx ``status`` a chat completion
        whose content is ``size`` bytes of text, else an OpenAI-shaped error whose message is.

        The body is sent as it is made, in 64 KiB parts (the server never holds it whole):
        in chunks without a length (``Transfer-Encoding: chunked``, as a proxy relaying a
        runaway reply sends it), or with its ``Content-Length`` when ``content_length``.
        """
        return cls("huge_body", status=status, size=size, content_length=content_length)


Reply = str | dict[str, Any] | list[Any] | Callable[[dict[str, Any]], Any]


@dataclass(frozen=True, slots=True, eq=False)
class Rule:
    """How the server answers the chat completion requests this rule matches.

    Rules are tried in order; the first that matches answers. A request no rule matches gets
    a generated reply: a valid instance of the requested JSON Schema, a JSON object in JSON mode
    (built from the ``schema`` in ``response_format`` where the server's profile honours it,
    else from a schema written in the prompt, if any), or a short text (an instance of a schema
    written in the prompt, in a fenced block after a sentence, when there is one).

    Attributes:
        match: A substring, or a compiled regex searched, in the text of all the request's
            messages (system and user). None matches every request.
        reply: The assistant message content: text as is (even when JSON was asked for, so a
            malformed reply is just ``reply="not json"``), a dict or list sent as JSON, or a
            callable taking the request body (a dict) and returning either.
        refusal: Answer with this refusal (``message.refusal``) and no content.
        finish_reason: The choice's ``finish_reason``.
        fault: Inject this failure instead of answering.
        response_format: Match only requests asking for this format (``"json_schema"``,
            ``"json_object"`` or ``"text"``).
        times: Apply at most this many times (then the rule is skipped); None for always.
        probability: Apply with this probability (drawn from the server's seeded generator).
        latency: Seconds to wait before answering, instead of the server's latency.
        usage: Entries sent in the reply's ``usage`` in place of the computed ones, as given
            (``{"completion_tokens": 1e20}``; a nested dict such as
            ``completion_tokens_details`` is merged into the computed one), to script a
            provider's odd counts.
    """

    match: str | re.Pattern[str] | None = None
    reply: Reply | None = None
    refusal: str | None = None
    finish_reason: str = "stop"
    fault: Fault | None = None
    response_format: ResponseFormatKind | None = None
    times: int | None = None
    probability: float = 1.0
    latency: float | None = None
    usage: Mapping[str, Any] | None = None

    def matches(self, text: str, response_format: str) -> bool:
        """Whether this rule's ``match`` and ``response_format`` accept the request."""
        if self.response_format is not None and self.response_format != response_format:
            return False
        if self.match is None:
            return True
        if isinstance(self.match, str):
            return self.match in text
        return self.match.search(text) is not None


@dataclass(frozen=True, slots=True)
class RateLimitPolicy:
    """A provider-like rate limit the server enforces, announced with OpenAI's headers.

    Budgets are counted in fixed windows starting at the first request. A request arriving
    when the window's request budget is spent, or its token budget is already used up, gets
    HTTP 429 with ``Retry-After``. Every response (429s included) carries
    ``x-ratelimit-limit-requests``, ``x-ratelimit-remaining-requests`` and
    ``x-ratelimit-reset-requests`` (and the ``-tokens`` trio when ``tokens`` is set), with
    resets written like OpenAI's (``"250ms"``, ``"1.5s"``, ``"1m0s"``).

    Attributes:
        requests: Requests allowed per window (None: no request limit).
        tokens: Tokens (prompt + completion, as ``usage`` reports them) per window.
        window: The window's length in seconds (60 for per-minute limits).
        retry_after: The ``Retry-After`` of 429s in seconds; None sends the time left in the
            window (rounded up to a millisecond).
    """

    requests: int | None = None
    tokens: int | None = None
    window: float = 60.0
    retry_after: float | None = None
