"""``PromptStep``: a scorer step answered by a judge model instead of Python code."""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pydantic

from evalkit.errors import ConfigError
from evalkit.judge import Judge
from evalkit.scorer._result import ScorerRun, StepName, StepResults
from evalkit.scorer._steps import BoundStep, StepOwner, bind_callable
from evalkit.scorer._trace import RunTrace

if TYPE_CHECKING:
    from evalkit.judge import OutputSpec

OutputSchema = type[pydantic.BaseModel] | Mapping[str, Any]
"""What a [`PromptStep`][evalkit.PromptStep] asks the judge to reply in: a pydantic model
class, or a JSON Schema as a mapping."""


class PromptStep:
    """A step whose result comes from a judge model.

    ``create_prompt`` builds the prompt (the user message; the judge's ``instructions`` are
    the system message) and is called like a function step: sync or async, with the keyword
    arguments it declares among ``run``, ``results`` and, for generate_reason, ``score``.

    What the step yields depends on where it is used:

    - preprocess / analyze: the JSON value the judge answered, validated by ``output_schema``
      (required: a pydantic model class, whose JSON dump is yielded, or a JSON Schema dict);
    - generate_score: the float of the judge's ``{"score": number}``, which must lie in
      ``score_range`` when the step declares one;
    - generate_reason: the judge's text.

    Structured outputs are asked with native structured output first and retried once with
    the schema in the prompt and JSON mode when the reply is malformed. Every call is recorded
    in the result's ``judge`` entry for the step, failures included.

    Args:
        description: What the step does (documentation; not sent to the model).
        create_prompt: Builds the prompt text from ``run``/``results``/``score``.
        output_schema: The schema of a preprocess/analyze step's result.
        judge: The step's judge; its explicitly set fields override the scorer's judge
            (see [`Judge.with_defaults`][evalkit.Judge.with_defaults]). None uses the scorer's
            judge.
        score_range: For a generate_score step, ``(low, high)``: the scores the prompt asks
            for, bounds included. A score outside is a format failure, like a reply that is
            not JSON: the fallback asks once more (telling the range), then the step fails
            naming the score and the range. None accepts any finite number.

    Raises:
        ConfigError: An argument is of the wrong kind, or ``score_range`` is not two finite
            numbers, low below high.
    """

    __slots__ = ("create_prompt", "description", "judge", "output_schema", "score_range")

    def __init__(
        self,
        description: str,
        create_prompt: Callable[..., str | Awaitable[str]],
        *,
        output_schema: OutputSchema | None = None,
        judge: Judge | None = None,
        score_range: tuple[float, float] | None = None,
    ) -> None:
        if not isinstance(description, str):
            raise ConfigError(f"PromptStep description must be text, got {description!r}")
        if not callable(create_prompt):
            raise ConfigError(
                f"PromptStep {description!r}: create_prompt must be a function returning "
                f"the prompt text, not {type(create_prompt).__name__}"
            )
        if judge is not None and not isinstance(judge, Judge):
            raise ConfigError(
                f"PromptStep {description!r}: judge must be a Judge, not {type(judge).__name__}"
            )
        self.description = description
        self.create_prompt = create_prompt
        self.output_schema = output_schema
        self.judge = judge
        self.score_range = _checked_range(score_range, description)

    def __repr__(self) -> str:
        return f"PromptStep({self.description!r})"

    def judge_for(self, default: Judge | None) -> Judge | None:
        """The judge this step asks in a scorer whose judge is ``default``."""
        return self.judge.with_defaults(default) if self.judge else default

    def bind(self, kind: StepName, owner: StepOwner) -> BoundStep:
        """The judge call of this step as ``owner``'s ``kind`` step (see
        [`Step`][evalkit.scorer.Step])."""
        where = f"Scorer {owner.name!r}, {kind} step"
        spec = output_spec(kind, self.output_schema, where, score_range=self.score_range)
        make_prompt = bind_callable(self.create_prompt, kind, f"{where}, create_prompt")
        judge = self.judge_for(owner.judge)
        return _BoundPrompt(kind, where, judge, make_prompt, spec)


def output_spec(
    kind: StepName,
    output_schema: Any,
    where: str,
    *,
    score_range: tuple[float, float] | None = None,
) -> OutputSpec:
    """What a ``kind`` prompt step asks its judge for, or a
    [`ConfigError`][evalkit.errors.ConfigError] naming ``where``: generate_score a ``{"score":
    number}`` (in ``score_range`` when given), generate_reason plain text, the other steps their
    ``output_schema``."""
    # Here, not with the module: every prebuilt scorer imports it, and a run of code scorers
    # needs neither jsonschema nor the judge's call stack (openai: 0.4 s; issue 31).
    from evalkit.judge import OutputSpec, ScoreSpec, schema_spec

    if score_range is not None and kind != "generate_score":
        raise ConfigError(
            f"{where}: score_range applies to a generate_score prompt step only; remove it"
        )
    if kind in ("generate_score", "generate_reason"):
        if output_schema is not None:
            asks = '{"score": number}' if kind == "generate_score" else "plain text"
            raise ConfigError(
                f"{where}: a {kind} prompt step always asks for {asks}; remove output_schema"
            )
        if kind == "generate_score":
            return ScoreSpec(kind=kind, score_range=score_range)
        return OutputSpec(kind=kind)
    if output_schema is None:
        raise ConfigError(
            f"{where}: a {kind} prompt step needs an output_schema "
            "(a pydantic model class or a JSON Schema dict)"
        )
    return schema_spec(output_schema, where, kind=kind)


def _checked_range(value: Any, description: str) -> tuple[float, float] | None:
    """``score_range`` as two floats, or a [`ConfigError`][evalkit.errors.ConfigError] saying what
    is wrong."""
    if value is None:
        return None
    problem = f"PromptStep {description!r}: score_range must be (low, high), two finite numbers"
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise ConfigError(f"{problem}; got {value!r}")
    if any(isinstance(bound, bool) or not isinstance(bound, (int, float)) for bound in value):
        raise ConfigError(f"{problem}; got {value!r}")
    low, high = float(value[0]), float(value[1])
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ConfigError(f"{problem}; got {value!r}")
    if not low < high:
        raise ConfigError(f"{problem} with low below high; got {value!r}")
    return low, high


class _BoundPrompt:
    __slots__ = ("_kind", "_make_prompt", "_request", "_spec", "_where")

    def __init__(
        self,
        kind: StepName,
        where: str,
        judge: Judge | None,
        make_prompt: BoundStep,
        spec: OutputSpec,
    ) -> None:
        from evalkit.judge import PreparedRequest

        self._kind: StepName = kind
        self._where = where
        self._make_prompt = make_prompt
        self._spec = spec
        # A judge without a model cannot be asked; fail at run time, when the scorer is used
        # (docs/pages/design/missing-judge-fails-at-run-time.md).
        usable = judge is not None and judge.model is not None
        self._request = PreparedRequest(judge) if usable and judge is not None else None

    async def __call__(
        self, run: ScorerRun, results: StepResults, score: float | None, trace: RunTrace
    ) -> Any:
        from evalkit.judge import ask

        started = time.perf_counter()
        request = self._request
        if request is None:
            raise ConfigError(
                f"{self._where} is a prompt step without a judge model: pass "
                "judge=Judge(model, instructions) to create_scorer or to the PromptStep"
            )
        prompt = self._make_prompt(run, results, score, trace)
        if inspect.isawaitable(prompt):
            prompt = await prompt
        if not isinstance(prompt, str):
            kind = type(prompt).__name__
            raise TypeError(f"{self._where}: create_prompt returned {kind}, not the prompt text")
        trace.prompts[self._kind] = prompt
        asked = await ask(request, prompt, self._spec, started)
        trace.record(self._kind, asked.execution)
        if asked.error is not None:
            raise asked.error
        return asked.value
