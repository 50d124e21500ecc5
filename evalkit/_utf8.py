"""Text every store can hold: Python strings are UTF-16-like and may carry a lone surrogate
(``"\\ud800"``: a reply whose JSON escapes half a character, text cut in the middle of a pair,
bytes decoded with ``surrogateescape``), which UTF-8, so Arrow and DuckDB, cannot encode.
Such a value is stored with U+FFFD in its place instead of failing its whole batch."""

from __future__ import annotations


def storable_text(value: str | None) -> str | None:
    """``value`` as UTF-8 can hold it: a lone surrogate becomes U+FFFD (the replacement
    character), a surrogate pair given as two code units becomes the character it spells, and
    everything else is kept as it is; None stays None."""
    if value is None:
        return None
    return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
