"""Turning a validated experiment file into what ``run_evals`` takes: scorers, target, gates.

Every problem found here is reported at the key and line of the file that caused it, and
all of them at once: `FileBuilder` is the ``check`` `run_experiment_file` passes to
[`load_experiment_file`][evalkit.load_experiment_file], so unknown scorers, failed imports and
bad thresholds are listed with the schema's problems in one error
(docs/pages/design/file-checked-in-one-pass.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Literal

from evalkit.errors import ConfigError, ExperimentFileError, ExperimentFileIssue
from evalkit.experiment_file._load import ExperimentFile
from evalkit.experiment_file._parts import FileParts
from evalkit.experiment_file._scorers import ScorerEntry
from evalkit.judge import Judge
from evalkit.scorer import Scorer
from evalkit.scorers import get_scorer, scorer_info

Direction = Literal["higher", "lower"]


class FileBuilder:
    """A ``check`` for [`load_experiment_file`][evalkit.load_experiment_file] that builds too.

    Called with the file's parts, it builds every scorer entry it can and the target, checks
    the thresholds, and returns every problem it met; after a load that raised nothing,
    `scorers`, `thresholds` and `target` hold what was built.
    """

    def __init__(self) -> None:
        self.scorers: list[Scorer] = []
        self.thresholds: dict[str, Any] = {}
        self.target: Any = None

    def __call__(self, parts: FileParts) -> list[ExperimentFileIssue]:
        issues: list[ExperimentFileIssue] = []
        built = _scorers(parts, issues)
        self.thresholds = _thresholds(parts, built, issues)
        self.scorers = list(built.values())
        try:
            self.target = build_target_of(parts)
        except ExperimentFileError as exc:
            issues.extend(exc.issues)
        return issues


def _judge(settings: dict[str, Any]) -> Judge | None:
    return Judge(**settings) if settings else None


def _from_reference(
    parts: FileParts, index: int, entry: ScorerEntry, judge: Judge | None
) -> Scorer:
    key = ("scorers", index, "use")
    obj = parts.import_object(key, entry.use)
    if not isinstance(obj, Scorer):
        if not callable(obj):
            raise parts.error(key, f"{entry.use} is {type(obj).__name__}, not a Scorer")
        obj = _call_factory(parts, index, entry, obj, judge)
    elif entry.params:
        raise parts.error(
            ("scorers", index, "params"),
            f"{entry.use} is a Scorer, not a factory: params apply to prebuilt scorers and "
            "to functions returning a Scorer",
        )
    return obj.with_id(entry.id) if entry.id else obj


def _call_factory(
    parts: FileParts,
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
        raise parts.error(("scorers", index, "params"), f"{entry.use}: {exc}") from exc
    if not isinstance(scorer, Scorer):
        raise parts.error(
            ("scorers", index, "use"),
            f"{entry.use} returned {type(scorer).__name__}, not a Scorer",
        )
    return scorer


def _scorer(parts: FileParts, index: int, entry: ScorerEntry) -> Scorer:
    judge = _judge(parts.judge_settings(entry))
    if entry.is_reference:
        scorer = _from_reference(parts, index, entry, judge)
    else:
        try:
            scorer_info(entry.use)
        except ConfigError as exc:
            raise parts.error(("scorers", index, "use"), str(exc)) from exc
        try:
            scorer = get_scorer(entry.use, id=entry.id, judge=judge, **entry.params)
        except ConfigError as exc:
            raise parts.error(("scorers", index, "params"), str(exc)) from exc
    if entry.step_timeout is not None:
        scorer = scorer.with_step_timeout(entry.step_timeout)
    return scorer


def _scorers(parts: FileParts, issues: list[ExperimentFileIssue]) -> dict[int, Scorer]:
    """The scorers built, by entry index; the problems of the others go to ``issues``."""
    built: dict[int, Scorer] = {}
    for index, entry in parts.scorers:
        try:
            built[index] = _scorer(parts, index, entry)
        except ExperimentFileError as exc:
            # Once each: scorers sharing [judge] share its problems (an unset base_url_env).
            issues.extend(issue for issue in exc.issues if issue not in issues)
    seen: dict[str, int] = {}
    for index, scorer in built.items():
        if scorer.id in seen:
            issues.append(
                parts.issue(
                    ("scorers", index),
                    f"scorer id {scorer.id!r} is already used by scorers[{seen[scorer.id]}]; "
                    "give one of them another id",
                )
            )
        else:
            seen[scorer.id] = index
    return built


def _thresholds(
    parts: FileParts, built: dict[int, Scorer], issues: list[ExperimentFileIssue]
) -> dict[str, Any]:
    thresholds = {}
    for index, entry in parts.scorers:
        scorer = built.get(index)
        if scorer is None or entry.threshold is None:
            continue
        if not scorer.higher_is_better and entry.threshold.max is None:
            issues.append(
                parts.issue(
                    ("scorers", index, "threshold"),
                    f"{entry.use} is lower-is-better, so a bare number would be a minimum; "
                    f"write threshold = {{ max = {entry.threshold.min:g} }}",
                )
            )
            continue
        thresholds[scorer.id] = entry.threshold.for_run()
    return thresholds


def _raise_any(issues: Sequence[ExperimentFileIssue]) -> None:
    if issues:
        raise ExperimentFileError.from_issues(
            sorted(issues, key=lambda issue: (issue.line or 0, issue.key or ""))
        )


def build_scorers(file: ExperimentFile) -> list[Scorer]:
    """The ``[[scorers]]`` of ``file``: prebuilt by name, or imported ``module:attribute``.

    Each scorer gets the ``[judge]`` settings merged with its own ``judge`` table.

    Raises:
        ExperimentFileError: Unknown scorers, bad params, references that are no scorer,
            repeated ids: all of them.
    """
    issues: list[ExperimentFileIssue] = []
    built = _scorers(file.parts, issues)
    _raise_any(issues)
    return list(built.values())


def build_thresholds(file: ExperimentFile, scorers: list[Scorer]) -> dict[str, Any]:
    """``run_evals(thresholds=...)`` from each entry's ``threshold``.

    Raises:
        ExperimentFileError: A lower-is-better scorer has only a minimum (``threshold = 0.1``
            reads as "at least 0.1", surely not what was meant for toxicity).
    """
    issues: list[ExperimentFileIssue] = []
    thresholds = _thresholds(file.parts, dict(enumerate(scorers)), issues)
    _raise_any(issues)
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


def build_min_agreement(file: ExperimentFile, scorers: list[Scorer]) -> dict[str, dict[str, float]]:
    """``run_evals(min_agreement=...)``: each entry's agreement gates, by scorer id."""
    return {
        scorer.id: dict(entry.min_agreement)
        for scorer, entry in zip(scorers, file.config.scorers, strict=True)
        if entry.min_agreement
    }


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
    return build_target_of(file.parts)


def build_target_of(parts: FileParts) -> Any:
    """`build_target` from a file's parts."""
    target = parts.target
    if target is None:
        return None
    if target.type == "python":
        obj = parts.import_object(("target", "callable"), target.callable)
        if not callable(obj):
            raise parts.error(("target", "callable"), f"{target.callable} is not callable")
        return obj
    from evalkit.target import OpenAITarget

    settings = target.model_dump(exclude_none=True, exclude={"type"})
    return OpenAITarget(**settings)
