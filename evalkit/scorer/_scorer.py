"""The scorer: an immutable builder of four optional steps and the pipeline that runs them."""

from __future__ import annotations

import inspect
import math
import numbers
import re
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from evalkit.errors import ConfigError, InvalidScoreError, ScorerRunError
from evalkit.judge._judge import Judge
from evalkit.scorer._result import STEP_ORDER, ScorerRun, ScorerRunResult, StepName, StepResults
from evalkit.scorer._steps import BoundStep, bind_step
from evalkit.scorer._trace import RunTrace

_EMPTY_RESULTS = StepResults()


def slugify(name: str) -> str:
    """``"Quality Scorer"`` → ``"quality-scorer"``: lowercase ASCII words joined by dashes."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _check_score(value: Any) -> float:
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


class Scorer:
    """A scorer: up to four steps run as preprocess → analyze → generate_score → generate_reason.

    Build one with :func:`create_scorer` and the builder methods; each returns a new scorer and
    leaves the original unchanged. Adding a step a scorer already has replaces it in the new
    scorer, which is how a variant is derived from a base scorer.

    ``higher_is_better`` tells comparisons and regression gates which way is good;
    ``metadata`` is a read-only mapping kept with the scorer (prebuilt scorers record their
    registry name, definition version and parameters there).
    """

    __slots__ = (
        "_bound",
        "_steps",
        "description",
        "higher_is_better",
        "id",
        "judge",
        "metadata",
        "name",
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
    ) -> None:
        self.id = id
        self.name = name
        self.description = description
        self.judge = judge
        self.higher_is_better = higher_is_better
        self.metadata: Mapping[str, Any] = MappingProxyType(dict(metadata or {}))
        self._steps: dict[StepName, object] = dict(steps)
        self._bound: dict[StepName, BoundStep] = {
            kind: bind_step(step, kind, self) for kind, step in self._steps.items()
        }

    @property
    def steps(self) -> dict[StepName, object]:
        """The step definitions this scorer has, in execution order."""
        return {kind: self._steps[kind] for kind in STEP_ORDER if kind in self._steps}

    def _with(self, kind: StepName, step: object) -> Scorer:
        return self._copy(id=self.id, steps={**self._steps, kind: step})

    def with_id(self, id: str) -> Scorer:
        """A new scorer identical to this one but recorded under ``id``."""
        if not isinstance(id, str) or not id:
            raise ConfigError(f"scorer {self.name!r}: an id must be a non-empty string")
        return self._copy(id=id, steps=self._steps)

    def _copy(self, *, id: str, steps: Mapping[StepName, object]) -> Scorer:
        return Scorer(
            id=id,
            name=self.name,
            description=self.description,
            judge=self.judge,
            steps=steps,
            higher_is_better=self.higher_is_better,
            metadata=self.metadata,
        )

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
        """
        bound = self._bound
        if "generate_score" not in bound:
            raise ConfigError(f"Scorer {self.name!r} has no generate_score step")
        run = ScorerRun(input, output, ground_truth, request_context, run_id or str(uuid.uuid4()))
        trace = RunTrace()
        completed: list[StepName] = []
        pre = ana = score = reason = None
        results = _EMPTY_RESULTS
        kind: StepName = "preprocess"
        try:
            if (step := bound.get("preprocess")) is not None:
                value = step(run, results, None, trace)
                pre = await value if inspect.isawaitable(value) else value
                completed.append(kind)
                results = StepResults(pre)
            if (step := bound.get("analyze")) is not None:
                kind = "analyze"
                value = step(run, results, None, trace)
                ana = await value if inspect.isawaitable(value) else value
                completed.append(kind)
                results = StepResults(pre, ana)
            kind = "generate_score"
            value = bound["generate_score"](run, results, None, trace)
            score = _check_score(await value if inspect.isawaitable(value) else value)
            completed.append(kind)
            if (step := bound.get("generate_reason")) is not None:
                kind = "generate_reason"
                value = step(run, StepResults(pre, ana, score), score, trace)
                reason = _check_reason(await value if inspect.isawaitable(value) else value)
                completed.append(kind)
        except Exception as exc:
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


def create_scorer(
    name: str,
    description: str = "",
    *,
    id: str | None = None,
    judge: Judge | None = None,
    higher_is_better: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> Scorer:
    """Start building a scorer.

    Args:
        name: Display name, e.g. ``"Quality Scorer"``.
        description: What the scorer measures.
        id: The id the store records; defaults to a slug of ``name`` (``"quality-scorer"``).
        judge: The default judge for the scorer's prompt steps; a step's own judge overrides
            it field by field.
        higher_is_better: False for scores where lower is better (toxicity, error rates), so
            comparisons and regression gates judge them in the right direction.
        metadata: Extra facts kept with the scorer (a read-only copy), e.g. a definition version.

    Returns:
        A scorer with no steps; add them with ``.preprocess``, ``.analyze``,
        ``.generate_score`` (required) and ``.generate_reason``.
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"a scorer needs a non-empty name, got {name!r}")
    scorer_id = slugify(name) if id is None else id
    if not scorer_id or not isinstance(scorer_id, str):
        raise ConfigError(f"scorer {name!r}: cannot derive an id from its name; pass id=...")
    if judge is not None and not isinstance(judge, Judge):
        raise ConfigError(f"scorer {name!r}: judge must be a Judge, not {type(judge).__name__}")
    if not isinstance(higher_is_better, bool):
        raise ConfigError(
            f"scorer {name!r}: higher_is_better must be True or False, got {higher_is_better!r}"
        )
    return Scorer(
        id=scorer_id,
        name=name,
        description=description,
        judge=judge,
        steps={},
        higher_is_better=higher_is_better,
        metadata=metadata,
    )
