"""``[judge]`` and a scorer's ``judge`` override: the settings of an LLM scorer's ``Judge``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import field_validator, model_validator

from evalkit._ceilings import REPLY_BYTES
from evalkit._masking import is_env_name
from evalkit.experiment_file._endpoint import EndpointTable
from evalkit.experiment_file._table import (
    BatchMaxRequests,
    BatchSeconds,
    RateLimitRetries,
    Table,
    Text,
    problem,
    within,
)

ReplyBytes = Annotated[int, within(REPLY_BYTES)]


class _JudgeModel(Table):
    # The keys a judge table lists before its endpoint settings (pydantic orders a model's
    # fields by base class, last base first), as messages name them.
    model: Text | None = None
    instructions: str | None = None


class JudgeOverride(EndpointTable, _JudgeModel):
    """``judge`` inside a ``[[scorers]]`` table: fields that replace the default judge's.

    The endpoint settings (``base_url`` to ``tpm``) are `EndpointTable`'s.

    Attributes:
        model: The judge model.
        instructions: The judge's system instructions.
        base_url_env: The name of an environment variable holding the endpoint, read when the
            scorers are built (instead of ``base_url``; an unset variable is an error).
        rate_limit_retries: Retries after an HTTP 429, counted apart from ``max_retries``,
            0 to 1,000.
        cache: Cache replies (true), never (false); unset caches when temperature is 0.
        mode: ``"online"`` or ``"batch"`` (the provider's Batch API, see ``Judge``).
        batch_max_requests: Most requests in one batch, 1 to 1,000,000.
        batch_flush_after: Seconds without a new request before a batch is sent, above 0 and
            at most 86,400.
        batch_poll_interval: Seconds between two looks at a submitted batch, above 0 and at
            most 86,400.
        structured_output: How structured steps ask for JSON: ``"auto"`` (the default:
            ``json_schema``, falling back to JSON mode and to the prompt on a server that
            refuses it), ``"json_schema"``, ``"json_object"`` or ``"prompt"``.
        extra_body: Extra JSON fields merged into each request body
            (``Judge(extra_body=...)``), e.g. ``{ seed = 1 }`` or a server's own options.
        max_reply_bytes: The most bytes of a reply read (``Judge(max_reply_bytes=...)``),
            1,024 to 1,073,741,824; a larger reply fails the call.
    """

    base_url_env: Text | None = None
    rate_limit_retries: RateLimitRetries | None = None
    cache: bool | None = None
    mode: Literal["online", "batch"] | None = None
    batch_max_requests: BatchMaxRequests | None = None
    batch_flush_after: BatchSeconds | None = None
    batch_poll_interval: BatchSeconds | None = None
    structured_output: Literal["auto", "json_schema", "json_object", "prompt"] | None = None
    extra_body: dict[str, Any] | None = None
    max_reply_bytes: ReplyBytes | None = None

    @field_validator("base_url_env")
    @classmethod
    def _base_url_env(cls, value: str | None) -> str | None:
        if value is not None and not is_env_name(value):
            raise problem(
                "expected the name of an environment variable holding the URL, such as "
                '"EVALKIT_TEST_SERVER_URL" (for a fixed URL, write base_url = "...")'
            )
        return value

    @model_validator(mode="after")
    def _one_base_url(self) -> JudgeOverride:
        if self.base_url is not None and self.base_url_env is not None:
            raise problem("give base_url or base_url_env, not both", at=("base_url_env",))
        return self

    def settings(self) -> dict[str, Any]:
        """The fields the file sets (``base_url_env`` included, unread); see
        `judge_settings` for what ``Judge`` takes."""
        return self.model_dump(exclude_none=True)


class JudgeSection(JudgeOverride):
    """``[judge]``: the default judge of LLM scorers; ``model`` is required here."""

    model: Text


class UnsetBaseUrl(ValueError):
    """A judge's ``base_url_env`` names a variable that is not set (or is empty).

    Attributes:
        variable: The variable's name.
        own: Whether a scorer's own ``judge`` table named it (else ``[judge]``).
    """

    def __init__(self, variable: str, *, own: bool) -> None:
        self.variable, self.own = variable, own
        super().__init__(
            f"{variable} is not set: export the judge's base URL in it (or write "
            'base_url = "..." instead)'
        )


def judge_settings(
    default: JudgeOverride | None,
    own: JudgeOverride | None,
    *,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The keyword arguments of a scorer's ``Judge``: ``default`` overridden by ``own``.

    Fields are replaced one by one, except that a table setting ``base_url`` or
    ``base_url_env`` replaces both; ``base_url_env`` is read from ``environ`` (the process's
    environment by default) into ``base_url``.

    Raises:
        UnsetBaseUrl: The variable ``base_url_env`` names is unset or empty.
    """
    settings = default.settings() if default is not None else {}
    mine = own.settings() if own is not None else {}
    if "base_url" in mine or "base_url_env" in mine:
        settings.pop("base_url", None)
        settings.pop("base_url_env", None)
    settings.update(mine)
    variable = settings.pop("base_url_env", None)
    if variable is not None:
        value = (os.environ if environ is None else environ).get(variable, "").strip()
        if not value:
            raise UnsetBaseUrl(variable, own="base_url_env" in mine)
        settings["base_url"] = value
    return settings
