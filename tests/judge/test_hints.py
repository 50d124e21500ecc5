"""Reading Retry-After and x-ratelimit-* headers."""

from __future__ import annotations

import email.utils
import time

import httpx2
import pytest

from evalkit.judge.policy._hints import budget_pause, parse_duration, retry_after


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("20ms", 0.02),
        ("6m0s", 360.0),
        ("1m30.5s", 90.5),
        ("2h", 7200.0),
        ("2.5", 2.5),
        ("0s", 0.0),
        (" 3s ", 3.0),
        ("", None),
        ("soon", None),
        ("1s and more", None),
        ("-1", None),
        (None, None),
    ],
)
def test_parse_duration(text: str | None, seconds: float | None) -> None:
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250", "retry-after": "1"}, 0.25),
        ({"retry-after-ms": "nonsense", "retry-after": "3"}, 3.0),
        ({"retry-after": "0"}, None),
        ({"retry-after": "-4"}, None),
        ({"retry-after": "tomorrow-ish"}, None),
        ({}, None),
    ],
)
def test_retry_after(headers: dict[str, str], seconds: float | None) -> None:
    got = retry_after(httpx2.Headers(headers))
    assert got == (pytest.approx(seconds) if seconds is not None else None)


def test_retry_after_as_an_http_date() -> None:
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    got = retry_after(httpx2.Headers({"Retry-After": date}))
    assert got is not None
    # The date has whole seconds; 10 s below is far more than a loaded machine needs
    # between writing the date and reading it, and far from what a misread date gives.
    assert 20 < got <= 30


def test_headers_are_case_insensitive_and_none_is_no_hint() -> None:
    assert retry_after(httpx2.Headers({"Retry-After": "4"})) == 4.0
    assert retry_after(None) is None
    assert budget_pause(None, 10) is None


@pytest.mark.parametrize(
    ("headers", "tokens", "pause"),
    [
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.5s"}, 1, 1.5),
        ({"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1.5s"}, 1, None),
        ({"x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "250ms"}, 500, 0.25),
        ({"x-ratelimit-remaining-tokens": "900", "x-ratelimit-reset-tokens": "250ms"}, 500, None),
        (
            {
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "100ms",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-tokens": "2s",
            },
            10,
            2.0,
        ),
        ({"x-ratelimit-remaining-requests": "0"}, 1, None),  # no reset: nothing to wait for
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "0s"}, 1, None),
    ],
)
def test_budget_pause(headers: dict[str, str], tokens: int, pause: float | None) -> None:
    got = budget_pause(httpx2.Headers(headers), tokens)
    assert got == (pytest.approx(pause) if pause is not None else None)
