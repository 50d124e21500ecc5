"""The viewer's charts and text filters, on their own."""

from __future__ import annotations

import json

import pytest

from evalkit.view._charts import histogram, trend
from evalkit.view._render import as_text, shown, signed


def test_a_scorer_added_later_starts_at_its_first_run() -> None:
    chart = trend({"old": [("r1", 0.2), ("r2", 0.4), ("r3", 0.6)], "new": [("r3", 1.0)]})
    old, new = chart["lines"]
    assert [d["x"] for d in old["dots"]][-1] == new["dots"][0]["x"] == chart["right"]
    assert old["dots"][0]["x"] == chart["left"]
    assert new["dots"][0]["y"] == chart["top"]  # 1.0 at the top of a 0-1 axis


def test_one_run_is_a_point_in_the_middle() -> None:
    chart = trend({"s": [("r1", 0.5)]})
    assert chart["lines"][0]["dots"][0]["x"] == (chart["left"] + chart["right"]) / 2


def test_means_outside_0_1_widen_the_axis() -> None:
    chart = trend({"s": [("r1", -2.0), ("r2", 3.0)]})
    assert (chart["lo"], chart["hi"]) == (-2.0, 3.0)


def test_histogram_bars_are_counted_and_scaled_to_the_largest() -> None:
    chart = histogram(0.0, 1.0, [0, 5, 10, 0, 0, 0, 0, 0, 0, 20])
    heights = [bar["h"] for bar in chart["bars"]]
    assert heights[9] == chart["bottom"] - chart["top"]
    assert heights[1] * 4 == pytest.approx(heights[9])
    assert (chart["max"], chart["total"]) == (20, 35)
    assert [t["label"] for t in chart["ticks"]] == ["0", "0.5", "1"]


@pytest.mark.parametrize(
    ("stored", "text"),
    [
        (json.dumps("plain"), "plain"),
        (json.dumps({"a": [1, 2]}), '{\n  "a": [\n    1,\n    2\n  ]\n}'),
        ("not json", "not json"),
        (None, ""),
    ],
)
def test_stored_json_is_shown_as_text(stored: str | None, text: str) -> None:
    assert as_text(stored) == text


def test_shown_escapes_bidi_and_cuts_long_text() -> None:
    assert shown(json.dumps("a\u202eb\x1b[31m")) == "a\\u202eb\\x1b[31m"
    cut = shown("x" * 50, limit=10)
    assert cut.startswith("x" * 10)
    assert "[40 more characters of 50]" in cut


def test_signed_uses_a_real_minus() -> None:
    assert (signed(-0.5), signed(0.25), signed(None)) == ("\u22120.500", "+0.250", "\u2013")


def test_failed_nights_are_marked_where_their_points_are() -> None:
    chart = trend(
        {"exact": [("r1", 1.0), ("r2", 0.5), ("r3", 0.9)], "new": [("r3", 0.2)]},
        failed={"r2", "r3", "not-charted"},
    )
    exact = chart["lines"][0]["dots"]
    assert chart["failed"] == [
        {"x": exact[1]["x"], "run_id": "r2"},
        {"x": exact[2]["x"], "run_id": "r3"},
    ]
    assert [d["failed"] for d in exact] == [False, True, True]
    assert trend({"exact": [("r1", 1.0)]})["failed"] == []
