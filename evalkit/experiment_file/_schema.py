"""The experiment file's schema: one pydantic model per TOML table.

Every table forbids unknown keys and is strict, so TOML's own types must match (``"16"`` is not
a number, ``16.0`` is not an integer). Optional settings default to None, meaning "the
library's default": the loader never restates a default that ``run_evals`` or ``Judge`` own.
Relative paths resolve against the file's folder, which the loader passes as validation
context ``{"folder": Path}``.
"""

from __future__ import annotations

import math
import re
import string
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from evalkit._secrets import is_env_name, looks_like_a_key
from evalkit.compare import Direction

_REFERENCE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_SCORER_NAME = re.compile(r"[A-Za-z][\w-]*")

Text = Annotated[str, Field(min_length=1)]
PositiveInt = Annotated[int, Field(ge=1)]
PositiveFloat = Annotated[float, Field(gt=0.0)]
Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
Share = Annotated[float, Field(ge=0.0, le=1.0)]


def problem(message: str, *, at: tuple[str | int, ...] = ()) -> PydanticCustomError:
    """A validation error whose message is ``message`` verbatim, optionally deeper at ``at``.

    The loader appends ``at`` to the error's location, so a check made on a whole list can
    point at the key inside the entry that is wrong.
    """
    return PydanticCustomError("evalkit", "{problem}", {"problem": message, "at": list(at)})


def _resolve(value: Path, info: ValidationInfo) -> Path:
    folder = (info.context or {}).get("folder")
    try:
        # expanduser raises RuntimeError for "~nosuchuser/"; resolve, for a symlink loop.
        value = value.expanduser()
        if folder is not None and not value.is_absolute():
            value = Path(folder) / value
        return value.resolve()
    except (RuntimeError, OSError) as exc:
        raise problem(f"cannot resolve the path {str(value)!r}: {exc}") from exc


def _check_env_name(value: str | None) -> str | None:
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


class _Table(BaseModel):
    # hide_input_in_errors: the chained ValidationError's text must not carry a pasted secret.
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        allow_inf_nan=False,
        validate_default=False,
        hide_input_in_errors=True,
    )


class ExperimentSection(_Table):
    """``[experiment]``: what is run, on which data, and where results go.

    Attributes:
        name: Required. Runs of the same name form a history; ``baseline = "latest"`` is the
            newest complete, full run of this name that pairs with the new one.
        description: Free text stored with the run.
        dataset: Required. A Parquet file or folder, relative to the experiment file; it must
            exist.
        store: The DuckDB score store, relative to the experiment file; by default
            ``evalkit.duckdb`` in the working directory (made absolute when loading).
        concurrency: Items in flight at once; None means ``run_evals``' default.
        max_error_rate: The share of a scorer's pairs (0 to 1) that may end without a score
            before it fails the run, for every scorer without its own; None means
            ``run_evals``' default (0.05).
    """

    name: Text
    description: str | None = None
    dataset: Annotated[Path, Field(strict=False)]
    store: Annotated[Path, Field(strict=False)]
    concurrency: PositiveInt | None = None
    max_error_rate: Share | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_store(cls, data: Any) -> Any:
        # The default lives in the working directory, not beside the file: resolve it now.
        if isinstance(data, dict) and "store" not in data:
            return {**data, "store": str(Path.cwd() / "evalkit.duckdb")}
        return data

    @field_validator("dataset", "store", mode="before")
    @classmethod
    def _path_is_text(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            raise problem(f"expected a non-empty string (a path), got {describe(value)}")
        return value

    @field_validator("store")
    @classmethod
    def _resolve_store(cls, value: Path, info: ValidationInfo) -> Path:
        return _resolve(value, info)

    @field_validator("dataset")
    @classmethod
    def _resolve_dataset(cls, value: Path, info: ValidationInfo) -> Path:
        path = _resolve(value, info)
        if not path.exists():
            raise problem(f"dataset not found: {path}")
        return path


class OpenAITarget(_Table):
    """``[target]`` with ``type = "openai"``: an OpenAI-compatible chat model answers each input.

    Attributes:
        type: ``"openai"``.
        model: The model name.
        system: The system prompt, if any.
        prompt: A ``str.format`` template over the row (``"{input}"``); None sends the input
            as is.
        base_url: Any OpenAI-compatible endpoint; None means OpenAI's.
        api_key_env: The name of the environment variable holding the API key.
        max_concurrency: Target calls in flight at once.
        temperature: Sampling temperature, 0 to 2.
        max_tokens: Maximum tokens per answer.
        timeout: Seconds allowed to each HTTP attempt.
        max_retries: Retries on 5xx, timeouts and connection errors.
        rpm: Requests per minute allowed to the model (shared with judges of the same model).
        tpm: Tokens per minute allowed to the model.
    """

    type: Literal["openai"]
    model: Text
    system: str | None = None
    prompt: str | None = None
    base_url: Text | None = None
    api_key_env: Text | None = None
    max_concurrency: PositiveInt | None = None
    temperature: Temperature | None = None
    max_tokens: PositiveInt | None = None
    timeout: PositiveFloat | None = None
    max_retries: Annotated[int, Field(ge=0)] | None = None
    rpm: PositiveFloat | None = None
    tpm: PositiveFloat | None = None

    _api_key_env = field_validator("api_key_env")(_check_env_name)

    @field_validator("prompt")
    @classmethod
    def _prompt_is_a_template(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                list(string.Formatter().parse(value))
            except ValueError as exc:
                raise problem(f"not a valid template: {exc} (write {{{{ for a literal {{)") from exc
        return value


class PythonTarget(_Table):
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
        if not _REFERENCE.fullmatch(value):
            raise problem(f"expected 'module:attribute' such as 'my_app:answer', got {value!r}")
        return value


Target = Annotated[OpenAITarget | PythonTarget, Field(discriminator="type")]
"""``[target]``: an :class:`OpenAITarget` or a :class:`PythonTarget`, told apart by ``type``."""


class JudgeOverride(_Table):
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

    _api_key_env = field_validator("api_key_env")(_check_env_name)

    def settings(self) -> dict[str, Any]:
        """The fields the file sets, as keyword arguments for ``Judge``."""
        return self.model_dump(exclude_none=True)


class JudgeSection(JudgeOverride):
    """``[judge]``: the default judge of LLM scorers; ``model`` is required here."""

    model: Text


class Threshold(_Table):
    """A scorer's pass mark: ``threshold = 0.8`` is ``{ min = 0.8 }``; ``{ max = 0.1 }`` marks a
    lower-is-better scorer.

    Attributes:
        min: The score must be at least this.
        max: The score must be at most this.
    """

    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _bounds(self) -> Threshold:
        if self.min is None and self.max is None:
            raise problem("expected min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise problem(f"min ({self.min}) is greater than max ({self.max})")
        return self

    def for_run(self) -> float | dict[str, float]:
        """The form ``run_evals(thresholds=...)`` takes: a number for a plain minimum."""
        if self.max is None and self.min is not None:
            return self.min
        return {k: v for k, v in (("min", self.min), ("max", self.max)) if v is not None}


class ScorerEntry(_Table):
    """One ``[[scorers]]`` table.

    Attributes:
        use: A prebuilt scorer's name (``"exact_match"``) or ``"module:attribute"``.
        id: Records the scores under this id instead of the scorer's own.
        threshold: The pass mark, if any.
        max_error_rate: The share of this scorer's pairs (0 to 1) that may end without a
            score before it fails the run; None means ``[experiment] max_error_rate``.
        params: Keyword arguments for a prebuilt scorer's factory.
        judge: Fields replacing the default judge's for this scorer.
    """

    use: str
    id: Text | None = None
    threshold: Threshold | None = None
    max_error_rate: Share | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    judge: JudgeOverride | None = None

    @field_validator("use")
    @classmethod
    def _use(cls, value: str) -> str:
        if not (_REFERENCE.fullmatch(value) or _SCORER_NAME.fullmatch(value)):
            raise problem(
                "expected a prebuilt scorer's name such as 'exact_match' or 'module:attribute', "
                f"got {value!r}"
            )
        return value

    @field_validator("threshold", mode="before")
    @classmethod
    def _number_is_a_minimum(cls, value: Any) -> Any:
        if value is None or isinstance(value, Threshold):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise problem(f"expected a finite number, got {value}")
            return {"min": value}
        if not isinstance(value, dict):
            raise problem(
                "expected a number or a table such as { min = 0.8 } or { max = 0.1 }, "
                f"got {describe(value)}"
            )
        return value

    @property
    def is_reference(self) -> bool:
        """True when ``use`` is ``"module:attribute"`` rather than a prebuilt name."""
        return ":" in self.use

    @property
    def direction(self) -> Direction:
        """``"lower"`` when the threshold has only a ``max``, else ``"higher"``."""
        if self.threshold is not None and self.threshold.min is None:
            return "lower"
        return "higher"


class RegressionSection(_Table):
    """``[regression]``: the gate against a baseline run.

    Attributes:
        baseline: ``"latest"`` (the newest complete, full run of the same name that pairs
            with this one; none on the first night), a run's name (its newest such run) or a
            run's id.
        max_drop: The drop in mean tolerated before a significant drop fails, in score units.
        confidence: The coverage of the paired bootstrap interval.
        resamples: Bootstrap and sign-flip resamples.
        min_paired: The share of this run's items a baseline on another dataset must also
            hold (0 to 1) to be compared with; a baseline of the same dataset always pairs.
    """

    baseline: Text = "latest"
    max_drop: Annotated[float, Field(ge=0.0)] = 0.0
    confidence: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.95
    resamples: PositiveInt = 10_000
    min_paired: Share = 0.9


class ExperimentConfig(_Table):
    """A whole experiment file.

    Attributes:
        experiment: ``[experiment]``, required.
        target: ``[target]``; None uses the dataset's ``output`` column.
        judge: ``[judge]``, the default judge of LLM scorers.
        scorers: The ``[[scorers]]`` tables, at least one.
        regression: ``[regression]``; None means no regression gate.
    """

    experiment: ExperimentSection
    target: Target | None = None
    judge: JudgeSection | None = None
    scorers: Annotated[list[ScorerEntry], Field(min_length=1)]
    regression: RegressionSection | None = None

    @field_validator("scorers")
    @classmethod
    def _unique_ids(cls, scorers: list[ScorerEntry]) -> list[ScorerEntry]:
        # Explicit ids must differ; two entries using the same scorer without an id would
        # record under the same default id.
        seen: dict[str, int] = {}
        for index, entry in enumerate(scorers):
            key = entry.id if entry.id is not None else f"use:{entry.use}"
            if key in seen:
                field = "id" if entry.id is not None else "use"
                raise problem(
                    f"same scorer id as scorers[{seen[key]}]; give each entry its own `id`",
                    at=(index, field),
                )
            seen[key] = index
        return scorers

    def judge_settings(self, entry: ScorerEntry) -> dict[str, Any]:
        """The judge fields for ``entry``: ``[judge]`` overridden field by field by its own."""
        settings = self.judge.settings() if self.judge else {}
        if entry.judge is not None:
            settings.update(entry.judge.settings())
        return settings


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
