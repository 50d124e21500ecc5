"""Turning a validated experiment file into what ``run_evals`` takes: scorers, target, gates.

Every problem found here is reported at the key and line of the file that caused it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

from evalkit.errors import ConfigError
from evalkit.experiment_file import ExperimentFile, ScorerEntry
from evalkit.judge import Judge
from evalkit.scorer import Scorer
from evalkit.scorers import get_scorer, scorer_info

Direction = Literal["higher", "lower"]


def _judge(settings: dict[str, Any]) -> Judge | None:
    return Judge(**settings) if settings else None


def _from_reference(
    file: ExperimentFile, index: int, entry: ScorerEntry, judge: Judge | None
) -> Scorer:
    key = ("scorers", index, "use")
    obj = file.import_object(key, entry.use)
    if not isinstance(obj, Scorer):
        if not callable(obj):
            raise file.error(key, f"{entry.use} is {type(obj).__name__}, not a Scorer")
        obj = _call_factory(file, index, entry, obj, judge)
    elif entry.params:
        raise file.error(
            ("scorers", index, "params"),
            f"{entry.use} is a Scorer, not a factory: params apply to prebuilt scorers and "
            "to functions returning a Scorer",
        )
    return obj.with_id(entry.id) if entry.id else obj


def _call_factory(
    file: ExperimentFile,
    index: int,
    entry: ScorerEntry,
    factory: Callable[..., Any],
    judge: Judge | None,
) -> Scorer:
    kwargs = dict(entry.params)
    try:
        accepts_judge = "judge" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        accepts_judge = False
    if accepts_judge and judge is not None:
        kwargs.setdefault("judge", judge)
    try:
        scorer = factory(**kwargs)
    except TypeError as exc:
        raise file.error(("scorers", index, "params"), f"{entry.use}: {exc}") from exc
    if not isinstance(scorer, Scorer):
        raise file.error(
            ("scorers", index, "use"),
            f"{entry.use} returned {type(scorer).__name__}, not a Scorer",
        )
    return scorer


def build_scorers(file: ExperimentFile) -> list[Scorer]:
    """The ``[[scorers]]`` of ``file``: prebuilt by name, or imported ``module:attribute``.

    Each scorer gets the ``[judge]`` settings merged with its own ``judge`` table.

    Raises:
        ExperimentFileError: An unknown scorer, bad params, or a reference that is no scorer.
    """
    config = file.config
    scorers = []
    for index, entry in enumerate(config.scorers):
        judge = _judge(config.judge_settings(entry))
        if entry.is_reference:
            scorers.append(_from_reference(file, index, entry, judge))
            continue
        try:
            scorer_info(entry.use)
        except ConfigError as exc:
            raise file.error(("scorers", index, "use"), str(exc)) from exc
        try:
            scorers.append(get_scorer(entry.use, id=entry.id, judge=judge, **entry.params))
        except ConfigError as exc:
            raise file.error(("scorers", index, "params"), str(exc)) from exc
    for index, entry in enumerate(config.scorers):
        if entry.step_timeout is not None:
            scorers[index] = scorers[index].with_step_timeout(entry.step_timeout)
    seen: dict[str, int] = {}
    for index, scorer in enumerate(scorers):
        if scorer.id in seen:
            raise file.error(
                ("scorers", index),
                f"scorer id {scorer.id!r} is already used by scorers[{seen[scorer.id]}]; "
                "give one of them another id",
            )
        seen[scorer.id] = index
    return scorers


def build_thresholds(file: ExperimentFile, scorers: list[Scorer]) -> dict[str, Any]:
    """``run_evals(thresholds=...)`` from each entry's ``threshold``.

    Raises:
        ExperimentFileError: A lower-is-better scorer has only a minimum (``threshold = 0.1``
            reads as "at least 0.1", surely not what was meant for toxicity).
    """
    thresholds = {}
    for index, (scorer, entry) in enumerate(zip(scorers, file.config.scorers, strict=True)):
        if entry.threshold is None:
            continue
        if not scorer.higher_is_better and entry.threshold.max is None:
            raise file.error(
                ("scorers", index, "threshold"),
                f"{entry.use} is lower-is-better, so a bare number would be a minimum; "
                f"write threshold = {{ max = {entry.threshold.min:g} }}",
            )
        thresholds[scorer.id] = entry.threshold.for_run()
    return thresholds


def build_error_rates(file: ExperimentFile, scorers: list[Scorer]) -> dict[str, float]:
    """``run_evals(max_error_rate=...)``: each entry's own bound, else the experiment's."""
    default = file.config.experiment.max_error_rate
    rates = {}
    for scorer, entry in zip(scorers, file.config.scorers, strict=True):
        rate = entry.max_error_rate if entry.max_error_rate is not None else default
        if rate is not None:
            rates[scorer.id] = rate
    return rates


def build_directions(file: ExperimentFile, scorers: list[Scorer]) -> dict[str, Direction]:
    """Per scorer, which way is better: declared by the scorer, or a ``max``-only threshold."""
    return {
        scorer.id: "lower"
        if not scorer.higher_is_better or entry.direction == "lower"
        else "higher"
        for scorer, entry in zip(scorers, file.config.scorers, strict=True)
    }


def build_target(file: ExperimentFile) -> Any:
    """The ``[target]``: None (the dataset's outputs), a Python callable, or an OpenAI model."""
    target = file.config.target
    if target is None:
        return None
    if target.type == "python":
        obj = file.import_object(("target", "callable"), target.callable)
        if not callable(obj):
            raise file.error(("target", "callable"), f"{target.callable} is not callable")
        return obj
    from evalkit.target import OpenAITarget

    settings = target.model_dump(exclude_none=True, exclude={"type"})
    return OpenAITarget(**settings)
