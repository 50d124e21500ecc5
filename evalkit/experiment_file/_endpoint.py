"""What ``[target]`` (type ``openai``) and ``[judge]`` share: the settings of a call to an
OpenAI-compatible chat endpoint, declared once. The Python side has one declaration too:
``OpenAITarget`` keeps its settings as a ``Judge`` value, whose checks and defaults serve both
(docs/pages/design/one-implementation-each.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from evalkit._ceilings import MAX_CONCURRENCY
from evalkit.experiment_file._table import (
    HttpTimeout,
    MaxTokens,
    Retries,
    Rpm,
    Table,
    Temperature,
    Text,
    Tpm,
    check_env_name,
)


class EndpointTable(Table):
    """The endpoint settings of a chat model call, for a target or a judge.

    Attributes:
        base_url: Any OpenAI-compatible endpoint; None means OpenAI's.
        api_key_env: The name of the environment variable holding the API key.
        max_concurrency: Calls in flight at once, 1 to 10,000 (a judge's are shared by the
            scorers using it; a target's with judges of the same model).
        temperature: Sampling temperature, 0 to 2.
        max_tokens: Maximum tokens per reply, 1 to 1,000,000.
        timeout: Seconds allowed to each HTTP attempt, above 0 and at most 86,400.
        max_retries: Retries on 429 (a judge), 5xx, timeouts and connection errors, 0 to 100.
        rpm: Requests per minute allowed to the model, shared by everything calling it at the
            same endpoint, 0.01 to 10,000,000.
        tpm: Tokens per minute allowed to the model, 1 to 10,000,000,000.
    """

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
