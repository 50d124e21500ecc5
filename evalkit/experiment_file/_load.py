"""Loading an experiment file: read, parse TOML, validate, and locate every problem by line.

A ``check`` given to [`load_experiment_file`][evalkit.load_experiment_file] is reported with the
schema's problems (docs/pages/design/file-checked-in-one-pass.md).
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from evalkit.errors import ExperimentFileError, ExperimentFileIssue
from evalkit.experiment_file._guard import (
    MAX_FILE_BYTES,
    MAX_ISSUES,
    MAX_NESTING,
    check_shape,
    check_size,
)
from evalkit.experiment_file._locate import KeyLocator, KeyPath
from evalkit.experiment_file._parts import FileCheck, FileParts, format_key, salvage
from evalkit.experiment_file._schema import ExperimentConfig
from evalkit.experiment_file._table import describe

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


@dataclass(frozen=True, slots=True)
class ExperimentFile:
    """A loaded, validated experiment file, able to point at its own lines.

    Attributes:
        path: The file's absolute path.
        display_path: The path as the user gave it, used in messages.
        config: The validated content; paths in it are absolute.
    """

    path: Path
    display_path: str
    config: ExperimentConfig
    _locator: KeyLocator = field(repr=False, compare=False)

    @property
    def folder(self) -> Path:
        """The folder holding the file: relative paths and ``module:attribute`` start here."""
        return self.path.parent

    @property
    def parts(self) -> FileParts:
        """The judge, target and every scorer entry, as a ``check`` sees them."""
        config = self.config
        return FileParts(
            self.display_path,
            self.folder,
            config.judge,
            config.target,
            tuple(enumerate(config.scorers)),
            self._locator,
        )

    def line_of(self, key: Sequence[str | int]) -> int | None:
        """The line of ``key`` (``("scorers", 0, "use")``), or of its nearest written parent."""
        return self._locator.line_of(tuple(key))

    def error(self, key: Sequence[str | int], problem: str) -> ExperimentFileError:
        """An error about ``key`` at its line, for checks made after loading.

        For example, the CLI reports a prebuilt scorer name it does not know with
        ``raise experiment_file.error(("scorers", 2, "use"), "unknown scorer 'exact_mach'")``.
        """
        return self.parts.error(key, problem)

    def import_object(self, key: Sequence[str | int], reference: str) -> object:
        """Import ``reference`` (``"module:attribute"``), this file's folder first on ``sys.path``.

        The folder is on ``sys.path`` only while the module loads (see
        `import_reference`).

        Raises:
            ExperimentFileError: The module or attribute is missing or fails to import; the
                message names ``key`` and its line.
        """
        return self.parts.import_object(key, reference)


def load_experiment_file(
    path: str | os.PathLike[str], *, check: FileCheck | None = None
) -> ExperimentFile:
    """Read and validate an experiment file.

    Relative paths in the file resolve against the file's folder; the store defaults to
    ``evalkit.duckdb`` in the working directory; the dataset must exist.

    Args:
        path: The TOML file.
        check: Checks beyond the schema (the CLI's: scorer names, imports, thresholds), run
            on the file's `FileParts` — all of them, or the
            parts that validate when another part breaks the schema — whose problems are
            reported with the schema's, in the same error.

    Returns:
        The validated [`ExperimentFile`][evalkit.ExperimentFile].

    Raises:
        ExperimentFileError: The file cannot be read, is not valid TOML, breaks the schema
            or fails ``check``. Each problem is reported as ``FILE:LINE: key: problem``, all
            of them at once, in file order.
    """
    display = os.fspath(path)
    file = Path(display).resolve()
    try:
        with file.open("rb") as handle:
            # Read one byte past the ceiling: enough to refuse a larger file, or a device.
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ExperimentFileError(
            display, None, None, f"cannot read the file: {exc.strerror or exc}"
        ) from exc
    check_size(display, len(raw))
    try:
        # utf-8-sig: editors on Windows may start the file with a byte-order mark.
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ExperimentFileError(display, line, None, "the file is not UTF-8 text") from exc
    check_shape(display, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(display, text, exc) from exc
    except RecursionError as exc:  # tomllib parses nested values recursively
        raise _too_deep(display, text) from exc
    locator = KeyLocator(text)
    deep = _too_deep_key(data)
    if deep is not None:
        # Later stages (redaction, JSON encoding of the config) walk values recursively too.
        raise ExperimentFileError(
            display,
            locator.line_of(deep),
            format_key(deep),
            f"nested too deeply (keep arrays and tables under {MAX_NESTING} levels)",
        )
    config: ExperimentConfig | None = None
    issues: list[ExperimentFileIssue] = []
    unlisted = 0  # schema problems past MAX_ISSUES: counted, not located
    schema_error: ValidationError | None = None
    try:
        config = ExperimentConfig.model_validate(data, context={"folder": file.parent})
    except ValidationError as exc:
        schema_error = exc
        errors = exc.errors()
        issues = [_issue(error, data, locator, display) for error in errors[:MAX_ISSUES]]
        unlisted = max(0, len(errors) - MAX_ISSUES)
    loaded = ExperimentFile(file, display, config, locator) if config is not None else None
    if check is not None:
        parts = loaded.parts if loaded is not None else salvage(display, file.parent, data, locator)
        issues.extend(check(parts))
    if not issues:
        assert loaded is not None
        return loaded
    raise _all_of(display, issues, unlisted) from schema_error


def _all_of(display: str, issues: list[ExperimentFileIssue], unlisted: int) -> ExperimentFileError:
    """One error listing ``issues`` in file order, at most ``MAX_ISSUES`` of them."""
    issues = sorted(issues, key=lambda issue: (issue.line or 0, issue.key or ""))
    unlisted += max(0, len(issues) - MAX_ISSUES)
    shown = issues[:MAX_ISSUES]
    if unlisted:
        more = f"and {unlisted:,} more problems like these"
        shown.append(ExperimentFileIssue(display, None, None, more))
    return ExperimentFileError.from_issues(shown)


def _too_deep_key(data: dict[str, Any]) -> tuple[str | int, ...] | None:
    """The key path of the first value nested past ``MAX_NESTING`` levels, or None."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if len(path) > MAX_NESTING:
            return path[:4]  # enough to find the line; the rest is just more nesting
        if isinstance(value, dict):
            stack.extend(((*path, key), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend(((*path, index), item) for index, item in enumerate(value))
    return None


def _too_deep(display: str, text: str) -> ExperimentFileError:
    """The error for arrays or inline tables nested past what the parser can follow."""
    depth, line, quote = 0, 1, ""
    for char in text:
        if char == "\n":
            line += 1
        elif quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                break
        elif char in "]}":
            depth -= 1
    else:
        line = 0
    return ExperimentFileError(
        display,
        line or None,
        None,
        f"invalid TOML: arrays or inline tables nested too deeply (keep it under "
        f"{MAX_NESTING} levels)",
    )


def _syntax_error(display: str, text: str, exc: tomllib.TOMLDecodeError) -> ExperimentFileError:
    message = str(exc)
    # Python 3.14's TOMLDecodeError carries its position (msg, pos, lineno, colno); 3.11-3.13
    # only write it into the message, which is parsed below.
    lineno, colno, bare = (getattr(exc, name, None) for name in ("lineno", "colno", "msg"))
    if isinstance(lineno, int) and isinstance(colno, int):
        bare = bare if isinstance(bare, str) else _TOML_POSITION.sub("", message)
        bare = bare.removesuffix(" (at end of document)")
        pos = getattr(exc, "pos", None)
        at_end = isinstance(pos, int) and pos >= len(text)
        where = " (at the end of the file)" if at_end else f" (column {colno})"
        return ExperimentFileError(display, lineno, None, f"invalid TOML: {bare}{where}")
    line: int | None
    match = _TOML_POSITION.search(message)
    if match:
        line = int(match.group(1))
        message = f"{message[: match.start()]} (column {match.group(2)})"
    elif message.endswith("(at end of document)"):
        line = text.count("\n") + 1
        message = message.removesuffix(" (at end of document)") + " (at the end of the file)"
    else:
        line = None
    return ExperimentFileError(display, line, None, f"invalid TOML: {message}")


def _issue(
    error: ErrorDetails, data: dict[str, Any], locator: KeyLocator, display: str
) -> ExperimentFileIssue:
    path = _data_path(error["loc"], data)
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "evalkit":
        path = (*path, *ctx.get("at", ()))
        problem = str(ctx["problem"])
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        path = (*path, "type")
        expected = ctx.get("expected_tags", "'openai' or 'python'").replace(", ", " or ")
        if kind == "union_tag_invalid":
            problem = f"expected {expected}, got {describe(ctx.get('tag'))}"
        else:
            problem = f"required key is missing (expected {expected})"
    elif kind == "missing":
        problem = _missing(path)
    elif kind == "extra_forbidden":
        problem = _unknown(path, data)
    elif kind == "too_short" and path == ("scorers",):
        problem = "at least one [[scorers]] table is required"
    elif kind == "list_type" and path == ("scorers",):
        problem = "expected an array of tables: write each scorer as a [[scorers]] table"
    elif kind in ("dict_type", "model_type", "model_attributes_type"):
        problem = f"expected a table, got {describe(error['input'])}"
    elif kind == "string_too_short":
        problem = "expected a non-empty string"
    else:
        problem = _reworded(error)
    line = locator.line_of(path) if path else None
    if kind == "missing" and len(path) == 1:
        line = None  # a missing top-level table has no line to point at
    return ExperimentFileIssue(display, line, format_key(path) or None, problem)


_TYPE_WORDS = {
    "a valid string": "a string",
    "a valid integer": "an integer",
    "a valid number": "a number",
    "a valid boolean": "true or false",
}
_BOUNDS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


def _reworded(error: ErrorDetails) -> str:
    """Pydantic's message in the file's terms: ``expected an integer, got "16"``."""
    kind = error["type"]
    problem = error["msg"].removeprefix("Value error, ")
    problem = problem.replace("Input should be ", "expected ", 1)
    for words, plain in _TYPE_WORDS.items():
        problem = problem.replace(f"expected {words}", f"expected {plain}", 1)
    if kind in _BOUNDS:
        problem = problem.replace("expected ", "expected a value ", 1)
    shows_input = kind.endswith(("_type", "_parsing")) or kind in _BOUNDS
    if shows_input or kind in ("literal_error", "finite_number", "int_from_float"):
        problem += f", got {describe(error['input'])}"
    return problem


def _data_path(loc: tuple[int | str, ...], data: Any) -> KeyPath:
    """Map a pydantic error location onto the TOML data, dropping union tags."""
    path: list[str | int] = []
    node: Any = data
    for part in loc:
        if isinstance(node, dict) and isinstance(part, str):
            if part in node:
                node = node[part]
            elif node.get("type") == part:
                continue  # the tag pydantic adds inside a discriminated union
            else:
                node = None
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
        path.append(part)
    return tuple(path)


def _missing(path: KeyPath) -> str:
    if path == ("experiment",):
        return "required table [experiment] is missing"
    if path == ("scorers",):
        return "at least one [[scorers]] table is required"
    return "required key is missing"


def _unknown(path: KeyPath, data: dict[str, Any]) -> str:
    allowed = _fields_at(path[:-1], data)
    noun = "table" if len(path) == 1 else "key"
    if not allowed:
        return f"unknown {noun}"
    close = difflib.get_close_matches(str(path[-1]), allowed, n=1, cutoff=0.6)
    if close:
        return f"unknown {noun} (did you mean {close[0]!r}?)"
    return f"unknown {noun}; expected one of: {', '.join(allowed)}"


def _fields_at(path: KeyPath, data: Any) -> list[str]:
    """The keys the schema allows in the table at ``path`` of ``data``."""
    model: type[BaseModel] | None = ExperimentConfig
    node = data
    for part in path:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
            continue
        if model is None or part not in model.model_fields:
            return []
        node = node.get(part) if isinstance(node, dict) else None
        model = _model_in(model.model_fields[part].annotation, node)
    return list(model.model_fields) if model is not None else []


def _model_in(annotation: Any, node: Any) -> type[BaseModel] | None:
    """The model class validating ``node`` under ``annotation`` (through lists and unions)."""
    models: list[type[BaseModel]] = []
    pending = [annotation]
    while pending:
        current = pending.pop()
        if isinstance(current, type) and issubclass(current, BaseModel):
            models.append(current)
        else:
            pending.extend(typing.get_args(current))
    if len(models) == 1:
        return models[0]
    tag = node.get("type") if isinstance(node, dict) else None
    for model in models:
        field_info = model.model_fields.get("type")
        if field_info is not None and tag in typing.get_args(field_info.annotation):
            return model
    return None
