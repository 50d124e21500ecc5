"""Binding step definitions (functions or prompt steps) into callables the pipeline runs.

A bound step is called as ``step(run, results, score, trace)`` and returns the step's value or
an awaitable of it. Function signatures are inspected once, when the step is added, so a run
pays only for the call itself; so is whether the step is a coroutine function, so the pipeline
awaits those directly and checks only other steps' values (a sync function may still return
an awaitable). See docs/pages/design/signatures-read-once.md.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from evalkit._callables import is_async_callable
from evalkit.errors import ConfigError
from evalkit.judge import Judge
from evalkit.scorer._result import ScorerRun, StepName, StepResults
from evalkit.scorer._trace import RunTrace


class BoundStep(Protocol):
    """A step ready to run: returns its value, or an awaitable of it."""

    def __call__(
        self, run: ScorerRun, results: StepResults, score: float | None, trace: RunTrace
    ) -> Any: ...


class StepOwner(Protocol):
    """What a step needs to know of the scorer it is added to."""

    @property
    def name(self) -> str: ...

    @property
    def judge(self) -> Judge | None: ...


@runtime_checkable
class Step(Protocol):
    """A step definition that binds itself to the scorer it is added to.

    This is the extension point for steps that are more than a function:
    [`PromptStep`][evalkit.PromptStep] implements it, and so do the prebuilt scorers' judge
    steps. A plain function is a step too and needs none of this.

    ``create_scorer`` calls [`bind`][evalkit.scorer.Step.bind] once per step when the scorer is
    built; the run then calls the returned [`BoundStep`][evalkit.scorer.BoundStep] for every item. A
    scorer with at least one such step is taken to wait on I/O (its runs of one item go to
    concurrent tasks) and to ask a judge (so a judge cache serves it).
    """

    def bind(self, kind: StepName, owner: StepOwner) -> BoundStep:
        """The callable that runs this step as ``owner``'s ``kind`` step.

        Raises:
            ConfigError: The step cannot serve as ``kind`` (e.g. a missing output schema).
        """
        ...

    def judge_for(self, default: Judge | None) -> Judge | None:
        """The judge this step asks in a scorer whose judge is ``default`` (None: no judge).

        What [`Scorer.judges`][evalkit.Scorer.judges] lists, and what a run's preflight checks.
        """
        ...


def _allowed_arguments(kind: StepName) -> tuple[str, ...]:
    return ("run", "results", "score") if kind == "generate_reason" else ("run", "results")


def bind_step(step: object, kind: StepName, owner: StepOwner) -> tuple[BoundStep, bool]:
    """Turn a step definition into a [`BoundStep`][evalkit.scorer.BoundStep] for ``owner``'s
    ``kind`` step.

    A [`Step`][evalkit.scorer.Step] (a prompt step, or your own) binds itself; plain callables
    become function steps.

    Returns:
        The bound step, and whether it always returns an awaitable (a coroutine function, or
        a bound step whose ``__call__`` is one). When False, the value may still be awaitable.
    """
    if isinstance(step, Step):
        bound = step.bind(kind, owner)
        return bound, is_async_callable(bound)
    if callable(step):
        where = f"Scorer {owner.name!r}, {kind} step"
        return bind_callable(step, kind, where), is_async_callable(step)
    raise ConfigError(
        f"Scorer {owner.name!r}: the {kind} step must be a function or a PromptStep, "
        f"not {type(step).__name__}"
    )


def bind_callable(fn: Callable[..., Any], kind: StepName, where: str) -> BoundStep:
    """Bind ``fn`` to be called with the keyword arguments it declares among those of ``kind``.

    Used for function steps and for a prompt step's ``create_prompt``: ``run``, ``results``
    and, for generate_reason only, ``score``. The signature is read once, here.

    Args:
        fn: The function (sync or async).
        kind: The step it serves, which decides the arguments it may ask for.
        where: How error messages name it, e.g. ``"Scorer 'x', analyze step"``.

    Raises:
        ConfigError: A parameter cannot be filled, or the signature cannot be read.
    """
    allowed = _allowed_arguments(kind)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read the function's signature ({exc})") from exc

    wanted: list[str] = []
    for param in signature.parameters.values():
        if param.kind is param.VAR_KEYWORD:
            wanted = list(allowed)
            break
        if param.kind is param.VAR_POSITIONAL:
            continue
        if param.name in allowed and param.kind is not param.POSITIONAL_ONLY:
            wanted.append(param.name)
        elif param.default is param.empty:
            raise ConfigError(
                f"{where}: parameter {param.name!r} cannot be filled; it takes "
                f"keyword arguments chosen from {', '.join(allowed)}"
            )
    return _make_call(fn, tuple(wanted))


def _make_call(fn: Callable[..., Any], wanted: tuple[str, ...]) -> BoundStep:
    # One closure per argument set keeps the per-call cost to a plain keyword call.
    if wanted == ("run",):
        return lambda run, results, score, trace: fn(run=run)
    if wanted == ("results",):
        return lambda run, results, score, trace: fn(results=results)
    if wanted == ("run", "results"):
        return lambda run, results, score, trace: fn(run=run, results=results)
    if not wanted:
        return lambda run, results, score, trace: fn()
    position = {"run": 0, "results": 1, "score": 2}
    picks = tuple((name, position[name]) for name in wanted)

    def call(run: ScorerRun, results: StepResults, score: float | None, trace: RunTrace) -> Any:
        values = (run, results, score)
        return fn(**{name: values[i] for name, i in picks})

    return call
