"""``[judge]`` and a scorer's ``judge`` override: the settings of an LLM scorer's ``Judge``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from evalkit.experiment_file._table import (
    PositiveFloat,
    PositiveInt,
    Table,
    Temperature,
    Text,
    check_env_name,
)


class JudgeOverride(Table):
    """``judge`` inside a ``[[scorers]]`` table: fields that replace the default judge's.

    Attributes:
        model: The judge model.
        instructions: The judge's system instructions.
        base_url: Any OpenAI-compatible endpoint.
        api_key_env: The name of the environment variable holding the API key.
        max_concurrency: Judge calls in flight at once, shared by the scorers using this judge.
        temperature: Sampling temperature, 0 to 2.
        max_tokens: Maximum tokens per reply.
        timeout: Seconds allowed to each HTTP attempt (``Judge(timeout=...)``), above 0.
        max_retries: Retries of the client on 429, 5xx, timeouts and connection errors
            (``Judge(max_retries=...)``), 0 or more.
        rpm: Requests per minute allowed to this model, shared by every scorer using it.
        tpm: Tokens per minute allowed to this model.
        rate_limit_retries: Retries after an HTTP 429, counted apart from ``max_retries``.
        cache: Cache replies (true), never (false); unset caches when temperature is 0.
        mode: ``"online"`` or ``"batch"`` (the provider's Batch API, see ``Judge``).
        batch_max_requests: Most requests in one batch.
        batch_flush_after: Seconds without a new request before a batch is sent.
        batch_poll_interval: Seconds between two looks at a submitted batch.
    """

    model: Text | None = None
    instructions: str | None = None
    base_url: Text | None = None
    api_key_env: Text | None = None
    max_concurrency: PositiveInt | None = None
    temperature: Temperature | None = None
    max_tokens: PositiveInt | None = None
    timeout: PositiveFloat | None = None
    max_retries: Annotated[int, Field(ge=0)] | None = None
    rpm: PositiveFloat | None = None
    tpm: PositiveFloat | None = None
    rate_limit_retries: Annotated[int, Field(ge=0)] | None = None
    cache: bool | None = None
    mode: Literal["online", "batch"] | None = None
    batch_max_requests: PositiveInt | None = None
    batch_flush_after: PositiveFloat | None = None
    batch_poll_interval: PositiveFloat | None = None

    _api_key_env = field_validator("api_key_env")(check_env_name)

    def settings(self) -> dict[str, Any]:
        """The fields the file sets, as keyword arguments for ``Judge``."""
        return self.model_dump(exclude_none=True)


class JudgeSection(JudgeOverride):
    """``[judge]``: the default judge of LLM scorers; ``model`` is required here."""

    model: Text
