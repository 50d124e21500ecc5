"""One number formatter for the text report, the HTML report and the viewer (issue 32)."""

from __future__ import annotations

import math

import pytest

from evalkit._numbers import MINUS, shown_number
from evalkit.report import ReportData, html_report
from evalkit.report._model import ScorerRow
from evalkit.report._text import console_table
from evalkit.view._render import number, signed


def _report(row: ScorerRow) -> ReportData:
    return ReportData(
        experiment_id="exp-1",
        name="nightly",
        status="completed",
        dataset="d.parquet",
        started_at="2026-11-30T00:00:00",
        completed_at="2026-11-30T00:01:00",
        total_items=1,
        succeeded_items=1,
        failed_items=0,
        scorers=(row,),
        baseline="exp-0",
    )


@pytest.mark.parametrize(
    ("value", "options", "expected"),
    [
        (0.75, {}, "0.750"),
        (-0.5, {"signed": True}, "-0.500"),
        (-0.5, {"signed": True, "minus": MINUS}, "\u22120.500"),
        (None, {}, "-"),
        (math.nan, {"missing": "\u2013"}, "\u2013"),
        (1e12, {}, "1.000e+12"),
        (-1e12, {"minus": MINUS}, "\u22121.000e+12"),
    ],
)
def test_shown_number(value: float | None, options: dict[str, object], expected: str) -> None:
    assert shown_number(value, **options) == expected  # type: ignore[arg-type]


def test_the_html_report_uses_a_real_minus_sign() -> None:
    # Before issue 32 the HTML report wrote "-0.100" with a hyphen, the viewer a real minus sign.
    row = ScorerRow("f1", 4, 0.5, 0.4, 0.6, 0, delta=-0.1, delta_low=-0.15, delta_high=-0.05)
    page = html_report(_report(row))
    assert "\u22120.100 [\u22120.150, \u22120.050]" in page
    # Plain text keeps the ASCII hyphen-minus a terminal, grep and a CSV reader expect.
    assert "-0.100 [-0.150, -0.050]" in console_table(_report(row))


def test_a_nan_mean_is_shown_as_missing_in_every_report() -> None:
    # Before issue 32 the text and HTML reports printed "nan", the viewer a dash.
    row = ScorerRow("f1", 4, math.nan, None, None, 0)
    line = next(x for x in console_table(_report(row)).splitlines() if x.startswith("f1"))
    assert "nan" not in line
    assert "nan" not in html_report(_report(row))


def test_the_viewer_shows_huge_values_in_exponent_form() -> None:
    # Before issue 32 the viewer wrote a mean of 1e307 with its 300 digits (the reports
    # already used exponent form, issue 30).
    assert number(1e307) == "1.000e+307"
    assert signed(-1e307) == "\u22121.000e+307"
