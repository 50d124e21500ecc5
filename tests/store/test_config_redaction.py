from __future__ import annotations

from typing import Any

import pytest

from evalkit._redaction import REDACTED, is_secret_key, redact


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apiKey",
        "OPENAI_API_KEY",
        "x-api-key",
        "token",
        "access_token",
        "refresh_token",
        "secret",
        "client_secret",
        "password",
        "Authorization",
        "cookie",
        "credentials",
        "private_key",
    ],
)
def test_secret_keys(key: str) -> None:
    assert is_secret_key(key)
    assert redact({key: "value"}) == {key: REDACTED}


@pytest.mark.parametrize(
    "key", ["api_key_env", "max_tokens", "input_tokens", "tokenizer", "model", "passes"]
)
def test_ordinary_keys(key: str) -> None:
    assert not is_secret_key(key)
    assert redact({key: "value"}) == {key: "value"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-abcdefghijklmnop1234 here", f"key {REDACTED} here"),
        ("sk-ant-api03-abcdefghijklmnopqrstuv", REDACTED),
        ("Bearer abc.def.ghi-jkl", f"Bearer {REDACTED}"),
        ("https://bob:s3cret@db.example.com/x", f"https://bob:{REDACTED}@db.example.com/x"),
        ("https://x.io/v1?api_key=abc123&model=m", f"https://x.io/v1?api_key={REDACTED}&model=m"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123", f"token {REDACTED}"),
        ("AKIAABCDEFGHIJKLMNOP", REDACTED),
        # The same patterns as error messages: an OAuth code or auth in a query string too.
        ("https://x.io/cb?code=4/0Adeu5B&state=s", f"https://x.io/cb?code={REDACTED}&state=s"),
        ("https://x.io/v1?auth=tok123", f"https://x.io/v1?auth={REDACTED}"),
        ("gpt-4o-mini at https://api.openai.com/v1", "gpt-4o-mini at https://api.openai.com/v1"),
        ("a sketch of sk-short", "a sketch of sk-short"),
    ],
)
def test_secret_shaped_text(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_nested_values_are_redacted_and_the_input_untouched() -> None:
    config: dict[str, Any] = {
        "judge": {"model": "gpt-4o", "api_key": "k", "headers": {"X-Api-Key": "h"}},
        "scorers": [{"params": {"password": "p", "threshold": 0.5}}],
        "token": None,
    }
    assert redact(config) == {
        "judge": {"model": "gpt-4o", "api_key": REDACTED, "headers": {"X-Api-Key": REDACTED}},
        "scorers": [{"params": {"password": REDACTED, "threshold": 0.5}}],
        "token": None,
    }
    assert config["judge"]["api_key"] == "k"
