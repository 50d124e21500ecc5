"""``[target]``: what answers each input, an OpenAI-compatible model or a Python function."""

from __future__ import annotations

import string
from typing import Annotated, Literal

from pydantic import Field, field_validator

from evalkit._ceilings import MAX_CONCURRENCY
from evalkit.experiment_file._table import (
    REFERENCE,
    HttpTimeout,
    MaxTokens,
    Retries,
    Rpm,
    Table,
    Temperature,
    Text,
    Tpm,
    check_env_name,
    problem,
)


class OpenAITargetSection(Table):
    """``[target]`` with ``type = "openai"``: an OpenAI-compatible chat model answers each input.

    Attributes:
        type: ``"openai"``.
        model: The model name.
        system: The system prompt, if any.
        prompt: A ``str.format`` template over the row (``"{input}"``); None sends the input
            as is.
        base_url: Any OpenAI-compatible endpoint; None means OpenAI's.
        api_key_env: The name of the environment variable holding the API key.
        max_concurrency: Target calls in flight at once, 1 to 10,000.
        temperature: Sampling temperature, 0 to 2.
        max_tokens: Maximum tokens per answer, 1 to 1,000,000.
        timeout: Seconds allowed to each HTTP attempt, above 0 and at most 86,400.
        max_retries: Retries on 5xx, timeouts and connection errors, 0 to 100.
        rpm: Requests per minute allowed to the model (shared with judges of the same model),
            0.01 to 10,000,000.
        tpm: Tokens per minute allowed to the model, 1 to 10,000,000,000.
    """

    type: Literal["openai"]
    model: Text
    system: str | None = None
    prompt: str | None = None
    base_url: Text | None = None
    api_key_env: Text | None = None
    max_concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] | None = None
    temperature: Temperature | None = None
    max_tokens: MaxTokens | None = None
    timeout: HttpTimeout | None = None
    max_retries: Retries | None = None
    rpm: Rpm | None = None
    tpm: Tpm | None = None

    _api_key_env = field_validator("api_key_env")(check_env_name)

    @field_validator("prompt")
    @classmethod
    def _prompt_is_a_template(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                list(string.Formatter().parse(value))
            except ValueError as exc:
                raise problem(f"not a valid template: {exc} (write {{{{ for a literal {{)") from exc
        return value


class PythonTargetSection(Table):
    """``[target]`` with ``type = "python"``: a Python function answers each input.

    Attributes:
        type: ``"python"``.
        callable: ``"module:attribute"``, imported with the experiment file's folder on
            ``sys.path`` while it loads.
    """

    type: Literal["python"]
    callable: str

    @field_validator("callable")
    @classmethod
    def _is_reference(cls, value: str) -> str:
        if not REFERENCE.fullmatch(value):
            raise problem(f"expected 'module:attribute' such as 'my_app:answer', got {value!r}")
        return value


TargetSection = Annotated[OpenAITargetSection | PythonTargetSection, Field(discriminator="type")]
"""``[target]``: an `OpenAITargetSection` (built into an [`OpenAITarget`][evalkit.OpenAITarget])
or a `PythonTargetSection` (a function), told apart by ``type``."""
