"""The one histogram geometry the HTML report and the viewer draw from (issue 32)."""

from __future__ import annotations

import re

from evalkit._histogram import histogram
from evalkit.report._html import histogram_svg
from evalkit.view._charts import histogram as view_histogram


def test_bars_baseline_and_ticks_share_one_scale() -> None:
    chart = histogram(
        0.0, 1.0, [1, 3], baseline=[6, 0], width=100, height=80,
        left=10, right=90, top=10, bottom=70,
    )  # fmt: skip
    assert chart.edges == (10.0, 50.0, 90.0)
    assert chart.scale == 6  # the baseline's 6 is the top of the plot
    assert [b.h for b in chart.bars] == [10.0, 30.0]
    assert chart.baseline == (10.0, 70.0)
    assert [(b.low, b.high) for b in chart.bars] == [(0.0, 0.5), (0.5, 1.0)]
    assert [(t.x, t.value) for t in chart.ticks] == [(10.0, 0.0), (50.0, 0.5), (90.0, 1.0)]
    assert (chart.largest, chart.total) == (3, 4)


def test_the_viewer_labels_scores_near_the_float_limit() -> None:
    # Before issue 32 the viewer's own geometry computed hi - lo, which is infinite for
    # -1e308 to 1e308: its ticks read "nan", "inf", "inf".
    chart = view_histogram(-1e308, 1e308, [1, 1])
    assert [t["label"] for t in chart["ticks"]] == ["-1e+308", "0", "1e+308"]
    assert chart["bars"][1]["from"] == 0.0


def test_the_report_draws_the_same_geometry() -> None:
    svg = histogram_svg([0.0, 0.2, 0.9], [0.1], bins=2, width=300, height=150)
    chart = histogram(
        0.0, 1.0, [2, 1], baseline=[1, 0], width=300, height=150,
        left=28, right=300, top=16, bottom=132,
    )  # fmt: skip
    rects = re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg)
    assert rects == [(f"{b.x:.1f}", f"{b.y:.1f}", f"{b.w:.1f}", f"{b.h:.1f}") for b in chart.bars]
