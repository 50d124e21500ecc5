"""Masking secrets in messages, and telling a pasted key from a variable's name."""

from __future__ import annotations

import pytest

from evalkit._masking import is_env_name, looks_like_a_key, mask_secrets


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("key sk-proj-abcdefghijklmnop12 refused", "sk-proj-abcdefghijklmnop12"),
        ("Authorization: Bearer abc.def-ghi_jkl", "abc.def-ghi_jkl"),
        ("at https://me:pa55word@host/v1", "pa55word"),
        ("at https://host/v1?api-key=topsecret&x=1", "topsecret"),
        ("at https://host/v1?x=1&token=topsecret", "topsecret"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz", "ghp_abcdefghijklmnopqrstuvwxyz"),
    ],
)
def test_secret_shaped_text_is_masked(text: str, secret: str) -> None:
    masked = mask_secrets(text)
    assert secret not in masked
    assert "[REDACTED]" in masked


def test_known_values_are_masked_whatever_their_shape() -> None:
    assert mask_secrets("your key canary-123 is wrong", ["canary-123"]) == (
        "your key [REDACTED] is wrong"
    )
    # Short or missing values are not secrets worth garbling a message for.
    assert mask_secrets("a b c", ["a", None, ""]) == "a b c"


def test_plain_text_is_unchanged() -> None:
    text = "judge 'gpt-4o' at https://api.openai.com/v1: HTTP 500 server error"
    assert mask_secrets(text) == text


@pytest.mark.parametrize(
    ("value", "is_key"),
    [
        ("OPENAI_API_KEY", False),
        ("MY_JUDGE_KEY_2", False),
        ("sk-abc", True),
        ("gsk_abc", True),
        ("AIzaSyD", True),
        ("aB3dE6gH9jK2mN5pQ8rS1t", True),
    ],
)
def test_looks_like_a_key(value: str, is_key: bool) -> None:
    assert looks_like_a_key(value) is is_key


def test_is_env_name() -> None:
    assert is_env_name("OPENAI_API_KEY")
    assert not is_env_name("1KEY")
    assert not is_env_name("MY KEY")
