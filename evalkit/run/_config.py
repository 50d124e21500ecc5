"""Describing a run for the configuration stored with its experiment."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit._callables import callable_name
from evalkit._json import to_jsonable
from evalkit._redaction import redact
from evalkit.dataset import Dataset
from evalkit.scorer import Scorer
from evalkit.target import Target


def evalkit_version() -> str:
    """The installed evalkit version (recorded with each experiment)."""
    try:
        return importlib.metadata.version("evalkit")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def describe(obj: Any) -> Any:
    """A JSON-ready description of a step, judge or target for the stored config.

    Uses the object's ``describe()`` when it has one; a function is described by its
    qualified name; dataclasses and pydantic models by their fields; anything else by its type
    only, so an object's text (which might hold a secret) is never stored by accident.
    """
    if obj is None:
        return None
    method = getattr(obj, "describe", None)
    if callable(method):
        return to_jsonable(method())
    if inspect.isroutine(obj) or isinstance(obj, type):
        return {"type": "function", "name": callable_name(obj)}
    if (dataclasses.is_dataclass(obj) and not isinstance(obj, type)) or hasattr(obj, "model_dump"):
        return {"type": type(obj).__qualname__, **to_jsonable(obj)}
    return {"type": f"{type(obj).__module__}.{type(obj).__qualname__}"}


def describe_scorer(scorer: Scorer) -> dict[str, Any]:
    """Id, name, description, default judge and steps of a scorer."""
    return {
        "id": scorer.id,
        "name": scorer.name,
        "description": scorer.description,
        "judge": describe(scorer.judge),
        "steps": {kind: describe(step) for kind, step in scorer.steps.items()},
    }


def build_config(
    *,
    dataset: Dataset,
    target: Target,
    scorers: Sequence[Scorer],
    thresholds: Mapping[str, Any],
    options: Mapping[str, Any],
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The run's configuration as stored with the experiment, secrets redacted."""
    config = {
        "evalkit_version": evalkit_version(),
        "dataset": {
            "source": dataset.source,
            "rows": dataset.num_rows,
            "columns": dataset.columns.role_columns(),
        },
        "target": describe(target),
        "scorers": [describe_scorer(s) for s in scorers],
        "thresholds": {sid: t.to_dict() for sid, t in thresholds.items()},
        **options,
        "metadata": to_jsonable(metadata) if metadata else None,
    }
    redacted: dict[str, Any] = redact(to_jsonable(config))
    return redacted
