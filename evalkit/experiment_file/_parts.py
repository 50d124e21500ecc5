"""The parts of an experiment file that later checks use, even when another part is wrong.

Building scorers, thresholds and the target (the CLI's ``_build.py``) finds problems the
schema cannot: an unknown scorer name, a reference that does not import, a bare threshold on
a lower-is-better scorer. [`load_experiment_file`][evalkit.load_experiment_file] runs such a
check on the `FileParts` of the file — every part of it, or, when the file breaks the
schema somewhere, the ``[judge]``, ``[target]`` and ``[[scorers]]`` entries that validate on
their own — and reports what the check found together with the schema's problems, in one
error, so a file is fixed in one pass rather than one kind of problem per run (see
docs/pages/design/file-checked-in-one-pass.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from evalkit.errors import ConfigError, ExperimentFileError, ExperimentFileIssue
from evalkit.experiment_file._imports import import_reference
from evalkit.experiment_file._judge import JudgeSection, UnsetBaseUrl, judge_settings
from evalkit.experiment_file._locate import KeyLocator
from evalkit.experiment_file._scorers import ScorerEntry
from evalkit.experiment_file._target import TargetSection

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def format_key(path: Sequence[str | int]) -> str:
    """``("scorers", 1, "threshold")`` → ``"scorers[1].threshold"``; odd keys are quoted."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = part if _BARE_KEY.fullmatch(part) else json.dumps(part, ensure_ascii=False)
            text += f".{name}" if text else name
    return text


@dataclass(frozen=True, slots=True)
class FileParts:
    """The judge, target and scorer entries of an experiment file, able to locate problems.

    Attributes:
        display_path: The path as the user gave it, used in messages.
        folder: The folder holding the file (``module:attribute`` references start here).
        judge: ``[judge]``, or None (absent, or wrong: then reported by the schema).
        target: ``[target]``, or None (absent, or wrong).
        scorers: ``(index, entry)`` of each ``[[scorers]]`` entry that is valid, in order;
            the index is the entry's position in the file.
    """

    display_path: str
    folder: Path
    judge: JudgeSection | None
    target: Any
    scorers: tuple[tuple[int, ScorerEntry], ...]
    _locator: KeyLocator = field(repr=False, compare=False)

    def judge_settings(self, entry: ScorerEntry) -> dict[str, Any]:
        """The judge fields for ``entry``: ``[judge]`` overridden field by field by its own,
        ``base_url_env`` read into ``base_url``.

        Raises:
            ExperimentFileError: ``base_url_env`` names an unset variable (at its line).
        """
        try:
            return judge_settings(self.judge, entry.judge)
        except UnsetBaseUrl as exc:
            index = next((i for i, e in self.scorers if e is entry), None)
            key: tuple[str | int, ...] = ("judge", "base_url_env")
            if exc.own and index is not None:
                key = ("scorers", index, *key)
            raise self.error(key, str(exc)) from None

    def line_of(self, key: Sequence[str | int]) -> int | None:
        """The line of ``key`` (``("scorers", 0, "use")``), or of its nearest written parent."""
        return self._locator.line_of(tuple(key))

    def error(self, key: Sequence[str | int], problem: str) -> ExperimentFileError:
        """An error about ``key`` at its line (``FILE:LINE: key: problem``)."""
        return ExperimentFileError(self.display_path, self.line_of(key), format_key(key), problem)

    def issue(self, key: Sequence[str | int], problem: str) -> ExperimentFileIssue:
        """A problem of ``key`` at its line, for a check's list."""
        return ExperimentFileIssue(self.display_path, self.line_of(key), format_key(key), problem)

    def import_object(self, key: Sequence[str | int], reference: str) -> object:
        """Import ``reference`` (``"module:attribute"``), this file's folder first on ``sys.path``.

        Raises:
            ExperimentFileError: The module or attribute is missing or fails to import; the
                message names ``key`` and its line.
        """
        try:
            return import_reference(reference, folder=self.folder)
        except ConfigError as exc:
            raise self.error(key, f"cannot import {reference!r}: {exc}") from exc


FileCheck = Callable[[FileParts], Sequence[ExperimentFileIssue]]
"""A check of a file's parts: the problems it found (none when the parts are usable)."""


def salvage(display: str, folder: Path, data: dict[str, Any], locator: KeyLocator) -> FileParts:
    """The parts of a file that broke the schema which validate on their own."""
    context = {"folder": folder}
    judge = _valid(TypeAdapter(JudgeSection), data.get("judge"), context)
    target = _valid(TypeAdapter(TargetSection), data.get("target"), context)
    entries = data.get("scorers")
    scorers: list[tuple[int, ScorerEntry]] = []
    if isinstance(entries, list):
        adapter = TypeAdapter(ScorerEntry)
        seen: set[str] = set()
        for index, raw in enumerate(entries):
            entry = _valid(adapter, raw, context)
            if entry is None:
                continue
            # The schema reports an entry repeating an earlier one's id (ExperimentConfig).
            key = entry.id if entry.id is not None else f"use:{entry.use}"
            if key not in seen:
                seen.add(key)
                scorers.append((index, entry))
    return FileParts(display, folder, judge, target, tuple(scorers), locator)


def _valid(adapter: TypeAdapter[Any], value: Any, context: dict[str, Any]) -> Any:
    if value is None:
        return None
    try:
        return adapter.validate_python(value, context=context)
    except ValidationError:
        return None  # the schema's own problems report it
