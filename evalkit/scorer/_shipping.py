"""How a scorer travels to worker processes (``executor="process"``/``"ray"``).

A scorer pickles either as its parts (its steps, judge and settings, bound again on arrival)
or, when it was given a *recipe* ([`Scorer.shipped_as`][evalkit.Scorer.shipped_as]), as that recipe:
a module-level function and plain arguments that build it again in the worker. Prebuilt scorers ship
as their registry name and parameters, so what their steps hold (compiled patterns, C-extension
functions, pydantic models reading context variables) never has to pickle. See
docs/pages/design/scorers-ship-as-recipes.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalkit.judge import Judge
    from evalkit.scorer._scorer import Scorer

#: A function building a scorer and its arguments.
Recipe = tuple[Callable[..., "Scorer"], tuple[Any, ...]]


def restore(fields: dict[str, Any]) -> Scorer:
    """A scorer from its parts (what `Scorer.__reduce__` gives without a recipe)."""
    from evalkit.scorer._scorer import Scorer

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
