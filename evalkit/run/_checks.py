"""Checking a run's scorers and target, and what its scorers' steps need."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from evalkit.dataset._dataset import Dataset
from evalkit.errors import ConfigError, DatasetError
from evalkit.scorer._scorer import Scorer
from evalkit.target._dataset_output import DatasetOutput
from evalkit.target._protocol import Target


def check_scorers(scorers: Any) -> tuple[Scorer, ...]:
    """At least one scorer, each with a generate_score step, ids unique."""
    if isinstance(scorers, Scorer):
        scorers = [scorers]
    if not isinstance(scorers, Sequence) or not scorers:
        raise ConfigError("scorers: give a non-empty list of scorers")
    seen: set[str] = set()
    for i, scorer in enumerate(scorers):
        if not isinstance(scorer, Scorer):
            raise ConfigError(
                f"scorers[{i}] is a {type(scorer).__name__}, not a Scorer (build one with "
                "create_scorer)"
            )
        if "generate_score" not in scorer.steps:
            raise ConfigError(f"Scorer {scorer.name!r} has no generate_score step")
        if scorer.id in seen:
            raise ConfigError(f"scorers: two scorers have the id {scorer.id!r}; pass id=...")
        seen.add(scorer.id)
    return tuple(scorers)


def check_target(target: Target, dataset: Dataset) -> None:
    """Without a target the dataset must carry the outputs."""
    if isinstance(target, DatasetOutput) and not dataset.has_output:
        raise DatasetError(
            dataset.source,
            "no output column and no target: add an 'output' column or pass target=...",
            column="output",
        )


def asks_judge(scorer: Scorer) -> bool:
    """Whether a scorer has prompt steps (so a judge cache can serve it)."""
    return any(hasattr(step, "_bind_step") for step in scorer.steps.values())


def may_suspend(scorer: Scorer) -> bool:
    """Whether a scorer can wait on I/O (async function or prompt steps).

    Such scorers of one item run as concurrent tasks; the others run one after the other
    inline, which is far cheaper than a task each.
    """
    for step in scorer.steps.values():
        if hasattr(step, "_bind_step"):
            return True
        call = None if inspect.isroutine(step) else type(step).__call__
        if inspect.iscoroutinefunction(step) or inspect.iscoroutinefunction(call):
            return True
    return False
