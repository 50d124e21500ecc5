"""Inline SVG histograms with axes and counts, the baseline's distribution overlaid, drawn
from the one histogram geometry (``evalkit/_histogram.py``).

Only numbers are written into the SVG (see docs/pages/design/report-templates.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from markupsafe import Markup

from evalkit._histogram import histogram
from evalkit._numbers import decimal


def _axis(values: Any) -> tuple[float, float]:
    """The x range: [0, 1] for scores within it (an all-1.0 scorer included), else the data's
    range, widened by 0.5 on each side when every value is the same."""
    low, high = float(np.min(values)), float(np.max(values))
    if low >= 0.0 and high <= 1.0:
        return 0.0, 1.0
    if high == low:
        # 0.5, or a billionth of the value where 0.5 is lost in its rounding (1e308).
        widen = max(0.5, abs(low) * 1e-9)
        return low - widen, high + widen
    return low, high


def _counts(scores: Sequence[float], low: float, high: float, bins: int) -> list[int]:
    # In halves: the range of scores near the float limit (-1e308 to 1e308) is itself
    # beyond it, and halving is exact.
    half = np.asarray(scores, dtype=np.float64) / 2
    at = np.clip(((half - low / 2) / (high / 2 - low / 2) * bins)
                 .astype(np.int64), 0, bins - 1)  # fmt: skip
    return [int(c) for c in np.bincount(at, minlength=bins)]


def histogram_svg(
    scores: list[float],
    baseline: Sequence[float] | None = None,
    *,
    bins: int = 10,
    width: int = 300,
    height: int = 150,
) -> str:
    """An SVG bar chart of ``scores`` in ``bins`` equal-width bins, with an x axis (range and
    midpoint), a y axis (the largest count), each bar's count, and ``baseline``'s counts as
    outlined steps when given. Only numbers are written: no caller text reaches the SVG."""
    if not scores:
        return "<p>no scores</p>"
    low, high = _axis(np.concatenate([np.asarray(scores, dtype=np.float64),
                                      np.asarray(baseline or [], dtype=np.float64)]))  # fmt: skip
    before = _counts(baseline, low, high, bins) if baseline else None
    chart = histogram(
        low,
        high,
        _counts(scores, low, high, bins),
        baseline=before,
        width=width,
        height=height,
        left=28,
        right=width,
        top=16,
        bottom=height - 18,
    )
    left, bottom = chart.left, chart.bottom
    parts = []
    for bar in chart.bars:
        parts.append(
            f'<rect x="{bar.x:.1f}" y="{bar.y:.1f}" width="{bar.w:.1f}" '
            f'height="{bar.h:.1f}" fill="#4a7bd0"><title>{bar.count}</title></rect>'
        )
        if bar.count:
            parts.append(
                f'<text x="{bar.x + bar.w / 2:.1f}" y="{bar.y - 2:.1f}" font-size="9" '
                f'text-anchor="middle">{bar.count}</text>'
            )
    if before is not None:
        path = []
        for i, y in enumerate(chart.baseline):
            path.append(f"{'M' if i == 0 else 'L'}{chart.edges[i]:.1f},{y:.1f}")
            path.append(f"L{chart.edges[i + 1]:.1f},{y:.1f}")
        parts.append(
            f'<path d="{" ".join(path)}" fill="none" stroke="#d0704a" stroke-width="1.5">'
            f"<title>baseline: {', '.join(map(str, before))}</title></path>"
        )
    start, mid, end = chart.ticks
    parts.append(
        f'<line x1="{left}" y1="{bottom}" x2="{chart.right}" y2="{bottom}" stroke="#555"/>'
        f'<line x1="{left}" y1="{bottom}" x2="{left}" y2="{chart.top}" stroke="#555"/>'
        f'<text x="{left}" y="{height - 4}" font-size="10">{decimal(start.value, 2)}</text>'
        f'<text x="{mid.x:.1f}" y="{height - 4}" font-size="10" '
        f'text-anchor="middle">{decimal(mid.value, 2)}</text>'
        f'<text x="{chart.right}" y="{height - 4}" font-size="10" text-anchor="end">'
        f"{decimal(end.value, 2)}</text>"
        f'<text x="{left - 3}" y="{chart.top + 8}" font-size="10" '
        f'text-anchor="end">{chart.scale}</text>'
        f'<text x="{left - 3}" y="{bottom}" font-size="10" text-anchor="end">0</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img">{"".join(parts)}</svg>'
    )


def histogram_markup(scores: list[float], baseline: Sequence[float] | None = None) -> Markup:
    """`histogram_svg` for the template (built from numbers only, so markup-safe)."""
    return Markup(histogram_svg(scores, baseline))
