"""Geometry of the inline SVG charts: the templates draw what these functions place.

Charts are inline SVG written by the server (no chart library, no script): they render offline,
print, and need nothing from the page's script.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from evalkit._histogram import histogram as placed

#: Line colours of the scorers of a trend chart, in order (readable on white, distinct in
#: the common forms of colour blindness).
PALETTE = ("#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d")


def _scale(lo: float, hi: float, top: float, bottom: float) -> Any:
    span = (hi - lo) or 1.0
    return lambda v: bottom - (v - lo) / span * (bottom - top)


def trend(
    series: dict[str, list[tuple[str, float]]],
    *,
    failed: Collection[str] = (),
    width: int = 360,
    height: int = 120,
) -> dict[str, Any]:
    """A line per scorer over the runs of one name (oldest left), y over [0, 1] unless the
    means leave it; the runs in ``failed`` (failed nights: their verdict failed) marked.

    Returns:
        ``width``, ``height``, ``lines`` (``scorer_id``, ``colour``, ``points`` as an SVG
        points string, ``dots``: ``x``, ``y``, ``run_id``, ``mean``, ``failed``), the axis
        labels ``lo`` and ``hi``, ``runs`` (the most runs of one scorer) and ``failed``
        (``x`` and ``run_id`` of each failed night, oldest first).
    """
    values = [m for points in series.values() for _, m in points]
    lo = min([0.0, *values])
    hi = max([1.0, *values])
    left, right, top, bottom = 34, width - 8, 8, height - 18
    y = _scale(lo, hi, top, bottom)
    runs = max((len(p) for p in series.values()), default=0)
    step = (right - left) / max(runs - 1, 1)
    lines = []
    marks: dict[str, float] = {}
    for index, (scorer_id, points) in enumerate(series.items()):
        # Right-aligned: a scorer added later starts at its first run, not at the left edge.
        offset = runs - len(points)
        at = (lambda i: (left + right) / 2) if runs == 1 else (lambda i: left + i * step)
        dots = [
            {
                "x": at(offset + i),
                "y": y(mean),
                "run_id": run_id,
                "mean": mean,
                "failed": run_id in failed,
            }
            for i, (run_id, mean) in enumerate(points)
        ]
        for dot in dots:
            if dot["failed"]:
                marks.setdefault(dot["run_id"], dot["x"])
        lines.append(
            {
                "scorer_id": scorer_id,
                "colour": PALETTE[index % len(PALETTE)],
                "points": " ".join(f"{d['x']:.1f},{d['y']:.1f}" for d in dots),
                "dots": dots,
            }
        )
    return {
        "width": width,
        "height": height,
        "left": left,
        "right": right,
        "top": top,
        "bottom": bottom,
        "lo": lo,
        "hi": hi,
        "runs": runs,
        "lines": lines,
        "failed": [{"x": x, "run_id": r} for r, x in sorted(marks.items(), key=lambda m: m[1])],
    }


def histogram(
    lo: float, hi: float, counts: list[int], *, width: int = 300, height: int = 130
) -> dict[str, Any]:
    """Bars of a score distribution with both axes: the score range below, counts above each
    non-empty bar and the largest count on the left (placed by `evalkit._histogram`).

    Returns:
        ``width``, ``height``, ``bars`` (``x``, ``y``, ``w``, ``h``, ``count``, ``from``,
        ``to``), ``ticks`` (``x``, ``label``), ``max``, ``total`` and the plot's edges.
    """
    chart = placed(
        lo, hi, counts, width=width, height=height,
        left=36, right=width - 8, top=16, bottom=height - 22,
    )  # fmt: skip
    return {
        "width": width,
        "height": height,
        "left": chart.left,
        "right": chart.right,
        "top": chart.top,
        "bottom": chart.bottom,
        "bars": [
            {"x": b.x, "y": b.y, "w": b.w, "h": b.h, "count": b.count, "from": b.low, "to": b.high}
            for b in chart.bars
        ],
        "ticks": [{"x": t.x, "label": f"{t.value:g}"} for t in chart.ticks],
        "max": chart.largest,
        "total": chart.total,
    }
