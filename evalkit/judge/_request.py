"""``PreparedRequest``: what a judge sends, worked out once per prompt step.

Besides the request body's fixed part, it holds the step's judge cache key (a hash of
everything that determines a reply except the prompt) and the pieces of the token estimate
charged to ``tpm`` before a call.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any
from urllib.parse import urlsplit

from evalkit.judge._formats import MEMORY
from evalkit.judge._judge import Judge
from evalkit.judge._structured import OutputSpec
from evalkit.judge.policy._breaker import CircuitBreaker
from evalkit.judge.policy._ratelimit import RateLimiter
from evalkit.judge.policy._registry import shared_breaker, shared_rate_limiter

# Bump when what a cache entry means changes (its key inputs or how replies are read).
# 2: the key holds the endpoint's scheme, host, port and path, not only its host name.
CACHE_FORMAT = 2
_OPENAI_URL = "https://api.openai.com/v1"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class PreparedRequest:
    """The parts of a judge's requests that do not depend on the prompt (built once)."""

    __slots__ = (
        "_endpoint",
        "_host",
        "_max_tokens",
        "_memory_key",
        "_official",
        "_step_keys",
        "base",
        "caches",
        "judge",
        "label",
        "name",
        "policy",
        "system",
    )

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.policy = judge.policy
        self.label = judge.label
        self.system = (
            {"role": "system", "content": judge.instructions} if judge.instructions else None
        )
        base: dict[str, Any] = {"model": judge.model}
        if judge.temperature is not None:
            base["temperature"] = judge.temperature
        if judge.max_tokens is not None:
            base["max_completion_tokens"] = judge.max_tokens
        if judge.extra_body:
            base.update(judge.extra_body)
        self.base = base
        # Sent as max_tokens too where the endpoint may read only that (see body()); not part
        # of base, so the cache key is the same whichever length fields an endpoint takes.
        extra_body = judge.extra_body or {}
        self._max_tokens = (
            judge.max_tokens
            if judge.max_tokens is not None
            and "max_tokens" not in extra_body
            and "max_completion_tokens" not in extra_body
            else None
        )
        self._official: bool | None = None
        self._memory_key: tuple[str, str] | None = None
        self.caches = judge.caches
        self.name = f"{judge.model} at {judge.base_url or 'the OpenAI API'}"
        self._host: str | None = None
        self._endpoint: str | None = None
        self._step_keys: dict[int, tuple[OutputSpec, bytes]] = {}

    def body(self, prompt: str, extra: dict[str, Any]) -> dict[str, Any]:
        """The request body of one attempt."""
        user = {"role": "user", "content": prompt}
        messages = [self.system, user] if self.system is not None else [user]
        body = {**self.base, "messages": messages, **extra}
        if self._max_tokens is not None and not self.official:
            # llama-cpp-python and Ollama read only max_tokens; OpenAI's reasoning models
            # refuse it, so its own endpoints get max_completion_tokens alone. A field an
            # endpoint refused is left out (``_formats.py``).
            dropped = MEMORY.dropped(self.memory_key)
            if "max_tokens" not in dropped:
                body["max_tokens"] = self._max_tokens
                if "max_completion_tokens" in dropped:
                    del body["max_completion_tokens"]
        return body

    @property
    def official(self) -> bool:
        """Whether the endpoint is OpenAI's or Azure OpenAI's own (they take
        ``max_completion_tokens`` and no ``schema`` in JSON mode)."""
        if self._official is None:
            host = self.host
            self._official = host == "api.openai.com" or host.endswith(".openai.azure.com")
        return self._official

    @property
    def memory_key(self) -> tuple[str, str]:
        """What the memory of refused formats and fields is kept by: endpoint and model."""
        if self._memory_key is None:
            self._memory_key = (self.endpoint, self.judge.model or "")
        return self._memory_key

    def limiter(self) -> RateLimiter:
        """The running loop's rate limiter of this judge's model and endpoint."""
        policy = self.policy
        return shared_rate_limiter(
            self.judge.limiter_key,
            max_concurrency=policy.max_concurrency,
            rpm=policy.rpm,
            tpm=policy.tpm,
            name=self.name,
        )

    def breaker(self) -> CircuitBreaker:
        """The running loop's circuit breaker of this judge (see ``policy/_breaker.py``)."""
        judge = self.judge
        endpoint = judge.client if judge.client is not None else (judge.base_url, judge.api_key_env)
        return shared_breaker(
            auth_key=("auth", endpoint),
            quota_key=("quota", endpoint, judge.model),
            reach_key=("reach", judge.client if judge.client is not None else judge.base_url),
        )

    def estimate_tokens(self, text: str, extra: dict[str, Any], limiter: RateLimiter) -> int:
        """Tokens an attempt will cost: about four characters a token for the messages (and
        any schema sent), a few per message, plus ``max_tokens`` or the usual output."""
        chars = len(text) + (len(self.judge.instructions or "") if self.system else 0)
        if extra:
            chars += len(json.dumps(extra))
        messages = 2 if self.system else 1
        output = self.judge.max_tokens or limiter.expected_output_tokens
        return chars // 4 + 4 * messages + 3 + output

    def _url(self) -> str:
        judge = self.judge
        if judge.client is not None:
            return str(judge.client.base_url)
        return judge.base_url or os.environ.get("OPENAI_BASE_URL") or _OPENAI_URL

    @property
    def host(self) -> str:
        """The endpoint's host name (recorded with cache entries and batches)."""
        if self._host is None:
            url = self._url()
            self._host = (urlsplit(url).hostname or url).lower()
        return self._host

    @property
    def endpoint(self) -> str:
        """The endpoint as the cache key records it: ``scheme://host:port/path``.

        Scheme and host are lower-cased, the port is written out (80/443 when the URL has
        none) and a trailing ``/`` is dropped, so spellings of one endpoint share entries.
        Credentials and the query are left out.
        """
        if self._endpoint is None:
            self._endpoint = endpoint_of(self._url())
        return self._endpoint

    def step_key(self, spec: OutputSpec) -> bytes:
        """The cache key of every call asking this judge for ``spec`` (the prompt aside).

        It hashes the endpoint (scheme, host, port and path: two local servers on two ports
        are two models, and a judge moved to a dead port must not pass on another's replies),
        the model, instructions, sampling settings and extra body fields, the step kind, and
        both request shapes (structured output, and the JSON-mode fallback with its prompt
        suffix), so a change to any of them misses.
        """
        known = self._step_keys.get(id(spec))
        if known is not None and known[0] is spec:
            return known[1]
        document = {
            "format": CACHE_FORMAT,
            "endpoint": self.endpoint,
            "request": self.base,
            "instructions": self.judge.instructions,
            "step": spec.kind,
            "first": spec.first,
            "fallback": spec.fallback,
            "fallback_suffix": spec.fallback_suffix,
        }
        text = json.dumps(document, sort_keys=True, ensure_ascii=False, default=repr)
        key = hashlib.blake2b(text.encode(), digest_size=16).digest()
        self._step_keys[id(spec)] = (spec, key)
        return key


def endpoint_of(url: str) -> str:
    """``url`` as ``scheme://host:port/path`` (see `PreparedRequest.endpoint`); a URL
    without a scheme or host is kept as given."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname  # lower-cased, without credentials or IPv6 brackets
    if not scheme or not host:
        return url
    try:
        port = parts.port
    except ValueError:  # not a number: keep the URL's own text
        return url
    if port is None:
        port = _DEFAULT_PORTS.get(scheme)
    where = f"[{host}]" if ":" in host else host
    if port is not None:
        where = f"{where}:{port}"
    return f"{scheme}://{where}{parts.path.rstrip('/')}"


def prompt_key(step_key: bytes, prompt: str) -> bytes:
    """The cache key of one prompt within a step (``step_key`` keys the hash)."""
    return hashlib.blake2b(prompt.encode(), digest_size=16, key=step_key).digest()


def request_hash(step_key: bytes, prompt: str, attempt: int) -> bytes:
    """The hash naming one attempt's request in a batch: its judge cache key for the first
    attempt, and that key hashed with the attempt number for a fallback."""
    key = prompt_key(step_key, prompt)
    if attempt == 1:
        return key
    return hashlib.blake2b(key + attempt.to_bytes(2, "big"), digest_size=16).digest()
