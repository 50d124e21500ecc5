"""Scorers: build them with [`create_scorer`][evalkit.create_scorer], run them with ``await
scorer.run(...)``.

A step is a function, or a [`Step`][evalkit.scorer.Step]: an object that binds itself to its scorer
(as [`PromptStep`][evalkit.PromptStep] does) into a [`BoundStep`][evalkit.scorer.BoundStep] the run
calls for every item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.scorer._create import create_scorer
    from evalkit.scorer._limits import StepTimeoutError, StepWatchdog
    from evalkit.scorer._prompt import OutputSchema, PromptStep
    from evalkit.scorer._result import STEP_ORDER, ScorerRun, ScorerRunResult, StepName, StepResults
    from evalkit.scorer._scorer import Scorer
    from evalkit.scorer._steps import BoundStep, Step, StepOwner, bind_callable
    from evalkit.scorer._trace import RunTrace

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.scorer._limits": (
            "StepTimeoutError",
            "StepWatchdog",
        ),
        "evalkit.scorer._prompt": (
            "OutputSchema",
            "PromptStep",
        ),
        "evalkit.scorer._result": (
            "STEP_ORDER",
            "ScorerRun",
            "ScorerRunResult",
            "StepName",
            "StepResults",
        ),
        "evalkit.scorer._create": ("create_scorer",),
        "evalkit.scorer._scorer": ("Scorer",),
        "evalkit.scorer._steps": (
            "BoundStep",
            "Step",
            "StepOwner",
            "bind_callable",
        ),
        "evalkit.scorer._trace": ("RunTrace",),
    },
)

__all__ = [
    "STEP_ORDER",
    "BoundStep",
    "OutputSchema",
    "PromptStep",
    "RunTrace",
    "Scorer",
    "ScorerRun",
    "ScorerRunResult",
    "Step",
    "StepName",
    "StepOwner",
    "StepResults",
    "StepTimeoutError",
    "StepWatchdog",
    "bind_callable",
    "create_scorer",
]
