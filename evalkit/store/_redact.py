"""Removing secrets from an experiment's config before it is stored.

Two rules, applied to every nested dict and list:

- a value whose *key* names a secret (``api_key``, ``x-api-key``, ``token``, ``access_token``,
  ``secret``, ``client_secret``, ``password``, ``passwd``, ``authorization``, ``cookie``,
  ``credentials``, ``private_key``…) is replaced by ``"[REDACTED]"``. Keys that merely mention a
  secret's *name* are kept: ``api_key_env`` holds the name of an environment variable, and
  ``max_tokens`` counts tokens;
- inside any text, things shaped like secrets are masked: provider keys (``sk-…``,
  ``sk-ant-…``, ``ghp_…``, ``xox…-``, ``AKIA…``), ``Bearer`` tokens, passwords in URLs
  (``https://user:pw@host``) and secret query parameters (``?api_key=…``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "[REDACTED]"

_SECRET_KEY = re.compile(
    r"(^|_)(api_?key|apikey|token|access_?token|refresh_?token|id_?token|auth_?token|"
    r"secret|client_?secret|secret_?key|password|passwd|pwd|authorization|auth|cookie|"
    r"credentials?|private_?key|access_?key|session_?key|signature)$"
)
_SECRET_TEXT = (
    (re.compile(r"\b(sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{12,})"), REDACTED),
    (re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,})"), REDACTED),
    (re.compile(r"\b(xox[abprs]-[A-Za-z0-9\-]{10,})"), REDACTED),
    (re.compile(r"\b(AKIA[0-9A-Z]{16})\b"), REDACTED),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}"), rf"\1 {REDACTED}"),
    (re.compile(r"(://[^/\s:@]+:)[^@\s/]+@"), rf"\1{REDACTED}@"),
    (
        re.compile(
            r"(?i)([?&](?:api[_-]?key|key|token|access_token|secret|password|sig|signature)=)"
            r"[^&#\s]+"
        ),
        rf"\1{REDACTED}",
    ),
)


def is_secret_key(key: str) -> bool:
    """Whether a config key names a secret (``"OPENAI_API_KEY"``, ``"x-api-key"``…)."""
    return bool(_SECRET_KEY.search(key.lower().replace("-", "_")))


def redact_text(text: str) -> str:
    """``text`` with secret-shaped substrings masked."""
    for pattern, replacement in _SECRET_TEXT:
        text = pattern.sub(replacement, text)
    return text


def redact(value: Any) -> Any:
    """A copy of a JSON-ready config with secrets replaced by ``"[REDACTED]"``.

    Args:
        value: Plain JSON values (dicts, lists, text, numbers), e.g. from ``to_jsonable``.
    """
    if isinstance(value, Mapping):
        return {
            key: (REDACTED if is_secret_key(str(key)) and item is not None else redact(item))
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
