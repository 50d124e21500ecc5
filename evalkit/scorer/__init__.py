"""Scorers: build them with [`create_scorer`][evalkit.create_scorer], run them with ``await
scorer.run(...)``.

A step is a function, or a [`Step`][evalkit.scorer.Step]: an object that binds itself to its scorer
(as [`PromptStep`][evalkit.PromptStep] does) into a [`BoundStep`][evalkit.scorer.BoundStep] the run
calls for every item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.scorer._create import create_scorer as create_scorer
    from evalkit.scorer._limits import StepTimeoutError as StepTimeoutError
    from evalkit.scorer._prompt import OutputSchema as OutputSchema
    from evalkit.scorer._prompt import PromptStep as PromptStep
    from evalkit.scorer._result import STEP_ORDER as STEP_ORDER
    from evalkit.scorer._result import ScorerRun as ScorerRun
    from evalkit.scorer._result import ScorerRunResult as ScorerRunResult
    from evalkit.scorer._result import StepName as StepName
    from evalkit.scorer._result import StepResults as StepResults
    from evalkit.scorer._scorer import Scorer as Scorer
    from evalkit.scorer._steps import BoundStep as BoundStep
    from evalkit.scorer._steps import Step as Step
    from evalkit.scorer._steps import StepOwner as StepOwner
    from evalkit.scorer._trace import RunTrace as RunTrace

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())
