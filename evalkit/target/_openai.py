"""A chat model as the target: the application under test is an OpenAI-compatible model call.

The target reuses the judge layer's plumbing: one shared client per endpoint and key, the
model's rate limiter (concurrency, rpm/tpm, AIMD on 429 storms) shared with any judge calling
the same model at the same endpoint, and the same retry policy. Its settings are a
[`Judge`][evalkit.Judge] value, since a chat model call is configured the same way.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from evalkit.dataset import Item
from evalkit.errors import ConfigError, JudgeError, TargetError
from evalkit.judge import Judge, PreparedRequest
from evalkit.judge.policy._call import chat_completion
from evalkit.judge.transport._clients import openai_client_for


class _RowFields(Mapping[str, Any]):
    """What a prompt template may name: the row's roles and its other columns."""

    def __init__(self, item: Item) -> None:
        self._fields: dict[str, Any] = {
            **(item.extra or {}),
            "id": item.id,
            "input": item.input,
            "ground_truth": item.ground_truth,
            "request_context": item.request_context,
            "metadata": item.metadata,
        }

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Any:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


class OpenAITarget:
    """Produce each item's output by asking a chat model.

    Args:
        model: The model id, e.g. ``"gpt-4o-mini"``.
        system: The system message, if any.
        prompt: A ``str.format`` template over the row: ``{input}``, ``{request_context}``,
            ``{metadata}``, ``{id}``, any other column by name, and item access such as
            ``{input[question]}`` for structured inputs.
        base_url: Any OpenAI-compatible endpoint; None for OpenAI's.
        api_key_env: The environment variable holding the API key.
        max_concurrency: Calls in flight at once (shared with judges of the same model).
        temperature: Sampling temperature; None leaves the provider's default.
        max_tokens: Maximum tokens per answer.
        timeout: Seconds allowed to each HTTP attempt.
        max_retries: Retries after a 5xx, timeout or dropped connection.
        rpm: Requests per minute allowed to the model.
        tpm: Tokens per minute allowed to the model.
        client: A prepared ``openai.AsyncOpenAI`` client to use instead of the shared one.

    The numeric settings have [`Judge`][evalkit.Judge]'s ranges (``max_concurrency`` 1
    to 10,000, ``temperature`` 0 to 2, ``max_tokens`` 1 to 1,000,000, ``timeout`` above 0 and
    at most 86,400 s, ``max_retries`` 0 to 100, ``rpm`` 0.01 to 10,000,000, ``tpm`` 1 to
    10,000,000,000), checked when the target is made.
    """

    def __init__(
        self,
        model: str,
        *,
        system: str | None = None,
        prompt: str = "{input}",
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        rpm: float | None = None,
        tpm: float | None = None,
        client: Any = None,
    ) -> None:
        try:
            list(string.Formatter().parse(prompt))
        except ValueError as exc:
            raise ConfigError(f"target prompt {prompt!r} is not a valid template: {exc}") from exc
        self.model = model
        self.prompt = prompt
        try:
            self.settings = Judge(
                model,
                system,
                client=client,
                base_url=base_url,
                api_key_env=api_key_env,
                max_concurrency=max_concurrency,
                temperature=temperature,
                max_tokens=max_tokens,
                timeout=timeout,
                max_retries=max_retries,
                rpm=rpm,
                tpm=tpm,
                cache=False,
            )
        except ConfigError as exc:
            # The settings are the target's: say so (Judge checks them for both).
            message = str(exc)
            if not message.startswith("Judge "):
                raise
            raise ConfigError(message.replace("Judge ", "OpenAITarget ")) from None
        self._request = PreparedRequest(self.settings)
        # Named as the judge names itself, credentials in base_url masked: "target 'm' at ...".
        self._label = "target" + self.settings.label.removeprefix("judge")

    def __repr__(self) -> str:
        return f"OpenAITarget({self.model!r})"

    def render(self, item: Item) -> str:
        """The user message for ``item``."""
        fields = _RowFields(item)
        try:
            return self.prompt.format_map(fields)
        except (KeyError, IndexError, AttributeError, TypeError, ValueError) as exc:
            names = ", ".join(sorted(fields))
            raise TargetError(
                f"{self._label}: the prompt template {self.prompt!r} cannot be filled for item "
                f"{item.id!r} ({type(exc).__name__}: {exc}); the row has {names}"
            ) from exc

    async def __call__(self, item: Item) -> Any:
        """Ask the model; its text answer is the item's output."""
        settings = self.settings
        prompt = self.render(item)
        client = await openai_client_for(
            client=settings.client,
            base_url=settings.base_url,
            api_key_env=settings.api_key_env,
            user=self._label,
        )
        limiter = self._request.limiter()
        try:
            reply = await chat_completion(
                client,
                self._request.body(prompt, {}),
                timeout=settings.timeout,
                max_retries=settings.max_retries,
                label=self._label,
                limiter=limiter,
                tokens=self._request.estimate_tokens(prompt, {}, limiter),
                rate_limit_retries=settings.rate_limit_retries,
                breaker=self._request.breaker(),
                max_reply_bytes=settings.max_reply_bytes,
            )
        except JudgeError as exc:
            raise TargetError(str(exc)) from exc
        if reply.content is None:
            why = f"refused: {reply.refusal}" if reply.refusal else "an empty answer"
            raise TargetError(f"{self._label} gave {why} (finish_reason {reply.finish_reason})")
        return reply.content

    def describe(self) -> dict[str, Any]:
        """Type, model, endpoint, prompt template and sampling settings (no key)."""
        s = self.settings
        return {
            "type": "openai",
            "model": s.model,
            "system": s.instructions,
            "prompt": self.prompt,
            "base_url": s.base_url,
            "api_key_env": s.api_key_env,
            "max_concurrency": s.max_concurrency,
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "rpm": s.rpm,
            "tpm": s.tpm,
        }
