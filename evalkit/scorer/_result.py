"""Values a scorer run passes to its steps and returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit import errors
from evalkit._json import to_jsonable
from evalkit.judge import StepJudgeRecord

StepName = errors.StepName

STEP_ORDER: tuple[StepName, ...] = ("preprocess", "analyze", "generate_score", "generate_reason")
"""The order steps always run in, whatever order they were added in."""


@dataclass(frozen=True, slots=True, weakref_slot=True)
class ScorerRun:
    """What is being scored: passed to steps as ``run``.

    Weakly referenceable, so helpers can remember per-run values without keeping rows alive.
    """

    input: Any
    output: Any
    ground_truth: Any = None
    request_context: Any = None
    run_id: str = ""


@dataclass(frozen=True, slots=True)
class StepResults:
    """What earlier steps produced: passed to steps as ``results``.

    A field is None where that step is absent or has not run yet;
    ``generate_score_step_result`` is set only for generate_reason.
    """

    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    generate_score_step_result: float | None = None


@dataclass(frozen=True, slots=True)
class ScorerRunResult:
    """The outcome of one scorer run.

    On success ``score`` is always a finite float. The same class is used for the snapshot held
    by [`ScorerRunError`][evalkit.errors.ScorerRunError], where ``score`` is None unless
    generate_score completed before the failure (docs/pages/design/one-result-type.md).

    ``judge`` maps a prompt step's name to its [`StepJudgeRecord`][evalkit.StepJudgeRecord]; it is
    empty when the scorer has only function steps.
    """

    run_id: str
    score: float | None
    reason: str | None
    input: Any
    output: Any
    ground_truth: Any
    request_context: Any
    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    preprocess_prompt: str | None = None
    analyze_prompt: str | None = None
    generate_score_prompt: str | None = None
    generate_reason_prompt: str | None = None
    judge: Mapping[str, StepJudgeRecord] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (nested values converted to plain JSON types)."""
        return {
            "run_id": self.run_id,
            "score": self.score,
            "reason": self.reason,
            "input": to_jsonable(self.input),
            "output": to_jsonable(self.output),
            "ground_truth": to_jsonable(self.ground_truth),
            "request_context": to_jsonable(self.request_context),
            "preprocess_step_result": to_jsonable(self.preprocess_step_result),
            "analyze_step_result": to_jsonable(self.analyze_step_result),
            "preprocess_prompt": self.preprocess_prompt,
            "analyze_prompt": self.analyze_prompt,
            "generate_score_prompt": self.generate_score_prompt,
            "generate_reason_prompt": self.generate_reason_prompt,
            "judge": {step: record.to_dict() for step, record in self.judge.items()},
        }
