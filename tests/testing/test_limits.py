"""How the test server writes rate-limit reset durations."""

from __future__ import annotations

import pytest

from evalkit.judge.policy._hints import parse_duration
from evalkit.testing._limits import format_reset


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.0, "0ms"), (0.2501, "251ms"), (1.5, "1.5s"), (59.9, "59.9s"), (90.25, "1m30.25s")],
)
def test_format_reset_reads_back(seconds: float, text: str) -> None:
    assert format_reset(seconds) == text
    parsed = parse_duration(text)
    assert parsed is not None
    assert parsed == pytest.approx(seconds, abs=0.001)
