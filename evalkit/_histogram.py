"""Where a histogram's bars, baseline steps and ticks go: the one geometry builder that the
HTML report (an SVG string, ``report/_charts.py``) and the viewer (a Jinja template,
``view/_charts.py``) both draw from. Each renderer keeps its own margins, colours and labels;
the placing and scaling is here once (docs/pages/design/one-implementation-each.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Bar:
    """One bin's bar: its box, its count and the score range it counts."""

    x: float
    y: float
    w: float
    h: float
    count: int
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Tick:
    """An x-axis tick: where it stands and the score there."""

    x: float
    value: float


@dataclass(frozen=True, slots=True)
class Histogram:
    """A histogram placed in a ``width`` x ``height`` box.

    Attributes:
        left, right, top, bottom: The plot's edges (y grows downwards, counts from bottom).
        edges: The x of each bin's left edge, and the right edge last (bins + 1 values).
        bars: One per bin, inset by a pixel on each side.
        baseline: Per bin, the y of the baseline's count (an outlined step); () without one.
        ticks: The x axis at its start, middle and end.
        scale: The count at the top of the plot (the largest of bars and baseline, at least 1).
        largest: The largest count of the bars (0 when none).
        total: The bars' counts added up.
    """

    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    edges: tuple[float, ...]
    bars: tuple[Bar, ...]
    baseline: tuple[float, ...]
    ticks: tuple[Tick, ...]
    scale: int
    largest: int
    total: int


def _between(low: float, high: float, share: float) -> float:
    # Weighted rather than low + (high - low) * share: the span of scores near the float
    # limit (-1e308 to 1e308) is itself beyond it.
    return low * (1.0 - share) + high * share


def histogram(
    low: float,
    high: float,
    counts: Sequence[int],
    *,
    baseline: Sequence[int] | None = None,
    width: int,
    height: int,
    left: float,
    right: float,
    top: float,
    bottom: float,
) -> Histogram:
    """Place the bars of ``counts`` (equal-width bins from ``low`` to ``high``), and
    ``baseline``'s counts as steps, in the plot between ``left``/``right`` and
    ``top``/``bottom``, both scaled to the largest count."""
    bins = len(counts)
    scale = max([*counts, *(baseline or ()), 1])
    plot = bottom - top
    step = (right - left) / bins if bins else 0.0
    edges = tuple(left + i * step for i in range(bins + 1))
    bars = []
    for i, count in enumerate(counts):
        h = plot * count / scale
        bars.append(
            Bar(
                x=edges[i] + 1,
                y=bottom - h,
                w=max(step - 2, 1),
                h=h,
                count=count,
                low=_between(low, high, i / bins),
                high=_between(low, high, (i + 1) / bins),
            )
        )
    return Histogram(
        width=width,
        height=height,
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        edges=edges,
        bars=tuple(bars),
        baseline=tuple(bottom - plot * c / scale for c in baseline or ()),
        ticks=tuple(
            Tick(left + (right - left) * share, _between(low, high, share))
            for share in (0.0, 0.5, 1.0)
        ),
        scale=scale,
        largest=max(counts, default=0),
        total=sum(counts),
    )
