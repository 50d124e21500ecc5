"""Rules of the local server written as JSON: ``python -m evalkit.testing.server --rules FILE``.

A rules file is a JSON list whose entries mirror [`Rule`][evalkit.testing.Rule]::

    [
      {"match": "capital of France", "reply": {"score": 1}},
      {"match": {"regex": "explain", "ignore_case": true}, "reply": "Because."},
      {"match": "flaky", "fault": {"http": 500}, "times": 1},
      {"match": "slow", "fault": {"rate_limit": 2}, "probability": 0.5, "latency": 0.1},
      {"match": "odd", "usage": {"completion_tokens": 1e20}}
    ]

A fault is one of ``{"http": STATUS}`` (with optional ``message``, ``retry_after``, ``code``
and ``headers``), ``{"rate_limit": SECONDS}`` (``null``: no ``Retry-After``),
``{"hang": SECONDS}`` (``null``: forever), ``"malformed_body"``, ``"disconnect"`` or ``"hang"``.
``usage`` is an object whose entries replace those of the reply's computed ``usage``, sent as
written (as [`Rule`][evalkit.testing.Rule]'s ``usage``), to play a provider's odd counts.
Every problem is a `RulesFileError` naming the file, the rule's index and the key:
``replies.json: rules[3].fault.http: expected an HTTP status from 400 to 599, got 700``.
Written by hand rather than with a library: docs/pages/design/hand-written-pieces.md.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Callable
from typing import Any, get_args

from evalkit.errors import ConfigError
from evalkit.testing._rules import Fault, ResponseFormatKind, Rule

#: Largest rules file read (a scripted reply per item of a big dataset stays far below).
MAX_RULES_FILE_BYTES = 64 * 1024 * 1024

_RULE_KEYS = (
    "match",
    "reply",
    "refusal",
    "finish_reason",
    "fault",
    "response_format",
    "times",
    "probability",
    "latency",
    "usage",
)
_MATCH_KEYS = ("regex", "ignore_case")
_FAULT_KINDS = ("http", "rate_limit", "hang", "malformed_body", "disconnect")
_FAULT_OPTIONS = {
    "http": ("message", "retry_after", "code", "headers"),
    "rate_limit": ("headers",),
    "hang": (),
    "malformed_body": (),
    "disconnect": (),
}
_BARE_FAULTS = ("malformed_body", "disconnect", "hang")
_FORMATS: tuple[str, ...] = get_args(ResponseFormatKind)


class RulesFileError(ConfigError):
    """A rules file of the local server cannot be read or holds a wrong rule.

    Attributes:
        path: The file as the user named it.
        problem: What is wrong, in words.
        index: The 0-based index of the rule concerned in the file's list, if any.
        key: The key concerned inside that rule (``fault.http``), if any.
        line: The 1-based line of a JSON syntax error, if any.
    """

    def __init__(
        self,
        path: str,
        problem: str,
        *,
        index: int | None = None,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        self.path, self.problem, self.index, self.key, self.line = path, problem, index, key, line
        where = path if line is None else f"{path}:{line}"
        # Located like the experiment file's problems: ``rules[3].fault.http``.
        located = ".".join(
            part for part in (f"rules[{index}]" if index is not None else None, key) if part
        )
        super().__init__(f"{where}: {located}: {problem}" if located else f"{where}: {problem}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary naming the file, rule, key and line."""
        where = {"path": self.path, "index": self.index, "key": self.key, "line": self.line}
        return {**super().to_dict(), **where}


class _Problem(Exception):
    """A wrong value inside one rule: the key path and what is wrong (located by the caller)."""

    def __init__(self, key: str | None, problem: str) -> None:
        super().__init__(problem)
        self.key, self.problem = key, problem


class _Object(dict[str, Any]):
    """A JSON object that remembers the keys it held more than once (json keeps the last)."""

    repeated: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    found = _Object(pairs)
    if len(found) < len(pairs):
        keys = [key for key, _ in pairs]
        found.repeated = tuple(sorted({key for key in keys if keys.count(key) > 1}))
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_rules(path: str | os.PathLike[str]) -> list[Rule]:
    """The rules a JSON rules file scripts, in order (see the module docstring for the form).

    Args:
        path: The file: a JSON list of rule objects.

    Raises:
        RulesFileError: The file cannot be read, is not JSON, is not a list of rules, or a
            rule holds an unknown key or a wrong value; the message names the file, the
            rule's index and the key.
    """
    shown = os.fspath(path)
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_RULES_FILE_BYTES + 1)
    except OSError as exc:
        raise RulesFileError(shown, f"cannot read the file: {exc.strerror or exc}") from None
    if len(raw) > MAX_RULES_FILE_BYTES:
        raise RulesFileError(shown, f"larger than {MAX_RULES_FILE_BYTES // 2**20} MiB")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RulesFileError(shown, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise RulesFileError(
            shown, f"not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno
        ) from None
    except (ValueError, RecursionError) as exc:
        raise RulesFileError(shown, f"not valid JSON: {exc}") from None
    return rules_from_json(data, source=shown)


def rules_from_json(data: Any, *, source: str = "rules") -> list[Rule]:
    """The rules of an already decoded rules file (a list of objects).

    Args:
        data: The decoded JSON.
        source: How messages name where ``data`` came from (a file name).

    Raises:
        RulesFileError: ``data`` is not a list of rules, or a rule is wrong.
    """
    if not isinstance(data, list):
        raise RulesFileError(source, f"expected a JSON list of rules, got {_kind(data)}")
    rules = []
    for index, entry in enumerate(data):
        try:
            rules.append(_rule(entry))
        except _Problem as exc:
            raise RulesFileError(source, exc.problem, index=index, key=exc.key) from None
    return rules


def _rule(entry: Any) -> Rule:
    if not isinstance(entry, dict):
        example = '{"match": "...", "reply": ...}'
        raise _Problem(None, f"expected an object such as {example}, got {_kind(entry)}")
    _check_keys(entry, _RULE_KEYS, None)
    answers = [key for key in ("reply", "refusal", "fault") if entry.get(key) is not None]
    if len(answers) > 1:
        both = " and ".join(answers)
        raise _Problem(answers[1], f"a rule answers with a reply, a refusal or a fault, not {both}")
    return Rule(
        match=_match(entry.get("match")),
        reply=_optional(entry, "reply", _reply),
        refusal=_optional(entry, "refusal", lambda v: _string(v, "refusal")),
        finish_reason=_optional(entry, "finish_reason", _finish_reason) or "stop",
        fault=_optional(entry, "fault", _fault),
        response_format=_optional(entry, "response_format", _format),
        times=_optional(entry, "times", _times),
        probability=_number(entry, "probability", low=0.0, high=1.0, default=1.0),
        latency=_optional(entry, "latency", lambda v: _seconds(v, None)),
        usage=_optional(entry, "usage", _usage),
    )


def _check_keys(table: dict[str, Any], known: tuple[str, ...], parent: str | None) -> None:
    def key(name: str) -> str:
        return f"{parent}.{name}" if parent else name

    for name in getattr(table, "repeated", ()):
        raise _Problem(key(name), "appears twice in the object (JSON would keep the last)")
    for name in table:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _Problem(key(name), f"unknown key{hint}; known: {', '.join(known)}")


def _optional(entry: dict[str, Any], key: str, parse: Callable[[Any], Any]) -> Any:
    value = entry.get(key)
    if value is None:
        return None
    try:
        return parse(value)
    except _Problem as exc:
        raise _Problem(key if exc.key is None else f"{key}.{exc.key}", exc.problem) from None


def _match(value: Any) -> str | re.Pattern[str] | None:
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise _Problem("match", f'expected a string or {{"regex": "..."}}, got {_kind(value)}')
    _check_keys(value, _MATCH_KEYS, "match")
    pattern = value.get("regex")
    if not isinstance(pattern, str):
        raise _Problem("match.regex", f"expected the regex as a string, got {_kind(pattern)}")
    ignore_case = value.get("ignore_case", False)
    if not isinstance(ignore_case, bool):
        raise _Problem("match.ignore_case", f"expected true or false, got {_kind(ignore_case)}")
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise _Problem("match.regex", f"not a valid regex: {exc}") from None


def _reply(value: Any) -> str | dict[str, Any] | list[Any]:
    if isinstance(value, str | dict | list):
        return value
    raise _Problem(
        None, f"expected a string (sent as is) or a JSON object or list, got {_kind(value)}"
    )


def _usage(value: Any) -> dict[str, Any]:
    # Any JSON value is allowed inside: scripting a provider's absurd counts is the point.
    if not isinstance(value, dict):
        raise _Problem(
            None,
            f'expected an object of usage entries such as {{"completion_tokens": 12}},'
            f" got {_kind(value)}",
        )
    for name in getattr(value, "repeated", ()):
        raise _Problem(name, "appears twice in the object (JSON would keep the last)")
    return dict(value)


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise _Problem(None, f"expected the {what} as a string, got {_kind(value)}")
    return value


def _finish_reason(value: Any) -> str:
    text = _string(value, "finish reason")
    if not text:
        raise _Problem(None, 'expected a finish reason such as "stop" or "length", got ""')
    return text


def _format(value: Any) -> str:
    if value not in _FORMATS:
        raise _Problem(None, f"expected one of {', '.join(_FORMATS)}, got {_kind(value)}")
    return str(value)


def _times(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Problem(None, f"expected a whole number of times, 0 or more, got {_kind(value)}")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _number(entry: dict[str, Any], key: str, *, low: float, high: float, default: float) -> float:
    value = entry.get(key)
    if value is None:
        return default
    if not _is_number(value) or not low <= value <= high:
        raise _Problem(key, f"expected a number from {low:g} to {high:g}, got {_kind(value)}")
    return float(value)


def _seconds(value: Any, key: str | None) -> float:
    if not _is_number(value) or value < 0:
        raise _Problem(key, f"expected seconds, 0 or more, got {_kind(value)}")
    return float(value)


def _fault(value: Any) -> Fault:
    if isinstance(value, str):
        if value not in _BARE_FAULTS:
            bare = ", ".join(f'"{name}"' for name in _BARE_FAULTS)
            raise _Problem(
                None, f'expected {bare} or an object such as {{"http": 500}}, got {_kind(value)}'
            )
        value = {value: None}
    if not isinstance(value, dict):
        raise _Problem(None, f'expected an object such as {{"http": 500}}, got {_kind(value)}')
    kinds = [key for key in value if key in _FAULT_KINDS]
    if len(kinds) != 1:
        have = " and ".join(kinds) or "none"
        raise _Problem(
            None, f"expected exactly one kind of fault ({', '.join(_FAULT_KINDS)}), got {have}"
        )
    kind = kinds[0]
    _check_keys(value, (kind, *_FAULT_OPTIONS[kind]), None)
    argument = value[kind]
    if kind == "http":
        return _http_fault(value, argument)
    if kind == "rate_limit":
        retry_after = None if argument is None else _seconds(argument, kind)
        return Fault.rate_limit(retry_after, headers=_headers(value.get("headers")))
    if kind == "hang":
        return Fault.hang(None if argument is None else _seconds(argument, kind))
    if argument is not None and argument is not True:
        raise _Problem(kind, f"expected true (or the bare string {kind!r}), got {_kind(argument)}")
    return Fault.malformed_body() if kind == "malformed_body" else Fault.disconnect()


def _http_fault(value: dict[str, Any], status: Any) -> Fault:
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise _Problem("http", f"expected an HTTP status from 400 to 599, got {_kind(status)}")
    message = value.get("message", "")
    if not isinstance(message, str):
        raise _Problem("message", f"expected a string, got {_kind(message)}")
    code = value.get("code")
    if code is not None and not isinstance(code, str):
        raise _Problem("code", f'expected a string such as "insufficient_quota", got {_kind(code)}')
    retry = value.get("retry_after")
    retry_after = None if retry is None else _seconds(retry, "retry_after")
    headers = _headers(value.get("headers"))
    return Fault.http(status, message, retry_after=retry_after, headers=headers, code=code)


def _headers(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _Problem(
            "headers", f"expected an object of header names to strings, got {_kind(value)}"
        )
    return dict(value)


def _kind(value: Any) -> str:
    """A short description of a JSON value for messages: ``"x"``, ``7``, ``an object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return json.dumps(text, ensure_ascii=False)
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return repr(value)
