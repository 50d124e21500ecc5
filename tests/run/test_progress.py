"""The progress bar: one visible line whatever the experiment is called."""

from __future__ import annotations

import io

import pytest

from evalkit.run._progress import Progress


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("nightly", "nightly"),
        ("red\x1b[31mrun", "red\\x1b[31mrun"),
        ("two\nlines\tand\u202eover", "two\\nlines\\tand\\u202eover"),
    ],
)
async def test_the_experiment_name_is_shown_on_one_visible_line(
    name: str, shown: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    bar = Progress(3, name=name, enabled=True)
    bar.item_done(False)
    bar.close()
    text = err.getvalue()
    assert shown in text
    assert "\x1b[31m" not in text
    assert "\n" not in text.strip("\r\n")
