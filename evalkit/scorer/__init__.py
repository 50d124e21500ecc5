"""Scorers: build them with :func:`create_scorer`, run them with ``await scorer.run(...)``."""

from __future__ import annotations

from evalkit.scorer._prompt import PromptStep
from evalkit.scorer._result import STEP_ORDER, ScorerRun, ScorerRunResult, StepName, StepResults
from evalkit.scorer._scorer import Scorer, create_scorer, slugify

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
