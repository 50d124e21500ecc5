"""Removing secrets from an experiment's config before it is stored.

Two rules, applied to every nested dict and list:

- a value whose *key* names a secret (``api_key``, ``x-api-key``, ``token``, ``access_token``,
  ``secret``, ``client_secret``, ``password``, ``passwd``, ``authorization``, ``cookie``,
  ``credentials``, ``private_key``…) is replaced by ``"[REDACTED]"``. Keys that merely mention a
  secret's *name* are kept: ``api_key_env`` holds the name of an environment variable, and
  ``max_tokens`` counts tokens;
- inside any text, things shaped like secrets are masked: provider keys (``sk-…``,
  ``sk-ant-…``, ``ghp_…``, ``xox…-``, ``AKIA…``), ``Bearer`` tokens, passwords in URLs
  (``https://user:pw@host``) and secret query parameters (``?api_key=…``) — the patterns of
  ``evalkit/_masking.py``, shared with the masking of error messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evalkit._masking import MASK, mask_secrets

REDACTED = MASK

_SECRET_KEY = re.compile(
    r"(^|_)(api_?key|apikey|token|access_?token|refresh_?token|id_?token|auth_?token|"
    r"secret|client_?secret|secret_?key|password|passwd|pwd|authorization|auth|cookie|"
    r"credentials?|private_?key|access_?key|session_?key|signature)$"
)


def is_secret_key(key: str) -> bool:
    """Whether a config key names a secret (``"OPENAI_API_KEY"``, ``"x-api-key"``…)."""
    return bool(_SECRET_KEY.search(key.lower().replace("-", "_")))


def redact_text(text: str) -> str:
    """``text`` with secret-shaped substrings masked: the patterns error messages are masked
    with (`evalkit._masking.mask_secrets`)."""
    return mask_secrets(text)


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
