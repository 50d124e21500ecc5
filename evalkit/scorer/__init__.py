"""Scorers: build them with :func:`create_scorer`, run them with ``await scorer.run(...)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.scorer._prompt import PromptStep
    from evalkit.scorer._result import STEP_ORDER, ScorerRun, ScorerRunResult, StepName, StepResults
    from evalkit.scorer._scorer import Scorer, create_scorer, slugify

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.scorer._prompt": ("PromptStep",),
        "evalkit.scorer._result": (
            "STEP_ORDER",
            "ScorerRun",
            "ScorerRunResult",
            "StepName",
            "StepResults",
        ),
        "evalkit.scorer._scorer": (
            "Scorer",
            "create_scorer",
            "slugify",
        ),
    },
)

__all__ = [
    "STEP_ORDER",
    "PromptStep",
    "Scorer",
    "ScorerRun",
    "ScorerRunResult",
    "StepName",
    "StepResults",
    "create_scorer",
    "slugify",
]
