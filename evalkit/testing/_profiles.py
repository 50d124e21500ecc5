"""Server profiles: the local server answering as llama.cpp, llama-cpp-python, vLLM or Ollama do.

"OpenAI-compatible" servers differ where a judge notices: which ``response_format`` types they
take (and whether JSON mode honours a ``schema``), which length field they read, how their
errors, 401s and context overflows look, and what their ``usage`` carries. A
[`ServerProfile`][evalkit.testing.ServerProfile] imitates one server's answers, as its documentation
and its source describe them and as evalkit measured them (issue 20; the real-server compatibility
suite checks the same against the real servers). ``FakeOpenAIServer(profile="llama-cpp-python")`` or
``python -m evalkit.testing.server --profile llama-cpp-python``.

The profile ``"openai"`` (the default) is the server as it always was. Profiles are frozen
values: ``dataclasses.replace(PROFILES["llama-cpp-python"], formats=frozenset())`` is a server
that refuses every response format. What each profile does:
docs/pages/how-to/test-judges-offline.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from evalkit.testing._http import Response, error_body

AuthStyle = Literal["openai", "detail", "llama", "vllm", "none"]
ErrorStyle = Literal["openai", "llama-cpp-python", "llama-server", "vllm", "ollama"]


@dataclass(frozen=True, slots=True)
class ServerProfile:
    """How one kind of server answers (see the module docstring).

    Attributes:
        name: The profile's name (``--profile``).
        formats: The ``response_format`` types taken besides ``"text"``; a request asking for
            another is refused with the server's own error.
        json_object_schema: Whether JSON mode honours a ``schema`` given in ``response_format``
            (llama.cpp's grammar): the reply then follows that schema.
        length_fields: The request fields read as the reply's token cap, first present wins;
            the others are ignored.
        context_size: The model's context in tokens (prompt and reply); None for no limit.
        overflow: ``"error"``: a prompt over the context is refused with the server's
            overflow error; ``"truncate"``: it is cut, silently (Ollama).
        runaway: Whether a request with no length field the server reads generates to the
            end of the context (``finish_reason`` ``"length"``), as llama-cpp-python does.
        usage_details: Whether ``usage`` carries OpenAI's ``*_tokens_details``.
        timings: Whether the reply carries llama.cpp's ``timings`` object.
        auth: The shape of a 401: OpenAI's, FastAPI's ``{"detail": ...}``, llama.cpp's,
            vLLM's ``{"error": "Unauthorized"}``, or ``"none"`` (the key is not checked).
        errors: Whose error bodies the server sends.
    """

    name: str
    formats: frozenset[str] = frozenset({"json_object", "json_schema"})
    json_object_schema: bool = False
    length_fields: tuple[str, ...] = ("max_completion_tokens", "max_tokens")
    context_size: int | None = None
    overflow: Literal["error", "truncate"] = "error"
    runaway: bool = False
    usage_details: bool = True
    timings: bool = False
    auth: AuthStyle = "openai"
    errors: ErrorStyle = "openai"

    def refuse(self, body: dict[str, Any], prompt_tokens: int) -> Response | None:
        """The error this server answers ``body`` with before generating, or None."""
        fmt = body.get("response_format")
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        if isinstance(kind, str) and kind != "text" and kind not in self.formats:
            return self._format_refusal(kind)
        if self.context_size is None or self.overflow != "error":
            return None
        cap = self.cap(body) or 0
        if self.errors == "vllm":
            if prompt_tokens + cap > self.context_size:
                message = (
                    f"This model's maximum context length is {self.context_size} tokens. "
                    f"However, you requested {prompt_tokens + cap} tokens ({prompt_tokens} in "
                    f"the messages, {cap} in the completion). Please reduce the length of the "
                    "messages or completion."
                )
                return Response.json(_vllm_error(message), 400)
            return None
        if prompt_tokens <= self.context_size:
            return None
        if self.errors == "llama-cpp-python":
            message = (
                f"This model's maximum context length is {self.context_size} tokens. However, "
                f"you requested {prompt_tokens + cap} tokens ({prompt_tokens} in the messages, "
                f"{cap or None} in the completion). Please reduce the length of the messages "
                "or completion."
            )
            error = error_body(message, "invalid_request_error", "context_length_exceeded")
            error["error"]["param"] = "messages"
            return Response.json(error, 400)
        error = {
            "error": {
                "code": 400,
                "message": f"request ({prompt_tokens} tokens) exceeds the available context "
                f"size ({self.context_size} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt_tokens,
                "n_ctx": self.context_size,
            }
        }
        return Response.json(error, 400)

    def unauthorized(self) -> Response:
        """This server's answer to a request without the right key."""
        if self.auth == "detail":
            return Response.json({"detail": "Invalid API key"}, 401)
        if self.auth == "vllm":
            return Response.json({"error": "Unauthorized"}, 401)
        if self.auth == "llama":
            body = {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}
            return Response.json({"error": body}, 401)
        body = error_body("Incorrect API key provided", "invalid_request_error", "invalid_api_key")
        return Response.json(body, 401)

    def cap(self, body: dict[str, Any]) -> int | None:
        """The reply's token cap as this server reads ``body`` (None: none it reads)."""
        for name in self.length_fields:
            value = body.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return None

    def shape(self, payload: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        """A completion ``payload`` as this server would send it for ``body``."""
        usage = payload["usage"]
        choice = payload["choices"][0]
        message = choice["message"]
        cap = self.cap(body)
        prompt_tokens = usage["prompt_tokens"]
        if self.context_size is not None and prompt_tokens > self.context_size:
            prompt_tokens = self.context_size  # truncated (Ollama)
        completion_tokens = usage["completion_tokens"]
        if cap is not None and completion_tokens > cap:
            completion_tokens = cap
            if isinstance(message.get("content"), str):
                message["content"] = message["content"][: cap * 4]
            choice["finish_reason"] = "length"
        elif cap is None and self.runaway and self.context_size is not None:
            # Nothing it reads caps the reply: the model talks to the end of the context.
            completion_tokens = max(self.context_size - prompt_tokens, completion_tokens)
            choice["finish_reason"] = "length"
        details = {k: v for k, v in usage.items() if k.endswith("_details")}
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            **(details if self.usage_details else {}),
        }
        if self.errors == "vllm":
            usage["prompt_tokens_details"] = None  # as vLLM sends it
        if self.name != "openai":
            for key in ("refusal", "annotations"):
                message.pop(key, None)
            payload.pop("service_tier", None)
        payload["usage"] = usage
        if self.timings:
            payload["timings"] = {
                "prompt_n": prompt_tokens,
                "prompt_ms": prompt_tokens * 0.5,
                "prompt_per_token_ms": 0.5,
                "prompt_per_second": 2000.0,
                "predicted_n": completion_tokens,
                "predicted_ms": completion_tokens * 20.0,
                "predicted_per_token_ms": 20.0,
                "predicted_per_second": 50.0,
            }
        return payload

    def _format_refusal(self, kind: str) -> Response:
        taken = ["text", *sorted(self.formats)]
        if self.errors == "llama-cpp-python":
            # FastAPI's validation error, caught by its route handler and sent as a 500.
            expected = " or ".join(f"'{k}'" for k in taken)
            detail = (
                "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                f"'msg': \"Input should be {expected}\", 'input': '{kind}', "
                f"'ctx': {{'expected': \"{expected}\"}}}}]"
            )
            return Response.json(error_body(detail, "internal_server_error"), 500)
        if self.errors == "llama-server":
            message = (
                f"response_format type must be one of {', '.join(map(repr, taken))}, "
                f"but got: {kind}"
            )
            error = {"code": 400, "message": message, "type": "invalid_request_error"}
            return Response.json({"error": error}, 400)
        if self.errors == "vllm":
            return Response.json(_vllm_error(f"response_format {kind!r} is not supported"), 400)
        if self.errors == "ollama":
            message = f"invalid response_format type: {kind} is not supported"
            return Response.json(error_body(message, "invalid_request_error"), 400)
        body = error_body(
            f"Invalid value: '{kind}'. Supported values are: " + ", ".join(f"'{k}'" for k in taken),
            "invalid_request_error",
            "invalid_value",
        )
        body["error"]["param"] = "response_format.type"
        return Response.json(body, 400)


def _vllm_error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}


PROFILES: dict[str, ServerProfile] = {
    "openai": ServerProfile("openai"),
    "llama-server": ServerProfile(
        "llama-server",
        json_object_schema=True,
        length_fields=("n_predict", "max_tokens", "max_completion_tokens"),
        context_size=4096,
        runaway=True,
        usage_details=False,
        timings=True,
        auth="llama",
        errors="llama-server",
    ),
    "llama-cpp-python": ServerProfile(
        "llama-cpp-python",
        formats=frozenset({"json_object"}),
        json_object_schema=True,
        length_fields=("max_tokens",),
        context_size=2048,
        runaway=True,
        usage_details=False,
        auth="detail",
        errors="llama-cpp-python",
    ),
    "vllm": ServerProfile(
        "vllm",
        context_size=8192,
        usage_details=False,
        auth="vllm",
        errors="vllm",
    ),
    "ollama": ServerProfile(
        "ollama",
        length_fields=("max_tokens",),
        context_size=4096,
        overflow="truncate",
        runaway=True,
        usage_details=False,
        auth="none",
        errors="ollama",
    ),
}
"""The shipped server profiles, by name: what a
[`FakeOpenAIServer`][evalkit.testing.FakeOpenAIServer] built with ``profile=NAME`` imitates."""


def server_profile(profile: str | ServerProfile) -> ServerProfile:
    """The profile named ``profile`` (or ``profile`` itself).

    Raises:
        ValueError: No profile has that name.
    """
    if isinstance(profile, ServerProfile):
        return profile
    found = PROFILES.get(profile)
    if found is None:
        raise ValueError(
            f"no server profile {profile!r}; the profiles are {', '.join(sorted(PROFILES))}"
        )
    return found
