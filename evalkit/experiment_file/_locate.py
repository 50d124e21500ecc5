"""Which line of a TOML document each key path comes from.

``tomllib`` gives values without positions, so error messages could not name a line. This
module scans the same text once more, after ``tomllib`` accepted it, and records the line of
every key, table header and array element under its full path: ``("experiment", "name")``,
``("scorers", 1, "threshold", "min")`` for the second ``[[scorers]]`` table's inline threshold,
``("scorers", 1, "judge")`` for a ``[scorers.judge]`` table following it. Only what a path
lookup needs is parsed: strings are skipped over, not decoded, except in quoted keys. See
docs/pages/design/experiment-file-lines.md.
"""

from __future__ import annotations

import contextlib
import re
import tomllib

KeyPath = tuple[str | int, ...]
"""A path to a value: table keys (str) and array indices (int)."""

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_STRINGS = (
    # Unrolled (a character class repeated, a group only at a quote or backslash): linear in
    # time and memory on a long string, where a group per character was not.
    ('"""', re.compile(r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""(?:""?)?', re.S)),
    ("'''", re.compile(r"'''.*?'''(?:''?)?", re.S)),
    ('"', re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"')),
    ("'", re.compile(r"'[^'\n]*'")),
)
_SCALAR = re.compile(r"[^,\]}#\r\n]*")


class _ScanError(Exception):
    """The text is not what valid TOML looks like here; stop scanning, keep what was found."""


class KeyLocator:
    """Lines of the key paths of one TOML document.

    Built from text that ``tomllib`` parsed successfully. Should the scan meet something it
    does not understand, it stops there and keeps the lines found so far: a missing line
    makes a message less precise, never wrong.
    """

    __slots__ = ("_lines",)

    def __init__(self, text: str) -> None:
        scanner = _Scanner(text)
        with contextlib.suppress(_ScanError, IndexError):
            scanner.document()
        self._lines = scanner.lines

    def line_of(self, path: KeyPath) -> int | None:
        """The line of ``path``, or of its nearest ancestor found in the text; None if none."""
        for end in range(len(path), 0, -1):
            line = self._lines.get(path[:end])
            if line is not None:
                return line
        return None

    def exact_line(self, path: KeyPath) -> int | None:
        """The line of ``path`` itself, or None when the text does not write it."""
        return self._lines.get(path)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.lines: dict[KeyPath, int] = {}
        # Concrete path of each array of tables -> index of its latest [[...]] table.
        self.arrays: dict[KeyPath, int] = {}

    def document(self) -> None:
        table: KeyPath = ()
        while True:
            self.skip(newlines=True)
            if self.pos >= len(self.text):
                return
            line = self.line
            if self.text.startswith("[[", self.pos):
                self.advance(2)
                keys = self.key()
                self.expect("]]")
                array = (*self.concrete(keys[:-1]), keys[-1])
                index = self.arrays.get(array, -1) + 1
                self.arrays[array] = index
                table = (*array, index)
                self.record(table, line)
            elif self.text.startswith("[", self.pos):
                self.advance(1)
                table = self.concrete(self.key())
                self.expect("]")
                self.record(table, line)
            else:
                self.key_value(table)

    def key_value(self, table: KeyPath) -> None:
        line = self.line
        path = (*table, *self.key())
        self.expect("=")
        self.record(path, line)
        self.value(path)

    def concrete(self, keys: KeyPath) -> KeyPath:
        # In a header, a key naming an array of tables means its latest table.
        path: KeyPath = ()
        for key in keys:
            path = (*path, key)
            if path in self.arrays:
                path = (*path, self.arrays[path])
        return path

    def record(self, path: KeyPath, line: int) -> None:
        for end in range(1, len(path) + 1):
            self.lines.setdefault(path[:end], line)

    def key(self) -> KeyPath:
        parts: list[str | int] = []
        while True:
            self.skip(newlines=False)
            char = self.text[self.pos]
            if char in "\"'":
                match = _STRINGS[2 if char == '"' else 3][1].match(self.text, self.pos)
                if match is None:
                    raise _ScanError
                parts.append(tomllib.loads(f"k = {match.group()}")["k"])
                self.advance(match.end() - self.pos)
            else:
                match = _BARE_KEY.match(self.text, self.pos)
                if match is None:
                    raise _ScanError
                parts.append(match.group())
                self.advance(match.end() - self.pos)
            self.skip(newlines=False)
            if not self.text.startswith(".", self.pos):
                return tuple(parts)
            self.advance(1)

    def value(self, path: KeyPath) -> None:
        self.skip(newlines=False)
        char = self.text[self.pos]
        if char == "[":
            self.advance(1)
            index = 0
            while True:
                self.skip(newlines=True)
                if self.text.startswith("]", self.pos):
                    self.advance(1)
                    return
                self.record((*path, index), self.line)
                self.value((*path, index))
                self.skip(newlines=True)
                if self.text.startswith(",", self.pos):
                    self.advance(1)
                index += 1
        elif char == "{":
            self.advance(1)
            while True:
                self.skip(newlines=True)
                if self.text.startswith("}", self.pos):
                    self.advance(1)
                    return
                self.key_value(path)
                self.skip(newlines=True)
                if self.text.startswith(",", self.pos):
                    self.advance(1)
        else:
            for opener, pattern in _STRINGS:
                if self.text.startswith(opener, self.pos):
                    match = pattern.match(self.text, self.pos)
                    break
            else:
                match = _SCALAR.match(self.text, self.pos)
            if match is None or match.end() == self.pos:
                raise _ScanError
            self.advance(match.end() - self.pos)

    def expect(self, token: str) -> None:
        self.skip(newlines=False)
        if not self.text.startswith(token, self.pos):
            raise _ScanError
        self.advance(len(token))
        self.skip(newlines=False)

    def skip(self, *, newlines: bool) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t" or (newlines and char in "\r\n"):
                self.advance(1)
            elif char == "#":
                end = text.find("\n", self.pos)
                self.advance((len(text) if end < 0 else end) - self.pos)
            else:
                return

    def advance(self, count: int) -> None:
        self.line += self.text.count("\n", self.pos, self.pos + count)
        self.pos += count
