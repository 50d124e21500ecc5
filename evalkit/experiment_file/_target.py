"""``[target]``: what answers each input, an OpenAI-compatible model or a Python function."""

from __future__ import annotations

import string
from typing import Annotated, Literal

from pydantic import Field, field_validator

from evalkit.experiment_file._endpoint import EndpointTable
from evalkit.experiment_file._table import (
    REFERENCE,
    Table,
    Text,
    problem,
)


class _ChatModel(Table):
    # The keys a target table lists before its endpoint settings (pydantic orders a model's
    # fields by base class, last base first), as messages name them.
    type: Literal["openai"]
    model: Text
    system: str | None = None
    prompt: str | None = None

    @field_validator("prompt")
    @classmethod
    def _prompt_is_a_template(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                list(string.Formatter().parse(value))
            except ValueError as exc:
                raise problem(f"not a valid template: {exc} (write {{{{ for a literal {{)") from exc
        return value


class OpenAITargetSection(EndpointTable, _ChatModel):
    """``[target]`` with ``type = "openai"``: an OpenAI-compatible chat model answers each input.

    Built into an [`OpenAITarget`][evalkit.OpenAITarget]. The endpoint settings (``base_url``
    to ``tpm``) are `EndpointTable`'s.

    Attributes:
        type: ``"openai"``.
        model: The model name.
        system: The system prompt, if any.
        prompt: A ``str.format`` template over the row (``"{input}"``); None sends the input
            as is.
    """


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
