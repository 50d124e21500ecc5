"""Making user and model text safe to show: control characters become visible escapes.

A model's output, an item id or an experiment name may hold anything: ``ESC`` sequences that
recolour or rewrite a terminal when a report or ``evalkit sql`` prints them, ``NUL`` and other
C0/C1 characters that XML forbids (a JUnit file holding one is rejected by CI), bidirectional
overrides and marks that make text read differently from what it is ("Trojan Source"), and
lone surrogates that cannot even be written as UTF-8. Each is shown as a visible escape
(``\\x1b``, ``\\u202e``) instead; tabs and newlines are kept, for the callers that lay out
lines. `visible_json` does the same to JSON text with JSON's own escapes, so the value
it holds is unchanged. The CLI applies them to its streams: see
docs/pages/design/cli-output-streams.md.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff\ufeff\ufffe\uffff]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with control, bidi-override and unencodable characters shown as escapes.

    ``\\r\\n`` becomes ``\\n`` first; tabs and newlines are kept.
    """
    if text.isprintable():  # the common case: nothing to do
        return text
    return _UNSAFE.sub(_escape, text.replace("\r\n", "\n"))


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def visible_json(text: str) -> str:
    """JSON ``text`` with the characters `visible` escapes written as ``\\uXXXX``.

    In JSON as `json.dumps` writes it, such characters stand only inside strings, where
    the escape means the very character: the JSON value is unchanged, and the text is safe to
    print.
    """
    if text.isprintable():
        return text
    return _UNSAFE.sub(_json_escape, text)
