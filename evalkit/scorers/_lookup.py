"""Finding a prebuilt scorer by name: its family module is imported on first use, which
registers it (`evalkit/scorers/_registry.py`); ``evalkit scorers`` lists every family's.

Lookup and registration are apart so that no import cycle runs through the families: a family
imports the registry to register its scorers, this module imports the families by name, and
the registry imports neither (a scorer shipped to a worker is rebuilt by its own factory, by
reference: docs/pages/design/scorers-ship-as-recipes.md).
"""

from __future__ import annotations

import importlib
from typing import Any

from evalkit.errors import ConfigError
from evalkit.scorer import Scorer
from evalkit.scorers._families import FAMILY_OF
from evalkit.scorers._registry import REGISTRY, Entry, ScorerInfo, ScorerKind, did_you_mean


def _entry(name: str) -> Entry:
    if isinstance(name, str) and name not in REGISTRY and name in FAMILY_OF:
        importlib.import_module(FAMILY_OF[name])  # registers the family's scorers
    entry = REGISTRY.get(name) if isinstance(name, str) else None
    if entry is None:
        known = sorted({*REGISTRY, *FAMILY_OF})
        snake = str(name).strip().lower().replace("-", "_").replace(" ", "_")
        hint = f" (did you mean {snake!r}?)" if snake in known else did_you_mean(snake, known)
        raise ConfigError(
            f"unknown prebuilt scorer {name!r}{hint}; list them with `evalkit scorers`"
        )
    return entry


def get_scorer(name: str, *, id: str | None = None, judge: Any = None, **params: Any) -> Scorer:
    """A new prebuilt scorer by registry name, e.g. ``get_scorer("exact_match", ignore_case=True)``.

    Args:
        name: The snake_case registry name (see [`list_scorers`][evalkit.list_scorers]).
        id: The id its results are recorded under; defaults to the registry name
            (``"exact_match"``), the same id whether built here, by its factory or by an
            experiment file's ``use = "exact_match"``.
        judge: The judge of an LLM-judged scorer (else the scorer has none and its prompt steps
            need one of their own). Code-based scorers ignore it, so a caller can pass an
            experiment's default judge to every scorer.
        **params: The scorer's parameters (see [`scorer_info`][evalkit.scorer_info]).

    Raises:
        ConfigError: Unknown name (the message lists close matches), unknown or ill-typed
            parameter (naming the scorer and the parameter), or a missing optional dependency
            group (naming the ``pip install`` to run).
    """
    entry = _entry(name)
    if entry.info.kind == "code":
        return entry.factory(id=id, **params)
    return entry.factory(id=id, judge=judge, **params)


def scorer_info(name: str) -> ScorerInfo:
    """The metadata of the prebuilt scorer ``name``; [`ConfigError`][evalkit.errors.ConfigError]
    when unknown."""
    return _entry(name).info


def list_scorers(*, kind: ScorerKind | None = None) -> list[ScorerInfo]:
    """The metadata of every prebuilt scorer (or those of one ``kind``), sorted by name."""
    for module in sorted(set(FAMILY_OF.values())):
        importlib.import_module(module)
    return [
        entry.info
        for name, entry in sorted(REGISTRY.items())
        if kind is None or entry.info.kind == kind
    ]
