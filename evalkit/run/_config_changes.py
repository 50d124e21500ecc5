"""What differs between a stored experiment's configuration and the run about to resume it.

The two configurations are compared field by field, walking into nested settings so that a
difference is named by its own field (``scorer 'polite' judge model: 'm' -> 'another-model'``).
Each difference is either something that changes results (the dataset and its content
fingerprint, the target, ``limit``, ``repeats``, the set of scorers, a scorer's judge, steps or
definition version), which refuses the resume unless forced, or where a judge or the target is
reached (its ``base_url``, ``api_key_env`` or prepared ``client``), which resumes with a note.
See docs/pages/how-to/resume.md#the-fingerprint-is-checked-first.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit._json import to_jsonable
from evalkit.dataset import Dataset
from evalkit.errors import ConfigError
from evalkit.scorer import Scorer
from evalkit.store._stored import StoredExperiment

#: Config keys whose change makes earlier scores incomparable with new ones.
_COMPARED = ("dataset", "target", "limit", "repeats")


@dataclass(frozen=True, slots=True)
class Changes:
    """How the run about to resume an experiment differs from the stored one.

    Attributes:
        results: What changes results (dataset, target, limit, repeats, a scorer's judge model,
            prompt or sampling settings, its steps or definition version), one line per field:
            the resume is refused unless forced.
        moved: Where a judge or the target is reached (its ``base_url``, ``api_key_env`` or
            prepared ``client``), one line per endpoint: the resume goes on, with a note.
    """

    results: list[str]
    moved: list[str]


#: The fields of a judge's or a target's description that say where it is reached, not what it
#: answers: a moved endpoint resumes (docs/pages/how-to/resume.md#the-fingerprint-is-checked-first).
_LOCATION = ("base_url", "api_key_env", "client")

#: Recorded with a judge but not part of what it does: which fields were set explicitly (the
#: effective values are compared).
_IGNORED = ("_explicit",)

_ABSENT = object()


def _shown(value: Any) -> str:
    return "(not set)" if value is _ABSENT else repr(value)


def _diff(where: str, before: Any, after: Any, out: list[tuple[str, str, Any, Any]]) -> None:
    """Append ``(where, field, before, after)`` for each field that differs, walking into dicts
    so that a change is named by its own field (``scorer 'polite' judge model``)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in [*before, *(k for k in after if k not in before)]:
            if key in _IGNORED:
                continue
            old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
            if old == new:
                continue
            if isinstance(old, Mapping) and isinstance(new, Mapping):
                _diff(f"{where} {key}".strip(), old, new, out)
            else:
                out.append((where, str(key), old, new))
        return
    if before != after:
        out.append((where, "", before, after))


def _sort(found: list[tuple[str, str, Any, Any]], changes: Changes) -> None:
    """Split field changes into what changes results and where a judge or target is reached."""
    # One line per endpoint change: scorers sharing the file's [judge] moved together.
    moves: dict[tuple[str, str], list[str]] = {}
    for where, key, before, after in found:
        parent = where.rsplit(" ", 1)[-1] if where else ""
        if key in _LOCATION and parent in ("judge", "target"):
            if key == "base_url":
                change = f"moved: {_endpoint(before)} -> {_endpoint(after)}"
            else:
                change = f"{key}: {_shown(before)} -> {_shown(after)}"
            owner = "target" if where == "target" else f"judge of {where[: -len(' judge')]}"
            moves.setdefault((key, change), []).append(owner)
        else:
            name = f"{where} {key}".strip()
            changes.results.append(f"{name}: {_shown(before)} -> {_shown(after)}")
    for (_, change), owners in moves.items():
        changes.moved.append(f"{', '.join(owners)} {change}")


def _endpoint(url: Any) -> str:
    return "the default endpoint" if url is None or url is _ABSENT else str(url)


def fingerprint_changes(
    stored: StoredExperiment,
    *,
    config: Mapping[str, Any],
    scorers: Sequence[Scorer],
    dataset: Dataset,
    limit: int | None,
) -> Changes:
    """What differs between the stored experiment and the run about to resume it."""
    found: list[tuple[str, str, Any, Any]] = []
    old = stored.config
    for key in _COMPARED:
        _diff(key, old.get(key), config.get(key), found)
    changes = Changes([], [])
    old_scorers = {s.get("id"): s for s in old.get("scorers", [])}
    new_scorers = {s["id"]: s for s in config.get("scorers", [])}
    for sid in sorted(old_scorers.keys() - new_scorers.keys()):
        changes.results.append(f"scorer {sid!r} removed")
    for sid in sorted(new_scorers.keys() - old_scorers.keys()):
        changes.results.append(f"scorer {sid!r} added")
    by_id = {s.id: s for s in scorers}
    for sid in sorted(old_scorers.keys() & new_scorers.keys()):
        before, after = old_scorers[sid], new_scorers[sid]
        for part in ("judge", "steps"):
            _diff(f"scorer {sid!r} {part}", before.get(part), after.get(part), found)
        meta = to_jsonable(by_id[sid].metadata) if by_id[sid].metadata else None
        _diff(f"scorer {sid!r} metadata (definition/prompt version)",
              stored.scorer_metadata.get(sid), meta, found)  # fmt: skip
    _sort(found, changes)
    if stored.dataset_fingerprint is not None:
        # Only a pass that read every row recorded one; a killed first pass did not, and the
        # resumed pass records it at its end. Computing it here costs one extra read.
        batches = dataset.batches(limit=limit)
        for _ in batches:
            pass
        current = batches.fingerprint
        if current != stored.dataset_fingerprint:
            changes.results.append(
                f"dataset content fingerprint: {stored.dataset_fingerprint} -> {current}"
            )
    return changes


def check_changes(stored: StoredExperiment, changes: Changes, *, force: bool) -> None:
    """Refuse a resume whose results would differ (unless ``force``); note a moved endpoint.

    Raises:
        ConfigError: Something that changes results differs, without ``force``; the message
            names each differing field on a line of its own, and ``--force``.
    """
    if changes.results and not force:
        listed = "".join(f"\n  {line}" for line in changes.results)
        raise ConfigError(
            f"experiment {stored.id} ({stored.name}) was run with another configuration;"
            f" refusing to resume. What differs:{listed}\n"
            "--force (force=True) resumes it anyway, recording the new configuration"
        )
    for line in changes.moved:
        warnings.warn(f"evalkit: {line}; resuming {stored.id}", RuntimeWarning, stacklevel=2)
