"""Refusing an experiment file too large or too deeply nested before anything parses it.

``tomllib`` and the line locator (``_locate.py``) build a key path per table header and
dotted key, so a ``[a.a.a…]`` header of 32,000 segments cost 20 s and 4.2 GB before the
depth check that follows parsing could refuse it. `check_shape` bounds the file's size
and, in one linear scan of the raw text, its nesting (arrays, inline tables, and dotted
segments of keys and headers), so whatever reaches the parser is small and shallow. See
docs/pages/design/ceilings-on-inputs.md.
"""

from __future__ import annotations

import re

from evalkit.errors import ExperimentFileError

#: Largest experiment file read: real ones are a few KB; 1 MiB of any shape loads in well
#: under a second (docs/pages/benchmarks.md, X1).
MAX_FILE_BYTES = 1 << 20

#: Nesting a file may use: far past any real experiment, well within what the parser handles.
MAX_NESTING = 100

#: Tokens (keys, values, brackets, punctuation, string escapes) a file may hold: the sample
#: experiments have 140 to 240; parsing, locating and validating cost 10 to 50 µs each.
MAX_TOKENS = 20_000

#: Problems one error lists; past them it says how many more there are.
MAX_ISSUES = 100

# The scan refuses at twice the limit: it over-estimates a little, and below this the exact
# check after parsing names the key that nests too deeply.
_SCAN_LIMIT = 2 * MAX_NESTING

# One token at a time: strings (skipped whole, so their brackets and dots do not count),
# comments, brackets, dots, and runs of everything else. A quote that opens no complete
# string ends the scan: the text is invalid TOML there, and tomllib says so.
# Strings are unrolled (a character class repeated, a group only at a quote or backslash):
# linear in time and memory on a long string, where a group per character was not.
_STRING = "|".join(
    (
        r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""(?:""?)?',
        r"'''.*?'''(?:''?)?",
        r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"',
        r"'[^'\n]*'",
    )
)
_KEY_CHARS = r"A-Za-z0-9_\- \t"
_TOKEN = re.compile(
    rf"(?P<string>{_STRING})|(?P<open>[\[{{])|(?P<close>[\]}}])|(?P<dot>\.)"
    rf"|(?P<key>[{_KEY_CHARS}]+)|(?P<comment>#[^\n]*)|(?P<quote>[\"'])"
    rf"|(?P<other>[^\"'#\[\]{{}}.{_KEY_CHARS}]+)",
    re.S,
)


def check_size(display: str, size: int) -> None:
    """Refuse a file over `MAX_FILE_BYTES`, before reading it.

    Raises:
        ExperimentFileError: The file is too large.
    """
    if size > MAX_FILE_BYTES:
        raise ExperimentFileError(
            display,
            None,
            None,
            f"the file is larger than {MAX_FILE_BYTES:,} bytes (1 MiB), the most an "
            "experiment file may be",
        )


def check_shape(display: str, text: str) -> None:
    """Refuse text of more than `MAX_TOKENS` tokens, or nesting far past
    `MAX_NESTING` levels, in one linear scan that stops at the first excess.

    The depth counted is the open arrays and tables plus the dots of the dotted key or header
    being read, an over-estimate by a level or two of what the parser builds, never less.

    Raises:
        ExperimentFileError: The text holds too many tokens or nests too deeply (at the line
            where it got so).
    """
    brackets = dots = tokens = 0
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        tokens += 1
        if kind == "dot":
            dots += 1
        elif kind == "open":
            brackets, dots = brackets + 1, 0
        elif kind == "close":
            brackets, dots = max(brackets - 1, 0), 0
        elif kind == "other":
            dots = 0
        elif kind == "quote":
            return
        elif kind == "string" and match.group()[0] == '"':
            # The parser decodes each escape of a basic string at the cost of a token.
            tokens += match.group().count("\\")
        if tokens > MAX_TOKENS:
            raise _error(
                display,
                text,
                match.start(),
                f"more than {MAX_TOKENS:,} tokens (keys, "
                "values, brackets, escapes); an experiment file may hold at most that many",
            )
        if brackets + dots > _SCAN_LIMIT:
            raise _error(
                display,
                text,
                match.start(),
                "nested too deeply (keep arrays, "
                f"tables and dotted keys under {MAX_NESTING} levels)",
            )


def _error(display: str, text: str, pos: int, problem: str) -> ExperimentFileError:
    return ExperimentFileError(display, text.count("\n", 0, pos) + 1, None, problem)
