"""What every table of the experiment file shares: the strict base model and the value checks.

Every table forbids unknown keys and is strict, so TOML's own types must match (``"16"`` is not
a number, ``16.0`` is not an integer). Optional settings default to None, meaning "the
library's default": the loader never restates a default that ``run_evals`` or ``Judge`` own.
Relative paths resolve against the file's folder, which the loader passes as validation
context ``{"folder": Path}``. The tables themselves live in ``_schema.py`` (the whole file and
``[experiment]``), ``_target.py``, ``_judge.py``, ``_scorers.py`` and ``_regression.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import PydanticCustomError

from evalkit import _ceilings
from evalkit._ceilings import Allowed
from evalkit._masking import is_env_name, looks_like_a_key

REFERENCE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
"""``"module:attribute"``, as a Python target's ``callable`` or a scorer's ``use`` names it."""

Text = Annotated[str, Field(min_length=1)]
Share = Annotated[float, Field(ge=0.0, le=1.0)]


def within(allowed: Allowed) -> WrapValidator:
    """The validator of a key whose values lie in ``allowed`` (after the table's strict type,
    an integer or a finite number), refused with the whole range and the value as written:
    ``expected a number of seconds above 0 and at most 86,400, got 1e+20``."""

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        number = handler(value)  # the type first; the message shows the value as written
        if not allowed.holds(number):
            raise problem(f"expected {allowed}, got {describe(value)}")
        return number

    return WrapValidator(check)


# The ranges of evalkit/_ceilings.py, shared with Judge, create_scorer and run_evals.
Temperature = Annotated[float, within(_ceilings.TEMPERATURE)]
MaxTokens = Annotated[int, within(_ceilings.MAX_TOKENS)]
HttpTimeout = Annotated[float, within(_ceilings.HTTP_TIMEOUT)]
Retries = Annotated[int, within(_ceilings.RETRIES)]
RateLimitRetries = Annotated[int, within(_ceilings.RATE_LIMIT_RETRIES)]
Rpm = Annotated[float, within(_ceilings.RPM)]
Tpm = Annotated[float, within(_ceilings.TPM)]
BatchMaxRequests = Annotated[int, within(_ceilings.BATCH_MAX_REQUESTS)]
BatchSeconds = Annotated[float, within(_ceilings.BATCH_SECONDS)]
StepTimeout = Annotated[float, within(_ceilings.STEP_TIMEOUT)]


def problem(message: str, *, at: tuple[str | int, ...] = ()) -> PydanticCustomError:
    """A validation error whose message is ``message`` verbatim, optionally deeper at ``at``.

    The loader appends ``at`` to the error's location, so a check made on a whole list can
    point at the key inside the entry that is wrong.
    """
    return PydanticCustomError("evalkit", "{problem}", {"problem": message, "at": list(at)})


def resolve_path(value: Path, info: ValidationInfo) -> Path:
    """``value`` made absolute, relative to the experiment file's folder; a problem if it cannot."""
    folder = (info.context or {}).get("folder")
    try:
        # expanduser raises RuntimeError for "~nosuchuser/"; resolve, for a symlink loop.
        value = value.expanduser()
        if folder is not None and not value.is_absolute():
            value = Path(folder) / value
        return value.resolve()
    except (RuntimeError, OSError) as exc:
        raise problem(f"cannot resolve the path {str(value)!r}: {exc}") from exc


def check_env_name(value: str | None) -> str | None:
    """An ``api_key_env`` validator: the name of an environment variable, never a key."""
    # The value is never echoed: it may be a secret pasted in the wrong place.
    if value is None:
        return value
    if looks_like_a_key(value):
        raise problem(
            "this looks like an API key, not the name of an environment variable (value not "
            "shown); keep the key out of the file: export it, e.g. as OPENAI_API_KEY, and "
            'write api_key_env = "OPENAI_API_KEY"'
        )
    if not is_env_name(value):
        raise problem(
            "expected the name of an environment variable (value not shown): letters, digits "
            'and underscores, not starting with a digit, such as "OPENAI_API_KEY"'
        )
    return value


class Table(BaseModel):
    """The base of every table: unknown keys forbidden, strict types, frozen."""

    # hide_input_in_errors: the chained ValidationError's text must not carry a pasted secret.
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        allow_inf_nan=False,
        validate_default=False,
        hide_input_in_errors=True,
        defer_build=True,
    )


def describe(value: Any) -> str:
    """A short TOML-ish description of a value for messages: ``"16"``, ``true``, ``a table``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f'"{text}"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)
