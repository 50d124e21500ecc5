"""Reading a prebuilt scorer's build function: its docstring's ``Args:`` and its hints as text."""

from __future__ import annotations

import re
import typing
from typing import Any, Literal

_ARG_LINE = re.compile(r"^    (\w+)(?: \([^)]*\))?: (.*)$")


def doc_args(doc: str) -> dict[str, str]:
    """The ``Args:`` section of a Google-style docstring: name → one-paragraph description."""
    args: dict[str, str] = {}
    current: str | None = None
    inside = False
    for line in doc.splitlines():
        if not inside:
            inside = line.strip() == "Args:"
            continue
        if line and not line.startswith(" "):
            break  # the next section
        if match := _ARG_LINE.match(line):
            current = match.group(1)
            args[current] = match.group(2).strip()
        elif current and line.startswith("        "):
            args[current] += " " + line.strip()
    return args


def type_text(hint: Any) -> str:
    if typing.get_origin(hint) is Literal:
        return " | ".join(repr(value) for value in typing.get_args(hint))
    text = hint.__name__ if isinstance(hint, type) else str(hint)
    return text.replace("typing.", "").replace("collections.abc.", "")
