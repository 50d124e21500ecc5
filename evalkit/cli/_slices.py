"""Slices in the CLI: the per-slice comparison's console table."""

from __future__ import annotations

from collections.abc import Sequence

from evalkit.cli._format import one_line, text_table
from evalkit.compare import SliceComparison


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def slices_table(rows: Sequence[SliceComparison]) -> str:
    """One line per slice and scorer; ``FLAGGED`` marks a drop the total does not show."""
    columns = ["slice", "scorer", "n", "mean", "Δ vs baseline [CI, unadjusted]", "p (Tarone-Holm)",
               "verdict"]  # fmt: skip
    lines = [
        [
            f"{one_line(r.key)}={one_line(r.value) if r.value is not None else '(none)'}",
            r.scorer_id,
            r.n,
            "-" if r.mean is None else f"{r.mean:.3f}",
            f"{_signed(r.delta)} [{_signed(r.ci_low)}, {_signed(r.ci_high)}]",
            "-" if r.p_adjusted is None else f"{r.p_adjusted:.3g}",
            r.verdict + (" FLAGGED" if r.flagged else ""),
        ]
        for r in rows
    ]
    regressed = sorted({f"{r.key}={r.value}" for r in rows if r.verdict == "regressed"})
    tail = "slices that regressed: " + (", ".join(one_line(s) for s in regressed) or "none")
    return text_table(columns, lines) + "\n" + tail
