"""Keeping API keys out of messages: masking secret-shaped text and spotting pasted keys.

Error messages are built from things evalkit does not control — a provider's error body, an
endpoint URL the user typed — and they end up in exceptions, logs, reports and the score store.
`mask_secrets` masks what looks like a credential in such text, and the exact key values a
caller knows (the key a client sends), so a provider that echoes the key back does not leak it.
`looks_like_a_key` tells a pasted key from the *name* of an environment variable, for the
places that take a name (``api_key_env``) and must refuse a key without echoing it.

The store's config redaction (``evalkit/_redaction.py``) masks text with the same
patterns.
Why errors are masked where they are translated: docs/pages/design/masking-at-the-boundary.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "[REDACTED]"

_SECRET_TEXT = (
    (re.compile(r"\b(sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{12,})"), MASK),
    (re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,})"), MASK),
    (re.compile(r"\b(xox[abprs]-[A-Za-z0-9\-]{10,})"), MASK),
    (re.compile(r"\b(AKIA[0-9A-Z]{16})\b"), MASK),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}"), rf"\1 {MASK}"),
    (re.compile(r"(://[^/\s:@]+:)[^@\s/]+@"), rf"\1{MASK}@"),
    (
        re.compile(
            r"(?i)([?&](?:api[_-]?key|key|token|access_token|secret|password|sig|signature"
            r"|code|auth)=)[^&#\s]+"
        ),
        rf"\1{MASK}",
    ),
)
# Prefixes of common provider keys (OpenAI, Anthropic, Groq, xAI, Hugging Face, Google, ...).
_KEY_PREFIXES = ("sk-", "sk_", "pk-", "gsk_", "xai-", "hf_", "AIza", "Bearer ", "bearer ")
# Shorter known values are not masked: replacing every "abc" in a message would garble it,
# and a key that short is no secret worth the damage.
_MIN_KNOWN = 6


def mask_secrets(text: str, known: Iterable[str | None] = ()) -> str:
    """``text`` with credential-shaped substrings and the ``known`` secret values masked.

    Args:
        text: Any message.
        known: Secret values to mask wherever they appear (e.g. the API key a client sends),
            however they are shaped; None and values under 6 characters are ignored.

    Returns:
        The text with each secret replaced by ``[REDACTED]``.
    """
    for value in known:
        if value and len(value) >= _MIN_KNOWN and value in text:
            text = text.replace(value, MASK)
    for pattern, replacement in _SECRET_TEXT:
        text = pattern.sub(replacement, text)
    return text


def looks_like_a_key(value: str) -> bool:
    """Whether ``value`` reads like a pasted secret rather than an environment variable's name.

    True for text starting like a provider key (``sk-``, ``gsk_``, ``hf_``, ``AIza``,
    ``Bearer``…), and for long runs of mixed-case letters and digits without an underscore;
    names such as ``OPENAI_API_KEY`` are words joined by underscores.
    """
    if value.startswith(_KEY_PREFIXES):
        return True
    return (
        len(value) >= 20
        and "_" not in value
        and any(c.isdigit() for c in value)
        and any(c.islower() for c in value)
    )


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_env_name(value: str) -> bool:
    """Whether ``value`` is a valid environment variable name (letters, digits, underscores,
    not starting with a digit)."""
    return bool(_ENV_NAME.fullmatch(value))
