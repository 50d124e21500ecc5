"""Reports that explain a regression: dropped pairs side by side with a word diff, slices,
histograms with axes and the baseline overlaid; hostile text stays inert."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace

from evalkit.compare import SliceComparison
from evalkit.report import PairView, html_report, junit_xml, markdown_summary
from evalkit.report._html import histogram_svg, word_diff
from tests.report.test_render import EXACT, make_report

HOSTILE = "<script>alert(1)</script>\u202e\x1b[2J <img src=x onerror=alert(2)>"
UNSAFE = ("\u202e", "\x1b", "<script>", "<img")


def _slice(value: str, verdict: str, *, flagged: bool = False) -> SliceComparison:
    return SliceComparison("category", value, "exact", 24, 0.9, 0.2, -0.7, -0.8, -0.5, 1e-4,
                           3e-3, verdict, flagged)  # type: ignore[arg-type]  # fmt: skip


def _explained() -> object:
    pair = PairView("qa-1", "exact", 1.0, 0.0, -1.0, "How much is Pro?", "$80", "$80 a year",
                    HOSTILE, "matches", HOSTILE, (("category", "billing"),))  # fmt: skip
    return replace(
        make_report(EXACT),
        slices=(
            _slice("billing", "regressed", flagged=True),
            _slice("math", "unchanged"),
            _slice(HOSTILE, "regressed"),
        ),
        regressed_items={"exact": [pair]},
        regressed_totals={"exact": 45},
        baseline_distributions={"exact": [1.0, 1.0, 0.0]},
        baseline_id="base123",
    )


def test_html_shows_dropped_pairs_side_by_side_with_a_word_diff() -> None:
    page = html_report(_explained())  # type: ignore[arg-type]
    assert "Regressed items · exact" in page
    assert "45 pairs scored lower than in the baseline" in page
    assert "evalkit diff base123" in page
    assert "<td class='cell'>$80 a year</td>" in page
    assert "<del>" in page
    assert "<ins>" in page
    assert re.search(r"Slices that regressed: [^<]*category=billing", page)
    assert "hidden by the total" in page
    # issue 34, item 5: a slice's interval is its own, not corrected for the slices.
    assert "<th>Δ [95% CI, unadjusted]</th><th>p</th><th>p (Tarone-Holm)</th>" in page
    for bad in UNSAFE:
        assert bad not in page


def test_markdown_and_junit_name_the_regressed_slices() -> None:
    report = _explained()
    md = markdown_summary(report)  # type: ignore[arg-type]
    assert "## Slices" in md
    assert "`category=billing`" in md
    assert "| Δ [95% CI, unadjusted] | p (Tarone-Holm) |" in md
    root = ET.fromstring(junit_xml(report))  # type: ignore[arg-type]
    text = ET.tostring(root, encoding="unicode")
    assert "category=billing (Δ -0.700, Tarone-Holm p 0.003, hidden by the total)" in text
    for bad in ("\u202e", "\x1b"):
        assert bad not in md
        assert bad not in text


def test_word_diff_marks_the_changed_words() -> None:
    assert word_diff("They are transferred to the owner", "They are deleted") == [
        ("same", "They are "), ("del", "transferred to the owner"), ("ins", "deleted")]  # fmt: skip
    assert word_diff(None, "new") == [("ins", "new")]
    assert word_diff({"a": 1}, {"a": 1}) == [("same", '{"a":1}')]


def test_an_all_ones_scorer_gets_a_zero_to_one_axis() -> None:
    svg = histogram_svg([1.0] * 7)
    labels = re.findall(r">([0-9.]+)</text>", svg)
    assert "0.00" in labels
    assert "1.00" in labels
    assert "1.50" not in svg
    assert "<title>7</title>" in svg


def test_histogram_has_counts_and_the_baseline_overlaid() -> None:
    svg = histogram_svg([0.0, 0.0, 1.0], [1.0, 1.0, 1.0], bins=2)
    assert "<title>2</title>" in svg
    assert "<path" in svg
    assert "baseline: 0, 3" in svg
    assert ">3</text>" in svg  # the y axis reaches the baseline's largest count
    wide = histogram_svg([3.0, 3.0])
    assert "2.50" in wide
    assert "3.50" in wide
