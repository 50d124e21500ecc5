"""``Judge``: which model a prompt step asks, where, and how (a frozen, hashable value)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import KW_ONLY, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from evalkit._ceilings import (
    BATCH_MAX_REQUESTS,
    BATCH_SECONDS,
    HTTP_TIMEOUT,
    MAX_TOKENS,
    RATE_LIMIT_RETRIES,
    REPLY_BYTES,
    RETRIES,
    RPM,
    TEMPERATURE,
    TPM,
    Allowed,
    check_allowed,
    check_concurrency_ceiling,
)
from evalkit._masking import is_env_name, looks_like_a_key, mask_secrets
from evalkit.errors import ConfigError
from evalkit.judge.policy._policy import CallPolicy
from evalkit.judge.transport._body import DEFAULT_MAX_REPLY_BYTES

if TYPE_CHECKING:
    from openai import AsyncOpenAI


JudgeMode = Literal["online", "batch"]
StructuredOutput = Literal["auto", "json_schema", "json_object", "prompt"]

_T = TypeVar("_T")


class _Default:
    """A parameter default that remembers it was not passed (shows as the value in help())."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def _default(value: _T) -> _T:
    """A `_Default` standing for ``value``, typed as ``value`` is, so the signature reads
    ``temperature: float | None = 0.0`` for users and type checkers alike. A field still
    holding one was not passed, which is how a step judge knows what to inherit
    (docs/pages/design/step-judge-inherits.md); ``Judge.__post_init__`` is the one place that
    looks."""
    return cast(_T, _Default(value))


#: The values of ``Judge(structured_output=...)``.
STRUCTURED_OUTPUTS: tuple[StructuredOutput, ...] = ("auto", "json_schema", "json_object", "prompt")


@dataclass(frozen=True, slots=True)
class Judge:
    """A judge model behind an OpenAI-compatible chat completions endpoint.

    Calls go through the official ``openai`` async client, so a judge works with OpenAI, Azure,
    vLLM, Ollama, LiteLLM, OpenRouter and the local `evalkit.testing` server alike.
    Clients are created lazily, at the first call, and shared: one per ``(base_url, API key)``
    in the process (see [`evalkit.judge.shared_openai_client`][evalkit.judge.shared_openai_client]).

    A judge is a frozen, hashable value. Equal judges share one ``max_concurrency`` limiter;
    more precisely, so do all judges calling the same model at the same endpoint with the same
    ``max_concurrency``, whatever their instructions or sampling settings (see
    [`limiter_key`][evalkit.Judge.limiter_key]).

    **Step judges override scorer judges field by field.** A judge remembers which arguments
    were passed explicitly; a prompt step's judge uses those and takes every other field from
    the scorer's judge ([`with_defaults`][evalkit.Judge.with_defaults]). So ``PromptStep(...,
    judge=Judge(temperature=1))`` changes only the temperature of the scorer's judge, and a step
    judge naming another ``model`` keeps the scorer judge's ``base_url`` and ``max_concurrency``
    unless it sets them.

    **Ranges.** The numeric settings are checked when the judge is made, and a value
    outside its range is a [`ConfigError`][evalkit.errors.ConfigError] naming the field, the value
    and the range: ``temperature`` 0 to 2, ``max_tokens`` 1 to 1,000,000, ``timeout`` above 0 and at
    most 86,400 s, ``max_retries`` 0 to 100, ``rpm`` 0.01 to 10,000,000, ``tpm`` 1 to
    10,000,000,000, ``rate_limit_retries`` 0 to 1,000, ``max_concurrency`` 1 to 10,000,
    ``batch_max_requests`` 1 to 1,000,000, ``batch_flush_after`` and ``batch_poll_interval``
    above 0 and at most 86,400 s (docs/pages/design/ceilings-on-inputs.md).

    Args:
        model: The model id sent to the endpoint, e.g. ``"gpt-4o-mini"``. Required by the time
            a step runs, but may be left to the scorer's judge on a step judge.
        instructions: The system message of every call; None sends none.
        client: A prepared ``openai.AsyncOpenAI`` (or ``AsyncAzureOpenAI``) to use instead of
            the shared one built from ``base_url`` and ``api_key_env``.
        base_url: The endpoint, e.g. ``"http://localhost:11434/v1"``; None for OpenAI's.
        api_key_env: The environment variable holding the API key, read at the first call.
        provider: A label recorded as ``judge_provider`` (and cost ``source``).
        temperature: Sampling temperature; None omits it (some reasoning models reject it).
        max_tokens: Cap on generated tokens; None for none. Sent as ``max_completion_tokens``
            and, except to OpenAI's and Azure's own endpoints (whose reasoning models refuse
            it), as ``max_tokens`` too, since some servers (llama-cpp-python, Ollama) read
            only that one. A server refusing either field gets the other alone from then on.
        timeout: Seconds allowed to each HTTP attempt.
        max_retries: Retries of the ``openai`` client on 429, 5xx, timeouts and connection
            errors, with its exponential back-off honouring ``Retry-After``.
        max_concurrency: Most calls in flight at once, shared as described above; None for no
            limit of the judge's own.
        extra_body: Extra JSON fields merged into each request body (e.g. ``{"seed": 1}``).
        cache: Whether calls are answered from, and stored in, the active judge cache
            ([`evalkit.judge.use_judge_cache`][evalkit.use_judge_cache]): True, False, or None for
            "when the temperature is 0" (a judge without a temperature samples at the provider's
            default, usually 1, so it is not cached unless ``cache=True``).
        rpm: Requests per minute allowed to this model at this endpoint; None for no limit.
        tpm: Tokens (input + output) per minute allowed; each call is charged an estimate
            (prompt length and ``max_tokens``) and corrected with the reported usage.
        rate_limit_retries: Retries after an HTTP 429, counted apart from ``max_retries``;
            each waits the server's ``Retry-After`` (else 1 s doubling up to 60 s).
        mode: ``"online"`` sends each call as it comes; ``"batch"`` gathers the calls made at
            about the same time (by concurrent scorer runs) into one job of the provider's
            Batch API (``/v1/files`` and ``/v1/batches``; about half the price, a separate
            rate-limit pool, answers within 24 hours). See docs/pages/how-to/batch-mode.md.
        batch_max_requests: Most requests in one batch; a full batch is sent at once.
        batch_flush_after: Seconds without a new request after which the gathered requests
            are sent as a batch.
        batch_poll_interval: Seconds between two looks at a submitted batch's status.
        structured_output: How a structured step asks for JSON. ``"auto"`` (the default) asks
            with ``response_format`` ``json_schema`` and, when the server refuses that format,
            with JSON mode carrying the schema, then with the schema in the prompt alone,
            remembering per endpoint and model what the server takes so later calls go
            straight there (docs/pages/design/format-refusals.md). ``"json_schema"``,
            ``"json_object"`` or ``"prompt"`` pin the first attempt's mode: a refusal of it
            is then an error.
        max_reply_bytes: The most bytes of a reply's body read, as it arrives (4 MiB by
            default; 1,024 to 1 GiB). A larger reply is not read further: the call fails with
            code ``"reply_too_large"``, not retried (the same request would get the same
            reply), and the reply's first 1,000 bytes are kept as its raw output.
    """

    model: str | None = _default(None)
    instructions: str | None = _default(None)
    _: KW_ONLY
    client: AsyncOpenAI | None = _default(None)
    base_url: str | None = _default(None)
    api_key_env: str = _default("OPENAI_API_KEY")
    provider: str = _default("openai")
    temperature: float | None = _default(0.0)
    max_tokens: int | None = _default(None)
    timeout: float = _default(60.0)
    max_retries: int = _default(2)
    max_concurrency: int | None = _default(None)
    extra_body: Mapping[str, Any] | None = field(default=_default(None), hash=False)
    cache: bool | None = _default(None)
    rpm: float | None = _default(None)
    tpm: float | None = _default(None)
    rate_limit_retries: int = _default(10)
    mode: JudgeMode = _default("online")
    batch_max_requests: int = _default(50_000)
    batch_flush_after: float = _default(2.0)
    batch_poll_interval: float = _default(30.0)
    structured_output: StructuredOutput = _default("auto")
    max_reply_bytes: int = _default(DEFAULT_MAX_REPLY_BYTES)
    _explicit: frozenset[str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # The generated __init__ stored each argument or its marker; resolve the markers,
        # remembering which fields were passed.
        passed = {name: getattr(self, name) for name in _FIELD_NAMES}
        values = {
            name: value.value if isinstance(value, _Default) else value
            for name, value in passed.items()
        }
        explicit = frozenset(
            name for name, value in passed.items() if not isinstance(value, _Default)
        )
        _check(values)
        _fill(self, values, explicit)

    @property
    def limiter_key(self) -> Hashable:
        """What judges sharing one rate limiter (concurrency, rpm, tpm, AIMD) have in common.

        The endpoint (the ``client`` object, or ``base_url`` and ``api_key_env``), the model,
        ``max_concurrency``, ``rpm`` and ``tpm``: the limits protect a model behind an endpoint,
        so scorers whose judges differ only in instructions or sampling settings share them
        (docs/pages/design/one-limiter-per-endpoint.md).
        """
        endpoint = self.client if self.client is not None else (self.base_url, self.api_key_env)
        return ("chat", endpoint, self.model, self.max_concurrency, self.rpm, self.tpm)

    @property
    def batch_key(self) -> Hashable:
        """What judges sharing one batch collector have in common (batch mode).

        The endpoint and the model (a provider's batch holds requests to one model) and the
        batch settings; judges differing only in instructions, sampling or output schema share
        batches, as they share limiters.
        """
        endpoint = self.client if self.client is not None else (self.base_url, self.api_key_env)
        return (
            "batch",
            endpoint,
            self.model,
            self.batch_max_requests,
            self.batch_flush_after,
            self.batch_poll_interval,
        )

    @property
    def policy(self) -> CallPolicy:
        """How this judge's calls are made (retries, timeout, rate limits), apart from what
        they ask: the part of the judge the call policy (``evalkit.judge.policy``) reads."""
        return CallPolicy(
            timeout=self.timeout,
            max_retries=self.max_retries,
            rate_limit_retries=self.rate_limit_retries,
            max_concurrency=self.max_concurrency,
            rpm=self.rpm,
            tpm=self.tpm,
            max_reply_bytes=self.max_reply_bytes,
        )

    @property
    def caches(self) -> bool:
        """Whether this judge's calls use the active judge cache (``cache``, or temperature 0)."""
        if self.cache is not None:
            return self.cache
        temperature = (self.extra_body or {}).get("temperature", self.temperature)
        return bool(temperature == 0)

    @property
    def explicit_fields(self) -> frozenset[str]:
        """The names of the fields passed explicitly (the ones a step judge overrides)."""
        return self._explicit

    def replace(self, **changes: Any) -> Judge:
        """A copy with ``changes`` applied (those fields count as explicitly set)."""
        unknown = set(changes) - set(_FIELD_NAMES)
        if unknown:
            raise ConfigError(f"Judge has no field {sorted(unknown)[0]!r}")
        values = {name: getattr(self, name) for name in _FIELD_NAMES} | changes
        _check(values)
        judge = object.__new__(Judge)
        _fill(judge, values, self._explicit | frozenset(changes))
        return judge

    def with_defaults(self, base: Judge | None) -> Judge:
        """This judge's explicitly set fields laid over ``base``'s (a step judge over a scorer's).

        Args:
            base: The judge that fills every field this one did not set; None returns self.
        """
        if base is None or base is self:
            return self
        values = {
            name: getattr(self if name in self._explicit else base, name) for name in _FIELD_NAMES
        }
        judge = object.__new__(Judge)
        _fill(judge, values, self._explicit | base._explicit)
        return judge

    @property
    def label(self) -> str:
        """How error messages name this judge: ``judge 'gpt-4o-mini' at <base_url>``.

        Credentials in the URL (``https://user:password@host``, ``?api-key=...``) are masked.
        """
        where = f" at {mask_secrets(self.base_url)}" if self.base_url else ""
        return f"judge {self.model!r}{where}"

    def __repr__(self) -> str:
        # Written out so that credentials in base_url never reach a log or a traceback.
        parts = []
        for name in _FIELD_NAMES:
            value = getattr(self, name)
            if name == "base_url" and value is not None:
                value = mask_secrets(value)
            parts.append(f"{name}={value!r}")
        return f"Judge({', '.join(parts)})"


_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Judge) if f.name != "_explicit")


def _fill(judge: Judge, values: Mapping[str, Any], explicit: frozenset[str]) -> None:
    for name in _FIELD_NAMES:
        value = values[name]
        if name == "extra_body" and value is not None:
            value = dict(value)
        object.__setattr__(judge, name, value)
    object.__setattr__(judge, "_explicit", explicit)


#: The ranges of the numeric fields (docs/pages/design/ceilings-on-inputs.md).
_ALLOWED: dict[str, Allowed] = {
    "temperature": TEMPERATURE,
    "max_tokens": MAX_TOKENS,
    "timeout": HTTP_TIMEOUT,
    "max_retries": RETRIES,
    "rpm": RPM,
    "tpm": TPM,
    "rate_limit_retries": RATE_LIMIT_RETRIES,
    "batch_max_requests": BATCH_MAX_REQUESTS,
    "batch_flush_after": BATCH_SECONDS,
    "batch_poll_interval": BATCH_SECONDS,
    "max_reply_bytes": REPLY_BYTES,
}


#: The numeric fields that may be None (no cap, no limit, the provider's default).
_OPTIONAL = frozenset({"temperature", "max_tokens", "rpm", "tpm"})


def _check(values: Mapping[str, Any]) -> None:
    def bad(name: str, expected: str) -> ConfigError:
        return ConfigError(f"Judge {name} must be {expected}, got {values[name]!r}")

    for name in ("model", "instructions", "base_url"):
        value = values[name]
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise bad(name, "a non-empty string or None")
    if not isinstance(values["provider"], str) or not values["provider"]:
        raise bad("provider", "a non-empty string")
    _check_env_name(values["api_key_env"])
    for name, allowed in _ALLOWED.items():
        if values[name] is not None or name not in _OPTIONAL:
            check_allowed(f"Judge {name}", values[name], allowed)
    if values["max_concurrency"] is not None and not _is_int(values["max_concurrency"], minimum=1):
        raise bad("max_concurrency", "an integer >= 1 or None")
    if values["max_concurrency"] is not None:
        check_concurrency_ceiling("Judge max_concurrency", values["max_concurrency"])
    if values["extra_body"] is not None and not isinstance(values["extra_body"], Mapping):
        raise bad("extra_body", "a mapping or None")
    if values["cache"] is not None and not isinstance(values["cache"], bool):
        raise bad("cache", "True, False or None")
    if values["mode"] not in ("online", "batch"):
        raise bad("mode", "'online' or 'batch'")
    if values["structured_output"] not in STRUCTURED_OUTPUTS:
        raise bad("structured_output", "'auto', 'json_schema', 'json_object' or 'prompt'")
    client = values["client"]
    if client is not None:
        from openai import AsyncOpenAI

        if not isinstance(client, AsyncOpenAI):
            raise bad("client", "an openai.AsyncOpenAI instance")


def _check_env_name(value: Any) -> None:
    # The value is never echoed: it may be an API key pasted in the wrong place.
    if not isinstance(value, str) or not value:
        raise ConfigError(
            "Judge api_key_env must be the name of an environment variable, "
            f"got {type(value).__name__}"
        )
    if looks_like_a_key(value):
        raise ConfigError(
            "Judge api_key_env looks like an API key, not the name of an environment variable "
            "(value not shown); keep the key out of the code: export it, e.g. as "
            'OPENAI_API_KEY, and pass api_key_env="OPENAI_API_KEY"'
        )
    if not is_env_name(value):
        raise ConfigError(
            "Judge api_key_env must be the name of an environment variable (value not shown): "
            'letters, digits and underscores, not starting with a digit, such as "OPENAI_API_KEY"'
        )


def _is_int(value: Any, *, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum
