"""The scorer: an immutable builder of four optional steps and the pipeline that runs them.

A scorer travels to worker processes (``executor="process"``/``"ray"``) either as its parts
(its steps, judge and settings, bound again on arrival) or, when it was given a *recipe*
([`Scorer.shipped_as`][evalkit.Scorer.shipped_as]), as that recipe: a module-level function and
plain arguments that build it again in the worker. Prebuilt scorers ship as their registry name
and parameters, so what their steps hold (compiled patterns, C-extension functions, pydantic
models reading context variables) never has to pickle. See
docs/pages/design/scorers-ship-as-recipes.md.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from evalkit.errors import ConfigError, InvalidScoreError, ScorerRunError
from evalkit.judge import Judge
from evalkit.scorer._ids import new_run_id
from evalkit.scorer._limits import (
    CLOCK,
    DEFAULT_STEP_TIMEOUT,
    StepInterrupted,
    StepStopped,
    StepTimeoutError,
    await_cancellation,
    check_step_timeout,
)
from evalkit.scorer._result import STEP_ORDER, ScorerRun, ScorerRunResult, StepName, StepResults
from evalkit.scorer._steps import BoundStep, Step, bind_step
from evalkit.scorer._trace import RunTrace

_EMPTY_RESULTS = StepResults()

#: A function building a scorer and its arguments.
Recipe = tuple[Callable[..., "Scorer"], tuple[Any, ...]]


def restore(fields: dict[str, Any]) -> Scorer:
    """A scorer from its parts (what `Scorer.__reduce__` gives without a recipe)."""
    return Scorer(**fields)


def replay(recipe: Recipe, id: str, judge: Judge | None, step_timeout: float | None) -> Scorer:
    """The scorer ``recipe`` builds, with the id, judge and step limit the shipped one had."""
    build, args = recipe
    scorer = build(*args)
    if scorer.id != id:
        scorer = scorer.with_id(id)
    if scorer.judge != judge:
        scorer = scorer.with_judge(judge)
    if scorer.step_timeout != step_timeout:
        scorer = scorer.with_step_timeout(step_timeout)
    return scorer


def _check_score(value: Any) -> float:
    if type(value) is float:  # the usual case, without the numbers.Real ABC check
        if math.isfinite(value):
            return value
        raise InvalidScoreError(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidScoreError(value)
    score = float(value)
    if not math.isfinite(score):
        raise InvalidScoreError(value)
    return score


def _check_reason(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"generate_reason returned {type(value).__name__}, not text (str or None)")


_NEVER_AWAITABLE = frozenset({float, int, str, dict, list, tuple, bool, type(None)})
_INF = math.inf


class Scorer:
    """A scorer: up to four steps run as preprocess → analyze → generate_score → generate_reason.

    Build one with [`create_scorer`][evalkit.create_scorer] and the builder methods; each returns a
    new scorer and leaves the original unchanged. Adding a step a scorer already has replaces it in
    the new scorer, which is how a variant is derived from a base scorer. A scorer is immutable: its
    steps are bound to its name and judge when it is built, so ``id``, ``name``, ``judge`` and
    the other attributes are read-only; [`with_id`][evalkit.Scorer.with_id] and
    [`with_judge`][evalkit.Scorer.with_judge] derive variants.

    ``higher_is_better`` tells comparisons and regression gates which way is good;
    ``metadata`` is a read-only mapping kept with the scorer (prebuilt scorers record their
    registry name, definition version and parameters there; see
    docs/pages/design/direction-and-identity-on-the-scorer.md). ``step_timeout`` is how long
    one sync step may run in ``run_evals`` before that pair fails (None: no limit).
    """

    __slots__ = (
        "_description",
        "_has_score",
        "_higher_is_better",
        "_id",
        "_judge",
        "_metadata",
        "_name",
        "_plan",
        "_recipe",
        "_step_timeout",
        "_steps",
    )

    def __init__(
        self,
        *,
        id: str,
        name: str,
        description: str,
        judge: Judge | None,
        steps: Mapping[StepName, object],
        higher_is_better: bool = True,
        metadata: Mapping[str, Any] | None = None,
        step_timeout: float | None = DEFAULT_STEP_TIMEOUT,
    ) -> None:
        self._step_timeout = check_step_timeout(step_timeout, f"scorer {name!r}")
        self._id = id
        self._name = name
        self._description = description
        self._judge = judge
        self._higher_is_better = higher_is_better
        self._metadata: Mapping[str, Any] = MappingProxyType(dict(metadata or {}))
        self._steps: dict[StepName, object] = dict(steps)
        # The steps in run order, bound once: (kind, call, whether it always returns an
        # awaitable).
        self._plan: tuple[tuple[StepName, BoundStep, bool], ...] = tuple(
            (kind, *bind_step(self._steps[kind], kind, self))
            for kind in STEP_ORDER
            if kind in self._steps
        )
        self._has_score = "generate_score" in self._steps
        self._recipe: Recipe | None = None

    @property
    def id(self) -> str:
        """The id the store records (a slug of the name unless given)."""
        return self._id

    @property
    def name(self) -> str:
        """The display name."""
        return self._name

    @property
    def description(self) -> str:
        """What the scorer measures."""
        return self._description

    @property
    def judge(self) -> Judge | None:
        """The default judge of the scorer's prompt steps."""
        return self._judge

    @property
    def judges(self) -> tuple[Judge, ...]:
        """The judges this scorer's prompt steps ask, in step order, each once.

        A step's judge is its own laid over the scorer's
        ([`Judge.with_defaults`][evalkit.Judge.with_defaults]); a step that would have no model is
        left out (it fails when it runs). This is what ``run_evals`` checks before a run (see
        [`evalkit.judge.preflight`][evalkit.judge.preflight]).
        """
        found: list[Judge] = []
        for step in self.steps.values():
            judge = step.judge_for(self._judge) if isinstance(step, Step) else None
            if isinstance(judge, Judge) and judge.model is not None and judge not in found:
                found.append(judge)
        return tuple(found)

    @property
    def higher_is_better(self) -> bool:
        """Whether a higher score is better (False for toxicity, error rates)."""
        return self._higher_is_better

    @property
    def step_timeout(self) -> float | None:
        """Seconds one sync step may run in ``run_evals`` before the pair fails (None: none)."""
        return None if self._step_timeout == _INF else self._step_timeout

    @property
    def metadata(self) -> Mapping[str, Any]:
        """Extra facts kept with the scorer, read-only."""
        return self._metadata

    @property
    def steps(self) -> dict[StepName, object]:
        """The step definitions this scorer has, in execution order."""
        return {kind: self._steps[kind] for kind in STEP_ORDER if kind in self._steps}

    def _with(self, kind: StepName, step: object) -> Scorer:
        # New steps: the recipe no longer builds this scorer, so it is not kept.
        copy = self._copy(steps={**self._steps, kind: step})
        copy._recipe = None
        return copy

    def shipped_as(self, build: Any, *args: Any) -> Scorer:
        """This scorer, pickled as ``build(*args)`` (a module-level function rebuilding it
        from plain data) followed by the id, judge and step limit this one has; see
        docs/pages/design/scorers-ship-as-recipes.md. Deriving new steps drops the recipe."""
        copy = self._copy()
        copy._recipe = (build, args)
        return copy

    def __reduce__(self) -> tuple[Any, ...]:
        if self._recipe is not None:
            return replay, (self._recipe, self._id, self._judge, self.step_timeout)
        fields = self._fields()
        return restore, (fields,)

    def with_id(self, id: str) -> Scorer:
        """A new scorer identical to this one but recorded under ``id``."""
        if not isinstance(id, str) or not id:
            raise ConfigError(f"scorer {self.name!r}: an id must be a non-empty string")
        return self._copy(id=id)

    def with_judge(self, judge: Judge | None) -> Scorer:
        """A new scorer identical to this one but whose prompt steps default to ``judge``.

        The steps are bound again, so every prompt step without a judge of its own uses
        ``judge``, and a step judge's unset fields come from it.
        """
        if judge is not None and not isinstance(judge, Judge):
            raise ConfigError(
                f"scorer {self.name!r}: judge must be a Judge, not {type(judge).__name__}"
            )
        return self._copy(judge=judge)

    def with_step_timeout(self, seconds: float | None) -> Scorer:
        """A new scorer identical to this one whose sync steps may each run ``seconds``
        (None: no limit) before the pair fails with
        [`StepTimeoutError`][evalkit.StepTimeoutError]."""
        return self._copy(step_timeout=seconds)

    def _copy(self, **changes: Any) -> Scorer:
        copy = Scorer(**{**self._fields(), **changes})
        copy._recipe = self._recipe  # replay() applies a new id, judge or step limit
        return copy

    def _fields(self) -> dict[str, Any]:
        return {
            "id": self._id,
            "name": self._name,
            "description": self._description,
            "judge": self._judge,
            "steps": self._steps,
            "higher_is_better": self._higher_is_better,
            "metadata": self._metadata,
            "step_timeout": self.step_timeout,
        }

    def preprocess(self, step: object) -> Scorer:
        """A new scorer with ``step`` as its preprocess step (extract or transform the data)."""
        return self._with("preprocess", step)

    def analyze(self, step: object) -> Scorer:
        """A new scorer with ``step`` as its analyze step (judge the data)."""
        return self._with("analyze", step)

    def generate_score(self, step: object) -> Scorer:
        """A new scorer with ``step`` as its generate_score step (the required numeric score)."""
        return self._with("generate_score", step)

    def generate_reason(self, step: object) -> Scorer:
        """A new scorer with ``step`` as its generate_reason step (explain the score)."""
        return self._with("generate_reason", step)

    def __repr__(self) -> str:
        return f"Scorer(id={self.id!r}, steps={list(self.steps)})"

    async def run(
        self,
        *,
        input: Any,
        output: Any,
        ground_truth: Any = None,
        request_context: Any = None,
        run_id: str | None = None,
    ) -> ScorerRunResult:
        """Score one input/output pair.

        Args:
            input: What the application was given.
            output: What it answered.
            ground_truth: The expected answer, if any.
            request_context: Extra context of the request, if any.
            run_id: An id for this run; a new UUID when None.

        Returns:
            The score, the reason and every intermediate result.

        Raises:
            ConfigError: The scorer has no generate_score step.
            ScorerRunError: A step failed; the error holds what the finished steps produced.
                A sync step past ``step_timeout`` (enforced inside ``run_evals``) fails with a
                [`StepTimeoutError`][evalkit.StepTimeoutError] as the cause.
        """
        if not self._has_score:
            raise ConfigError(f"Scorer {self.name!r} has no generate_score step")
        run = ScorerRun(input, output, ground_truth, request_context, run_id or new_run_id())
        trace = RunTrace()
        completed: list[StepName] = []
        pre = ana = score = reason = None
        results = _EMPTY_RESULTS
        kind: StepName = "preprocess"
        # A sync step is on the run's clock while it runs, never while anything is awaited
        # (see evalkit/scorer/_limits.py and docs/pages/design/step-time-limits.md).
        clock, limit = CLOCK.get(), self._step_timeout
        clock.run, clock.limit = run, limit
        try:
            try:
                for kind, call, awaits in self._plan:
                    if awaits:
                        clock.step = None
                        value = await call(run, results, score, trace)
                        clock.run, clock.limit = run, limit
                    else:
                        clock.step = kind
                        value = call(run, results, score, trace)
                        if type(value) not in _NEVER_AWAITABLE and inspect.isawaitable(value):
                            clock.step = None
                            value = await value
                            clock.run, clock.limit = run, limit
                    if kind == "preprocess":
                        pre = value
                        results = StepResults(pre)
                    elif kind == "analyze":
                        ana = value
                        results = StepResults(pre, ana)
                    elif kind == "generate_score":
                        score = _check_score(value)
                        results = StepResults(pre, ana, score)
                    else:
                        reason = _check_reason(value)
                    completed.append(kind)
                late = clock.late
                if late is not None and late[0] is run:
                    # The watchdog found a step of this run late but could not stop it.
                    clock.late = None
                    kind = late[1]
                    raise StepStopped
            finally:
                clock.step = None
        except (Exception, StepStopped) as caught:
            exc: BaseException = caught
            if isinstance(caught, StepInterrupted):
                await await_cancellation()
                exc = KeyboardInterrupt(f"step {kind} of scorer {self.name!r} was interrupted")
            elif isinstance(caught, StepStopped):
                # Keep where the step was stopped: the cause's traceback shows what hung.
                exc = StepTimeoutError(self.name, kind, limit).with_traceback(caught.__traceback__)
            snapshot = None
            if completed or trace.executions:
                snapshot = self._result(run, score, None, pre, ana, trace)
            raise ScorerRunError(
                scorer_id=self.id,
                scorer_name=self.name,
                failed_step=kind,
                completed_steps=tuple(completed),
                cause=exc,
                result=snapshot,
            ) from exc
        return self._result(run, score, reason, pre, ana, trace)

    @staticmethod
    def _result(
        run: ScorerRun,
        score: float | None,
        reason: str | None,
        pre: Any,
        ana: Any,
        trace: RunTrace,
    ) -> ScorerRunResult:
        prompts = trace.prompts
        return ScorerRunResult(
            run_id=run.run_id,
            score=score,
            reason=reason,
            input=run.input,
            output=run.output,
            ground_truth=run.ground_truth,
            request_context=run.request_context,
            preprocess_step_result=pre,
            analyze_step_result=ana,
            preprocess_prompt=prompts.get("preprocess"),
            analyze_prompt=prompts.get("analyze"),
            generate_score_prompt=prompts.get("generate_score"),
            generate_reason_prompt=prompts.get("generate_reason"),
            judge=trace.judge() if trace.executions else {},
        )
